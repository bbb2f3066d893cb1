// Package quota counts a drive's steps against the tenant's quotas: the
// quotas a drive reads (the tenant policy's, with its registry's quota
// kind replacing those of the same name), each step's unit taken or
// checked before the step and a model call's tokens and cost added after
// it, and what a refusal means — a fail quota's error, or a wait quota's
// Wait that queues the run until its window frees. It does not import
// turn: turn gives it the quota counter and, through Run, its clock and
// its events.
package quota

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/drive"
)

// Run is what counting needs of the drive.
type Run interface {
	// TakeTime is the time a take or an add passes (zero: the store's
	// clock orders the units).
	TakeTime() time.Time
	// Used reports that q counted amount, its window holding used after.
	Used(ctx context.Context, q bindings.Quota, amount, used float64)
	// Refused reports q's refusal res and returns its error (see Refusal).
	Refused(ctx context.Context, q bindings.Quota, res bindings.QuotaTakeResult) error
}

// Counter counts one drive's step units against its quotas.
type Counter struct {
	Quotas   []bindings.Quota
	Store    bindings.QuotaCounter
	TenantID string
	RunID    string
	Run      Run
}

// unit sets *unit, when empty, to the unit of step key: the run id and
// the key, the same on every drive of the run.
func (c *Counter) unit(key string, unit *string) {
	if *unit == "" {
		*unit = c.RunID + "/" + key
	}
}

// Take takes (amount > 0) or checks (amount 0) the unit of step key
// against every quota of scope (and, for tool-calls, of toolID); *unit is
// the unit, built on first use when empty. It returns the refusing
// quota's error (Run.Refused).
func (c *Counter) Take(ctx context.Context, scope, toolID, key string, unit *string, amount float64) error {
	for _, q := range c.Quotas {
		if q.Scope != scope || (q.ToolID != "" && q.ToolID != toolID) {
			continue
		}
		c.unit(key, unit)
		res, err := c.Store.Take(ctx, bindings.QuotaTakeInput{TenantID: c.TenantID, Quota: q, Unit: *unit, Amount: amount, Now: c.Run.TakeTime()})
		if err != nil {
			return drive.Coded(err, "take quota "+q.Name)
		}
		if !res.Allowed {
			return c.Run.Refused(ctx, q, res)
		}
		if amount > 0 {
			c.Run.Used(ctx, q, amount, res.Used)
		}
	}
	return nil
}

// Add counts a model call's tokens and cost against its quotas, after the
// call (whatever the windows hold then); unit is as for Take.
func (c *Counter) Add(ctx context.Context, key string, unit *string, u bindings.Usage) error {
	for _, q := range c.Quotas {
		var amount float64
		switch q.Scope {
		case bindings.QuotaTokens:
			amount = float64(u.InputTokens + u.OutputTokens)
		case bindings.QuotaCostUsd:
			amount = u.CostUsd
		default:
			continue
		}
		if amount == 0 {
			continue // nothing used: nothing to count
		}
		c.unit(key, unit)
		res, err := c.Store.Add(ctx, bindings.QuotaTakeInput{TenantID: c.TenantID, Quota: q, Unit: *unit, Amount: amount, Now: c.Run.TakeTime()})
		if err != nil {
			return drive.Coded(err, "add to quota "+q.Name)
		}
		c.Run.Used(ctx, q, amount, res.Used)
	}
	return nil
}

// Model is what the model-call step key takes before the call: its
// tokens and cost quotas checked, then its model-calls quotas taken.
// *unit is as for Take (Add reuses it after the call).
func (c *Counter) Model(ctx context.Context, key string, unit *string) error {
	if err := c.Take(ctx, bindings.QuotaTokens, "", key, unit, 0); err != nil {
		return err
	}
	if err := c.Take(ctx, bindings.QuotaCostUsd, "", key, unit, 0); err != nil {
		return err
	}
	return c.Take(ctx, bindings.QuotaModelCalls, "", key, unit, 1)
}

// Refusal is the error of q's refusal res, and whether the run waits for
// the window rather than fails: it does when q waits, the run store can
// defer runs (defers) and the window frees later.
func Refusal(q bindings.Quota, res bindings.QuotaTakeResult, defers bool) (*agents.QuotaExceededError, bool) {
	return &agents.QuotaExceededError{Quota: q.Name, RetryAfter: res.RetryAfter}, q.Waits() && defers && res.RetryAfter > 0
}

// ToolRefusal is what a refusal err of a call's tool-calls quotas makes
// of the call: a fail quota's refusal is the call's tool error, msg
// naming the quota (refused); any other error (a wait quota's, the
// store's) is the drive's.
func ToolRefusal(err error) (msg string, refused bool) {
	var qe *agents.QuotaExceededError
	if IsWait(err) || !errors.As(err, &qe) {
		return "", false
	}
	msg = fmt.Sprintf("not run: the tenant's quota %q of calls to this tool is used up", qe.Quota)
	if qe.RetryAfter > 0 {
		msg += fmt.Sprintf("; it frees in %s", qe.RetryAfter.Round(time.Second))
	}
	return msg, true
}

// Merge is a drive's quotas: static (the tenant policy's), with each of
// registry (its policy registry's quota kind) replacing the one of the
// same name. static is not copied unless registry adds to it.
func Merge(static, registry []bindings.Quota) []bindings.Quota {
	qs := static
	if len(registry) > 0 {
		qs = slices.Clone(qs)
	}
	for _, q := range registry {
		qs = append(deleteQuota(qs, q.Name), q)
	}
	return qs
}

func deleteQuota(qs []bindings.Quota, name string) []bindings.Quota {
	out := qs[:0]
	for _, q := range qs {
		if q.Name != name {
			out = append(out, q)
		}
	}
	return out
}

// Wait is a refusal of a wait quota: not the turn's outcome, it ends the
// drive and queues the run until NotBefore.
type Wait struct {
	Err       *agents.QuotaExceededError
	NotBefore time.Time
}

// Error returns Err's message.
func (w *Wait) Error() string { return w.Err.Error() }

// Unwrap returns Err.
func (w *Wait) Unwrap() error { return w.Err }

// Retryable reports true: the drive ends, not the run (agents.IsRetryable
// of the drive's error keeps the turn from ending the run). The caller
// gets Err alone.
func (w *Wait) Retryable() bool { return true }

// IsWait reports whether err is a wait quota's refusal.
func IsWait(err error) bool {
	var w *Wait
	return errors.As(err, &w)
}

// PolicyOutage is a quota policy the registry could not evaluate at a
// drive's start (tenant-policy-unavailable): the drive stops before any
// side effect and leaves the run as it is, since the quotas are read
// again by every drive and the next may find the registry answering.
type PolicyOutage struct{ Err error }

// Error returns Err's message.
func (e *PolicyOutage) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *PolicyOutage) Unwrap() error { return e.Err }

// Retryable reports true: a later drive may find the registry answering.
func (e *PolicyOutage) Retryable() bool { return true }
