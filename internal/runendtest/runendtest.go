// Package runendtest checks, over any store, that a turn whose model
// answer, tool output, tool arguments or user message holds a value a
// store might refuse (NUL, bytes that are not UTF-8, JSON escapes jsonb
// refuses) ends its run: completed with the value read back byte for
// byte, or failed with a code that is not retryable — never left running.
// memstore's and pgstore's tests run it.
package runendtest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

// Store is what a turn needs of one store.
type Store interface {
	bindings.ConversationBinding
	bindings.RunSnapshotBinding
	bindings.RunBinding
	bindings.HitlBinding
}

// Tenant is the tenant the cases run in.
const Tenant = "runend-tenant"

// oddTexts are free texts a store must hold (bindings/doc.go).
var oddTexts = map[string]string{
	"NUL":        "a\x00b",
	"only NUL":   "\x00",
	"not UTF-8":  "bad \xff\xfe bytes \xed\xa0\x80",
	"escape NUL": `a literal \u0000 escape`,
	"FDD0":       "\uFDD0 noncharacter \x00",
}

// oddDocs are JSON documents a store must hold by value.
var oddDocs = map[string]string{
	"NUL escape":     `{"answer":"4\u00002"}`,
	"only NUL":       `"\u0000"`,
	"lone surrogate": `{"a":"\ud800"}`,
	"NUL key":        `{"\u0000":"x"}`,
}

// Run runs every position case on a fresh store from newStore. A case
// passes when the turn completes and every stored value reads back as
// the turn saw it, or when the turn fails with a code that is not
// retryable and the run is stored as failed with nothing left running.
func Run(t *testing.T, newStore func(t *testing.T) Store) {
	t.Helper()
	for name, text := range oddTexts {
		t.Run("ModelAnswer/"+name, func(t *testing.T) {
			c := newCase(t, newStore(t), scripted.Say(text))
			res := c.invoke(t, "What is it?")
			if res != nil && res.Response.Content != text {
				t.Errorf("response %q, want %q", res.Response.Content, text)
			}
			c.wantMessages(t, res, "What is it?", text)
		})
		t.Run("UserMessage/"+name, func(t *testing.T) {
			c := newCase(t, newStore(t), scripted.Say("Fine."))
			user := "Hi " + text
			res := c.invoke(t, user)
			// The run's input is a JSON document (its snapshot), so a
			// user message holds what JSON holds: bytes that are not
			// UTF-8 read back as U+FFFD, as encoding/json writes them.
			var want string
			if err := json.Unmarshal([]byte(jsonString(user)), &want); err != nil {
				t.Fatal(err)
			}
			c.wantMessages(t, res, want, "Fine.")
		})
		t.Run("ToolArguments/"+name, func(t *testing.T) {
			c := newCase(t, newStore(t), scripted.Call("call_1", "acme.lookup", map[string]any{"q": text}), scripted.Say("Done."))
			res := c.invoke(t, "Look it up.")
			if res != nil && !sameJSON(c.args, `{"q":`+jsonString(text)+`}`) {
				t.Errorf("the tool got %s", c.args)
			}
		})
	}
	for name, doc := range oddDocs {
		t.Run("ToolOutput/"+name, func(t *testing.T) {
			c := newCase(t, newStore(t), scripted.Call("call_1", "acme.lookup", map[string]any{"q": "x"}), scripted.Say("Done."))
			c.output = json.RawMessage(doc)
			res := c.invoke(t, "Look it up.")
			if res == nil {
				return
			}
			msgs := c.read(t)
			var found bool
			for _, m := range msgs {
				if m.Role == bindings.RoleTool {
					found = true
					if !sameJSON(m.Content, doc) {
						t.Errorf("tool message %q, want %s", m.Content, doc)
					}
				}
			}
			if !found {
				t.Errorf("no tool message in %d messages", len(msgs))
			}
		})
	}
	// A store that refuses a message for good (a value it cannot hold):
	// the refusal is the run's outcome, not a run left running.
	for name, script := range map[string][]scripted.Response{
		"FinalAnswer": {scripted.Say("the " + refuseMark + " answer")},
		"ToolMessage": {scripted.Call("call_1", "acme.lookup", map[string]any{"q": refuseMark}), scripted.Say("Done.")},
	} {
		t.Run("Refused/"+name, func(t *testing.T) {
			c := newCase(t, newStore(t), script...)
			c.output = json.RawMessage(`{"echo":"` + refuseMark + `"}`)
			c.b.Conversations = refusing{c.b.Conversations}
			c.b.Journal = nil // the wrapper is the journal: journal.Adapt of it
			if res := c.invoke(t, "Go."); res != nil {
				t.Fatalf("a refused message completed the turn: %+v", res.Response)
			}
		})
	}
	t.Run("Refused/JournalEntry", func(t *testing.T) {
		c := newCase(t, newStore(t), scripted.Call("call_1", "acme.lookup", map[string]any{"q": "x"}), scripted.Say("Done."))
		c.output = json.RawMessage(`{"echo":"` + refuseMark + `"}`)
		c.b.Runs = refusingRuns{RunBinding: c.b.Runs}
		c.b.Journal = nil // the wrapper is the journal: journal.Adapt of it
		if res := c.invoke(t, "Go."); res != nil {
			t.Fatalf("a refused journal entry completed the turn: %+v", res.Response)
		}
	})
	t.Run("Refused/FinalEntry", func(t *testing.T) {
		c := newCase(t, newStore(t), scripted.Say("Done."))
		c.b.Runs = refusingRuns{RunBinding: c.b.Runs, completed: turn.NodeComposeResult}
		c.b.Journal = nil // the wrapper is the journal: journal.Adapt of it
		if res := c.invoke(t, "Go."); res != nil {
			t.Fatalf("a refused final entry completed the turn: %+v", res.Response)
		}
	})
	t.Run("ToolOutput/InvalidJSON", func(t *testing.T) {
		c := newCase(t, newStore(t), scripted.Call("call_1", "acme.lookup", map[string]any{"q": "x"}), scripted.Say("Done."))
		c.output = json.RawMessage("{\"a\":\"raw \x00 NUL and \xff\"}")
		c.invoke(t, "Look it up.")
	})
}

