// Command server is the test MCP server of package mcp over stdio: the
// tools of mcptest.NewServer, version $MCPTEST_VERSION (default 1.2.0),
// marker files in $MCPTEST_DIR.
package main

import (
	"context"
	"log"
	"os"

	"github.com/kindgi/agents/mcp/internal/mcptest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	v := os.Getenv("MCPTEST_VERSION")
	if v == "" {
		v = "1.2.0"
	}
	s := mcptest.NewServer(mcptest.Config{Version: v, Dir: os.Getenv("MCPTEST_DIR")})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		log.Print(err)
	}
}
