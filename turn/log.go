package turn

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	agents "github.com/kindgi/agents"
)

// Log messages of a turn's lifecycle, at debug level (Bindings.Logger).
const (
	logRunStarted   = "turn run started"
	logRunResumed   = "turn run resumed"
	logRunFinished  = "turn run already finished"
	logStepRun      = "turn step run"
	logStepReplayed = "turn step replayed"
	logParked       = "turn parked"
	logCompleted    = "turn completed"
	logFailed       = "turn failed"
)

// initLog binds the run's identity to Bindings.Logger once per drive;
// without a logger, or when it does not log debug records, the drive logs
// nothing and pays nothing.
func (r *run) initLog(ctx context.Context) {
	l := r.b.Logger
	if l == nil || !l.Enabled(ctx, slog.LevelDebug) {
		return
	}
	r.logger = l.With(
		slog.String("run_id", r.id),
		slog.String("tenant_id", r.tenantID),
		slog.String("agent", r.in.Agent.ID+"@"+r.in.Agent.Version),
	)
}

// log writes one debug record of the lifecycle.
func (r *run) log(ctx context.Context, msg string, attrs ...slog.Attr) {
	if r.logger == nil {
		return
	}
	r.logger.LogAttrs(ctx, slog.LevelDebug, msg, attrs...)
}

// logStep records a step that ran in this drive: its key, node, duration,
// and the code of its error. The step's output (which may hold message
// content, tool inputs and outputs) is logged only with LogContent.
func (r *run) logStep(ctx context.Context, key, node string, start time.Time, out any, err error) {
	if r.logger == nil {
		return
	}
	attrs := []slog.Attr{
		slog.String("key", key), slog.String("node", node),
		slog.Duration("duration", time.Since(start)),
	}
	if err != nil {
		attrs = append(attrs, slog.String("code", agents.CodeOf(err)))
		if r.b.LogContent {
			attrs = append(attrs, slog.String("error", err.Error()))
		}
	} else if r.b.LogContent {
		if raw, mErr := json.Marshal(out); mErr == nil {
			attrs = append(attrs, slog.String("output", string(raw)))
		}
	}
	r.log(ctx, logStepRun, attrs...)
}

// logReplayed records a step whose journaled outcome was used.
func (r *run) logReplayed(ctx context.Context, key, node string, status string) {
	if r.logger == nil {
		return
	}
	r.log(ctx, logStepReplayed, slog.String("key", key), slog.String("node", node), slog.String("status", status))
}

// logEnd records how the drive ended: parked (with the approval ids),
// completed (with the usage, never the response), or failed (with the
// code, whether the run can be resumed, and — with LogContent — the
// message).
func (r *run) logEnd(ctx context.Context, res Result, err error, resumable bool) {
	if r.logger == nil {
		return
	}
	elapsed := slog.Duration("duration", time.Since(r.driveWall))
	switch {
	case err != nil:
		attrs := []slog.Attr{slog.String("code", agents.CodeOf(err)), slog.Bool("resumable", resumable), elapsed}
		if r.b.LogContent {
			attrs = append(attrs, slog.String("error", err.Error()))
		}
		r.log(ctx, logFailed, attrs...)
	case res.Status == StatusSuspended:
		ids := make([]string, len(res.Approvals))
		for i, a := range res.Approvals {
			ids[i] = a.ID
		}
		r.log(ctx, logParked, slog.Any("approval_ids", ids), elapsed)
	default:
		r.log(ctx, logCompleted, slog.Int("turn", res.TurnNumber),
			slog.Int("model_calls", res.Usage.ModelCalls), slog.Int("tool_calls", res.Usage.ToolCalls),
			slog.Int("input_tokens", res.Usage.InputTokens), slog.Int("output_tokens", res.Usage.OutputTokens),
			slog.Float64("cost_usd", res.Usage.CostUsd), elapsed)
	}
}
