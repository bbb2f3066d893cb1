package memstore_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
)

// cpuMeter reports the process CPU time per iteration as cpu-ns/op next
// to ns/op. Start it after the setup, stop it after the loop.
type cpuMeter struct {
	b     *testing.B
	start time.Duration
	ok    bool
}

func startCPU(b *testing.B) cpuMeter {
	start, ok := cpuTime()
	return cpuMeter{b: b, start: start, ok: ok}
}

func (m cpuMeter) stop() {
	end, ok := cpuTime()
	if m.ok && ok && m.b.N > 0 {
		m.b.ReportMetric(float64(end-m.start)/float64(m.b.N), "cpu-ns/op")
	}
}

// BenchmarkReadMessagesLast20 reads the latest 20 messages of a
// conversation of 10, 20 and 100,000 messages: the cost should not grow with the
// conversation.
func BenchmarkReadMessagesLast20(b *testing.B) {
	for _, n := range []int{10, 20, 100_000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			ctx := b.Context()
			s := memstore.New(nil)
			if _, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: "t", ID: "c", AgentID: "a", AgentVersion: "1.0.0"}); err != nil {
				b.Fatal(err)
			}
			for i := range n {
				role := bindings.RoleUser // a turn: a user message, then the agent's
				if i%2 == 1 {
					role = bindings.RoleAgent
				}
				if _, err := s.AppendMessage(ctx, bindings.AppendMessageInput{TenantID: "t", ConversationID: "c", ID: fmt.Sprint(i), Role: role, Content: "a message of moderate length", TurnNumber: i/2 + 1}); err != nil {
					b.Fatal(err)
				}
			}
			in := bindings.ReadMessagesInput{TenantID: "t", ConversationID: "c", Limit: 20}
			benchCalls(b, "messages", min(20, n), func() (int, error) {
				ms, err := s.ReadMessages(ctx, in)
				return len(ms), err
			})
		})
	}
}

// BenchmarkAppendStep appends journal entries with distinct keys to one
// run.
func BenchmarkAppendStep(b *testing.B) {
	ctx := b.Context()
	s := memstore.New(nil)
	if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: "t", RunID: "r", Owner: "w", LeaseTTL: time.Hour}); err != nil {
		b.Fatal(err)
	}
	keys := make([]string, 1<<16)
	for i := range keys {
		keys[i] = fmt.Sprintf("agent-loop/%d/model-call", i)
	}
	in := bindings.AppendStepInput{TenantID: "t", RunID: "r", Owner: "w", Entry: bindings.JournalEntry{
		Node: "model-call", Status: bindings.StepCompleted, Output: []byte(`{"text":"hello","usage":{"inputTokens":10}}`),
	}}
	b.ReportAllocs()
	cpu := startCPU(b)
	defer cpu.stop()
	i := 0
	for b.Loop() {
		in.Entry.Key = keys[i%len(keys)]
		in.Entry.Status = bindings.StepCompleted
		if i >= len(keys) { // keep appending new (key, phase) pairs
			in.Entry.Status = bindings.StepStarted
		}
		if i >= 2*len(keys) {
			in.Entry.Key = fmt.Sprint(i)
		}
		if _, _, err := s.AppendStep(ctx, in); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkQueryFactsKeyword10k ranks 10,000 facts by BM25 for a
// three-term query, limit 10.
func BenchmarkQueryFactsKeyword10k(b *testing.B) {
	ctx := b.Context()
	s := memstore.New(nil)
	words := []string{"payment", "late", "penalty", "vendor", "invoice", "schedule", "annex", "delivery", "buyer", "seller",
		"indemnity", "cap", "liability", "warranty", "term", "renewal", "notice", "termination", "governing", "law"}
	for i := range 10_000 {
		text := ""
		for j := range 12 {
			text += words[(i*7+j*j*3+j)%len(words)] + " "
		}
		if _, err := s.PutFact(ctx, bindings.Fact{TenantID: "t", ID: fmt.Sprint(i), Type: "clause", ProjectID: fmt.Sprint(i % 10), Text: text, CreatedAt: time.Unix(int64(i), 0)}); err != nil {
			b.Fatal(err)
		}
	}
	q := bindings.MemoryQuery{TenantID: "t", Types: []string{"clause"}, Scope: agent.ScopeTenant, Mode: agent.ModeKeyword, Query: "late payment penalty", Limit: 10}
	benchQueryFacts(b, s, q)
}

// benchQueryFacts times s answering q with its 10 facts.
func benchQueryFacts(b *testing.B, s *memstore.Store, q bindings.MemoryQuery) {
	ctx := b.Context()
	benchCalls(b, "results", 10, func() (int, error) {
		res, err := s.QueryFacts(ctx, q)
		return len(res), err
	})
}

// benchCalls times call after the setup, reporting allocations and CPU
// time per op, and fails b unless each call returns want items (what
// names them) and no error.
func benchCalls(b *testing.B, what string, want int, call func() (int, error)) {
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU(b)
	defer cpu.stop()
	for b.Loop() {
		if n, err := call(); err != nil || n != want {
			b.Fatalf("%d %s, %v", n, what, err)
		}
	}
}

// BenchmarkListConversationsPage reads a page of 20 from the middle of
// 100,000 conversations by cursor.
func BenchmarkListConversationsPage(b *testing.B) {
	ctx := b.Context()
	s := memstore.New(nil)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 100_000 {
		if _, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: "t", ID: fmt.Sprintf("c%06d", i), AgentID: "a", AgentVersion: "1.0.0", OpenedAt: base.Add(time.Duration(i/3) * time.Second)}); err != nil {
			b.Fatal(err)
		}
	}
	in := bindings.ListConversationsPageInput{
		ListConversationsInput: bindings.ListConversationsInput{TenantID: "t", Limit: 20},
		Cursor:                 &bindings.ConversationPageCursor{OpenedAt: base.Add(16_666 * time.Second), ID: "c050000"},
	}
	benchCalls(b, "conversations", 20, func() (int, error) {
		p, err := s.ListConversationsPage(ctx, in)
		return len(p.Conversations), err
	})
}

// hugeQuery is a 1.2 MiB message with 20,000 distinct words.
func hugeQuery() string {
	var b strings.Builder
	for i := 0; b.Len() < 1200<<10; i++ {
		fmt.Fprintf(&b, "word%d ", i%20000)
	}
	return b.String()
}

// BenchmarkQueryFactsHugeQuery ranks the 10,000 facts of
// BenchmarkQueryFactsKeyword10k, each holding some of the query's words,
// for a 1.2 MiB query of 20,000 distinct words: the store searches for its
// 64 most distinctive terms.
func BenchmarkQueryFactsHugeQuery(b *testing.B) {
	ctx := b.Context()
	s := memstore.New(nil)
	for i := range 10_000 {
		text := fmt.Sprintf("word%d word%d word%d clause", i, i+10000, (i*7)%20000)
		if _, err := s.PutFact(ctx, bindings.Fact{TenantID: "t", ID: fmt.Sprint(i), Type: "clause", Text: text, CreatedAt: time.Unix(int64(i), 0)}); err != nil {
			b.Fatal(err)
		}
	}
	q := bindings.MemoryQuery{TenantID: "t", Types: []string{"clause"}, Scope: agent.ScopeTenant, Mode: agent.ModeKeyword, Query: hugeQuery(), Limit: 10}
	benchQueryFacts(b, s, q)
}
