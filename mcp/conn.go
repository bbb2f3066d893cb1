package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/semverx"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// clientVersion is the version kindgi's MCP client reports.
const clientVersion = "1.0.0"

// conn is one tenant's connection to one MCP server: a session (nil when
// not connected: never yet, or the server died), and the catalog listed
// over it.
//
// Connecting and listing hold lock (a one-slot semaphore, so a waiter
// honours its ctx); mu guards the fields below it and is never held
// across a request.
type conn struct {
	src    *ToolSource
	tenant string
	cfg    Server
	client *sdk.Client
	lock   chan struct{}

	mu      sync.Mutex
	sess    *sdk.ClientSession
	version string   // the tools' version, fixed when the session connects
	cat     *catalog // nil: to be listed
	gen     uint64   // counts list_changed notifications and lost sessions
	closed  bool
	watch   sync.WaitGroup // one watcher per session
}

// catalog is a server's tools as descriptors, by tool name, and the
// tools it lists that the source refused (see AddServer).
type catalog struct {
	tools   map[string]bindings.ToolDescriptor
	names   []string // sorted
	refused map[string]*ConflictError
}

func newConn(src *ToolSource, tenant string, s Server) *conn {
	c := &conn{src: src, tenant: tenant, cfg: s, lock: make(chan struct{}, 1)}
	c.client = sdk.NewClient(&sdk.Implementation{Name: "kindgi", Version: clientVersion}, &sdk.ClientOptions{
		Logger: src.opts.Logger,
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			c.mu.Lock()
			c.cat = nil
			c.gen++
			c.mu.Unlock()
		},
	})
	return c
}

// acquire takes c.lock, or returns ctx's error.
func (c *conn) acquire(ctx context.Context) error {
	select {
	case c.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *conn) release() { <-c.lock }

// failure is the coded error of a server that could not be used.
func (c *conn) failure(msg string, err error) error {
	return &agents.ToolInvocationError{ToolID: c.cfg.Prefix + ".*", Message: "MCP server " + c.cfg.Prefix + ": " + msg, Err: err}
}

// session returns the live session, connecting first when there is none
// (a stdio server is started; one that died is started again).
func (c *conn) session(ctx context.Context) (*sdk.ClientSession, string, error) {
	c.mu.Lock()
	cs, v, closed := c.sess, c.version, c.closed
	c.mu.Unlock()
	if closed {
		return nil, "", c.failure("the tool source is closed", nil)
	}
	if cs != nil {
		return cs, v, nil
	}
	if err := c.acquire(ctx); err != nil {
		return nil, "", err
	}
	defer c.release()
	c.mu.Lock()
	cs, v, closed = c.sess, c.version, c.closed
	c.mu.Unlock()
	if closed {
		return nil, "", c.failure("the tool source is closed", nil)
	}
	if cs != nil {
		return cs, v, nil
	}

	cctx, cancel := context.WithTimeout(ctx, c.src.opts.ConnectTimeout)
	defer cancel()
	t, err := c.transport(cctx)
	if err != nil {
		return nil, "", err
	}
	var sessOpts *sdk.ClientSessionOptions
	if v := c.src.opts.ProtocolVersion; v != "" {
		sessOpts = &sdk.ClientSessionOptions{ProtocolVersion: v}
	}
	cs, err = c.client.Connect(cctx, t, sessOpts)
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		return nil, "", c.failure("connect", err)
	}
	v, err = c.toolsVersion(cs.InitializeResult())
	if err != nil {
		_ = cs.Close()
		return nil, "", err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		_ = cs.Close()
		return nil, "", c.failure("the tool source is closed", nil)
	}
	c.sess, c.version, c.cat = cs, v, nil
	c.gen++
	c.watch.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.watch.Done()
		_ = cs.Wait() // the server closed the connection, died, or Close closed it
		c.lost(cs)
	}()
	return cs, v, nil
}

// lost forgets cs when it is still the live session and closes it (which
// also reaps a stdio server's process): the next use connects again.
func (c *conn) lost(cs *sdk.ClientSession) {
	c.mu.Lock()
	if c.sess == cs {
		c.sess, c.cat = nil, nil
		c.gen++
	}
	c.mu.Unlock()
	_ = cs.Close()
}

