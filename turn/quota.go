package turn

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// Quota event kinds.
const (
	KindQuotaUsed    = "quota.used"
	KindQuotaRefused = "quota.refused"
)

// QuotaUsedEvent: a step counted a unit against a quota (once per unit: a
// replayed unit emits nothing).
type QuotaUsedEvent struct {
	RunID  string  `json:"runId"`
	Quota  string  `json:"quota"`
	Scope  string  `json:"scope"`
	Amount float64 `json:"amount"`
	// Used is what the quota's window holds after the unit.
	Used  float64 `json:"used"`
	Limit float64 `json:"limit"`
}

// Kind returns KindQuotaUsed.
func (QuotaUsedEvent) Kind() string { return KindQuotaUsed }

// QuotaRefusedEvent: a quota refused a step's unit; Wait says the run
// waits for the window rather than fails.
type QuotaRefusedEvent struct {
	RunID      string        `json:"runId"`
	Quota      string        `json:"quota"`
	Scope      string        `json:"scope"`
	RetryAfter time.Duration `json:"retryAfter"`
	Wait       bool          `json:"wait,omitempty"`
}

// Kind returns KindQuotaRefused.
func (QuotaRefusedEvent) Kind() string { return KindQuotaRefused }

// quotaWait is a refusal of a wait quota: not the turn's outcome (final
// says so), it ends the drive and queues the run until notBefore (see
// finish).
type quotaWait struct {
	err       *agents.QuotaExceededError
	notBefore time.Time
}

func (w *quotaWait) Error() string { return w.err.Error() }
func (w *quotaWait) Unwrap() error { return w.err }

// Retryable reports true: the drive ends, not the run (agents.IsRetryable
// of the drive's error keeps finish from ending the run). The caller gets
// the *agents.QuotaExceededError alone (waitForQuota).
func (w *quotaWait) Retryable() bool { return true }

// policyOutage is a quota policy the registry could not evaluate at a
// drive's start (tenant-policy-unavailable): the drive stops before any
// side effect and leaves the run as it is, since the quotas are read again
// by every drive and the next may find the registry answering; a Worker
// bounds such drives (WorkerOptions.MaxDriveAttempts).
type policyOutage struct{ err error }

func (e *policyOutage) Error() string   { return e.err.Error() }
func (e *policyOutage) Unwrap() error   { return e.err }
func (e *policyOutage) Retryable() bool { return true }

// isQuotaWait reports whether err is a wait quota's refusal.
func isQuotaWait(err error) bool {
	var w *quotaWait
	return errors.As(err, &w)
}