// refuseMark marks the messages refusing refuses.
const refuseMark = "REFUSE-ME"

// refusing is a conversation binding that refuses, as a store refuses a
// value it cannot hold (invalid-message, not retryable), every message
// whose content holds refuseMark. It is a binding of its own, so the turn
// appends messages through it alone.
type refusing struct{ bindings.ConversationBinding }

// AppendMessage refuses a message holding refuseMark.
func (r refusing) AppendMessage(ctx context.Context, in bindings.AppendMessageInput) (bindings.ConversationMessage, error) {
	if strings.Contains(in.Content, refuseMark) {
		return bindings.ConversationMessage{}, &agents.InvalidMessageError{Reason: "the store refuses this content"}
	}
	return r.ConversationBinding.AppendMessage(ctx, in)
}

// refusingRuns is a run binding that refuses for good (invalid-message)
// every journal entry whose output holds refuseMark, and the completed
// entry of the step key completed, as a store refuses a value it cannot
// hold; a binding of its own, so the turn writes entries one at a time
// through it.
type refusingRuns struct {
	bindings.RunBinding
	completed string
}

// AppendStep refuses an entry holding refuseMark, or completing the key
// r.completed.
func (r refusingRuns) AppendStep(ctx context.Context, in bindings.AppendStepInput) (bindings.JournalEntry, bool, error) {
	if strings.Contains(string(in.Entry.Output), refuseMark) || (in.Entry.Key == r.completed && in.Entry.Status == bindings.StepCompleted) {
		return bindings.JournalEntry{}, false, &agents.InvalidMessageError{Reason: "the store refuses this entry"}
	}
	return r.RunBinding.AppendStep(ctx, in)
}

// runCase is one turn over a fresh store: an agent with one tool,
// acme.lookup, that records its arguments and returns output.
type runCase struct {
	store    Store
	b        turn.Bindings
	provider *scripted.Provider
	agent    agent.Agent
	conv     string
	onCall   func() // called in each call of the tool, before it returns
	args     string
	output   json.RawMessage
}

func newCase(t *testing.T, s Store, script ...scripted.Response) *runCase {
	t.Helper()
	return newCaseGated(t, s, false, script...)
}