// toolsVersion is the version of the server's tools: its serverInfo
// version when that is semver (a leading "v" dropped, as npm's semver
// does), else Server.Version.
func (c *conn) toolsVersion(res *sdk.InitializeResult) (string, error) {
	var reported string
	if res != nil && res.ServerInfo != nil {
		reported = strings.TrimPrefix(res.ServerInfo.Version, "v")
		if _, err := semverx.ParseVersion(reported); err == nil {
			return reported, nil
		}
	}
	if c.cfg.Version != "" {
		return c.cfg.Version, nil
	}
	return "", &agents.InvalidBindingsError{Reason: fmt.Sprintf("mcp: server %s reports version %q, which is not semver, and Server.Version is not set", c.cfg.Prefix, reported)}
}

// catalog returns the server's tools, listing them when they are not
// listed yet or the server said its list changed.
func (c *conn) catalog(ctx context.Context) (*catalog, error) {
	for attempt := 0; ; attempt++ {
		c.mu.Lock()
		cat, live := c.cat, c.sess != nil
		c.mu.Unlock()
		if cat != nil && live {
			return cat, nil
		}
		cs, v, err := c.session(ctx)
		if err != nil {
			return nil, err
		}
		cat, err = c.list(ctx, cs, v)
		if err == nil {
			return cat, nil
		}
		// A session lost while listing (the server died) is connected
		// again once.
		if ctx.Err() != nil || attempt > 0 || !c.isLost(cs) {
			return nil, err
		}
	}
}

func (c *conn) isLost(cs *sdk.ClientSession) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess != cs
}

// list lists the tools over cs and keeps the catalog unless a
// notification or a reconnection came meanwhile (the next use lists
// again).
func (c *conn) list(ctx context.Context, cs *sdk.ClientSession, version string) (*catalog, error) {
	if err := c.acquire(ctx); err != nil {
		return nil, err
	}
	defer c.release()
	c.mu.Lock()
	gen, cached := c.gen, c.cat
	c.mu.Unlock()
	if cached != nil && !c.isLost(cs) {
		return cached, nil
	}
	lctx, cancel := context.WithTimeout(ctx, c.src.opts.ConnectTimeout)
	defer cancel()
	cat := &catalog{tools: map[string]bindings.ToolDescriptor{}}
	for tool, err := range cs.Tools(lctx, nil) {
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			c.dropIfBroken(cs, err)
			return nil, c.failure("tools/list", err)
		}
		d, err := c.descriptor(tool, version)
		if err != nil {
			return nil, err
		}
		if _, twice := cat.tools[tool.Name]; twice || cat.refused[tool.Name] != nil {
			c.refuse(cat, tool.Name, c.cfg.Prefix)
			continue
		}
		cat.tools[tool.Name] = d
	}
	reg := c.src.registry(c.tenant)
	for name, d := range cat.tools {
		has, err := registryHas(lctx, reg, d.ID)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, c.failure("tool "+name+": look its id up in the registry", err)
		}
		if has {
			c.refuse(cat, name, "")
		}
	}
	for name := range cat.tools {
		cat.names = append(cat.names, name)
	}
	sort.Strings(cat.names)
	c.mu.Lock()
	if c.gen == gen && c.sess == cs {
		c.cat = cat
	}
	c.mu.Unlock()
	return cat, nil
}

// refuse moves tool name of cat to its refused tools, for its id is
// already other's (see ConflictError.Other), and tells Options.Logger.
func (c *conn) refuse(cat *catalog, name, other string) {
	delete(cat.tools, name)
	ce := &ConflictError{TenantID: c.tenant, ToolID: c.cfg.Prefix + "." + name, Server: c.cfg.Prefix, Other: other}
	if cat.refused == nil {
		cat.refused = make(map[string]*ConflictError)
	}
	cat.refused[name] = ce
	if l := c.src.opts.Logger; l != nil {
		l.Warn("mcp: tool refused", "tenant", c.tenant, "server", c.cfg.Prefix, "tool", name, "id", ce.ToolID, "code", ce.Code(), "error", ce.Error())
	}
}

