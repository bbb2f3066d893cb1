package turn

import (
	"context"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/quota"
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

// quotaWait is a refusal of a wait quota (quota.Wait): not the turn's
// outcome, it ends the drive and queues the run until its NotBefore (see
// finish).
type quotaWait = quota.Wait

// isQuotaWait reports whether err is a wait quota's refusal.
func isQuotaWait(err error) bool { return quota.IsWait(err) }

// loadQuotas reads the drive's quotas: Bindings.TenantPolicy's and, with
// a PolicyRegistry, its quota kind's, when Bindings.Quotas is set
// (quota.Load). An invalid quota fails the run (invalid-message naming
// the field); a registry that cannot answer stops the drive, the run
// left as it is (quota.PolicyOutage; a Worker bounds such drives:
// WorkerOptions.MaxDriveAttempts).
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
	var static []bindings.Quota // not copied unless the registry adds to them
	if r.b.TenantPolicy != nil {
		static = r.b.TenantPolicy.Quotas
	}
	qs, err := quota.Load(ctx, static, r.b.PolicyRegistry, bindings.PolicyRequest{TenantID: r.tenantID, ProjectID: r.in.ProjectID, AgentID: r.in.Agent.ID})
	if _, outage := err.(*quota.PolicyOutage); err != nil && !outage {
		r.Failed = true // the same policy refuses every drive
	}
	r.quotas = qs
	return err
}

// quotaRun is the drive as quota.Counter sees it: its clock and its
// quota events.
type quotaRun struct{ r *run }

// counter counts r's units against its quotas.
func (r *run) counter() quota.Counter {
	return quota.Counter{Quotas: r.quotas, Store: r.b.Quotas, TenantID: r.tenantID, RunID: r.id, Run: quotaRun{r}}
}

// TakeTime is the turn's clock when one is bound (Bindings.Now), else
// zero, so that the store's clock — one for every worker — orders the
// units.
func (q quotaRun) TakeTime() time.Time {
	if q.r.b.Now != nil {
		return q.r.now()
	}
	return time.Time{}
}

// Used emits QuotaUsedEvent.
func (q quotaRun) Used(ctx context.Context, qt bindings.Quota, amount, used float64) {
	emit(q.r, ctx, QuotaUsedEvent{RunID: q.r.id, Quota: qt.Name, Scope: qt.Scope, Amount: amount, Used: used, Limit: qt.Limit})
}

// Refused is the error of qt's refusal (quota.Refusal: a *quotaWait for
// a wait quota when the run store defers runs), and its event.
func (q quotaRun) Refused(ctx context.Context, qt bindings.Quota, res bindings.QuotaTakeResult) error {
	r := q.r
	_, defers := r.b.Runs.(bindings.RunDeferrer)
	qe, wait := quota.Refusal(qt, res, defers)
	if r.b.OnEvent != nil {
		emit(r, ctx, QuotaRefusedEvent{RunID: r.id, Quota: qt.Name, Scope: qt.Scope, RetryAfter: res.RetryAfter, Wait: wait})
	}
	if wait {
		return &quotaWait{Err: qe, NotBefore: r.now().Add(res.RetryAfter)}
	}
	return qe
}

// addUsage counts a model call's tokens and cost against its quotas,
// after the call; unit is as for modelQuotas.
func (r *run) addUsage(ctx context.Context, key string, unit *string, u bindings.Usage) error {
	c := r.counter()
	return c.Add(ctx, key, unit, u)
}

// modelQuotas is what the model-call step key takes before the call
// (quota.Counter.Model); *unit is the step's unit, built on first use
// (addUsage reuses it after the call).
func (r *run) modelQuotas(ctx context.Context, key string, unit *string) error {
	if len(r.quotas) == 0 {
		return nil
	}
	c := r.counter()
	return c.Model(ctx, key, unit)
}

// setupTakingTurn is the setup step with the turn's "turns" quotas taken
// first (the unit is the run: its setup happens once).
func (r *run) setupTakingTurn(ctx context.Context, requestID string) (setupState, error) {
	if len(r.quotas) > 0 {
		var unit string
		c := r.counter()
		if err := c.Take(ctx, bindings.QuotaTurns, "", NodeSetup, &unit, 1); err != nil {
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
	c := r.counter()
	if err = c.Take(ctx, bindings.QuotaToolCalls, p.ToolID, p.Key, &unit, 1); err == nil {
		return toolResult{}, false, nil
	}
	if msg, refused := quota.ToolRefusal(err); refused {
		return toolResult{Status: toolError, Error: msg}, true, nil
	}
	return toolResult{}, false, err
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
	d := r.b.Runs.(bindings.RunDeferrer) // quotaRun.Refused waits only with one
	err := r.OpenPending(ctx)
	if err == nil {
		err = d.DeferRun(ctx, bindings.DeferRunInput{TenantID: r.tenantID, RunID: r.id, Owner: r.owner, NotBefore: w.NotBefore})
	}
	if err != nil {
		r.ReleaseLease(ctx)
		return coded(err, "queue the run for its quota")
	}
	return w.Err
}
