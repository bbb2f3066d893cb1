package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/semverx"
)

// Tools is an in-memory, per-tenant catalog of tool versions: each tenant
// has its own set of (tool id, version) entries, each a descriptor and the
// handler that runs it. It implements bindings.ToolRegistry; ForTenant
// returns a tenant's live view, which never sees another tenant's tools.
// It is safe for concurrent use.
type Tools struct {
	mu      sync.RWMutex
	tenants map[string]map[string][]toolEntry // tenant → tool id → versions, highest first

	// ranges caches parsed version ranges (immutable, so shared by every
	// Resolve): an agent's tool refs name the same few ranges on every
	// turn. At most maxCachedRanges are kept.
	ranges  sync.Map // string → semverx.Range
	nRanges atomic.Int32
}

// maxCachedRanges bounds Tools.ranges.
const maxCachedRanges = 1024

// parseRange is semverx.ParseRange, cached.
func (t *Tools) parseRange(s string) (semverx.Range, error) {
	if r, ok := t.ranges.Load(s); ok {
		return r.(semverx.Range), nil
	}
	r, err := semverx.ParseRange(s)
	if err == nil && t.nRanges.Load() < maxCachedRanges {
		if _, loaded := t.ranges.LoadOrStore(s, r); !loaded {
			t.nRanges.Add(1)
		}
	}
	return r, err
}

type toolEntry struct {
	ver     version
	desc    bindings.ToolDescriptor
	handler bindings.ToolHandler
}

var _ bindings.ToolRegistry = (*Tools)(nil)

// NewTools returns an empty catalog.
func NewTools() *Tools {
	return &Tools{tenants: make(map[string]map[string][]toolEntry)}
}

// Add registers one version of a tool for tenantID: d describes it (d.ID
// and d.Version, an exact semver version, are required; InputSchema and
// OutputSchema, when set, must be JSON) and h runs it. The catalog keeps a
// copy of d. A missing or malformed field, a nil handler, or a version
// already added for the tenant is *agents.InvalidMessageError.
func (t *Tools) Add(tenantID string, d bindings.ToolDescriptor, h bindings.ToolHandler) error {
	if err := checkTool(tenantID, d, h); err != nil {
		return err
	}
	v, err := semverx.ParseVersion(d.Version)
	if err != nil {
		return &agents.InvalidMessageError{Reason: fmt.Sprintf("tool %s: version: %s", d.ID, syntaxReason(err))}
	}
	e := toolEntry{ver: version{text: d.Version, v: v}, desc: d.Clone(), handler: h}

	t.mu.Lock()
	defer t.mu.Unlock()
	byID := t.tenants[tenantID]
	if byID == nil {
		byID = make(map[string][]toolEntry)
		t.tenants[tenantID] = byID
	}
	list := byID[d.ID]
	// list is highest first: search with the order reversed.
	i, exists := slices.BinarySearchFunc(list, e, func(x, y toolEntry) int { return compareVersions(y.ver, x.ver) })
	if exists {
		return &agents.InvalidMessageError{Reason: fmt.Sprintf("tool %s is already registered for tenant %q", d.Ref(), tenantID)}
	}
	byID[d.ID] = slices.Insert(list, i, e)
	return nil
}

func checkTool(tenantID string, d bindings.ToolDescriptor, h bindings.ToolHandler) error {
	switch {
	case tenantID == "":
		return &agents.InvalidMessageError{Reason: "a tenant id is required to add a tool"}
	case d.ID == "":
		return &agents.InvalidMessageError{Reason: "a tool id is required"}
	case h == nil:
		return &agents.InvalidMessageError{Reason: fmt.Sprintf("tool %s has no handler", d.Ref())}
	case len(d.InputSchema) > 0 && !json.Valid(d.InputSchema):
		return &agents.InvalidMessageError{Reason: fmt.Sprintf("tool %s: inputSchema is not valid JSON", d.Ref())}
	case len(d.OutputSchema) > 0 && !json.Valid(d.OutputSchema):
		return &agents.InvalidMessageError{Reason: fmt.Sprintf("tool %s: outputSchema is not valid JSON", d.Ref())}
	}
	return nil
}

