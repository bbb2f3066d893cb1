package turn

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/journalcodec"
)

// encodeOutput journals a message with exactly json.Marshal's bytes,
// whatever its strings, raw fields and time hold.
func TestEncodeOutputMessageMatchesMarshal(t *testing.T) {
	at := time.Date(2026, 12, 1, 11, 0, 0, 123456789, time.UTC)
	base := bindings.ConversationMessage{
		TenantID: "t1", ConversationID: "C1", ID: "run/persist-user-message", Seq: 3,
		Role: bindings.RoleUser, Content: "Find the NDA clause.", TurnNumber: 2, CreatedAt: at,
	}
	cases := map[string]func(m *bindings.ConversationMessage){
		"plain":        func(*bindings.ConversationMessage) {},
		"escapes":      func(m *bindings.ConversationMessage) { m.Content = "a \"q\" \\ <b> & \n\r\t end" },
		"control":      func(m *bindings.ConversationMessage) { m.Content = "bell \x07 \b \f \x00" },
		"unicode":      func(m *bindings.ConversationMessage) { m.Content = "é — ✓ \u2028 \u2029 😀" },
		"invalid utf8": func(m *bindings.ConversationMessage) { m.Content = "bad \xff\xfe" },
		"tool calls": func(m *bindings.ConversationMessage) {
			m.ToolCalls = []bindings.ToolCall{{ID: "c1", Name: "x", Arguments: json.RawMessage(`{"q":"nda"}`)}, {ID: "c2", Name: "y"}}
		},
		"args to compact": func(m *bindings.ConversationMessage) {
			m.ToolCalls = []bindings.ToolCall{{ID: "c1", Name: "x", Arguments: json.RawMessage(`{ "q": "<a>" }`)}}
		},
		"args invalid": func(m *bindings.ConversationMessage) {
			m.ToolCalls = []bindings.ToolCall{{ID: "c1", Name: "x", Arguments: json.RawMessage(`{"q":`)}}
		},
		"args empty": func(m *bindings.ConversationMessage) {
			m.ToolCalls = []bindings.ToolCall{{ID: "c1", Arguments: json.RawMessage{}}}
		},
		"optional fields":   func(m *bindings.ConversationMessage) { m.ToolCallID, m.RunID, m.ParticipantID = "c1", "r1", "p1" },
		"metadata":          func(m *bindings.ConversationMessage) { m.Metadata = json.RawMessage(`{"toolId":"x","status":"ok"}`) },
		"metadata spaced":   func(m *bindings.ConversationMessage) { m.Metadata = json.RawMessage(`{"a": 1}`) },
		"metadata invalid":  func(m *bindings.ConversationMessage) { m.Metadata = json.RawMessage(`nope`) },
		"zero time":         func(m *bindings.ConversationMessage) { m.CreatedAt = time.Time{} },
		"whole second":      func(m *bindings.ConversationMessage) { m.CreatedAt = at.Truncate(time.Second) },
		"offset":            func(m *bindings.ConversationMessage) { m.CreatedAt = at.In(time.FixedZone("x", 3600)) },
		"zero offset zone":  func(m *bindings.ConversationMessage) { m.CreatedAt = at.In(time.FixedZone("y", 0)) },
		"year out of range": func(m *bindings.ConversationMessage) { m.CreatedAt = at.AddDate(9000, 0, 0) },
		"negative seq":      func(m *bindings.ConversationMessage) { m.Seq, m.TurnNumber = -5, -1 },
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			m := base
			edit(&m)
			want, werr := json.Marshal(m)
			got, gerr := encodeOutput(&m)
			if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
				t.Fatalf("encodeOutput = %s, %v\njson.Marshal = %s, %v", got, gerr, want, werr)
			}
		})
	}
}

// Outputs of other types are json.Marshal's.
func TestEncodeOutputOtherTypes(t *testing.T) {
	v := toolResult{Status: toolOK, Output: json.RawMessage(`{"a":1}`)}
	got, err := encodeOutput(&v)
	want, _ := json.Marshal(v)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("encodeOutput = %s, %v; want %s", got, err, want)
	}
}

