// Package setupnorm makes the values a setup step decided what decoding
// their journaled JSON gives: JSON documents compacted as the journal
// stores them, empty lists and maps (which the JSON omits) nil, tool
// configs passed through JSON, and the lists and maps a step hands out
// the drive's own. turn's normalizeSetup applies it to its setup state,
// so a drive that ran setup works from the same values as every later
// drive that replays it.
package setupnorm

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/drive"
)

// JSON returns a JSON document as the journal stores it
// (drive.Journaled); an empty one, which the JSON omits, is nil.
func JSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	return drive.Journaled(raw)
}

// List returns nil for an empty list (which the JSON omits).
func List[E any](v []E) []E {
	if len(v) == 0 {
		return nil
	}
	return v
}

// Map returns nil for an empty map (which the JSON omits).
func Map[K comparable, V any](m map[K]V) map[K]V {
	if len(m) == 0 {
		return nil
	}
	return m
}

// NullList returns nil for a pointer to a nil list (JSON null).
func NullList(p *[]string) *[]string {
	if p != nil && *p == nil {
		return nil
	}
	return p
}

// Tools normalizes the resolved tools of step node: in place when own is
// set (nothing else holds ts), else in a copy. A tool's config goes
// through JSON, so a tool sees float64 numbers and map[string]any objects
// on every drive; a config JSON cannot encode is a permanent
// *agents.PersistenceError.
func Tools(ts []bindings.ToolDescriptor, own bool, node string) ([]bindings.ToolDescriptor, error) {
	if ts == nil {
		return nil, nil
	}
	tools := ts
	if !own {
		tools = make([]bindings.ToolDescriptor, len(ts))
	}
	for i := range tools {
		d := &tools[i] // built in place: a copy would escape (Config is decoded into it)
		if !own {
			*d = ts[i]
		}
		d.InputSchema = JSON(d.InputSchema)
		d.OutputSchema = JSON(d.OutputSchema)
		d.Secrets = List(slices.Clone(d.Secrets))
		d.Env = Map(maps.Clone(d.Env))
		d.Annotations = d.Annotations.Clone()
		if d.Gate != nil {
			g := *d.Gate
			d.Gate = &g
		}
		if len(d.Config) == 0 {
			d.Config = nil
			continue
		}
		b, err := json.Marshal(d.Config)
		if err != nil {
			return nil, &agents.PersistenceError{Op: "encode step " + node, Err: err, Permanent: true}
		}
		d.Config = nil
		if err := json.Unmarshal(b, &d.Config); err != nil {
			return nil, &agents.RunJournalUnavailableError{Err: fmt.Errorf("decode step %s: %w", node, err)}
		}
	}
	return tools, nil
}

// Guardrails normalizes the resolved guardrails' configs: in place when
// own is set, else in a copy.
func Guardrails(gs []bindings.Guardrail, own bool) []bindings.Guardrail {
	if gs == nil {
		return nil
	}
	out := gs
	if !own {
		out = make([]bindings.Guardrail, len(gs))
	}
	for i, g := range gs {
		g.Config = JSON(g.Config)
		out[i] = g
	}
	return out
}

// Hitl returns h with an empty (non-nil) ToolFloors made nil, copying h
// only then.
func Hitl(h *bindings.HitlSpec) *bindings.HitlSpec {
	if h != nil && h.ToolFloors != nil && len(h.ToolFloors) == 0 {
		c := *h
		c.ToolFloors = nil
		return &c
	}
	return h
}

// Gates returns g with an empty (non-nil) Overrides made nil, copying g
// only then.
func Gates(g *agent.ToolGates) *agent.ToolGates {
	if g != nil && g.Overrides != nil && len(g.Overrides) == 0 {
		c := *g
		c.Overrides = nil
		return &c
	}
	return g
}
