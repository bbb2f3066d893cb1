package turn

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/journalcodec"
	"github.com/kindgi/agents/turn/internal/drive"
)

// pinMarshal fails unless encodeOutput(&v) is json.Marshal(v), byte for
// byte, or both fail.
func pinMarshal[T any](t *testing.T, name string, v T) {
	t.Helper()
	want, werr := json.Marshal(v)
	got, gerr := encodeOutput(&v)
	if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
		t.Errorf("%s: encodeOutput = %s, %v\njson.Marshal = %s, %v", name, got, gerr, want, werr)
	}
}

func ptr[T any](v T) *T { return &v }

// strangeStrings are strings appendJSONString writes and strings it leaves
// to encoding/json.
var strangeStrings = map[string]string{
	"empty": "", "plain": "clause_search", "escapes": "a \"q\" \\ <b> & \n\r\t",
	"control": "bell \x07 \x00", "unicode": "é — \u2028 😀", "invalid": "bad \xff",
}

// The setup state is journaled with json.Marshal's bytes, whatever it
// holds: the encoder writes the common state and leaves the rest to
// encoding/json.
func TestEncodeSetupMatchesMarshal(t *testing.T) {
	at := time.Date(2026, 12, 1, 11, 0, 0, 123456789, time.UTC)
	base := func() setupState {
		return setupState{
			Now: at, TurnNumber: 3,
			Tools: []bindings.ToolDescriptor{{
				ID: "clause_search", Version: "1.0.0", Description: "Search the clause library.",
				InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
			}},
			Guardrails: []bindings.Guardrail{},
			Route:      ProviderRef{Provider: "fake", Model: "fake-1"},
			Model:      bindings.ModelInfo{ID: "fake-1", Features: []string{"tool-use"}},
			Hitl:       EffectiveHitlPolicy{TimeoutMs: 86400000, ReviewerRole: "standard", OnTimeout: "escalate"},
			SessionGate: SessionGateResult{
				TurnNumber: 3,
			},
			Budget:       budgetCaps{MaxSteps: 8, MaxWallMs: 120000, MaxToolCalls: 64},
			HistoryLimit: 50,
		}
	}
	cases := map[string]func(s *setupState){
		"anchor":        func(*setupState) {},
		"zero":          func(s *setupState) { *s = setupState{} },
		"nil lists":     func(s *setupState) { s.Tools, s.Guardrails, s.Model.Features = nil, nil, nil },
		"empty lists":   func(s *setupState) { s.Tools, s.Model.Features = []bindings.ToolDescriptor{}, []string{} },
		"zero time":     func(s *setupState) { s.Now = time.Time{} },
		"offset time":   func(s *setupState) { s.Now = at.In(time.FixedZone("x", 3600)) },
		"year 10000":    func(s *setupState) { s.Now = at.AddDate(8000, 0, 0) },
		"two tools":     func(s *setupState) { s.Tools = append(s.Tools, bindings.ToolDescriptor{ID: "b", Version: "2.0.0"}) },
		"output schema": func(s *setupState) { s.Tools[0].OutputSchema = json.RawMessage(`{"type":"object"}`) },
		"spaced schema": func(s *setupState) { s.Tools[0].InputSchema = json.RawMessage(`{ "type": "object" }`) },
		"html schema":   func(s *setupState) { s.Tools[0].InputSchema = json.RawMessage(`{"description":"<a>"}`) },
		"broken schema": func(s *setupState) { s.Tools[0].InputSchema = json.RawMessage(`{"type":`) },
		"empty schema":  func(s *setupState) { s.Tools[0].InputSchema = json.RawMessage{} },
		"secrets":       func(s *setupState) { s.Tools[0].Secrets = []string{"API_KEY", "B"} },
		"empty secrets": func(s *setupState) { s.Tools[0].Secrets = []string{} },
		"env":           func(s *setupState) { s.Tools[0].Env = map[string]string{"b": "2", "a": "1"} },
		"empty env":     func(s *setupState) { s.Tools[0].Env = map[string]string{} },
		"config":        func(s *setupState) { s.Tools[0].Config = map[string]any{"n": 1.5, "s": []any{"x"}} },
		"annotations": func(s *setupState) {
			s.Tools[0].Annotations = &bindings.ToolAnnotations{Title: "T", ReadOnlyHint: true}
		},
		"gate": func(s *setupState) { s.Tools[0].Gate = &agent.ToolGate{Mode: agent.GateAlwaysAsk} },
		"guardrail": func(s *setupState) {
			s.Guardrails = []bindings.Guardrail{{ID: "g", Kind: "k", CheckID: "c", Action: "halt"}}
		},
		"guardrail cfg": func(s *setupState) {
			s.Guardrails = []bindings.Guardrail{{ID: "g", Config: json.RawMessage(`{"max":3}`)}}
		},
		"guardrail spc": func(s *setupState) {
			s.Guardrails = []bindings.Guardrail{{ID: "g", Config: json.RawMessage(` [1, 2] `)}}
		},
		"policy lists": func(s *setupState) { s.Policy.AllowProviders, s.Policy.DenyModels = &[]string{"a", "b"}, []string{"m"} },
		"policy null":  func(s *setupState) { s.Policy.AllowModels, s.Policy.DenyProviders = new([]string), []string{} },
		"policy empty": func(s *setupState) { s.Policy.AllowModels = &[]string{} },
		"policy caps": func(s *setupState) {
			s.Policy.MaxCostUsd, s.Policy.MaxSteps, s.Policy.MaxWallMs = ptr(0.25), ptr(3), ptr(int64(9000))
		},
		"tiny cost":   func(s *setupState) { s.Policy.MaxCostUsd, s.Budget.MaxCostUsd = ptr(1e-9), ptr(1e-7) },
		"huge cost":   func(s *setupState) { s.Budget.MaxCostUsd = ptr(1e22) },
		"nan cost":    func(s *setupState) { s.Budget.MaxCostUsd = ptr(math.NaN()) },
		"zero cost":   func(s *setupState) { s.Budget.MaxCostUsd = ptr(0.0) },
		"policy hitl": func(s *setupState) { s.Policy.Hitl = &bindings.HitlSpec{} },
		"model prices": func(s *setupState) {
			s.Model.ContextWindow, s.Model.InputPricePerMTok, s.Model.OutputPricePerMTok = 128000, 2.5, 10
		},
		"after turns":  func(s *setupState) { s.Hitl.AfterTurns = ptr(4) },
		"tool gates":   func(s *setupState) { s.Hitl.ToolGates = &agent.ToolGates{} },
		"tool floors":  func(s *setupState) { s.Hitl.ToolFloors = map[string]agent.ToolGate{"*": {Mode: agent.GateAlwaysAsk}} },
		"empty floors": func(s *setupState) { s.Hitl.ToolFloors = map[string]agent.ToolGate{} },
		"session gate": func(s *setupState) {
			s.SessionGate = SessionGateResult{Required: true, AfterTurns: 2, TurnNumber: 3, Reason: "past"}
		},
		"negative counts": func(s *setupState) { s.TurnNumber, s.HistoryLimit, s.Budget.MaxWallMs = -1, -50, math.MinInt64 },
		"no tool calls":   func(s *setupState) { s.Budget.MaxToolCalls = 0 },
	}
	for name, str := range strangeStrings {
		cases["string "+name] = func(s *setupState) {
			s.Tools[0].Description, s.Route.Model, s.Model.Features, s.Hitl.ReviewerRole = str, str, []string{str}, str
		}
	}
	for name, edit := range cases {
		s := base()
		edit(&s)
		pinMarshal(t, name, s)
	}
	if s := base(); !fast(journalcodec.Append(nil, &s, nil)) {
		t.Error("the common setup state is left to encoding/json")
	}
}

