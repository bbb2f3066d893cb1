package pgstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
)

// BenchmarkWriteCost is the cost of the writes a turn makes, one call at a
// time on one connection with synchronous_commit=off (so the WAL flush is
// not the backend's and the figures are the statements'): a message step
// (one entry, an agent message with a tool call, three entries after it)
// and an append of three entries. It reports the client and backend CPU
// per call.
func BenchmarkWriteCost(b *testing.B) {
	for _, kind := range []string{"message-step", "append-steps"} {
		b.Run(kind, func(b *testing.B) {
			pool, _ := tracedPool(b, 1, "synchronous_commit", "off")
			s := New(pool, nil)
			ctx := context.Background()
			tenant := "bench-" + randomID()
			pids := backendPIDs(b, pool, 1)
			if _, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: tenant, ID: "c", AgentID: "a", AgentVersion: "1.0.0"}); err != nil {
				b.Fatal(err)
			}
			out := []byte(`{"text":"the answer is in the tool's result","usage":{"input":120,"output":30}}`)
			entry := func(key string, st bindings.StepStatus) bindings.JournalEntry {
				e := bindings.JournalEntry{Key: key, Node: "n", Status: st}
				if st == bindings.StepCompleted {
					e.Output = out
				}
				return e
			}
			run := 0
			var runID string
			next := func(i int) {
				if i%200 == 0 { // keep the runs' journals short, as a turn's are
					run++
					runID = fmt.Sprintf("r%d", run)
					if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: tenant, RunID: runID, FlowID: "f", FlowVersion: "1", Owner: "o", LeaseTTL: time.Hour}); err != nil {
						b.Fatal(err)
					}
				}
			}
			call := func(i int) {
				next(i)
				k := fmt.Sprintf("loop/%d/", i)
				switch kind {
				case "message-step":
					_, err := s.Commit(ctx, journal.CommitInput{
						TenantID: tenant, RunID: runID, Owner: "o", Entries: []bindings.JournalEntry{
							entry(k+"model-call", bindings.StepCompleted), entry(k+"message", bindings.StepCompleted),
							entry(k+"plan", bindings.StepCompleted), entry(k+"call_1", bindings.StepStarted)},
						Message: &journal.Message{Index: 1, Message: bindings.AppendMessageInput{TenantID: tenant, ConversationID: "c", ID: "m" + k, Role: bindings.RoleAgent, RunID: runID,
							ToolCalls: []bindings.ToolCall{{ID: "call_1", Name: "acme.lookup", Arguments: []byte(`{"q":"x"}`)}}}},
					})
					if err != nil {
						b.Fatal(err)
					}
				case "append-steps":
					_, err := s.Commit(ctx, journal.CommitInput{TenantID: tenant, RunID: runID, Owner: "o", Entries: []bindings.JournalEntry{
						entry(k+"a", bindings.StepCompleted), entry(k+"b", bindings.StepCompleted), entry(k+"c", bindings.StepStarted)}})
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			call(0)
			b.ReportAllocs()
			b.ResetTimer()
			cpu, server := processCPU(), backendCPU(pids)
			for i := 1; i <= b.N; i++ {
				call(i)
			}
			cpu, server = processCPU()-cpu, backendCPU(pids)-server
			b.ReportMetric(float64(cpu)/1e3/float64(b.N), "client-cpu-us/op")
			b.ReportMetric(float64(server)/1e3/float64(b.N), "backend-cpu-us/op")
		})
	}
}
