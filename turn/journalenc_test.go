package turn

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/kindgi/agents/bindings"
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
