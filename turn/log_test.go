package turn_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/turn"
)

// captured is one log record with its attributes (the logger's With
// attributes included) as strings.
type captured struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

// captureHandler is a slog.Handler keeping every record.
type captureHandler struct {
	mu      *sync.Mutex
	records *[]captured
	with    []slog.Attr
	level   slog.Level
}

func newCapture(level slog.Level) *captureHandler {
	return &captureHandler{mu: &sync.Mutex{}, records: &[]captured{}, level: level}
}

func (h *captureHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *captureHandler) Handle(_ context.Context, rec slog.Record) error {
	c := captured{level: rec.Level, msg: rec.Message, attrs: map[string]string{}}
	for _, a := range h.with {
		c.attrs[a.Key] = a.Value.String()
	}
	rec.Attrs(func(a slog.Attr) bool {
		c.attrs[a.Key] = a.Value.String()
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.records = append(*h.records, c)
	return nil
}

func (h *captureHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.with = append(append([]slog.Attr(nil), h.with...), as...)
	return &c
}

func (h *captureHandler) WithGroup(string) slog.Handler { return h }

func (h *captureHandler) all() []captured {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]captured(nil), *h.records...)
}

// secretContent is in the user message, the tool's input and output and
// the model's answer: it must reach no record unless LogContent is set.
const secretContent = "zebra-7731"

// loggingFixture is the turn fixture of script whose bindings log to a
// capture of the records at level and above.
func loggingFixture(t *testing.T, script []scripted.Response, level slog.Level) (*fixture, turn.Bindings, *captureHandler) {
	t.Helper()
	f := newFixture(t, script, nil)
	h := newCapture(level)
	b := f.bindings()
	b.Logger = slog.New(h)
	return f, b, h
}

