package worker

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// drive drives one claimed run as owner, and deals with its outcome.
func (w *Worker[R]) drive(ctx context.Context, run bindings.Run, owner string) {
	start := time.Now()
	res, err := w.cfg.Drive(ctx, run, owner)
	ref := runRef{run.TenantID, run.ID}
	attrs := []slog.Attr{slog.String("run_id", run.ID), slog.String("tenant_id", run.TenantID), slog.Duration("duration", time.Since(start))}
	bg := context.WithoutCancel(ctx)
	switch {
	case err == nil:
		w.forget(ref)
		w.log(ctx, slog.LevelDebug, "worker drove run", append(attrs, slog.String("status", w.cfg.Status(res)))...)
	case ctx.Err() != nil:
		// Stopped: the turn released its lease; make sure of it (a drive
		// cancelled before it took the lease never had one to release).
		_ = w.cfg.Runs.ReleaseLease(bg, run.TenantID, run.ID, owner)
		w.log(ctx, slog.LevelInfo, "worker left run to another worker", attrs...)
	default:
		st, gerr := w.cfg.Runs.GetRun(bg, run.TenantID, run.ID)
		if gerr == nil && (st.Status.Terminal() || st.Status == bindings.RunSuspended ||
			(st.Status == bindings.RunQueued && agents.CodeOf(err) == agents.CodeQuotaExceeded)) {
			// A final outcome, journaled by the turn; or the run parked
			// again on approvals still pending (a claim stores a run it
			// takes as running, so only the drive parks it); or it waits
			// on a quota, queued until its window frees: it is not held
			// for a retry, and is claimed once it may go on.
			w.forget(ref)
			_ = w.cfg.Runs.ReleaseLease(bg, run.TenantID, run.ID, owner) // a failure before the drive keeps it
			w.log(ctx, slog.LevelDebug, "worker drove run", append(attrs, slog.String("status", string(st.Status)),
				slog.String("code", agents.CodeOf(err)), slog.String("error", err.Error()))...)
			break
		}
		w.failed(ctx, bg, run, owner, err, attrs)
	}
	if w.cfg.OnRun != nil {
		func() {
			defer func() { _ = recover() }()
			w.cfg.OnRun(run, res, err)
		}()
	}
}

// failed deals with a drive of run that failed and left it unfinished:
// it records the failure on the run (counting the drive), then holds the
// run for a retry, or fails it for good when driving again cannot help or
// the run's drives failed MaxDriveAttempts times.
func (w *Worker[R]) failed(ctx, bg context.Context, run bindings.Run, owner string, err error, attrs []slog.Attr) {
	ref := runRef{run.TenantID, run.ID}
	code := agents.CodeOf(err)
	if code == "" {
		code = agents.CodePersistence // an uncoded failure is the store's
	}
	if code == agents.CodeRunBusy {
		// Another process holds the run: not a failed drive of it.
		w.log(ctx, slog.LevelInfo, "worker left run to its driver", append(attrs,
			slog.String("code", code), slog.String("error", err.Error()), slog.Bool("retryable", true))...)
		return
	}
	msg := err.Error()
	fault := w.cfg.DriverFault(err)
	if fault {
		msg = "worker " + w.cfg.ID + " cannot drive this run with its own bindings (another worker may): " + msg
	}
	attempts, ended := w.countFailure(bg, ref, code, msg)
	if ended {
		// The run ended meanwhile (the store records nothing on it).
		w.forget(ref)
		_ = w.cfg.Runs.ReleaseLease(bg, run.TenantID, run.ID, owner)
		w.log(ctx, slog.LevelDebug, "worker drove run", append(attrs, slog.String("code", code), slog.String("error", msg))...)
		return
	}
	attrs = append(attrs, slog.String("code", code), slog.String("error", msg), slog.Int("attempts", attempts),
		slog.Int("max_attempts", w.cfg.MaxDriveAttempts))
	retry := agents.IsRetryable(err) || fault || !w.cfg.EndsRun(err)
	if !retry || attempts >= w.cfg.MaxDriveAttempts {
		w.forget(ref)
		ferr := w.failRun(bg, run, owner, err, msg)
		if ferr != nil {
			_ = w.cfg.Runs.ReleaseLease(bg, run.TenantID, run.ID, owner)
			w.log(ctx, slog.LevelError, "worker could not fail run", append(attrs, slog.Bool("retryable", true),
				slog.String("fail_error", ferr.Error()))...)
			return
		}
		w.log(ctx, slog.LevelWarn, "worker failed run for good", append(attrs, slog.Bool("retryable", false))...)
		return
	}
	delay := backoffDelay(attempts - 1)
	// Hold the run for the backoff: the lease lapses then, and any worker
	// claims it again.
	_, _ = w.cfg.Runs.AcquireLease(bg, bindings.LeaseInput{TenantID: run.TenantID, RunID: run.ID, Owner: owner, TTL: delay})
	w.log(ctx, slog.LevelWarn, "worker drive failed; retrying later", append(attrs,
		slog.Bool("retryable", true), slog.Duration("retry_in", delay))...)
}

// countFailure records one more failed drive of ref and returns how many
// of its drives failed: counted by the store when it is a
// bindings.RunErrorRecorder (across every worker), else (or when the
// store cannot record it) by this worker. ended reports a run the store
// says has ended, which records nothing.
func (w *Worker[R]) countFailure(ctx context.Context, ref runRef, code, msg string) (attempts int, ended bool) {
	if rec, ok := w.cfg.Runs.(bindings.RunErrorRecorder); ok {
		e, err := rec.RecordRunError(ctx, bindings.RecordRunErrorInput{TenantID: ref.tenantID, RunID: ref.runID, Code: code, Message: msg})
		if err == nil {
			return e.Attempts, e.Attempts == 0
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.failures) >= maxTracked {
		clear(w.failures)
	}
	w.failures[ref]++
	return w.failures[ref], false
}

// failRun ends run failed with err's code and msg, as the turn ends a run
// whose failure is final: a failed compose-result entry (FailEntry: any
// later drive returns that error without calling anything) and the status
// failed, under the run's lease, which it then releases. A run that
// another driver took meanwhile is left to it.
func (w *Worker[R]) failRun(ctx context.Context, run bindings.Run, owner string, err error, msg string) error {
	if _, lerr := w.cfg.Runs.AcquireLease(ctx, bindings.LeaseInput{TenantID: run.TenantID, RunID: run.ID, Owner: owner, TTL: w.cfg.LeaseTTL}); lerr != nil {
		return lerr
	}
	defer func() { _ = w.cfg.Runs.ReleaseLease(ctx, run.TenantID, run.ID, owner) }()
	e, appended, aerr := w.cfg.Runs.AppendStep(ctx, bindings.AppendStepInput{TenantID: run.TenantID, RunID: run.ID, Owner: owner,
		Entry: w.cfg.FailEntry(err, msg)})
	if aerr != nil {
		return aerr
	}
	status := bindings.RunFailed
	if !appended && e.Status == bindings.StepCompleted {
		status = bindings.RunCompleted // the run ended meanwhile
	}
	return w.cfg.Runs.SetRunStatus(ctx, run.TenantID, run.ID, status)
}

// backoffDelay is the wait before the retry after n+1 failed drives:
// doubling from retryBase up to retryMax, with jitter.
func backoffDelay(n int) time.Duration {
	d := retryMax
	if n < 10 {
		d = min(d, retryBase<<max(n, 0))
	}
	return d/2 + rand.N(d/2+1)
}

func (w *Worker[R]) forget(ref runRef) {
	w.mu.Lock()
	delete(w.failures, ref)
	w.mu.Unlock()
}
