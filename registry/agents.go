package registry

import (
	"context"
	"slices"
	"sort"
	"sync"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/internal/semverx"
)

// Agents is an in-memory catalog of agent definitions keyed by (id,
// version), the TypeScript package's createAgentRegistry. It has no notion of tenants:
// keep one per tenant, or layer isolation on top. It is safe for concurrent
// use.
//
// Agents are stored and returned as given, without a copy: like every
// agent.Agent, treat them as immutable once registered.
type Agents struct {
	mu   sync.RWMutex
	byID map[string][]agentEntry // each slice ascending in version order
}

type agentEntry struct {
	ver   version
	agent agent.Agent
}

// NewAgents returns a registry holding seed. It fails, with the error
// Register would return, on the first seed agent Register refuses.
func NewAgents(seed ...agent.Agent) (*Agents, error) {
	r := &Agents{byID: make(map[string][]agentEntry)}
	for _, a := range seed {
		if err := r.Register(a); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Register adds a. An agent whose id is empty or whose version is not an
// exact semver version (1.2.3, 1.2.3-rc.1; no "v", no range) is refused
// with *agents.InvalidAgentError; Register checks only these two fields and
// trusts the rest to agent.Define. A second registration of the same id and
// version (the same text) is *agents.AgentAlreadyRegisteredError.
func (r *Agents) Register(a agent.Agent) error {
	var issues []agents.Issue
	if a.ID == "" {
		issues = append(issues, agents.Issue{Path: "id", Message: "an agent id is required to register an agent"})
	}
	v, err := semverx.ParseVersion(a.Version)
	if err != nil {
		issues = append(issues, agents.Issue{Path: "version", Message: syntaxReason(err)})
	}
	if len(issues) > 0 {
		return &agents.InvalidAgentError{Issues: issues}
	}
	e := agentEntry{ver: version{text: a.Version, v: v}, agent: a}

	r.mu.Lock()
	defer r.mu.Unlock()
	list := r.byID[a.ID]
	i, exists := slices.BinarySearchFunc(list, e, func(x, y agentEntry) int { return compareVersions(x.ver, y.ver) })
	if exists {
		return &agents.AgentAlreadyRegisteredError{ID: a.ID, Version: a.Version}
	}
	r.byID[a.ID] = slices.Insert(list, i, e)
	return nil
}

// Get returns the agent id at version, the exact version text it was
// registered with. An empty version means the latest (see GetLatest). A
// missing agent is *agents.AgentNotFoundError.
func (r *Agents) Get(id, version string) (agent.Agent, error) {
	if version == "" {
		return r.GetLatest(id)
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, e := range r.byID[id] {
		if e.ver.text == version {
			return e.agent, nil
		}
	}
	return agent.Agent{}, &agents.AgentNotFoundError{ID: id, Version: version}
}

// GetLatest returns the highest version of agent id in semver order
// (1.10.0 above 1.9.0). Prereleases take part: 2.0.0-rc.1 is later than
// 1.9.0 but earlier than 2.0.0. An unknown id is *agents.AgentNotFoundError
// with an empty Version.
func (r *Agents) GetLatest(id string) (agent.Agent, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	list := r.byID[id]
	if len(list) == 0 {
		return agent.Agent{}, &agents.AgentNotFoundError{ID: id}
	}
	return list[len(list)-1].agent, nil
}

// List returns every registered agent, every version, ordered by id and
// then by ascending version. Use GetLatest for the latest of one id and
// ListVersions for its versions.
func (r *Agents) List() []agent.Agent {
	r.mu.RLock()
	defer r.mu.RUnlock()
	ids := make([]string, 0, len(r.byID))
	n := 0
	for id, list := range r.byID {
		ids = append(ids, id)
		n += len(list)
	}
	sort.Strings(ids)
	out := make([]agent.Agent, 0, n)
	for _, id := range ids {
		for _, e := range r.byID[id] {
			out = append(out, e.agent)
		}
	}
	return out
}

// ListVersions returns the registered versions of agent id in ascending
// semver order, or nil when the id is unknown.
func (r *Agents) ListVersions(id string) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	list := r.byID[id]
	if len(list) == 0 {
		return nil
	}
	out := make([]string, len(list))
	for i, e := range list {
		out[i] = e.ver.text
	}
	return out
}

// Unregister removes agent id at version (the exact text it was registered
// with). An empty version removes every version of id. Removing something
// that is not registered is *agents.AgentNotFoundError.
func (r *Agents) Unregister(id, version string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	list := r.byID[id]
	if version == "" {
		if len(list) == 0 {
			return &agents.AgentNotFoundError{ID: id}
		}
		delete(r.byID, id)
		return nil
	}
	for i, e := range list {
		if e.ver.text == version {
			if len(list) == 1 {
				delete(r.byID, id)
			} else {
				r.byID[id] = slices.Delete(list, i, i+1)
			}
			return nil
		}
	}
	return &agents.AgentNotFoundError{ID: id, Version: version}
}

// syntaxReason returns the reason of a semverx parse error.
func syntaxReason(err error) string {
	if se, ok := err.(*semverx.SyntaxError); ok {
		return se.Reason
	}
	return err.Error()
}

// Lookup returns agent id at version for any tenant (the registry holds
// one set of agents for all): a turn.AgentLookup, for turn.Bindings.Agents
// and turn.WorkerOptions.Agents. An unknown id or version is
// *agents.AgentNotFoundError.
func (r *Agents) Lookup(_ context.Context, _, id, version string) (agent.Agent, error) {
	return r.Get(id, version)
}

// Versions returns the registered versions of agent id for any tenant, in
// ascending semver order: a turn.AgentVersions, for
// turn.Bindings.AgentVersions. An unknown id is *agents.AgentNotFoundError.
func (r *Agents) Versions(_ context.Context, _, id string) ([]string, error) {
	v := r.ListVersions(id)
	if len(v) == 0 {
		return nil, &agents.AgentNotFoundError{ID: id}
	}
	return v, nil
}
