package mcp

import (
	"encoding/json"
	"strings"

	"github.com/kindgi/agents/bindings"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolError is the result of a tool call that its MCP server marked
// isError: the tool ran and failed. It carries no code: the turn reports
// it to the model, which may correct its call.
type ToolError struct {
	ToolID      string
	ToolVersion string
	// Message is the text of the result's text blocks (one per line), or
	// its content blocks as JSON when it has none.
	Message string
	// Content is the result's content blocks as a JSON array.
	Content json.RawMessage
}

// Error implements the error interface: the tool's own message.
func (e *ToolError) Error() string { return e.Message }

// newToolError is the ToolError of an isError result.
func newToolError(d bindings.ToolDescriptor, content []sdk.Content) *ToolError {
	if content == nil {
		content = []sdk.Content{}
	}
	raw, err := json.Marshal(content)
	if err != nil {
		raw = json.RawMessage("[]")
	}
	var texts []string
	for _, c := range content {
		if t, ok := c.(*sdk.TextContent); ok && t.Text != "" {
			texts = append(texts, t.Text)
		}
	}
	msg := strings.Join(texts, "\n")
	if msg == "" {
		msg = "the tool failed: " + string(raw)
	}
	return &ToolError{ToolID: d.ID, ToolVersion: d.Version, Message: msg, Content: raw}
}
