package anthropic

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/modelhttp"
)

// The Messages API wire format, as much of it as the provider uses.

type messagesRequest struct {
	Model         string        `json:"model"`
	MaxTokens     int           `json:"max_tokens"`
	System        string        `json:"system,omitempty"`
	Messages      []wireMessage `json:"messages"`
	Tools         []wireTool    `json:"tools,omitempty"`
	Temperature   *float64      `json:"temperature,omitempty"`
	TopP          *float64      `json:"top_p,omitempty"`
	StopSequences []string      `json:"stop_sequences,omitempty"`
	OutputConfig  *outputConfig `json:"output_config,omitempty"`
	Stream        bool          `json:"stream,omitempty"`
}

type outputConfig struct {
	Format outputFormat `json:"format"`
}

type outputFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema"`
}

type wireMessage struct {
	Role    string         `json:"role"`
	Content []contentBlock `json:"content"`
}

// contentBlock is a text, tool_use or tool_result block.
type contentBlock struct {
	Type string `json:"type"`
	// text
	Text string `json:"text,omitempty"`
	// tool_use
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// tool_result
	ToolUseID string `json:"tool_use_id,omitempty"`
	Content   string `json:"content,omitempty"`
}

type wireTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// message is the API's answer (type "message"), or an error (type
// "error").
type message struct {
	ID         string         `json:"id"`
	Type       string         `json:"type"`
	Role       string         `json:"role"`
	Model      string         `json:"model"`
	Content    []contentBlock `json:"content"`
	StopReason string         `json:"stop_reason"`
	Usage      usage          `json:"usage"`
	Error      *apiError      `json:"error"`
}

type usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

type apiError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// EarlierConversationOmitted is the user message put first when a
// request's messages begin with an assistant message (a history cut by its
// limit): the API requires the first message to be the user's.
const EarlierConversationOmitted = "(earlier conversation omitted)"

var emptyObjectSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// encoder maps the tool ids of one request to API names and back.
type encoder struct {
	names modelhttp.NameMap
}

func newEncoder(tools []bindings.ToolDefinition) encoder {
	ids := make([]string, len(tools))
	for i, t := range tools {
		ids[i] = t.Name
	}
	return encoder{names: modelhttp.NewNameMap(ids)}
}

// callID maps a tool call id onto the API's id rule (^[a-zA-Z0-9_-]+$); the
// same id always maps the same way, so a tool_use and its tool_result
// match. The API's own ids (toolu_…) pass unchanged.
func callID(id string) string { return modelhttp.Sanitize(id, 1<<10) }

// encodeRequest maps req onto the wire (see the package doc for what maps
// where).
func (p *Provider) encodeRequest(req bindings.GenerateRequest, enc encoder, stream bool) messagesRequest {
	out := messagesRequest{Model: req.Model, MaxTokens: p.maxTokens, Stream: stream}
	st := req.Settings
	if st.MaxOutputTokens != nil {
		out.MaxTokens = *st.MaxOutputTokens
	}
	if t := st.Temperature; t != nil {
		v := min(*t, 1)
		out.Temperature = &v
	}
	out.TopP, out.StopSequences = st.TopP, st.Stop
	if len(req.Output) > 0 {
		out.OutputConfig = &outputConfig{Format: outputFormat{Type: "json_schema", Schema: apiSchema(req.Output)}}
	}
	var system []string
	for _, m := range req.Messages {
		var role string
		var blocks []contentBlock
		switch m.Role {
		case bindings.ChatSystem:
			if m.Content != "" {
				system = append(system, m.Content)
			}
			continue
		case bindings.ChatTool:
			role = "user"
			blocks = []contentBlock{{Type: "tool_result", ToolUseID: callID(m.ToolCallID), Content: m.Content}}
		case bindings.ChatAssistant, "agent":
			role = "assistant"
			if m.Content != "" {
				blocks = append(blocks, contentBlock{Type: "text", Text: m.Content})
			}
			for _, tc := range m.ToolCalls {
				input := tc.Arguments
				if len(input) == 0 || !json.Valid(input) {
					input = json.RawMessage(`{}`)
				}
				blocks = append(blocks, contentBlock{Type: "tool_use", ID: callID(tc.ID), Name: enc.names.Encode(tc.Name), Input: input})
			}
		default:
			role = "user"
			if m.Content != "" {
				blocks = []contentBlock{{Type: "text", Text: m.Content}}
			}
		}
		if len(blocks) == 0 {
			continue // the API refuses empty messages and empty text blocks
		}
		if n := len(out.Messages); n > 0 && out.Messages[n-1].Role == role {
			// Consecutive tool results (and any consecutive messages of
			// one role) form one message: roles must alternate. Tool
			// results come first in a user message, as the API requires.
			prev := &out.Messages[n-1]
			if blocks[0].Type == "tool_result" {
				prev.Content = toolResultsFirst(append(prev.Content, blocks...))
			} else {
				prev.Content = append(prev.Content, blocks...)
			}
			continue
		}
		out.Messages = append(out.Messages, wireMessage{Role: role, Content: blocks})
	}
	if len(out.Messages) > 0 && out.Messages[0].Role == "assistant" {
		// A history cut by its limit may start with an answer; the API
		// wants the user to speak first.
		out.Messages = append([]wireMessage{{Role: "user", Content: []contentBlock{{Type: "text", Text: EarlierConversationOmitted}}}}, out.Messages...)
	}
	out.System = strings.Join(system, "\n\n")
	for _, t := range req.Tools {
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = emptyObjectSchema
		}
		out.Tools = append(out.Tools, wireTool{Name: enc.names.Encode(t.Name), Description: t.Description, InputSchema: schema})
	}
	return out
}