func loggedTurn(t *testing.T, logContent bool) (*captureHandler, turn.Result, *fixture) {
	t.Helper()
	f, b, h := loggingFixture(t, nil, slog.LevelDebug)
	f.addTool("acme.lookup", "1.0.0", json.RawMessage(`{"type":"object"}`), func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
		return json.RawMessage(`{"found":"` + secretContent + `"}`), nil
	})
	a, err := agent.Define(agent.Spec{
		ID: "acme.logged", Version: "1.2.0", Name: "Logged", Instructions: "Look things up.",
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
		Tools:        []agent.ToolRef{{ID: "acme.lookup", Version: "^1.0.0"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	b.Providers = bindings.Providers{&keyedProvider{Calls: map[string]int{}, Answers: map[string]bindings.GenerateResponse{
		"agent-loop/1/model-call": {ToolCalls: []bindings.ToolCall{{ID: "call_1", Name: "acme.lookup", Arguments: json.RawMessage(`{"q":"` + secretContent + `"}`)}}},
		"agent-loop/2/model-call": {Text: "It is " + secretContent + "."},
	}}}
	b.LogContent = logContent
	conv, err := f.store.OpenConversation(t.Context(), bindings.OpenConversationInput{TenantID: tenant, AgentID: a.ID, AgentVersion: a.Version})
	if err != nil {
		t.Fatal(err)
	}
	res, err := turn.Invoke(t.Context(), turn.Input{TenantID: tenant, Agent: a, ConversationID: conv.ID, UserMessage: "Find " + secretContent, RunID: "run-logged"}, b)
	if err != nil || res.Status != turn.StatusCompleted {
		t.Fatalf("Invoke: %+v, %v", res, err)
	}
	return h, res, f
}

func TestLoggerRecordsTheLifecycleWithoutContent(t *testing.T) {
	h, _, _ := loggedTurn(t, false)
	recs := h.all()
	var msgs, stepKeys []string
	for _, r := range recs {
		if r.level != slog.LevelDebug {
			t.Errorf("record %q at level %v, want debug", r.msg, r.level)
		}
		for k, want := range map[string]string{"run_id": "run-logged", "tenant_id": tenant, "agent": "acme.logged@1.2.0"} {
			if r.attrs[k] != want {
				t.Errorf("record %q: %s = %q, want %q", r.msg, k, r.attrs[k], want)
			}
		}
		for k, v := range r.attrs {
			if strings.Contains(v, secretContent) {
				t.Errorf("record %q leaks content in %s=%q", r.msg, k, v)
			}
		}
		if r.msg == "turn step run" {
			stepKeys = append(stepKeys, r.attrs["key"])
			if r.attrs["duration"] == "" || r.attrs["node"] == "" {
				t.Errorf("step record without node or duration: %v", r.attrs)
			}
			continue
		}
		msgs = append(msgs, r.msg)
	}
	if diff := cmp.Diff([]string{"turn run started", "turn completed"}, msgs); diff != "" {
		t.Errorf("lifecycle records (-want +got):\n%s", diff)
	}
	wantSteps := []string{
		"setup", "render-prompt", "persist-user-message", "run-retrievals", "build-initial-messages",
		"agent-loop/1/model-call", "agent-loop/1/model-call/message", "agent-loop/1/dispatch-tools",
		"agent-loop/1/dispatch-tools/call_1", "agent-loop/1/dispatch-tools/call_1/message", "agent-loop/1/budget-check",
		"agent-loop/2/model-call", "agent-loop/2/budget-check", "evaluate-guardrails",
		"persist-final-message", "persist-provenance", "compose-result",
	}
	if diff := cmp.Diff(wantSteps, stepKeys); diff != "" {
		t.Errorf("steps logged (-want +got):\n%s", diff)
	}
	if last := recs[len(recs)-1]; last.attrs["model_calls"] != "2" || last.attrs["tool_calls"] != "1" {
		t.Errorf("completed record %v, want its usage", last.attrs)
	}
}

func TestLoggerWithLogContentRecordsOutputs(t *testing.T) {
	h, _, _ := loggedTurn(t, true)
	leaked := false
	for _, r := range h.all() {
		if r.msg == "turn step run" && r.attrs["key"] == "agent-loop/1/dispatch-tools/call_1" && strings.Contains(r.attrs["output"], secretContent) {
			leaked = true
		}
	}
	if !leaked {
		t.Error("with LogContent the tool call's output is not logged")
	}
}

func TestLoggerRecordsReplayParkAndFailure(t *testing.T) {
	f, b, h := loggingFixture(t, emailThenAnswer(), slog.LevelDebug)
	res := f.park(t, b, "Send the draft.")
	_, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID, Agent: f.agent}, b)
	if err == nil {
		t.Fatal("Resume of a pending approval succeeded")
	}
	var msgs []string
	replayed := 0
	for _, r := range h.all() {
		switch r.msg {
		case "turn step run":
		case "turn step replayed":
			replayed++
		case "turn failed":
			msgs = append(msgs, r.msg+" "+r.attrs["code"]+" resumable="+r.attrs["resumable"])
		case "turn parked":
			msgs = append(msgs, r.msg+" "+r.attrs["approval_ids"])
		default:
			msgs = append(msgs, r.msg)
		}
	}
	want := []string{
		"turn run started", "turn parked [" + res.Approvals[0].ID + "]",
		"turn run resumed", "turn failed hitl-required resumable=true",
	}
	if diff := cmp.Diff(want, msgs); diff != "" {
		t.Errorf("lifecycle records (-want +got):\n%s", diff)
	}
	if replayed == 0 {
		t.Error("the resumed drive logged no replayed step")
	}
}

func TestLoggerAboveDebugLogsNothing(t *testing.T) {
	f, b, h := loggingFixture(t, searchThenAnswer(), slog.LevelInfo)
	if _, err := turn.Invoke(t.Context(), f.input("Draft a clause."), b); err != nil {
		t.Fatal(err)
	}
	if n := len(h.all()); n != 0 {
		t.Fatalf("%d records with an info-level handler, want none", n)
	}
}
