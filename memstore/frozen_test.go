package memstore_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
	"github.com/kindgi/agents/memstore"
)

// TestReadValuesSurviveLaterWrites keeps what reads of messages, tool
// calls, journal entries and snapshots returned — strings that share the
// store's text (internal/frozen) — then writes many times as much into
// the same store, and checks every value kept against the deep copy taken
// when it was read: a store that wrote over text it had handed out fails
// here.
func TestReadValuesSurviveLaterWrites(t *testing.T) {
	ctx := t.Context()
	s := memstore.New(nil)
	type kept struct {
		got, want any
	}
	var all []kept
	keep := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		// want is a deep copy through JSON, decoded into a value of v's
		// own type.
		want := reflect.New(reflect.TypeOf(v))
		if err := json.Unmarshal(b, want.Interface()); err != nil {
			t.Fatal(err)
		}
		all = append(all, kept{got: v, want: want.Elem().Interface()})
	}
	// Thirty conversations and runs, each written again and again after
	// it was read, so that their text grows past what was handed out.
	const n = 30
	convs := make([]string, n)
	runs := make([]string, n)
	for k := range n {
		conv, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: "t1", AgentID: "a", AgentVersion: "1.0.0", Title: fmt.Sprint("title ", k)})
		if err != nil {
			t.Fatal(err)
		}
		convs[k], runs[k] = conv.ID, fmt.Sprintf("run-%d-%s", k, strings.Repeat("r", k))
		if err := s.Write(ctx, bindings.RunSnapshotWriteInput{TenantID: "t1", RunID: runs[k], FlowID: "agent.turn", FlowVersion: "1.1.0",
			AgentID: "a", AgentVersion: "1.0.0", ConversationID: conv.ID, Input: json.RawMessage(fmt.Sprintf(`{"n":%d,"s":%q}`, k, strings.Repeat("x", k)))}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: "t1", RunID: runs[k], FlowID: "agent.turn", FlowVersion: "1.1.0"}); err != nil {
			t.Fatal(err)
		}
	}
	write := func(i int) {
		conv, run := convs[i%n], runs[i%n]
		entries := make([]bindings.JournalEntry, 3)
		for k := range entries {
			entries[k] = bindings.JournalEntry{Key: fmt.Sprintf("step-%d-%d", i, k), Node: "node" + strings.Repeat("n", k), Status: bindings.StepCompleted,
				Output: json.RawMessage(fmt.Sprintf(`{"i":%d,"k":%d,"pad":%q}`, i, k, strings.Repeat("p", (i*7+k)%300)))}
		}
		if _, _, err := appendSteps(ctx, s, journal.CommitInput{TenantID: "t1", RunID: run, Entries: entries}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendMessage(ctx, bindings.AppendMessageInput{TenantID: "t1", ConversationID: conv, Role: bindings.RoleAgent,
			Content: fmt.Sprintf("answer %d %s", i, strings.Repeat("c", i%200)), RunID: run,
			ToolCalls: []bindings.ToolCall{{ID: fmt.Sprint("call-", i), Name: fmt.Sprint("tool.", i), Arguments: json.RawMessage(fmt.Sprintf(`{"q":%d}`, i))}}}); err != nil {
			t.Fatal(err)
		}
		if i%11 != 0 {
			return
		}
		msgs, err := s.ReadMessages(ctx, bindings.ReadMessagesInput{TenantID: "t1", ConversationID: conv, Limit: -1})
		if err != nil {
			t.Fatal(err)
		}
		keep(msgs)
		journal, err := s.ReadJournal(ctx, "t1", run)
		if err != nil {
			t.Fatal(err)
		}
		keep(journal)
		snap, err := s.Read(ctx, "t1", run)
		if err != nil {
			t.Fatal(err)
		}
		keep(snap)
	}
	for i := range 900 {
		write(i)
	}
	for i, k := range all {
		if d := cmp.Diff(k.want, k.got); d != "" {
			t.Fatalf("value %d read earlier changed after later writes (-then +now):\n%s", i, d)
		}
	}
}
