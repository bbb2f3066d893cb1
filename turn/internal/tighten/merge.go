package tighten

import (
	"slices"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
)

// Intersect intersects an allow list (nil: everything) with a tenant's
// (empty: everything).
func Intersect(cur *[]string, next []string) *[]string {
	if len(next) == 0 {
		return cur
	}
	if cur == nil {
		s := slices.Clone(next)
		return &s
	}
	s := []string{}
	for _, v := range *cur {
		if slices.Contains(next, v) {
			s = append(s, v)
		}
	}
	return &s
}

// Union adds to deny list a the entries of b it lacks.
func Union(a, b []string) []string {
	for _, v := range b {
		if !slices.Contains(a, v) {
			a = append(a, v)
		}
	}
	return a
}

// MinPtr is a copy of the smaller cap of a and b (nil: no cap).
func MinPtr[T int | int64 | float64](a, b *T) *T {
	switch {
	case a == nil && b == nil:
		return nil
	case a == nil:
		v := *b
		return &v
	case b == nil || *a <= *b:
		v := *a
		return &v
	}
	v := *b
	return &v
}

// MergeHitlSpecs merges two tenant HITL specs into the stricter one.
func MergeHitlSpecs(a, b *bindings.HitlSpec) *bindings.HitlSpec {
	if b == nil {
		return a
	}
	if a == nil {
		c := *b
		if b.ToolFloors != nil {
			c.ToolFloors = make(map[string]agent.ToolGate, len(b.ToolFloors))
			for k, v := range b.ToolFloors {
				c.ToolFloors[k] = v
			}
		}
		return &c
	}
	out := &bindings.HitlSpec{
		MaxTimeoutMs:    MinPtr(a.MaxTimeoutMs, b.MaxTimeoutMs),
		MinReviewerRole: HigherRole(a.MinReviewerRole, b.MinReviewerRole),
		OnTimeout:       StricterOnTimeout(a.OnTimeout, b.OnTimeout),
		AfterTurns:      MinPtr(a.AfterTurns, b.AfterTurns),
	}
	if len(a.ToolFloors)+len(b.ToolFloors) > 0 {
		out.ToolFloors = make(map[string]agent.ToolGate)
		for k, v := range a.ToolFloors {
			out.ToolFloors[k] = v
		}
		for k, v := range b.ToolFloors {
			if cur, ok := out.ToolFloors[k]; ok {
				v = StricterGate(cur, v)
			}
			out.ToolFloors[k] = v
		}
	}
	return out
}

// Budget caps agent a's budget by a tenant's merged caps (nil: none):
// the smaller number of steps, wall time and cost wins.
func Budget(a *agent.Agent, maxSteps *int, maxWallMs *int64, maxCostUsd *float64) (steps int, wallMs int64, costUsd *float64) {
	steps, wallMs = a.Budget.Steps(), a.Budget.WallMs()
	if c, ok := a.Budget.CostUsd(); ok {
		costUsd = &c
	}
	if maxSteps != nil && *maxSteps < steps {
		steps = *maxSteps
	}
	if maxWallMs != nil && *maxWallMs < wallMs {
		wallMs = *maxWallMs
	}
	return steps, wallMs, MinPtr(costUsd, maxCostUsd)
}
