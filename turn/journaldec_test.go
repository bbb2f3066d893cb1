package turn

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/journalcodec"
	"github.com/kindgi/agents/turn/internal/drive"
)

// sameAsUnmarshal decodes raw as T with the fast decoder and, when it
// reads raw, checks json.Unmarshal accepts raw and gives the same value.
// It reports whether the fast decoder read raw.
func sameAsUnmarshal[T any](t testing.TB, raw []byte) bool {
	t.Helper()
	var got T
	if !journalcodec.Decode(raw, &got, false) {
		return false
	}
	var want T
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatalf("%T: the fast decoder read %q, which json.Unmarshal refuses: %v", want, raw, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%T of %q:\nfast      %#v\nUnmarshal %#v", want, raw, got, want)
	}
	return true
}

// sameForEveryType runs sameAsUnmarshal for every type with a decoder, and
// drive.ParkedElapsedMs against json.Unmarshal; it returns how many read raw.
func sameForEveryType(t testing.TB, raw []byte) int {
	t.Helper()
	n := 0
	for _, ok := range []bool{
		sameAsUnmarshal[setupState](t, raw),
		sameAsUnmarshal[[]bindings.ChatMessage](t, raw),
		sameAsUnmarshal[bindings.ConversationMessage](t, raw),
		sameAsUnmarshal[bindings.GenerateResponse](t, raw),
		sameAsUnmarshal[[]callPlan](t, raw),
		sameAsUnmarshal[toolResult](t, raw),
		sameAsUnmarshal[budgetState](t, raw),
		sameAsUnmarshal[approvalOutcome](t, raw),
		sameAsUnmarshal[parkRecord](t, raw),
		sameAsUnmarshal[composeRecord](t, raw),
		sameAsUnmarshal[string](t, raw),
		sameAsUnmarshal[[]RetrievedFact](t, raw),
		sameAsUnmarshal[Input](t, raw),
	} {
		if ok {
			n++
		}
	}
	var pr struct {
		ElapsedMs int64 `json:"elapsedMs"`
	}
	err := json.Unmarshal(raw, &pr)
	if ms, ok := drive.ParkedElapsedMs(raw); ok != (err == nil) || (ok && ms != pr.ElapsedMs) {
		t.Fatalf("drive.ParkedElapsedMs(%q) = %d, %v; json.Unmarshal: %d, %v", raw, ms, ok, pr.ElapsedMs, err)
	}
	return n
}

