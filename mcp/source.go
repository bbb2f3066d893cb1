package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/semverx"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MetaRequestID is the key of the call's request id in a tools/call
// request's _meta: the idempotency key of the call.
const MetaRequestID = "requestId"

// Options configure a ToolSource. The zero value is usable.
type Options struct {
	// DestructiveGate, when set, is the default gate of every tool its
	// server marks destructive: a tool not marked readOnlyHint whose
	// destructiveHint is true or not given, as MCP's defaults read it (a
	// tool with no annotations at all counts as destructive). The turn
	// applies the stricter of it and the agent's and tenant's gates; a
	// typical value is &agent.ToolGate{Mode: agent.GateAlwaysAsk}.
	DestructiveGate *agent.ToolGate
	// Secrets resolves the secrets of Server.SecretHeaders for the
	// source's own requests to a streamable HTTP server (connecting,
	// listing tools), which no turn makes. Nil sends those requests without
	// the secret headers. A tools/call carries the values the turn resolved.
	Secrets bindings.SecretResolver
	// HTTPClient sends the requests to streamable HTTP servers (nil:
	// http.DefaultTransport).
	HTTPClient *http.Client
	// Stderr receives the standard error of stdio servers (nil: discarded).
	Stderr io.Writer
	// Logger receives the MCP client's log and a warning for each tool the
	// source refuses (see AddServer) (nil: none).
	Logger *slog.Logger
	// ConnectTimeout bounds connecting to a server (starting a stdio
	// server included) and listing its tools, within the caller's ctx
	// (0: DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// ProtocolVersion is the MCP protocol version the client asks for (""
	// is the SDK's newest; a server that supports only older versions
	// negotiates one of them). Set it, for example to "2025-11-25", for a
	// server that mishandles the newer handshake.
	ProtocolVersion string
	// Registry, when set, holds the tenants' other tools (a
	// *registry.Tools, say): the source's tenant views then serve both, an
	// id that is not a listed tool of a server resolving and invoking
	// through Registry. An id names one tool: a listed tool whose id
	// Registry also has is refused (see ConflictError), and so is a tool
	// Registry gains later. A registry tool under a server's prefix
	// resolves only while that server can be listed, since only its list
	// tells the id is not also the server's.
	Registry bindings.ToolRegistry
}

// DefaultConnectTimeout is the connect and list bound when
// Options.ConnectTimeout is zero.
const DefaultConnectTimeout = 30 * time.Second

// Server describes one MCP server of a tenant: the prefix of its tools'
// ids and exactly one transport — a command over stdio (Command, Args,
// Env, Dir), a streamable HTTP URL (URL, Headers, SecretHeaders), or
// Transport.
type Server struct {
	// Prefix is the first part of the server's tools' ids:
	// "<Prefix>.<tool name>". Required; unique per tenant, and no prefix of
	// a tenant's is another's followed by a dot ("files" and
	// "files.admin"): the tool admin.delete of the one and delete of the
	// other would both be files.admin.delete.
	Prefix string
	// Version is the version of the server's tools when the server's
	// serverInfo.version is not a semver version (a server whose version is
	// semver is versioned by it). Empty or an exact semver version.
	Version string

	// Command is the program of a stdio server, started on first use with
	// Args, in Dir (empty: the host's working directory). Its environment
	// is PATH, HOME, USER, LOGNAME, SHELL, TMPDIR, LANG and TERM of the
	// host's (when set), then Env: nothing else of the host's leaks to it.
	Command string
	Args    []string
	Env     map[string]string
	Dir     string

	// URL is the endpoint of a streamable HTTP server. Headers are sent
	// with every request; SecretHeaders maps a header to the name of the
	// secret that is its value (resolved for each tenant, see the package
	// documentation).
	URL           string
	Headers       map[string]string
	SecretHeaders map[string]string

	// Transport, when set, is the transport to the server, for example
	// one of the SDK's NewInMemoryTransports for a server in the same
	// process. The source calls its Connect again after a session ends (the
	// server closed it, or it broke): a transport that can connect only
	// once, as the in-memory one, fails then with tool-invocation-failed;
	// one whose Connect makes a fresh connection each time (a type of your
	// own) is reconnected like a stdio server is restarted.
	Transport sdk.Transport
}