// fast reports an encoder's ok.
func fast(_ []byte, ok bool) bool { return ok }

// Dispatch plans, initial messages, the rendered prompt, compose records,
// tool metadata and the empty results are journaled with json.Marshal's
// bytes.
func TestEncodeDecideOutputsMatchMarshal(t *testing.T) {
	plan := callPlan{ID: "call-1", Key: "agent-loop/1/dispatch-tools/call-1", ToolID: "clause_search", ToolVersion: "1.0.0",
		Arguments: json.RawMessage(`{"query":"nda"}`), Action: actionRun}
	plans := map[string][]callPlan{
		"nil": nil, "empty": {}, "run": {plan},
		"refused":     {plan, {ID: "c2", Key: "k2", ToolID: "x", Arguments: json.RawMessage(`{}`), Action: actionRefuse, Status: toolInvalid, Message: "invalid arguments: <x> & y"}},
		"approve":     {{ID: "c", Key: "k", ToolID: "t", Arguments: json.RawMessage(`{"a":[1,2]}`), Action: actionApprove, ReviewerRole: "senior", Reason: "always asks"}},
		"nil args":    {{ID: "c", Key: "k", ToolID: "t", Action: actionRun}},
		"spaced args": {{ID: "c", Key: "k", ToolID: "t", Arguments: json.RawMessage(`{ "a": 1 }`)}},
		"bad args":    {{ID: "c", Key: "k", ToolID: "t", Arguments: json.RawMessage(`{"a":`)}},
	}
	for name, str := range strangeStrings {
		p := plan
		p.ID, p.Message = str, str
		plans["string "+name] = []callPlan{p}
	}
	for name, v := range plans {
		pinMarshal(t, "plans "+name, v)
	}

	msgs := map[string][]bindings.ChatMessage{
		"nil": nil, "empty": {},
		"initial": {{Role: bindings.ChatSystem, Content: "You are …"}, {Role: bindings.ChatUser, Content: "Find the NDA clause."}},
		"calls": {{Role: bindings.ChatAssistant, ToolCalls: []bindings.ToolCall{{ID: "c1", Name: "x", Arguments: json.RawMessage(`{"q":"nda"}`)}}},
			{Role: bindings.ChatTool, Content: `{"clauses":[]}`, ToolCallID: "c1"}},
		"nil args":  {{Role: bindings.ChatAssistant, ToolCalls: []bindings.ToolCall{{ID: "c1", Name: "x"}}}},
		"html args": {{Role: bindings.ChatAssistant, ToolCalls: []bindings.ToolCall{{ID: "c1", Name: "x", Arguments: json.RawMessage(`{"q":"<a>"}`)}}}},
	}
	for name, str := range strangeStrings {
		msgs["string "+name] = []bindings.ChatMessage{{Role: bindings.ChatUser, Content: str, ToolCallID: str}}
	}
	for name, v := range msgs {
		pinMarshal(t, "messages "+name, v)
	}

	for name, str := range strangeStrings {
		pinMarshal(t, "string "+name, str)
		pinMarshal(t, "compose "+name, composeRecord{Status: StatusCompleted, MessageID: str})
		pinMarshal(t, "meta "+name, toolMeta{ToolID: "x", ToolVersion: str, Status: str})
		if got, want := (toolMeta{ToolID: str, Status: toolOK}).raw(), mustMarshal(t, toolMeta{ToolID: str, Status: toolOK}); !bytes.Equal(got, want) {
			t.Errorf("toolMeta.raw = %s, want %s", got, want)
		}
	}
	if !fast(journalcodec.Append(nil, ptr(plans["refused"]), nil)) || !fast(journalcodec.Append(nil, ptr(msgs["calls"]), nil)) || !fast(journalcodec.Append(nil, &composeRecord{Status: StatusCompleted, MessageID: "m"}, nil)) {
		t.Error("a common plan, message list or compose record is left to encoding/json")
	}
	pinMarshal(t, "compose suspended", composeRecord{Status: StatusSuspended})
	pinMarshal(t, "no facts", []RetrievedFact(nil))
	pinMarshal(t, "empty facts", []RetrievedFact{})
	pinMarshal(t, "a fact", []RetrievedFact{{Score: 0.5}})
	pinMarshal(t, "no outcomes", []GuardrailOutcome(nil))
	pinMarshal(t, "empty outcomes", []GuardrailOutcome{})
	pinMarshal(t, "an outcome", []GuardrailOutcome{{ID: "g", Passed: true}})
	pinMarshal(t, "no provenance", (*bindings.ProvenanceRecord)(nil))
	pinMarshal(t, "a provenance", &bindings.ProvenanceRecord{RunID: "r"})
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The snapshot's input is json.Marshal's bytes, and the input the turn
// works on is what decoding them gives, whichever encoder wrote them.
func TestInputEncodingMatchesRoundTrip(t *testing.T) {
	base := Input{TenantID: "t1", ConversationID: "C1", UserMessage: "Find the NDA clause.", RunID: "r1"}
	cases := map[string]func(in *Input){
		"plain":          func(*Input) {},
		"all fields":     func(in *Input) { in.ProjectID, in.ParticipantID, in.DryRun = "p", "u", true },
		"principal":      func(in *Input) { in.Principal = &bindings.Principal{ID: "alice", Roles: []string{"a", "b"}} },
		"empty roles":    func(in *Input) { in.Principal = &bindings.Principal{ID: "alice", Roles: []string{}} },
		"parameters":     func(in *Input) { in.Parameters = map[string]any{"n": 1} },
		"empty params":   func(in *Input) { in.Parameters = map[string]any{} },
		"settings":       func(in *Input) { in.ModelSettings.Temperature = ptr(0.5) },
		"empty stop":     func(in *Input) { in.ModelSettings.Stop = []string{} },
		"no run id":      func(in *Input) { in.RunID = "" },
		"agent":          func(in *Input) { in.Agent = agent.Agent{ID: "a", Version: "1.0.0"} },
		"escaped text":   func(in *Input) { in.UserMessage = "a \"q\" <b>\n" },
		"unicode text":   func(in *Input) { in.UserMessage = "é 😀" },
		"invalid text":   func(in *Input) { in.UserMessage = "bad \xff" },
		"control text":   func(in *Input) { in.UserMessage = "x\x01" },
		"unicode tenant": func(in *Input) { in.TenantID = "tén" },
	}
	for name, edit := range cases {
		in := base
		edit(&in)
		want, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		var decoded Input
		if err := json.Unmarshal(want, &decoded); err != nil {
			t.Fatal(err)
		}
		got, ok := appendInputJSON(&in)
		if !ok {
			if name == "plain" || name == "all fields" || name == "principal" {
				t.Errorf("%s: left to encoding/json", name)
			}
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: appendInputJSON = %s\njson.Marshal = %s", name, got, want)
		}
		if s := storedInput(&in); !reflect.DeepEqual(s, decoded) {
			t.Errorf("%s: storedInput = %#v\ndecoded = %#v", name, s, decoded)
		}
	}
}

// TestJournaledFollowsStrings: journaled is what json.Marshal makes of a
// raw document, and rawAsIs holds exactly when that is the document
// itself: whitespace inside strings (kept) or between tokens (removed),
// escapes that end or do not end a string, and the bytes compaction
// escapes.
func TestJournaledFollowsStrings(t *testing.T) {
	docs := []string{
		`{"clauses":[{"id":"C-7","title":"Mutual confidentiality (nda)"}]}`,
		`{"a": 1}`, "{\"a\":\t1}", `[1, 2]`, `"a b"`, `"a\" b"`, `"a\\" `, `"a\\"`, `"x\\\" y"`,
		`{"q":"<a>"}`, `{"q":"a&b"}`, "\"\u2028\"", "\"é\"", `{"k":"\u003c"}`, ` 1`, `1 `, `{}`, `[]`,
		`{"a":"\n"}`, `"unterminated`, `{"a":`, `nope`, "\"\xff\"",
	}
	for _, d := range docs {
		raw := json.RawMessage(d)
		want, err := json.Marshal(raw)
		got := drive.Journaled(raw)
		if err != nil {
			want = raw // not JSON: left as it is
		}
		if !bytes.Equal(got, want) {
			t.Errorf("drive.Journaled(%s) = %s, want %s", d, got, want)
		}
		if asIs := err == nil && bytes.Equal(want, raw) && validJSON(raw); journalcodec.RawAsIs(raw) != asIs {
			t.Errorf("RawAsIs(%s) = %v, want %v", d, !asIs, asIs)
		}
	}
}

// A tool output invokeTool checked and journaled is copied as it is
// (outputAsIs) with exactly json.Marshal's bytes.
func TestToolOutputAsIsMatchesMarshal(t *testing.T) {
	for _, o := range []string{`{"clauses":[{"id":"C-7","title":"Mutual confidentiality (nda)"}]}`, `{ "a" : [1, 2] }`, `"<b> & \u2028"`, "\"\u2028\"", `[]`, `null`} {
		if !validJSON([]byte(o)) {
			t.Fatalf("%s is not valid", o)
		}
		v := toolResult{Status: toolOK, Output: drive.Journaled(json.RawMessage(o)), outputAsIs: true}
		want, err := json.Marshal(v)
		got, gerr := encodeOutput(&v)
		if err != nil || gerr != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: encodeOutput = %s, %v; json.Marshal = %s, %v", o, got, gerr, want, err)
		}
	}
}