// journalSamples are step outputs as the journal stores them: the
// encoders' and json.Marshal's output for values of every decoded type,
// with the fields a journal may hold set.
func journalSamples(t testing.TB) map[string][]byte {
	t.Helper()
	at := time.Date(2026, 3, 14, 9, 0, 0, 123456789, time.UTC)
	cost, steps, wall, after, maxTimeout := 0.25, 4, int64(30_000), 3, int64(60_000)
	yes, no := true, false
	allow := []string{"openai"}
	setup := setupState{
		Now: at, TurnNumber: 3,
		Tools: []bindings.ToolDescriptor{
			{ID: "acme.clause-search", Version: "1.2.0", Description: "Search <clauses> & more",
				InputSchema:  json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","minLength":1}},"required":["query"]}`),
				OutputSchema: json.RawMessage(`{"type":"object"}`)},
			{ID: "acme.send-email", Version: "2.1.3", Secrets: []string{"smtp"}, Env: map[string]string{"HOST": "mail"},
				Config:      map[string]any{"n": 1.5, "list": []any{"a", true, nil, map[string]any{}}, "nested": map[string]any{"x": "é"}},
				Annotations: &bindings.ToolAnnotations{Title: "Send", ReadOnlyHint: true, DestructiveHint: &yes, OpenWorldHint: &no},
				Gate:        &agent.ToolGate{Mode: agent.GateAlwaysAsk, RequiredRole: "lead"}},
		},
		Guardrails: []bindings.Guardrail{{ID: "acme.no-pii", Kind: "pattern", CheckID: "no-pii", Action: "halt", Config: json.RawMessage(`{"p":[1,2]}`)}},
		Policy: Policy{AllowProviders: &allow, DenyModels: []string{"m-old"}, MaxCostUsd: &cost, MaxSteps: &steps, MaxWallMs: &wall,
			Hitl: &bindings.HitlSpec{MaxTimeoutMs: &maxTimeout, MinReviewerRole: "lead", ToolFloors: map[string]agent.ToolGate{"*": {Mode: agent.GateAskOnFirstUse}}, OnTimeout: "deny", AfterTurns: &after}},
		Route: ProviderRef{Provider: "keyed", Model: "keyed-1"},
		Model: bindings.ModelInfo{ID: "keyed-1", Features: []string{"tool-use"}, ContextWindow: 8000, InputPricePerMTok: 0.5, OutputPricePerMTok: 1.25},
		Hitl: EffectiveHitlPolicy{TimeoutMs: 86_400_000, ReviewerRole: "standard", OnTimeout: "escalate", AfterTurns: &after,
			ToolGates:  &agent.ToolGates{Default: &agent.ToolGate{Mode: agent.GateNeverAsk}, Overrides: map[string]agent.ToolGate{"acme.send-email": {Mode: agent.GateAlwaysAsk}}},
			ToolFloors: map[string]agent.ToolGate{"acme.send-email": {Mode: agent.GateAlwaysAsk, RequiredRole: "lead"}}},
		SessionGate:  SessionGateResult{Required: true, AfterTurns: 3, TurnNumber: 3, Reason: "past the gate"},
		Budget:       budgetCaps{MaxSteps: 6, MaxCostUsd: &cost, MaxWallMs: 60_000, MaxToolCalls: 64},
		HistoryLimit: 20,
	}
	calls := []bindings.ToolCall{{ID: "call_1", Name: "acme.send-email", Arguments: json.RawMessage(`{"to":"legal@globex.test","n":[1,-2.5e3,0]}`)}}
	msg := bindings.ConversationMessage{TenantID: "acme", ConversationID: "conv-1", ID: "run/agent-loop/1/model-call/message", Seq: 2,
		Role: bindings.RoleAgent, Content: "line\n\"quoted\" <b> & \t tab", ToolCalls: calls, ToolCallID: "call_0", TurnNumber: 1,
		RunID: "run", ParticipantID: "p-1", Metadata: json.RawMessage(`{"toolId":"x","status":"ok"}`), CreatedAt: at}
	samples := map[string]any{
		"setup":          setup,
		"setup-minimal":  setupState{Now: at, Tools: []bindings.ToolDescriptor{}, Guardrails: []bindings.Guardrail{}},
		"messages":       []bindings.ChatMessage{{Role: bindings.ChatSystem, Content: "You draft clauses."}, {Role: bindings.ChatAssistant, ToolCalls: calls}, {Role: bindings.ChatTool, Content: `{"sent":true}`, ToolCallID: "call_1"}},
		"message":        msg,
		"message-plain":  bindings.ConversationMessage{TenantID: "acme", ConversationID: "c", ID: "m", Seq: 1, Role: bindings.RoleUser, Content: "Send the draft.", TurnNumber: 1, CreatedAt: at},
		"response":       bindings.GenerateResponse{Text: "Here.", ToolCalls: calls, FinishReason: "tool_calls", Model: "m-1", Usage: bindings.Usage{InputTokens: 100, OutputTokens: 10, CostUsd: 0.001}},
		"plans":          []callPlan{{ID: "call_1", Key: "agent-loop/1/dispatch-tools/call_1", ToolID: "acme.send-email", ToolVersion: "2.1.3", Arguments: calls[0].Arguments, Action: actionApprove, Status: "s", Message: "m", ReviewerRole: "standard", Reason: "always asks"}},
		"tool-result":    toolResult{Status: toolOK, Output: json.RawMessage(`{"sent":true}`), Error: "e"},
		"budget":         budgetState{ModelCalls: 2, CostUsd: 0.003, ElapsedMs: 12},
		"approval":       approvalOutcome{Status: approvalEscalated, ApprovalID: "a-1", Reviewer: "rita", Comment: "ok", NextRole: "lead"},
		"park":           parkRecord{Request: bindings.ApprovalRequest{TenantID: "acme", ID: "a-1", RunID: "run", ConversationID: "conv-1", ToolCallID: "call_1", ToolID: "acme.send-email", ToolVersion: "2.1.3", Arguments: calls[0].Arguments, ReviewerRole: "standard", Reason: "r", CreatedAt: at, ExpiresAt: at.Add(24 * time.Hour)}, ElapsedMs: 42},
		"compose":        composeRecord{Status: StatusCompleted, MessageID: "m-9"},
		"prompt":         "You draft contract clauses for Acme LLP. Today is 2026-03-14.",
		"retrieved":      []RetrievedFact{},
		"input":          Input{TenantID: "acme", ProjectID: "p", ConversationID: "conv-1", UserMessage: "Send it", Parameters: map[string]any{"firmName": "Acme LLP", "n": 3.0, "l": []any{"x"}}, ParticipantID: "u", DryRun: true, Principal: &bindings.Principal{ID: "u-1", Roles: []string{"lead"}}, RunID: "run"},
		"input-settings": Input{TenantID: "acme", ConversationID: "conv-1", UserMessage: "x", ModelSettings: bindings.ModelSettings{Stop: []string{"x"}}},
	}
	out := map[string][]byte{}
	for name, v := range samples {
		var raw []byte
		var err error
		switch v := v.(type) {
		case bindings.ConversationMessage:
			raw, err = encodeOutput(&v)
		case bindings.GenerateResponse:
			raw, err = encodeOutput(&v)
		case toolResult:
			raw, err = encodeOutput(&v)
		case budgetState:
			raw, err = encodeOutput(&v)
		default:
			raw, err = json.Marshal(v)
		}
		if err != nil {
			t.Fatalf("encode %s: %v", name, err)
		}
		out[name] = raw
	}
	return out
}

