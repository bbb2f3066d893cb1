// Package mcptest builds the MCP server the mcp package's tests talk to,
// in process, over stdio (testdata/server) and over streamable HTTP.
package mcptest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Config configures a test server.
type Config struct {
	// Version is the server's serverInfo.version.
	Version string
	// Dir, when set, receives marker files: "started" when a block call
	// starts, "cancelled" when one is cancelled.
	Dir string
}

// EchoIn is the input of the echo tool.
type EchoIn struct {
	Text string `json:"text" jsonschema:"what to echo"`
}

// EchoOut is the output of the echo tool: the text, the call's request
// id from _meta, and the headers named in the request's _meta "headers"
// list when the call came over HTTP.
type EchoOut struct {
	Text      string            `json:"text"`
	RequestID string            `json:"requestId"`
	Headers   map[string]string `json:"headers,omitempty"`
}

// NewServer returns a server with the tools
//
//   - echo (read-only): structured output, see EchoOut; "Authorization"
//     and "X-Tenant" headers are reported when present;
//   - shout: content only (a text block), no structured output;
//   - fail: isError with the text "fail: " + text;
//   - wipe (destructive) and note (not read-only, destructiveHint false);
//   - block: blocks until cancelled (see Config.Dir);
//   - getenv (read-only): the value of the variable named by text;
//   - pid: the server's process id as text;
//   - grow: adds the tool "extra" (the server sends tools/list_changed).
func NewServer(cfg Config) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "kindgi-test", Version: cfg.Version}, nil)
	yes, no := true, false
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echoes its text", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, Title: "Echo"}},
		func(_ context.Context, req *sdk.CallToolRequest, in EchoIn) (*sdk.CallToolResult, EchoOut, error) {
			out := EchoOut{Text: in.Text}
			if id, ok := req.Params.Meta["requestId"].(string); ok {
				out.RequestID = id
			}
			if req.Extra != nil && req.Extra.Header != nil {
				for _, h := range []string{"Authorization", "X-Tenant"} {
					if v := req.Extra.Header.Get(h); v != "" {
						if out.Headers == nil {
							out.Headers = map[string]string{}
						}
						out.Headers[h] = v
					}
				}
			}
			return nil, out, nil
		})
	s.AddTool(&sdk.Tool{Name: "shout", Description: "Shouts its text", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.ToUpper(string(req.Params.Arguments))}}}, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Always fails"},
		func(context.Context, *sdk.CallToolRequest, EchoIn) (*sdk.CallToolResult, any, error) {
			return nil, nil, errors.New("fail: nothing works")
		})
	sdk.AddTool(s, &sdk.Tool{Name: "wipe", Description: "Deletes everything", Annotations: &sdk.ToolAnnotations{DestructiveHint: &yes}},
		func(context.Context, *sdk.CallToolRequest, EchoIn) (*sdk.CallToolResult, EchoOut, error) {
			return nil, EchoOut{Text: "wiped"}, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "note", Description: "Adds a note", Annotations: &sdk.ToolAnnotations{DestructiveHint: &no}},
		func(_ context.Context, _ *sdk.CallToolRequest, in EchoIn) (*sdk.CallToolResult, EchoOut, error) {
			return nil, EchoOut{Text: "noted " + in.Text}, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "getenv", Description: "Reads a variable of the server's environment", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *sdk.CallToolRequest, in EchoIn) (*sdk.CallToolResult, EchoOut, error) {
			v, ok := os.LookupEnv(in.Text)
			if !ok {
				v = "<unset>"
			}
			return nil, EchoOut{Text: v}, nil
		})
	var once sync.Once
	sdk.AddTool(s, &sdk.Tool{Name: "block", Description: "Blocks until cancelled", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			mark(cfg.Dir, "started")
			<-ctx.Done()
			mark(cfg.Dir, "cancelled")
			return nil, nil, ctx.Err()
		})
	s.AddTool(&sdk.Tool{Name: "pid", Description: "The server's process id", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strconv.Itoa(os.Getpid())}}}, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "grow", Description: "Adds the tool extra"},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			once.Do(func() {
				sdk.AddTool(s, &sdk.Tool{Name: "extra", Description: "Added by grow"},
					func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, EchoOut, error) {
						return nil, EchoOut{Text: "extra"}, nil
					})
			})
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "grown"}}}, nil, nil
		})
	return s
}

func mark(dir, name string) {
	if dir != "" {
		_ = os.WriteFile(filepath.Join(dir, name), nil, 0o600)
	}
}
