package openai

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/kindgi/agents/bindings"
)

// The Chat Completions wire format, as much of it as the provider uses.

type chatRequest struct {
	Model    string        `json:"model"`
	Messages []chatMessage `json:"messages"`
	Tools    []chatTool    `json:"tools,omitempty"`
}

type chatMessage struct {
	Role string `json:"role"`
	// Content is a pointer so that an assistant message with only tool
	// calls is sent as "content": null, as the API documents.
	Content    *string        `json:"content"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	Refusal    *string        `json:"refusal,omitempty"`
}

type chatTool struct {
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
		// Arguments is a JSON object encoded as a string.
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatResponse struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Model   string   `json:"model"`
	Choices []choice `json:"choices"`
	Usage   struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
}

type choice struct {
	Index        int         `json:"index"`
	Message      chatMessage `json:"message"`
	FinishReason string      `json:"finish_reason"`
}

var emptyObjectSchema = json.RawMessage(`{"type":"object","properties":{}}`)

func encodeRequest(req bindings.GenerateRequest, names nameMap) chatRequest {
	out := chatRequest{Model: req.Model, Messages: make([]chatMessage, 0, len(req.Messages))}
	for _, m := range req.Messages {
		cm := chatMessage{Role: string(m.Role), ToolCallID: m.ToolCallID}
		if cm.Role == "agent" {
			cm.Role = "assistant"
		}
		content := m.Content
		if content != "" || len(m.ToolCalls) == 0 {
			cm.Content = &content
		}
		for _, tc := range m.ToolCalls {
			var w chatToolCall
			w.ID, w.Type = tc.ID, "function"
			w.Function.Name = names.encode(tc.Name)
			w.Function.Arguments = string(tc.Arguments)
			if w.Function.Arguments == "" {
				w.Function.Arguments = "{}"
			}
			cm.ToolCalls = append(cm.ToolCalls, w)
		}
		out.Messages = append(out.Messages, cm)
	}
	for _, t := range req.Tools {
		params := t.InputSchema
		if len(params) == 0 {
			params = emptyObjectSchema
		}
		out.Tools = append(out.Tools, chatTool{Type: "function", Function: chatFunction{
			Name: names.encode(t.Name), Description: t.Description, Parameters: params,
		}})
	}
	return out
}

// nameMap maps tool ids to function names the API accepts and back. The
// mapping is built per request from the offered tools, so it is reversible
// even when two ids encode to the same name.
type nameMap struct {
	toWire map[string]string
	toID   map[string]string
}

func newNameMap(tools []bindings.ToolDefinition) nameMap {
	m := nameMap{toWire: make(map[string]string, len(tools)), toID: make(map[string]string, len(tools))}
	for _, t := range tools {
		m.add(t.Name)
	}
	return m
}

func (m nameMap) add(id string) string {
	if w, ok := m.toWire[id]; ok {
		return w
	}
	base := sanitize(id)
	w := base
	for n := 2; ; n++ {
		if _, taken := m.toID[w]; !taken {
			break
		}
		suffix := "_" + strconv.Itoa(n)
		w = base
		if len(w)+len(suffix) > 64 {
			w = w[:64-len(suffix)]
		}
		w += suffix
	}
	m.toWire[id], m.toID[w] = w, id
	return w
}

func (m nameMap) encode(id string) string {
	if w, ok := m.toWire[id]; ok {
		return w
	}
	// A tool call in the history to a tool no longer offered: encode it
	// the same way so the model sees a consistent name.
	return m.add(id)
}

func (m nameMap) decode(wire string) string {
	if id, ok := m.toID[wire]; ok {
		return id
	}
	return wire
}

// sanitize replaces every character outside [a-zA-Z0-9_-] with '_' and
// truncates to 64 characters.
func sanitize(id string) string {
	var b strings.Builder
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 64 {
			break
		}
	}
	s := b.String()
	if len(s) > 64 {
		s = s[:64]
	}
	if s == "" {
		s = "tool"
	}
	return s
}