// ToolSource is a bindings.ToolRegistry whose tools are those of MCP
// servers, registered per tenant. It is safe for concurrent use; Close
// stops its servers.
type ToolSource struct {
	opts Options

	mu      sync.RWMutex
	tenants map[string]map[string]*conn // tenant → prefix → server
	closed  bool
}

var _ bindings.ToolRegistry = (*ToolSource)(nil)

// NewToolSource returns a source with no servers. A DestructiveGate with
// an unknown mode is *agents.InvalidBindingsError.
func NewToolSource(opts Options) (*ToolSource, error) {
	if g := opts.DestructiveGate; g != nil {
		if g.Mode.Strictness() < 0 {
			return nil, &agents.InvalidBindingsError{Reason: fmt.Sprintf("mcp: DestructiveGate has unknown mode %q", g.Mode)}
		}
		c := *g
		opts.DestructiveGate = &c
	}
	if opts.ConnectTimeout < 0 {
		return nil, &agents.InvalidBindingsError{Reason: "mcp: ConnectTimeout is negative"}
	}
	if opts.ConnectTimeout == 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	return &ToolSource{opts: opts, tenants: make(map[string]map[string]*conn)}, nil
}

// AddServer registers s for tenantID; it connects on first use. A missing
// tenant id or prefix, a prefix already registered for the tenant, not
// exactly one transport, a malformed URL or a Version that is not an exact
// semver version is *agents.InvalidMessageError; a prefix that nests with
// one of the tenant's (either is the other followed by a dot, so their
// tools' ids can meet, now or after either's list changes) is *ConflictError
// naming both; a closed source is *agents.InvalidBindingsError.
//
// A listed tool whose id the tenant already has — a tool of
// Options.Registry, or a name the server lists twice — is refused when the
// server's tools are listed (on first use, and again after
// tools/list_changed or a reconnection): Tools leaves it out, Resolve and
// Invoke fail with *ConflictError, Options.Logger is told, and the server's
// other tools keep working.
func (src *ToolSource) AddServer(tenantID string, s Server) error {
	if err := checkServer(tenantID, s); err != nil {
		return err
	}
	s.Args = append([]string(nil), s.Args...)
	s.Env = maps.Clone(s.Env)
	s.Headers = maps.Clone(s.Headers)
	s.SecretHeaders = maps.Clone(s.SecretHeaders)

	src.mu.Lock()
	defer src.mu.Unlock()
	if src.closed {
		return &agents.InvalidBindingsError{Reason: "mcp: the tool source is closed"}
	}
	byPrefix := src.tenants[tenantID]
	if byPrefix == nil {
		byPrefix = make(map[string]*conn)
		src.tenants[tenantID] = byPrefix
	}
	if _, ok := byPrefix[s.Prefix]; ok {
		return &agents.InvalidMessageError{Reason: fmt.Sprintf("mcp: tenant %q already has a server with prefix %q", tenantID, s.Prefix)}
	}
	if other := nestedPrefix(byPrefix, s.Prefix); other != "" {
		return prefixConflict(tenantID, s.Prefix, other)
	}
	byPrefix[s.Prefix] = newConn(src, tenantID, s)
	return nil
}