// TestFastDecodeMatchesUnmarshal: every step output the journal writes
// is read by its fast decoder (the replay does not fall back), with the
// value json.Unmarshal gives.
func TestFastDecodeMatchesUnmarshal(t *testing.T) {
	deferred := map[string]bool{"input-settings": true} // modelSettings go to encoding/json
	for name, raw := range journalSamples(t) {
		if n := sameForEveryType(t, raw); n == 0 && !deferred[name] {
			t.Errorf("%s: no fast decoder reads %s", name, raw)
		}
	}
}

// TestFastDecodeDefers: forms the decoders leave to encoding/json, and
// JSON that is not valid, are not read fast (and sameForEveryType checks
// nothing read differs from json.Unmarshal).
func TestFastDecodeDefers(t *testing.T) {
	for _, raw := range []string{
		`{"status":"ok","Status":"x"}`,           // a key in another case
		`{"status":"ok","status":"again"}`,       // repeated
		`{"status":"\ud83d\ude00"}`,              // a surrogate pair
		"{\"status\":\"\xff\"}",                  // invalid UTF-8
		`{"status":null}`,                        // null
		`{"modelCalls":1.0}`,                     // not an integer
		`{"modelCalls":99999999999999999999}`,    // out of range
		`{"status":"ok"} x`,                      // trailing bytes
		`{"status":"ok",}`,                       // not JSON
		`{"output":{"a":01},"status":"ok"}`,      // not JSON inside a raw value
		`{"output":"\x01","status":"ok"}`,        // control byte
		`[{"role":"user","content":"a"},]`,       // not JSON
		`{"st\u0061tus":"ok"}`,                   // an escaped key
		`{"status":"ok","unknown":1}`,            // an unknown key
		`"abc`,                                   // unterminated
		`{"request":{"id":"a"},"elapsedMs":1e3}`, // elapsed not an integer
	} {
		if n := sameForEveryType(t, []byte(raw)); n != 0 {
			t.Errorf("%s: read by %d fast decoders, want none", raw, n)
		}
	}
	// Integers at the edges, read by the budget decoder.
	for _, raw := range []string{
		`{"modelCalls":-0,"costUsd":0,"elapsedMs":9223372036854775807}`,
		`{"modelCalls":123456789012345678,"costUsd":-1.5e-7,"elapsedMs":-9223372036854775808}`,
		`{"modelCalls":999999999999999999,"costUsd":1,"elapsedMs":1000000000000000000}`,
	} {
		if n := sameForEveryType(t, []byte(raw)); n != 1 {
			t.Errorf("%s: read by %d fast decoders, want 1 (budget)", raw, n)
		}
	}
	if n := sameForEveryType(t, []byte(`{"elapsedMs":9223372036854775808}`)); n != 0 {
		t.Errorf("an int64 overflow was read by %d fast decoders", n)
	}
	// Escapes the decoders do read.
	for _, raw := range []string{`"a\"b\\c\/d\b\f\n\r\t\u00e9\u003c"`, `"é ü 日本"`, ` "x" `} {
		if n := sameForEveryType(t, []byte(raw)); n != 1 {
			t.Errorf("%s: read by %d fast decoders, want 1 (string)", raw, n)
		}
	}
}

// FuzzFastDecode: for any input, a fast decoder either declines or gives
// what json.Unmarshal gives.
func FuzzFastDecode(f *testing.F) {
	for _, raw := range journalSamples(f) {
		f.Add(raw)
	}
	for _, s := range []string{`[]`, `{}`, `""`, `"\u00e9"`, `{"status":"ok","output":[1,{"a":null}]}`, strings.Repeat("[", 80) + strings.Repeat("]", 80)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		sameForEveryType(t, raw)
	})
}

// TestEncodeApprovalOutcomeMatchesMarshal: an approval outcome is
// journaled as json.Marshal writes it.
func TestEncodeApprovalOutcomeMatchesMarshal(t *testing.T) {
	for _, o := range []approvalOutcome{
		{},
		{Status: approvalApproved, ApprovalID: "run/agent-loop/1/dispatch-tools/call_1/approval"},
		{Status: approvalDenied, ApprovalID: "a", Reviewer: "rita", Comment: "not <now> & \"never\"\n"},
		{Status: approvalEscalated, ApprovalID: "a", NextRole: "lead"},
		{Status: approvalDenied, ApprovalID: "a", Comment: "é\u2028\x01\xff"},
	} {
		got, err := encodeApprovalOutcome(&o)
		want, _ := json.Marshal(o)
		if err != nil || string(got) != string(want) {
			t.Errorf("encodeApprovalOutcome(%+v) = %s, %v; json.Marshal: %s", o, got, err, want)
		}
	}
}
