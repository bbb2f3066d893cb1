package main

import (
	"context"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// searchInput is the input of the server's search tool.
type searchInput struct {
	Query string `json:"query" jsonschema:"what the clause is about"`
}

// searchOutput is its structured output.
type searchOutput struct {
	Clauses []libraryClause `json:"clauses"`
}

type libraryClause struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

var library = []libraryClause{
	{ID: "C-7", Text: "Mutual confidentiality: each party holds the other's Confidential Information in confidence for three years."},
	{ID: "C-12", Text: "Non-solicitation of employees for twelve months after termination."},
	{ID: "C-19", Text: "Governing law: the laws of England and Wales."},
}

// clauseServer is an MCP server with one read-only tool, search, over a
// small clause library. Any MCP client can use it; this example's turn
// does, over stdio.
func clauseServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "clause-library", Version: "1.0.0"}, nil)
	sdk.AddTool(s, &sdk.Tool{
		Name:        "search",
		Description: "Search the firm's clause library by keyword.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true},
	}, func(_ context.Context, _ *sdk.CallToolRequest, in searchInput) (*sdk.CallToolResult, searchOutput, error) {
		out := searchOutput{Clauses: []libraryClause{}}
		for _, w := range strings.Fields(strings.ToLower(in.Query)) {
			for _, c := range library {
				if strings.Contains(strings.ToLower(c.Text), w) {
					out.Clauses = append(out.Clauses, c)
				}
			}
		}
		return nil, out, nil
	})
	return s
}

// serve runs the clause server on stdin and stdout until stdin closes.
func serve(ctx context.Context) error {
	return clauseServer().Run(ctx, &sdk.StdioTransport{})
}