// The initial messages reuse the prompt render-prompt quoted (encodeStep)
// and are still json.Marshal's bytes, whatever the prompt holds, and a
// drive's outputs do not overlap in its arena.
func TestEncodeStepReusesThePromptsQuoting(t *testing.T) {
	for name, prompt := range map[string]string{
		"plain":   strings.Repeat("You are a contract assistant. ", 12),
		"escapes": strings.Repeat("a \"q\" <b> & \n", 10),
		"unicode": strings.Repeat("é — \u2028 ", 20),
		"short":   "Be brief.",
	} {
		r := &run{}
		p, err := encodeStep(r, &prompt)
		if want, _ := json.Marshal(prompt); err != nil || !bytes.Equal(p, want) {
			t.Fatalf("%s: prompt = %s, %v; want %s", name, p, err, want)
		}
		msgs := []bindings.ChatMessage{{Role: bindings.ChatSystem, Content: prompt}, {Role: bindings.ChatUser, Content: prompt[:5]}}
		got, err := encodeStep(r, &msgs)
		if want, _ := json.Marshal(msgs); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: messages = %s, %v; want %s", name, got, err, want)
		}
		if want, _ := json.Marshal(prompt); !bytes.Equal(p, want) {
			t.Fatalf("%s: the prompt's journaled bytes changed: %s", name, p)
		}
	}
}