func checkServer(tenantID string, s Server) error {
	invalid := func(format string, args ...any) error {
		return &agents.InvalidMessageError{Reason: "mcp: " + fmt.Sprintf(format, args...)}
	}
	if tenantID == "" {
		return invalid("a tenant id is required to add a server")
	}
	if s.Prefix == "" || strings.HasSuffix(s.Prefix, ".") || strings.ContainsAny(s.Prefix, " \t\r\n@") {
		return invalid("server prefix %q: a prefix is required, with no space, no @ and no trailing dot", s.Prefix)
	}
	if s.Version != "" {
		if _, err := semverx.ParseVersion(s.Version); err != nil {
			return invalid("server %s: version %q is not an exact semver version", s.Prefix, s.Version)
		}
	}
	n := 0
	for _, set := range []bool{s.Command != "", s.URL != "", s.Transport != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return invalid("server %s: set exactly one of Command, URL and Transport", s.Prefix)
	}
	if s.URL != "" {
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return invalid("server %s: URL %q is not an http or https URL", s.Prefix, s.URL)
		}
	}
	if s.Command == "" && (len(s.Args) > 0 || len(s.Env) > 0 || s.Dir != "") {
		return invalid("server %s: Args, Env and Dir are for a Command", s.Prefix)
	}
	if s.URL == "" && (len(s.Headers) > 0 || len(s.SecretHeaders) > 0) {
		return invalid("server %s: Headers and SecretHeaders are for a URL", s.Prefix)
	}
	for h, name := range s.SecretHeaders {
		if h == "" || name == "" {
			return invalid("server %s: a secret header needs a header and a secret name", s.Prefix)
		}
	}
	return nil
}

// Close stops every server of every tenant: it closes their sessions and
// waits for stdio servers to exit (they are sent SIGTERM, then killed,
// when they do not exit after their stdin closes). Later calls fail;
// Close is idempotent.
func (src *ToolSource) Close() error {
	src.mu.Lock()
	if src.closed {
		src.mu.Unlock()
		return nil
	}
	src.closed = true
	var conns []*conn
	for _, byPrefix := range src.tenants {
		for _, c := range byPrefix {
			conns = append(conns, c)
		}
	}
	src.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(c.close)
	}
	wg.Wait()
	return nil
}

// Tools lists the tools of every server of tenantID, connecting to each
// (in prefix order). It leaves out refused tools (see AddServer) and the
// tools of Options.Registry.
func (src *ToolSource) Tools(ctx context.Context, tenantID string) ([]bindings.ToolDescriptor, error) {
	src.mu.RLock()
	byPrefix := src.tenants[tenantID]
	conns := make([]*conn, 0, len(byPrefix))
	for _, c := range byPrefix {
		conns = append(conns, c)
	}
	src.mu.RUnlock()
	sortConns(conns)
	reg := src.registry(tenantID)
	var out []bindings.ToolDescriptor
	for _, c := range conns {
		cat, err := c.catalog(ctx)
		if err != nil {
			return nil, err
		}
		for _, name := range cat.names {
			d := cat.tools[name]
			// A tool the registry gained since the list was read is refused
			// by Resolve: leave it out here too.
			if has, err := registryHas(ctx, reg, d.ID); err != nil {
				return nil, err
			} else if has {
				continue
			}
			out = append(out, d.Clone())
		}
	}
	return out, nil
}

// ForTenant returns tenantID's view: the tools of its servers, and those
// of Options.Registry's view of tenantID when a registry is set.
func (src *ToolSource) ForTenant(tenantID string) bindings.TenantTools {
	return tenantTools{src: src, tenant: tenantID, reg: src.registry(tenantID)}
}

// registry returns Options.Registry's view of tenantID, or nil.
func (src *ToolSource) registry(tenantID string) bindings.TenantTools {
	if src.opts.Registry == nil {
		return nil
	}
	return src.opts.Registry.ForTenant(tenantID)
}

// server returns the tenant's server whose prefix starts id (the longest
// such prefix), and the tool name after it.
func (src *ToolSource) server(tenantID, id string) (*conn, string, error) {
	src.mu.RLock()
	defer src.mu.RUnlock()
	if src.closed {
		return nil, "", &agents.ToolInvocationError{ToolID: id, Message: "the MCP tool source is closed"}
	}
	var best *conn
	for p, c := range src.tenants[tenantID] {
		if strings.HasPrefix(id, p+".") && len(id) > len(p)+1 && (best == nil || len(p) > len(best.cfg.Prefix)) {
			best = c
		}
	}
	if best == nil {
		return nil, "", &agents.UnresolvedToolError{ToolID: id}
	}
	return best, id[len(best.cfg.Prefix)+1:], nil
}