// A model response, a tool result and a budget check, the other outputs
// of every turn, are journaled with exactly json.Marshal's bytes too.
func TestEncodeOutputStepResultsMatchMarshal(t *testing.T) {
	resps := map[string]bindings.GenerateResponse{
		"empty":      {},
		"text":       {Text: "Here is the clause.", FinishReason: "stop", Model: "fake", Usage: bindings.Usage{InputTokens: 12, OutputTokens: 5, CostUsd: 0.000125}},
		"escapes":    {Text: "a \"q\" \\ <b> & \n\r\t", Model: "m"},
		"unicode":    {Text: "é — \u2028 😀", Usage: bindings.Usage{OutputTokens: 1}},
		"invalid":    {Text: "bad \xff", FinishReason: "\x01"},
		"usage only": {Usage: bindings.Usage{InputTokens: -3, CostUsd: -0.5}},
		"tool calls": {ToolCalls: []bindings.ToolCall{{ID: "c1", Name: "clause_search", Arguments: json.RawMessage(`{"query":"nda"}`)}, {ID: "c2", Name: "y"}}, FinishReason: "tool_calls"},
		"args only":  {ToolCalls: []bindings.ToolCall{{ID: "c1", Arguments: json.RawMessage(`{ "q": "<a>" }`)}}},
		"args bad":   {ToolCalls: []bindings.ToolCall{{ID: "c1", Arguments: json.RawMessage(`{"q":`)}}},
		"args empty": {ToolCalls: []bindings.ToolCall{{ID: "c1", Arguments: json.RawMessage{}}}},
		"tiny cost":  {Usage: bindings.Usage{CostUsd: 1e-9}},
		"huge cost":  {Usage: bindings.Usage{CostUsd: 3e22}},
		"edge cost":  {Usage: bindings.Usage{CostUsd: 1e-6}},
		"nan cost":   {Usage: bindings.Usage{CostUsd: math.NaN()}},
		"inf cost":   {Usage: bindings.Usage{CostUsd: math.Inf(-1)}},
		"neg zero":   {Usage: bindings.Usage{CostUsd: math.Copysign(0, -1)}},
	}
	for name, v := range resps {
		t.Run("response/"+name, func(t *testing.T) { sameAsMarshal(t, &v) })
	}
	results := map[string]toolResult{
		"ok":            {Status: toolOK, Output: json.RawMessage(`{"clauses":["a","b"]}`)},
		"error":         {Status: "error", Error: "no <such> clause \"x\""},
		"empty output":  {Status: toolOK, Output: json.RawMessage{}},
		"spaced output": {Status: toolOK, Output: json.RawMessage(`{"a": 1}`)},
		"bad output":    {Status: toolOK, Output: json.RawMessage(`{`)},
		"unicode error": {Status: "error", Error: "é"},
		"zero":          {},
	}
	for name, v := range results {
		t.Run("tool/"+name, func(t *testing.T) { sameAsMarshal(t, &v) })
	}
	budgets := map[string]budgetState{
		"zero":  {},
		"used":  {ModelCalls: 2, CostUsd: 0.0042, ElapsedMs: 17},
		"large": {ModelCalls: math.MaxInt, CostUsd: 1e20, ElapsedMs: math.MinInt64},
		"tiny":  {CostUsd: 5e-7},
		"nan":   {CostUsd: math.NaN()},
	}
	for name, v := range budgets {
		t.Run("budget/"+name, func(t *testing.T) { sameAsMarshal(t, &v) })
	}
}

// sameAsMarshal fails t unless encodeOutput(v) and json.Marshal(*v) agree
// on the bytes and on whether there is an error.
func sameAsMarshal[T any](t *testing.T, v *T) {
	t.Helper()
	want, werr := json.Marshal(*v)
	got, gerr := encodeOutput(v)
	if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
		t.Fatalf("encodeOutput = %s, %v\njson.Marshal = %s, %v", got, gerr, want, werr)
	}
}

// The anchor turn's outputs take the encoders' own path, not the fallback.
func TestEncodeOutputStepResultsFastPath(t *testing.T) {
	resp := bindings.GenerateResponse{ToolCalls: []bindings.ToolCall{{ID: "c1", Name: "clause_search", Arguments: json.RawMessage(`{"query":"nda"}`)}}, Usage: bindings.Usage{CostUsd: 0.001}}
	if _, ok := journalcodec.Append(nil, &resp, nil); !ok {
		t.Error("a model response with a tool call fell back to json.Marshal")
	}
	if _, ok := journalcodec.Append(nil, &toolResult{Status: toolOK, Output: json.RawMessage(`{"clauses":[]}`)}, nil); !ok {
		t.Error("a tool result fell back to json.Marshal")
	}
	if _, ok := journalcodec.Append(nil, &budgetState{ModelCalls: 1, CostUsd: 0.5, ElapsedMs: 3}, nil); !ok {
		t.Error("a budget check fell back to json.Marshal")
	}
}
