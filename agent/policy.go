package agent

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// conversationPolicy checks the conversation and HITL policy and returns
// its copy (nil when p is nil). tools are the agent's tool references: a
// gate override must name one of them.
func (c *checker) conversationPolicy(p *ConversationPolicy, tools []ToolRef) *ConversationPolicy {
	if p == nil {
		return nil
	}
	const base = "conversationPolicy"
	switch {
	case p.HistoryLimit != nil && *p.HistoryLimit < 0:
		c.add(base+".historyLimit", fmt.Sprintf("historyLimit %d is negative: use 0 for no history, a positive number of prior messages up to %d, or omit it", *p.HistoryLimit, MaxHistoryLimit))
	case p.HistoryLimit != nil && *p.HistoryLimit > MaxHistoryLimit:
		c.add(base+".historyLimit", fmt.Sprintf("historyLimit %d is out of range: use 0 to %d prior messages, or omit it", *p.HistoryLimit, MaxHistoryLimit))
	}
	c.inRange(base+".autoCloseAfterInactiveSeconds", p.AutoCloseAfterInactiveSeconds, MaxAutoCloseSeconds)
	c.positive(base+".hitlAfterTurns", p.HitlAfterTurns)
	return &ConversationPolicy{
		HistoryLimit:                  intPtr(p.HistoryLimit),
		AutoCloseAfterInactiveSeconds: intPtr(p.AutoCloseAfterInactiveSeconds),
		HitlAfterTurns:                intPtr(p.HitlAfterTurns),
		Hitl:                          c.hitl(p.Hitl, tools),
	}
}

// positive reports an optional count that is set but not greater than 0.
func (c *checker) positive(path string, v *int) {
	if v != nil && *v <= 0 {
		name := path[strings.LastIndexByte(path, '.')+1:]
		c.add(path, fmt.Sprintf("%s %d is not allowed: use a number greater than 0, or omit it", name, *v))
	}
}

// inRange reports an optional count that is set but not within 1..max.
func (c *checker) inRange(path string, v *int, max int) {
	if v != nil && (*v <= 0 || *v > max) {
		name := path[strings.LastIndexByte(path, '.')+1:]
		c.add(path, fmt.Sprintf("%s %d is out of range: use a number greater than 0 and at most %d, or omit it", name, *v, max))
	}
}

// hitl checks the agent's HITL policy and returns its copy.
func (c *checker) hitl(h *HitlPolicy, tools []ToolRef) *HitlPolicy {
	if h == nil {
		return nil
	}
	const base = "conversationPolicy.hitl"
	c.positive(base+".afterTurns", h.AfterTurns)
	c.utf8(base+".defaultReviewerRole", h.DefaultReviewerRole)
	if h.TimeoutMs != nil && *h.TimeoutMs <= 0 {
		c.add(base+".timeoutMs", fmt.Sprintf("timeoutMs %d is not allowed: use a number of milliseconds greater than 0, or omit it for the 24 h default", *h.TimeoutMs))
	}
	out := &HitlPolicy{
		AfterTurns:          intPtr(h.AfterTurns),
		DefaultReviewerRole: h.DefaultReviewerRole,
		TimeoutMs:           int64Ptr(h.TimeoutMs),
	}
	if h.Tools == nil {
		return out
	}
	gates := &ToolGates{}
	if h.Tools.Default != nil {
		g := *h.Tools.Default
		c.gate(base+".tools.default", g)
		gates.Default = &g
	}
	if len(h.Tools.Overrides) > 0 {
		keys := make([]string, 0, len(h.Tools.Overrides))
		for k := range h.Tools.Overrides {
			keys = append(keys, k)
		}
		slices.Sort(keys) // issues in a stable order
		gates.Overrides = make(map[string]ToolGate, len(keys))
		referenced := toolSet(tools, len(keys))
		for _, id := range keys {
			g := h.Tools.Overrides[id]
			path := base + ".tools.overrides." + id
			if !referenced(id) {
				c.add(path, fmt.Sprintf("override for tool %s, which the agent does not reference: add the tool to tools or remove the override", quote(id)))
			}
			c.gate(path, g)
			gates.Overrides[id] = g
		}
	}
	out.Tools = gates
	return out
}

// toolSet returns a membership test for the ids of tools, to be called
// lookups times: a scan for small lists, a map for large ones.
func toolSet(tools []ToolRef, lookups int) func(id string) bool {
	if len(tools)*lookups <= 64 {
		return func(id string) bool {
			return slices.ContainsFunc(tools, func(r ToolRef) bool { return r.ID == id })
		}
	}
	set := make(map[string]struct{}, len(tools))
	for _, r := range tools {
		set[r.ID] = struct{}{}
	}
	return func(id string) bool {
		_, ok := set[id]
		return ok
	}
}

// gate checks one tool gate. A gate is a mode string or {mode,
// requiredRole} in JSON, so a bad mode is reported at the gate's own path.
func (c *checker) gate(path string, g ToolGate) {
	if g.Mode.Strictness() < 0 {
		if g.Mode == "" {
			c.add(path, "gate mode is required: one of never_ask, ask_on_first_use, always_ask")
		} else {
			c.add(path, fmt.Sprintf("gate mode %s is not one of never_ask, ask_on_first_use, always_ask", quote(string(g.Mode))))
		}
	}
	c.utf8(path+".requiredRole", g.RequiredRole)
}

// budget checks the turn budget and returns its copy with MaxSteps and
// MaxWallMs set.
func (c *checker) budget(b *TurnBudget) *TurnBudget {
	steps := DefaultMaxSteps
	wall := int64(DefaultMaxWallMs)
	out := &TurnBudget{MaxSteps: &steps, MaxWallMs: &wall}
	if b == nil {
		return out
	}
	if b.MaxSteps != nil {
		steps = *b.MaxSteps
		if steps < 1 || steps > MaxMaxSteps {
			c.add("budget.maxSteps", fmt.Sprintf("maxSteps %d is out of range: use 1 to %d, or omit it for %d", steps, MaxMaxSteps, DefaultMaxSteps))
		}
	}
	if b.MaxCostUsd != nil {
		v := *b.MaxCostUsd
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			c.add("budget.maxCostUsd", fmt.Sprintf("maxCostUsd %v is not allowed: use a finite amount of US dollars of 0 or more, or omit it for no cost cap", v))
		}
		out.MaxCostUsd = float64Ptr(b.MaxCostUsd)
	}
	if b.MaxWallMs != nil {
		wall = *b.MaxWallMs
		if wall <= 0 {
			c.add("budget.maxWallMs", fmt.Sprintf("maxWallMs %d is not allowed: use a number of milliseconds greater than 0 (any int64 up to %d; past about 292 years there is no practical limit), or omit it for %d", wall, int64(math.MaxInt64), DefaultMaxWallMs))
		}
	}
	return out
}