// tenantTools is one tenant's view of a ToolSource.
type tenantTools struct {
	src    *ToolSource
	tenant string
	reg    bindings.TenantTools // Options.Registry's view, or nil
}

// route finds the server tool of id: its server, its name there and its
// listed descriptor (not a copy). A nil conn with no error is an id that
// no server lists, for the registry (there is one then) to serve. With no
// registry, an id under a server's prefix that it does not list is its
// server's with a zero descriptor (a call goes to the server, whose answer
// tells). A refused tool is its *ConflictError; so is a listed one the
// registry has since gained.
func (tt tenantTools) route(ctx context.Context, id, version string) (*conn, string, bindings.ToolDescriptor, error) {
	var none bindings.ToolDescriptor
	c, name, err := tt.src.server(tt.tenant, id)
	var unresolved *agents.UnresolvedToolError
	if err != nil {
		if tt.reg != nil && errors.As(err, &unresolved) {
			return nil, "", none, nil
		}
		return nil, "", none, err
	}
	cat, err := c.catalog(ctx)
	if err != nil {
		return nil, "", none, retag(err, id, version)
	}
	if ce := cat.refused[name]; ce != nil {
		return nil, "", none, ce
	}
	d, ok := cat.tools[name]
	if !ok {
		if tt.reg != nil {
			return nil, "", none, nil
		}
		return c, name, none, nil
	}
	has, err := registryHas(ctx, tt.reg, id)
	if err != nil {
		return nil, "", none, err
	}
	if has {
		return nil, "", none, &ConflictError{TenantID: tt.tenant, ToolID: id, Server: c.cfg.Prefix}
	}
	return c, name, d, nil
}

// Resolve connects to the server of ref.ID's prefix (when not connected)
// and returns the descriptor of its tool when the server's version
// satisfies ref.Version; an id no server lists is resolved by
// Options.Registry when set. An id with no server or tool is
// *agents.UnresolvedToolError; a refused tool is *ConflictError; a version
// outside the range is *agents.ToolVersionUnresolvableError naming the
// server's version; a server that cannot be reached or listed is
// *agents.ToolInvocationError.
func (tt tenantTools) Resolve(ctx context.Context, ref agent.ToolRef) (bindings.ToolDescriptor, error) {
	if err := ctx.Err(); err != nil {
		return bindings.ToolDescriptor{}, err
	}
	c, _, d, err := tt.route(ctx, ref.ID, ref.Version)
	if err != nil {
		return bindings.ToolDescriptor{}, err
	}
	if c == nil {
		return tt.reg.Resolve(ctx, ref)
	}
	if d.ID == "" {
		return bindings.ToolDescriptor{}, &agents.UnresolvedToolError{ToolID: ref.ID}
	}
	if d.Version != ref.Version {
		r, err := semverx.ParseRange(ref.Version)
		v, verr := semverx.ParseVersion(d.Version)
		if err != nil || verr != nil || !r.Match(v) {
			return bindings.ToolDescriptor{}, &agents.ToolVersionUnresolvableError{ToolID: ref.ID, Range: ref.Version, Available: []string{d.Version}}
		}
	}
	return d.Clone(), nil
}

// Invoke calls the tool of d on its server (started again first when it
// died), see the package documentation, or through Options.Registry when
// no server lists d.ID. A server now at another version than d.Version is
// *agents.ToolVersionUnresolvableError; a tool refused since d was
// resolved is *ConflictError; a call context naming another tenant is
// *agents.InvalidMessageError.
func (tt tenantTools) Invoke(ctx context.Context, d bindings.ToolDescriptor, input json.RawMessage, call bindings.CallContext) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if call.TenantID != "" && call.TenantID != tt.tenant {
		return nil, &agents.InvalidMessageError{Reason: fmt.Sprintf("call for tenant %q made through the tools of tenant %q", call.TenantID, tt.tenant)}
	}
	c, name, _, err := tt.route(ctx, d.ID, d.Version)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return tt.reg.Invoke(ctx, d, input, call)
	}
	return c.call(ctx, d, name, input, call)
}