// descriptor is the tool descriptor of one listed tool.
func (c *conn) descriptor(t *sdk.Tool, version string) (bindings.ToolDescriptor, error) {
	d := bindings.ToolDescriptor{ID: c.cfg.Prefix + "." + t.Name, Version: version, Description: t.Description}
	if d.Description == "" {
		d.Description = t.Title
	}
	var err error
	if d.InputSchema, err = schemaJSON(t.InputSchema); err != nil {
		return d, c.failure("tool "+t.Name+": inputSchema", err)
	}
	if d.OutputSchema, err = schemaJSON(t.OutputSchema); err != nil {
		return d, c.failure("tool "+t.Name+": outputSchema", err)
	}
	if a := t.Annotations; a != nil {
		d.Annotations = &bindings.ToolAnnotations{
			Title: a.Title, ReadOnlyHint: a.ReadOnlyHint, IdempotentHint: a.IdempotentHint,
			DestructiveHint: clonePtr(a.DestructiveHint), OpenWorldHint: clonePtr(a.OpenWorldHint),
		}
	}
	for _, name := range c.cfg.SecretHeaders {
		if !slices.Contains(d.Secrets, name) {
			d.Secrets = append(d.Secrets, name)
		}
	}
	slices.Sort(d.Secrets)
	if g := c.src.opts.DestructiveGate; g != nil && (t.Annotations == nil || d.Annotations.Destructive()) {
		gate := *g
		d.Gate = &gate
	}
	return d, nil
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// schemaJSON encodes a listed schema (decoded by the SDK as any JSON).
func schemaJSON(s any) (json.RawMessage, error) {
	switch s := s.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return slices.Clone(s), nil
	}
	return json.Marshal(s)
}

// call sends tools/call for tool name of d.
func (c *conn) call(ctx context.Context, d bindings.ToolDescriptor, name string, input json.RawMessage, call bindings.CallContext) (json.RawMessage, error) {
	cs, version, err := c.session(ctx)
	if err != nil {
		return nil, retag(err, d.ID, d.Version)
	}
	if version != d.Version {
		return nil, &agents.ToolVersionUnresolvableError{ToolID: d.ID, Range: d.Version, Available: []string{version}}
	}
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	params := &sdk.CallToolParams{Name: name, Arguments: input}
	if call.RequestID != "" {
		params.Meta = sdk.Meta{MetaRequestID: call.RequestID}
	}
	if len(c.cfg.SecretHeaders) > 0 {
		ctx = withCallSecrets(ctx, call.Secrets)
	}
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		c.dropIfBroken(cs, err)
		return nil, &agents.ToolInvocationError{ToolID: d.ID, ToolVersion: d.Version, Message: "MCP tools/call failed: " + err.Error(), Err: err}
	}
	if len(res.InputRequests) > 0 {
		return nil, &agents.ToolInvocationError{ToolID: d.ID, ToolVersion: d.Version, Message: "the MCP server asked for input during the call, which a turn cannot give"}
	}
	if res.IsError {
		return nil, newToolError(d, res.Content)
	}
	var out []byte
	if res.StructuredContent != nil {
		out, err = json.Marshal(res.StructuredContent)
	} else {
		content := res.Content
		if content == nil {
			content = []sdk.Content{}
		}
		out, err = json.Marshal(content)
	}
	if err != nil {
		return nil, &agents.ToolInvocationError{ToolID: d.ID, ToolVersion: d.Version, Message: "encode the MCP result", Err: err}
	}
	return out, nil
}

// retag names the tool in a *agents.ToolInvocationError of its server.
func retag(err error, id, version string) error {
	var ce *agents.ToolInvocationError
	if errors.As(err, &ce) {
		return &agents.ToolInvocationError{ToolID: id, ToolVersion: version, Message: ce.Message, Err: ce.Err}
	}
	return err
}

// dropIfBroken closes cs after a failure that is not the server's answer
// (a JSON-RPC error response is one; a closed connection or a failed HTTP
// exchange is not), so that the next use connects again.
func (c *conn) dropIfBroken(cs *sdk.ClientSession, err error) {
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		return
	}
	c.lost(cs)
}

// close closes the session and waits for its watcher (and so for a stdio
// server's exit).
func (c *conn) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	// Wait for a connection being made (bounded by ConnectTimeout): it
	// sees closed and closes its own session before it releases the lock.
	c.lock <- struct{}{}
	c.release()
	c.mu.Lock()
	cs := c.sess
	c.sess, c.cat = nil, nil
	c.mu.Unlock()
	if cs != nil {
		_ = cs.Close()
	}
	c.watch.Wait()
}

// sortConns orders servers by prefix.
func sortConns(cs []*conn) {
	slices.SortFunc(cs, func(a, b *conn) int { return strings.Compare(a.cfg.Prefix, b.cfg.Prefix) })
}
