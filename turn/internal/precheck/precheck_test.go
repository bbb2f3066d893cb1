package precheck

import (
	"strings"
	"testing"

	agents "github.com/kindgi/agents"
)

func TestBindings(t *testing.T) {
	all := Bound{Providers: true, Tools: true, Conversations: true, Snapshots: true, Runs: true}
	if err := Bindings(all); err != nil {
		t.Fatalf("all bound: %v", err)
	}
	err := Bindings(Bound{Tools: true, Snapshots: true, NeedMemory: true})
	want := "turn.Bindings lacks required bindings: Providers, Conversations, Runs, Memory (the agent has retrieval intents)"
	if agents.CodeOf(err) != agents.CodeInvalidBindings || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want %q", err, want)
	}
}

func TestInput(t *testing.T) {
	ok := Turn{TenantID: "t", ConversationID: "c", UserMessage: "hi", AgentID: "a", AgentVersion: "1.0.0"}
	if err := Input(ok); err != nil {
		t.Fatalf("valid input: %v", err)
	}
	for _, in := range []Turn{
		{ConversationID: "c", UserMessage: "hi", AgentID: "a", AgentVersion: "1"},
		{TenantID: "t", ConversationID: "c", UserMessage: " ", AgentID: "a", AgentVersion: "1"},
		{TenantID: "t", ConversationID: "c", UserMessage: "hi", AgentID: "a"},
		{TenantID: "t", ConversationID: "c", UserMessage: "hi", AgentID: "a", AgentVersion: "1", RunID: "bad\nid"},
	} {
		if agents.CodeOf(Input(in)) == "" {
			t.Errorf("%+v: accepted", in)
		}
	}
}