// loadQuotas reads the drive's quotas: Bindings.TenantPolicy's and, with
// a PolicyRegistry, its quota kind's, when Bindings.Quotas is set. An
// invalid quota fails the run (invalid-message naming the field).
func (r *run) loadQuotas(ctx context.Context) error {
	r.quotas = nil
	if r.Replaying || r.in.DryRun {
		return nil
	}
	if r.b.Quotas == nil {
		if r.b.TenantPolicy != nil && len(r.b.TenantPolicy.Quotas) > 0 {
			r.Failed = true
			return &agents.InvalidBindingsError{Reason: "the tenant policy has quotas but Bindings.Quotas is nil: bind a quota counter (memstore or pgstore)"}
		}
		return nil
	}
	var qs []bindings.Quota // the static quotas, not copied unless the registry adds to them
	if r.b.TenantPolicy != nil {
		qs = r.b.TenantPolicy.Quotas
	}
	if r.b.PolicyRegistry != nil {
		tp, err := r.b.PolicyRegistry.Evaluate(ctx, bindings.PolicyRequest{
			TenantID: r.tenantID, ProjectID: r.in.ProjectID, AgentID: r.in.Agent.ID, Kind: bindings.PolicyKindQuota,
		})
		if err != nil {
			return &policyOutage{err: &agents.TenantPolicyUnavailableError{PolicyKind: bindings.PolicyKindQuota, Err: err}}
		}
		if len(tp.Quotas) > 0 {
			qs = slices.Clone(qs)
		}
		for _, q := range tp.Quotas {
			qs = append(deleteQuota(qs, q.Name), q)
		}
	}
	if err := bindings.CheckQuotas(qs); err != nil {
		r.Failed = true // the same policy refuses every drive
		return err
	}
	r.quotas = qs
	return nil
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

// quotaUnit is the unit of step key: the run id and the key, the same on
// every drive of the run.
func (r *run) quotaUnit(key string) string { return r.id + "/" + key }

// quotaNow is the time a take passes: the turn's clock when one is bound
// (Bindings.Now), else zero, so that the store's clock — one for every
// worker — orders the units.
func (r *run) quotaNow() time.Time {
	if r.b.Now != nil {
		return r.now()
	}
	return time.Time{}
}

// takeQuotas takes (amount > 0) or checks (amount 0) the unit of step key
// against every quota of scope (and, for tool-calls, of toolID); *unit
// is the unit (quotaUnit), built on first use when empty. It
// returns the refusing quota's error: *agents.QuotaExceededError for a
// fail quota, a *quotaWait for a wait quota.
func (r *run) takeQuotas(ctx context.Context, scope string, toolID, key string, unit *string, amount float64) error {
	for _, q := range r.quotas {
		if q.Scope != scope || (q.ToolID != "" && q.ToolID != toolID) {
			continue
		}
		if *unit == "" {
			*unit = r.quotaUnit(key)
		}
		res, err := r.b.Quotas.Take(ctx, bindings.QuotaTakeInput{TenantID: r.tenantID, Quota: q, Unit: *unit, Amount: amount, Now: r.quotaNow()})
		if err != nil {
			return coded(err, "take quota "+q.Name)
		}
		if !res.Allowed {
			return r.quotaRefused(ctx, q, res)
		}
		if amount > 0 {
			emit(r, ctx, QuotaUsedEvent{RunID: r.id, Quota: q.Name, Scope: q.Scope, Amount: amount, Used: res.Used, Limit: q.Limit})
		}
	}
	return nil
}

// quotaRefused is the error of q's refusal, and its event.
func (r *run) quotaRefused(ctx context.Context, q bindings.Quota, res bindings.QuotaTakeResult) error {
	qe := &agents.QuotaExceededError{Quota: q.Name, RetryAfter: res.RetryAfter}
	_, defers := r.b.Runs.(bindings.RunDeferrer)
	wait := q.Waits() && defers && res.RetryAfter > 0
	if r.b.OnEvent != nil {
		emit(r, ctx, QuotaRefusedEvent{RunID: r.id, Quota: q.Name, Scope: q.Scope, RetryAfter: res.RetryAfter, Wait: wait})
	}
	if wait {
		return &quotaWait{err: qe, notBefore: r.now().Add(res.RetryAfter)}
	}
	return qe
}

// addUsage counts a model call's tokens and cost against its quotas,
// after the call (whatever the windows hold then); unit is as for
// takeQuotas.
func (r *run) addUsage(ctx context.Context, key string, unit *string, u bindings.Usage) error {
	for _, q := range r.quotas {
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
		if *unit == "" {
			*unit = r.quotaUnit(key)
		}
		res, err := r.b.Quotas.Add(ctx, bindings.QuotaTakeInput{TenantID: r.tenantID, Quota: q, Unit: *unit, Amount: amount, Now: r.quotaNow()})
		if err != nil {
			return coded(err, "add to quota "+q.Name)
		}
		emit(r, ctx, QuotaUsedEvent{RunID: r.id, Quota: q.Name, Scope: q.Scope, Amount: amount, Used: res.Used, Limit: q.Limit})
	}
	return nil
}

// modelQuotas is what the model-call step key takes before the call: its
// tokens and cost quotas checked, then its model-calls quotas taken.
// *unit is as for takeQuotas (addUsage reuses it after the call).
func (r *run) modelQuotas(ctx context.Context, key string, unit *string) error {
	if len(r.quotas) == 0 {
		return nil
	}
	if err := r.takeQuotas(ctx, bindings.QuotaTokens, "", key, unit, 0); err != nil {
		return err
	}
	if err := r.takeQuotas(ctx, bindings.QuotaCostUsd, "", key, unit, 0); err != nil {
		return err
	}
	return r.takeQuotas(ctx, bindings.QuotaModelCalls, "", key, unit, 1)
}

// setupTakingTurn is the setup step with the turn's "turns" quotas taken
// first (the unit is the run: its setup happens once).
func (r *run) setupTakingTurn(ctx context.Context, requestID string) (setupState, error) {
	if len(r.quotas) > 0 {
		var unit string
		if err := r.takeQuotas(ctx, bindings.QuotaTurns, "", NodeSetup, &unit, 1); err != nil {
			return setupState{}, err
		}
	}
	return r.setup(ctx, requestID)
}

// toolQuotas takes call p's tool-calls quotas; a fail quota's refusal is
// the call's result, a tool error naming the quota (refused reports it).
func (r *run) toolQuotas(ctx context.Context, p callPlan) (res toolResult, refused bool, err error) {
	if len(r.quotas) == 0 {
		return toolResult{}, false, nil
	}
	var unit string
	if err = r.takeQuotas(ctx, bindings.QuotaToolCalls, p.ToolID, p.Key, &unit, 1); err == nil {
		return toolResult{}, false, nil
	}
	var qe *agents.QuotaExceededError
	if isQuotaWait(err) || !errors.As(err, &qe) {
		return toolResult{}, false, err
	}
	msg := fmt.Sprintf("not run: the tenant's quota %q of calls to this tool is used up", qe.Quota)
	if qe.RetryAfter > 0 {
		msg += fmt.Sprintf("; it frees in %s", qe.RetryAfter.Round(time.Second))
	}
	return toolResult{Status: toolError, Error: msg}, true, nil
}

// waitForQuota ends a drive that a wait quota refused: the buffered
// results are written, the step in flight is not counted as a failed
// attempt (it did not fail: it waits), and the run is queued until the
// window frees, its lease released. It returns the turn's error: the
// refusal, or the store's error when the run could not be queued (the run
// is then left resumable, its lease released, and the next drive asks the
// quota again).
func (r *run) waitForQuota(ctx context.Context, w *quotaWait) error {
	_ = r.Flush(ctx)
	r.Inflight = ""
	d := r.b.Runs.(bindings.RunDeferrer) // quotaRefused waits only with one
	err := r.OpenPending(ctx)
	if err == nil {
		err = d.DeferRun(ctx, bindings.DeferRunInput{TenantID: r.tenantID, RunID: r.id, Owner: r.owner, NotBefore: w.notBefore})
	}
	if err != nil {
		r.ReleaseLease(ctx)
		return coded(err, "queue the run for its quota")
	}
	return w.err
}