// ForTenant returns tenantID's view of the catalog. The view is live: tools
// added later are visible through it. It sees only tenantID's tools.
func (t *Tools) ForTenant(tenantID string) bindings.TenantTools {
	return tenantTools{tools: t, tenant: tenantID}
}

// tenantTools is one tenant's view of a Tools catalog.
type tenantTools struct {
	tools  *Tools
	tenant string
}

// versions returns the tenant's versions of tool id, highest first. The
// slice must not be modified; the caller holds the read lock.
func (tt tenantTools) versions(id string) []toolEntry {
	return tt.tools.tenants[tt.tenant][id]
}

// Resolve returns a copy of the descriptor of the highest version of
// ref.ID satisfying the npm-style range ref.Version; a registered version
// equal to ref.Version resolves to itself. An id the tenant does not have is
// *agents.UnresolvedToolError; no satisfying version, or a range that does
// not parse, is *agents.ToolVersionUnresolvableError naming the versions
// that exist, highest first. A done ctx returns its error.
func (tt tenantTools) Resolve(ctx context.Context, ref agent.ToolRef) (bindings.ToolDescriptor, error) {
	if err := ctx.Err(); err != nil {
		return bindings.ToolDescriptor{}, err
	}
	r, rangeErr := tt.tools.parseRange(ref.Version)

	tt.tools.mu.RLock()
	defer tt.tools.mu.RUnlock()
	list := tt.versions(ref.ID)
	if len(list) == 0 {
		return bindings.ToolDescriptor{}, &agents.UnresolvedToolError{ToolID: ref.ID}
	}
	if rangeErr != nil {
		return bindings.ToolDescriptor{}, invalidRange(ref.ID, ref.Version, rangeErr, versionTexts(list))
	}
	for _, e := range list {
		if e.ver.text == ref.Version {
			return e.desc.Clone(), nil
		}
	}
	for _, e := range list {
		if r.Match(e.ver.v) {
			return e.desc.Clone(), nil
		}
	}
	return bindings.ToolDescriptor{}, &agents.ToolVersionUnresolvableError{ToolID: ref.ID, Range: ref.Version, Available: versionTexts(list)}
}

// Invoke runs the handler registered for the exact version d.Version of
// d.ID and returns its output; the handler's error is returned as is. A
// tool or version the tenant does not have is *agents.UnresolvedToolError or
// *agents.ToolVersionUnresolvableError; a call context naming another
// tenant is *agents.InvalidMessageError. A done ctx returns its error
// without calling the handler.
func (tt tenantTools) Invoke(ctx context.Context, d bindings.ToolDescriptor, input json.RawMessage, call bindings.CallContext) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if call.TenantID != "" && call.TenantID != tt.tenant {
		return nil, &agents.InvalidMessageError{Reason: fmt.Sprintf("call for tenant %q made through the tools of tenant %q", call.TenantID, tt.tenant)}
	}
	h, err := tt.handler(d)
	if err != nil {
		return nil, err
	}
	return h(ctx, input, call)
}

func (tt tenantTools) handler(d bindings.ToolDescriptor) (bindings.ToolHandler, error) {
	tt.tools.mu.RLock()
	defer tt.tools.mu.RUnlock()
	list := tt.versions(d.ID)
	if len(list) == 0 {
		return nil, &agents.UnresolvedToolError{ToolID: d.ID}
	}
	for _, e := range list {
		if e.ver.text == d.Version {
			return e.handler, nil
		}
	}
	return nil, &agents.ToolVersionUnresolvableError{ToolID: d.ID, Range: d.Version, Available: versionTexts(list)}
}

func versionTexts(list []toolEntry) []string {
	out := make([]string, len(list))
	for i, e := range list {
		out[i] = e.ver.text
	}
	return out
}
