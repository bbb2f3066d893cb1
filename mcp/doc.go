// Package mcp makes the tools of Model Context Protocol servers tools of
// kindgi turns, on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk).
//
// A *ToolSource is a bindings.ToolRegistry. Servers are registered per
// tenant with AddServer, so a tenant never sees another tenant's tools:
//
//	src, err := mcp.NewToolSource(mcp.Options{})
//	err = src.AddServer("acme", mcp.Server{Prefix: "files", Version: "1.0.0",
//		Command: "mcp-files", Args: []string{"--root", "/srv/acme"}})
//	b := turn.Bindings{Tools: src, ...}
//
// # Tools
//
// Each tool a server lists is a tool descriptor with id
// "<prefix>.<tool name>" and one version: the server's serverInfo.version
// when it is a semver version, else Server.Version. An agent's ToolRef
// range (files.read@^1.2.0) therefore pins a server version like any
// other tool's. The descriptor keeps the tool's description, its
// inputSchema and outputSchema (the turn checks arguments and output
// against them) and its annotations (readOnlyHint, destructiveHint, …).
// When a server sends notifications/tools/list_changed the catalog is
// listed again before the next resolution.
//
// An id names one tool of a tenant. AddServer refuses a prefix that nests
// with another of the tenant's ("files" and "files.admin": the tool
// admin.delete of one and delete of the other would both be
// files.admin.delete). With Options.Registry set, the tenant views also
// serve the registry's tools, and a server tool whose id the registry has
// is refused when listed — at first use or after a list change — with a
// *ConflictError and a warning to Options.Logger, while the server's other
// tools keep working.
//
// # Calls
//
// Invoke sends tools/call with the arguments and the call's request id in
// _meta (key MetaRequestID), so a server can use it as an idempotency key:
// a call sent again after a crash carries the same id. The output is the
// result's structuredContent when present, else its content blocks as a
// JSON array. A result with isError true is a *ToolError, which the turn
// tells the model (the tool ran and failed); a protocol error or a
// transport failure is *agents.ToolInvocationError
// (tool-invocation-failed). Cancelling ctx abandons the call and sends the
// server notifications/cancelled.
//
// # Transports
//
// A stdio server (Server.Command) is started on first use and stopped by
// Close; when it dies, the calls in flight fail and the next use starts it
// again. A streamable HTTP server (Server.URL) gets Server.Headers and, for
// each header of Server.SecretHeaders, a secret: a call carries the value
// the turn resolved through its SecretResolver (the descriptor names the
// secrets), the source's own requests (connecting, listing tools) the value
// Options.Secrets resolves.
//
// # Gates
//
// With Options.DestructiveGate set, every tool its server marks destructive
// gets that gate as its default (bindings.ToolDescriptor.Gate): the turn
// applies the stricter of it and the gate the agent's policy and the
// tenant's floors give the tool.
package mcp
