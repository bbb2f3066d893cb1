package openai

import (
	"encoding/json"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/modelhttp"
)

// The Chat Completions wire format, as much of it as the provider uses.

type chatRequest struct {
	Model    string        `json:"model"`
	Messages []chatMessage `json:"messages"`
	Tools    []chatTool    `json:"tools,omitempty"`

	Temperature         *float64        `json:"temperature,omitempty"`
	TopP                *float64        `json:"top_p,omitempty"`
	MaxCompletionTokens *int            `json:"max_completion_tokens,omitempty"`
	MaxTokens           *int            `json:"max_tokens,omitempty"`
	Stop                []string        `json:"stop,omitempty"`
	Seed                *int64          `json:"seed,omitempty"`
	ResponseFormat      *responseFormat `json:"response_format,omitempty"`

	Stream        bool           `json:"stream,omitempty"`
	StreamOptions *streamOptions `json:"stream_options,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type responseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *jsonSchema `json:"json_schema,omitempty"`
}

type jsonSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict"`
}

type apiError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    any    `json:"code"`
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

// functionCall is the call of function name with the arguments args (a
// JSON object encoded as a string), as id.
func functionCall(id, name, args string) chatToolCall {
	w := chatToolCall{ID: id, Type: "function"}
	w.Function.Name, w.Function.Arguments = name, args
	return w
}

type chatResponse struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Model   string   `json:"model"`
	Choices []choice `json:"choices"`
	Usage   usage    `json:"usage"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// chatChunk is one event of a streamed answer (object
// "chat.completion.chunk"). The last chunk, with stream_options
// include_usage, has no choices and the usage; an error mid-stream comes as
// a chunk with error set.
type chatChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *usage        `json:"usage"`
	Error   *apiError     `json:"error"`
}

type chunkChoice struct {
	Index int `json:"index"`
	Delta struct {
		Role      string          `json:"role"`
		Content   *string         `json:"content"`
		Refusal   *string         `json:"refusal"`
		ToolCalls []toolCallDelta `json:"tool_calls"`
	} `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

// toolCallDelta is a piece of the tool call at Index: the first piece of
// a call brings its id and name, later ones pieces of its arguments.
type toolCallDelta struct {
	Index int `json:"index"`
	chatToolCall
}

type choice struct {
	Index        int         `json:"index"`
	Message      chatMessage `json:"message"`
	FinishReason string      `json:"finish_reason"`
}

var emptyObjectSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// encodeRequest maps req onto the wire. Settings: temperature, top_p,
// stop and seed as they are, MaxOutputTokens as max_completion_tokens (or
// max_tokens with Options.LegacyMaxTokens). Output: response_format
// json_schema, strict when the schema meets strict mode's rules.
func (p *Provider) encodeRequest(req bindings.GenerateRequest, names modelhttp.NameMap, stream bool) chatRequest {
	out := chatRequest{Model: req.Model, Messages: make([]chatMessage, 0, len(req.Messages))}
	st := req.Settings
	out.Temperature, out.TopP, out.Stop, out.Seed = st.Temperature, st.TopP, st.Stop, st.Seed
	if p.legacyMaxTokens {
		out.MaxTokens = st.MaxOutputTokens
	} else {
		out.MaxCompletionTokens = st.MaxOutputTokens
	}
	if len(req.Output) > 0 {
		out.ResponseFormat = &responseFormat{Type: "json_schema", JSONSchema: &jsonSchema{
			Name: "output", Schema: req.Output, Strict: strictSchema(req.Output),
		}}
	}
	if stream {
		out.Stream = true
		out.StreamOptions = &streamOptions{IncludeUsage: true}
	}
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
			args := string(tc.Arguments)
			if args == "" {
				args = "{}"
			}
			cm.ToolCalls = append(cm.ToolCalls, functionCall(tc.ID, names.Encode(tc.Name), args))
		}
		out.Messages = append(out.Messages, cm)
	}
	for _, t := range req.Tools {
		params := t.InputSchema
		if len(params) == 0 {
			params = emptyObjectSchema
		}
		out.Tools = append(out.Tools, chatTool{Type: "function", Function: chatFunction{
			Name: names.Encode(t.Name), Description: t.Description, Parameters: params,
		}})
	}
	return out
}

// strictSchema reports whether a schema meets the rules of the API's strict
// structured outputs as far as they concern the schema's shape: every
// object lists all its properties in required and sets
// additionalProperties to false. A schema that does not is sent with strict
// false (the API would refuse it with strict true); the turn validates the
// answer either way.
func strictSchema(raw json.RawMessage) bool {
	var doc any
	if json.Unmarshal(raw, &doc) != nil {
		return false
	}
	return strictNode(doc)
}

func strictNode(v any) bool {
	switch n := v.(type) {
	case []any:
		for _, e := range n {
			if !strictNode(e) {
				return false
			}
		}
		return true
	case map[string]any:
		props, hasProps := n["properties"].(map[string]any)
		if n["type"] == "object" || hasProps {
			if n["additionalProperties"] != false {
				return false
			}
			req, _ := n["required"].([]any)
			listed := make(map[string]bool, len(req))
			for _, r := range req {
				if s, ok := r.(string); ok {
					listed[s] = true
				}
			}
			for k := range props {
				if !listed[k] {
					return false
				}
			}
		}
		for k, e := range n {
			if k == "enum" || k == "const" || k == "default" || k == "examples" {
				continue
			}
			if !strictNode(e) {
				return false
			}
		}
		return true
	}
	return true
}