// toolResultsFirst orders a user message's blocks with its tool results
// first, keeping the order within each kind.
func toolResultsFirst(blocks []contentBlock) []contentBlock {
	out := make([]contentBlock, 0, len(blocks))
	for _, b := range blocks {
		if b.Type == "tool_result" {
			out = append(out, b)
		}
	}
	for _, b := range blocks {
		if b.Type != "tool_result" {
			out = append(out, b)
		}
	}
	return out
}

// unsupportedKeywords are the JSON Schema constraints the API's structured
// outputs do not take (minItems is taken only as 0 or 1).
var unsupportedKeywords = map[string]bool{
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"minLength": true, "maxLength": true, "pattern": true, "maxItems": true, "uniqueItems": true,
	"minProperties": true, "maxProperties": true,
}

// apiSchema adapts an output schema to what the API's structured outputs
// accept, as Anthropic's own SDKs do: every object gets
// "additionalProperties": false (required by the API), and the constraints
// it does not support move into the description ("(minimum: 1)"), so the
// model still reads them. The answer is still validated by the turn
// against the schema as written, so nothing is lost; the adapted schema
// is only what constrains the model.
func apiSchema(raw json.RawMessage) json.RawMessage {
	var doc any
	if json.Unmarshal(raw, &doc) != nil {
		return raw
	}
	out, err := json.Marshal(adaptNode(doc))
	if err != nil {
		return raw
	}
	return out
}

func adaptNode(v any) any {
	n, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(n))
	var moved []string
	for k, e := range n {
		switch {
		case unsupportedKeywords[k], k == "minItems" && !(e == 0.0 || e == 1.0):
			b, _ := json.Marshal(e)
			moved = append(moved, k+": "+string(b))
			continue
		case k == "properties" || k == "$defs" || k == "definitions" || k == "patternProperties":
			if m, ok := e.(map[string]any); ok {
				sub := make(map[string]any, len(m))
				for name, s := range m {
					sub[name] = adaptNode(s)
				}
				out[k] = sub
				continue
			}
		case k == "items" || k == "not" || k == "if" || k == "then" || k == "else" || k == "contains":
			out[k] = adaptNode(e)
			continue
		case k == "anyOf" || k == "allOf" || k == "oneOf" || k == "prefixItems":
			if arr, ok := e.([]any); ok {
				sub := make([]any, len(arr))
				for i, s := range arr {
					sub[i] = adaptNode(s)
				}
				out[k] = sub
				continue
			}
		}
		out[k] = e
	}
	_, hasProps := n["properties"]
	if n["type"] == "object" || hasProps {
		out["additionalProperties"] = false
	}
	if len(moved) > 0 {
		sort.Strings(moved)
		note := "(" + strings.Join(moved, ", ") + ")"
		if d, ok := out["description"].(string); ok && d != "" {
			note = d + " " + note
		}
		out["description"] = note
	}
	return out
}
