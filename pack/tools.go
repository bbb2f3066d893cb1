package pack

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"sync"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/registry"
)

// DefaultInfoTTL is how long a ToolSource reuses a /v1/info answer.
const DefaultInfoTTL = 30 * time.Second

// ToolSourceOptions tune a ToolSource. A nil *ToolSourceOptions takes every
// default.
type ToolSourceOptions struct {
	// InfoTTL is how long a /v1/info answer is reused before Resolve asks
	// again. 0 means DefaultInfoTTL; a negative value asks on every
	// Resolve.
	InfoTTL time.Duration
	// Describe completes the descriptor Resolve returns. /v1/info lists
	// only tool ids and versions, so without it a descriptor carries no
	// description and empty input and output schemas (any JSON object:
	// the service validates against its own index anyway). A host that
	// knows the schemas (from the pack's index file, say) fills them in
	// here; ID and Version it returns are ignored.
	Describe func(d bindings.ToolDescriptor) bindings.ToolDescriptor
}

// ToolSource makes a pack service a tool source: it implements
// bindings.ToolRegistry over a Client. Tools and their versions come from
// the service's /v1/info; every tenant sees the same tools (the service's
// index), and each call carries the tenant id in its call context. It is
// safe for concurrent use.
type ToolSource struct {
	client   *Client
	ttl      time.Duration
	describe func(bindings.ToolDescriptor) bindings.ToolDescriptor

	mu      sync.Mutex
	info    *Info
	fetched time.Time
}

var _ bindings.ToolRegistry = (*ToolSource)(nil)

// NewToolSource returns a tool source backed by the pack service client
// reaches.
func NewToolSource(client *Client, opts *ToolSourceOptions) *ToolSource {
	s := &ToolSource{client: client, ttl: DefaultInfoTTL}
	if opts != nil {
		if opts.InfoTTL != 0 {
			s.ttl = opts.InfoTTL
		}
		s.describe = opts.Describe
	}
	return s
}

// ForTenant returns the tenant's view: the service's tools, called with
// the tenant's id.
func (s *ToolSource) ForTenant(tenantID string) bindings.TenantTools {
	return &remoteTools{src: s, tenantID: tenantID}
}

// currentInfo returns the cached info, asking the service when it is
// older than the TTL. Concurrent callers may ask at the same time; the
// last answer wins.
func (s *ToolSource) currentInfo(ctx context.Context) (*Info, error) {
	s.mu.Lock()
	info, fetched := s.info, s.fetched
	s.mu.Unlock()
	if info != nil && s.ttl > 0 && time.Since(fetched) < s.ttl {
		return info, nil
	}
	fresh, err := s.client.Info(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.info, s.fetched = &fresh, time.Now()
	s.mu.Unlock()
	return &fresh, nil
}

// remoteTools is one tenant's view of a ToolSource.
type remoteTools struct {
	src      *ToolSource
	tenantID string
}

// Resolve returns the highest version of ref.ID the service lists that
// satisfies the range ref.Version: an id the service does not list is
// *agents.UnresolvedToolError, no satisfying version
// *agents.ToolVersionUnresolvableError. A tool the service lists without a
// version resolves, for any range, to a descriptor with an empty Version
// (its calls then name no version). A failure to reach the service is the
// client's *Error.
func (t *remoteTools) Resolve(ctx context.Context, ref agent.ToolRef) (bindings.ToolDescriptor, error) {
	info, err := t.src.currentInfo(ctx)
	if err != nil {
		return bindings.ToolDescriptor{}, err
	}
	var versions []string
	known, versionless := false, false
	for _, tool := range info.Tools {
		if tool.ID != ref.ID {
			continue
		}
		known = true
		if tool.Version == "" {
			versionless = true
		} else {
			versions = append(versions, tool.Version)
		}
	}
	if !known {
		return bindings.ToolDescriptor{}, &agents.UnresolvedToolError{ToolID: ref.ID}
	}
	d := bindings.ToolDescriptor{ID: ref.ID}
	if len(versions) > 0 || !versionless {
		v, err := registry.ResolveVersion(versions, ref.Version)
		if err != nil {
			var ue *agents.ToolVersionUnresolvableError
			if errors.As(err, &ue) {
				ue.ToolID = ref.ID
			}
			return bindings.ToolDescriptor{}, err
		}
		d.Version = v
	}
	if t.src.describe != nil {
		id, version := d.ID, d.Version
		d = t.src.describe(d)
		d.ID, d.Version = id, version
	}
	return d, nil
}

// Invoke runs d on the service, naming d.Version when it is set. The call
// context carries the view's tenant id, call's run and request ids, the
// descriptor's env and config overlaid with call's, and call's secrets. A
// failure is the client's *Error: an error message of the service (its
// code: input-validation-failed, handler-throw, …) or a transport failure.
func (t *remoteTools) Invoke(ctx context.Context, d bindings.ToolDescriptor, input json.RawMessage, call bindings.CallContext) (json.RawMessage, error) {
	cc := CallContext{
		TenantID:  t.tenantID,
		RunID:     call.RunID,
		RequestID: call.RequestID,
		Env:       stringMap(d.Env, call.Env),
		Secrets:   stringMap(nil, call.Secrets),
		Config:    anyMap(d.Config, call.Config),
	}
	return t.src.client.Invoke(ctx, InvokeRequest{ToolID: d.ID, Version: d.Version, Input: input, Ctx: cc})
}

// stringMap merges string maps into an open JSON object; nil when empty.
func stringMap(base, over map[string]string) map[string]any {
	if len(base)+len(over) == 0 {
		return nil
	}
	m := make(map[string]any, len(base)+len(over))
	for k, v := range base {
		m[k] = v
	}
	for k, v := range over {
		m[k] = v
	}
	return m
}

// anyMap overlays over on base; nil when both are empty.
func anyMap(base, over map[string]any) map[string]any {
	if len(base)+len(over) == 0 {
		return nil
	}
	m := maps.Clone(base)
	if m == nil {
		m = make(map[string]any, len(over))
	}
	maps.Copy(m, over)
	return m
}