// newCaseGated is newCase; gated makes the agent ask for approval before
// each call of its tool.
func newCaseGated(t *testing.T, s Store, gated bool, script ...scripted.Response) *runCase {
	t.Helper()
	spec := agent.Spec{
		ID: "acme.runend", Version: "1.0.0", Name: "Runend", Instructions: "You look things up.",
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
		Tools:        []agent.ToolRef{{ID: "acme.lookup", Version: "^1.0.0"}},
	}
	if gated {
		spec.ConversationPolicy = &agent.ConversationPolicy{Hitl: &agent.HitlPolicy{Tools: &agent.ToolGates{
			Overrides: map[string]agent.ToolGate{"acme.lookup": {Mode: agent.GateAlwaysAsk}},
		}}}
	}
	a, err := agent.Define(spec)
	if err != nil {
		t.Fatal(err)
	}
	c := &runCase{store: s, agent: a, output: json.RawMessage(`{"answer":"42"}`)}
	tools := registry.NewTools()
	err = tools.Add(Tenant, bindings.ToolDescriptor{
		ID: "acme.lookup", Version: "1.0.0", Description: "Look a term up.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}, func(_ context.Context, args json.RawMessage, _ bindings.CallContext) (json.RawMessage, error) {
		c.args = string(args)
		if c.onCall != nil {
			c.onCall()
		}
		return c.output, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c.provider = scripted.New(script, nil)
	c.b = turn.Bindings{
		Providers: bindings.Providers{c.provider}, Tools: tools,
		Conversations: s, Snapshots: s, Runs: s, Hitl: s,
	}
	c.b.Journal, _ = any(s).(journal.Driver) // the store's own, when it has one
	conv, err := s.OpenConversation(t.Context(), bindings.OpenConversationInput{TenantID: Tenant, AgentID: a.ID, AgentVersion: a.Version})
	if err != nil {
		t.Fatal(err)
	}
	c.conv = conv.ID
	return c
}

// invoke runs the turn and checks that its run ended: it returns the
// result of a completed turn, nil for a failed one.
func (c *runCase) invoke(t *testing.T, user string) *turn.Result {
	t.Helper()
	runID := "runend-" + fmt.Sprint(len(user)) + "-" + c.conv
	res, err := turn.Invoke(t.Context(), turn.Input{TenantID: Tenant, Agent: c.agent, ConversationID: c.conv, UserMessage: user, RunID: runID}, c.b)
	run, gerr := c.store.GetRun(t.Context(), Tenant, runID)
	if gerr != nil {
		t.Fatalf("GetRun after %v: %v", err, gerr)
	}
	if err != nil {
		if agents.IsRetryable(err) || agents.CodeOf(err) == "" || run.Status != bindings.RunFailed {
			t.Fatalf("Invoke: %v (code %q, retryable %v); run %s: want the run failed with a final code", err, agents.CodeOf(err), agents.IsRetryable(err), run.Status)
		}
		t.Logf("failed for good: %v", err)
		return nil
	}
	if run.Status != bindings.RunCompleted || res.Status != turn.StatusCompleted {
		t.Fatalf("turn %s, run %s: want completed", res.Status, run.Status)
	}
	if run.LastError != nil {
		t.Errorf("a completed run keeps LastError %+v", run.LastError)
	}
	// The journal holds what the drive saw: a replay returns the same.
	// (Not for an answer that is not UTF-8: the journal is JSON, and a
	// replay returns it with U+FFFD, while the first drive returns and the
	// conversation holds its bytes.)
	if !utf8.ValidString(res.Response.Content) {
		return &res
	}
	again, err := turn.Invoke(t.Context(), turn.Input{TenantID: Tenant, Agent: c.agent, ConversationID: c.conv, UserMessage: user, RunID: runID}, c.b)
	if err != nil || again.Response.Content != res.Response.Content || again.Response.MessageID != res.Response.MessageID || len(again.Appended) != len(res.Appended) {
		t.Errorf("replay: %q %s (%d appended), %v; want %q %s (%d)", again.Response.Content, again.Response.MessageID, len(again.Appended), err,
			res.Response.Content, res.Response.MessageID, len(res.Appended))
	}
	for i := range min(len(again.Appended), len(res.Appended)) {
		if a, b := again.Appended[i], res.Appended[i]; a.Content != b.Content || a.Seq != b.Seq || a.ID != b.ID {
			t.Errorf("replayed message %d: %q seq %d, want %q seq %d", i, a.Content, a.Seq, b.Content, b.Seq)
		}
	}
	return &res
}

func (c *runCase) read(t *testing.T) []bindings.ConversationMessage {
	t.Helper()
	msgs, err := c.store.ReadMessages(t.Context(), bindings.ReadMessagesInput{TenantID: Tenant, ConversationID: c.conv, Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// wantMessages checks, for a completed turn, that the conversation holds
// the user message and the final answer byte for byte.
func (c *runCase) wantMessages(t *testing.T, res *turn.Result, user, answer string) {
	t.Helper()
	if res == nil {
		return
	}
	msgs := c.read(t)
	if len(msgs) != 2 || msgs[0].Content != user || msgs[1].Content != answer {
		got := make([]string, len(msgs))
		for i, m := range msgs {
			got[i] = fmt.Sprintf("%s %q", m.Role, m.Content)
		}
		t.Errorf("conversation holds %v, want user %q and assistant %q", got, user, answer)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b string) bool {
	var va, vb any
	if json.Unmarshal([]byte(a), &va) != nil || json.Unmarshal([]byte(b), &vb) != nil {
		return a == b
	}
	ra, _ := json.Marshal(va)
	rb, _ := json.Marshal(vb)
	return string(ra) == string(rb)
}
