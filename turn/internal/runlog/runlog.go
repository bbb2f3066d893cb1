// Package runlog is a turn's debug log of one drive (turn.Bindings.Logger):
// the run's lifecycle and its steps, with the run's identity bound once.
// A nil *Log logs nothing, so a drive without a logger, or with one that
// does not log debug records, pays nothing. It imports nothing of turn:
// what it logs it takes as plain values. Retry writes the warn record of a
// model call's retry, which a provider reports through
// bindings.WithModelRetryReporter.
package runlog

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// Messages of a turn's lifecycle, at debug level.
const (
	RunStarted   = "turn run started"
	RunResumed   = "turn run resumed"
	RunFinished  = "turn run already finished"
	StepRun      = "turn step run"
	StepReplayed = "turn step replayed"
	Parked       = "turn parked"
	Completed    = "turn completed"
	Failed       = "turn failed"
)

// Log is one drive's logger: l with the run's identity, whether records
// may hold content (turn.Bindings.LogContent), and the drive's wall-clock
// start, for logged durations.
type Log struct {
	l       *slog.Logger
	content bool
	start   time.Time
}

// New binds the run's identity (its agent agentID@version) to l for one
// drive starting now; nil when l is nil or does not log debug records.
func New(ctx context.Context, l *slog.Logger, content bool, runID, tenantID, agentID, version string) *Log {
	if l == nil || !l.Enabled(ctx, slog.LevelDebug) {
		return nil
	}
	return &Log{
		l: l.With(
			slog.String("run_id", runID),
			slog.String("tenant_id", tenantID),
			slog.String("agent", agentID+"@"+version),
		),
		content: content,
		start:   time.Now(),
	}
}

// Log writes one debug record of the lifecycle.
func (g *Log) Log(ctx context.Context, msg string, attrs ...slog.Attr) {
	if g == nil {
		return
	}
	g.l.LogAttrs(ctx, slog.LevelDebug, msg, attrs...)
}

// Step records a step that ran in this drive: its key, node, duration,
// and the code of its error. The step's output (which may hold message
// content, tool inputs and outputs) is logged only with content.
func (g *Log) Step(ctx context.Context, key, node string, start time.Time, out any, err error) {
	if g == nil {
		return
	}
	attrs := []slog.Attr{
		slog.String("key", key), slog.String("node", node),
		slog.Duration("duration", time.Since(start)),
	}
	if err != nil {
		attrs = append(attrs, slog.String("code", agents.CodeOf(err)))
		if g.content {
			attrs = append(attrs, slog.String("error", err.Error()))
		}
	} else if g.content {
		if raw, mErr := json.Marshal(out); mErr == nil {
			attrs = append(attrs, slog.String("output", string(raw)))
		}
	}
	g.Log(ctx, StepRun, attrs...)
}

// Replayed records a step whose journaled outcome was used.
func (g *Log) Replayed(ctx context.Context, key, node string, status string) {
	if g == nil {
		return
	}
	g.Log(ctx, StepReplayed, slog.String("key", key), slog.String("node", node), slog.String("status", status))
}

// elapsed is the drive's duration so far, as an attribute.
func (g *Log) elapsed() slog.Attr { return slog.Duration("duration", time.Since(g.start)) }

// Failed records a drive that failed: the code, whether the run can be
// resumed, and — with content — the message.
func (g *Log) Failed(ctx context.Context, err error, resumable bool) {
	if g == nil {
		return
	}
	attrs := []slog.Attr{slog.String("code", agents.CodeOf(err)), slog.Bool("resumable", resumable), g.elapsed()}
	if g.content {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	g.Log(ctx, Failed, attrs...)
}

// Parked records a drive that parked on approvals, with their ids.
func (g *Log) Parked(ctx context.Context, approvals []bindings.ApprovalRequest) {
	if g == nil {
		return
	}
	ids := make([]string, len(approvals))
	for i, a := range approvals {
		ids[i] = a.ID
	}
	g.Log(ctx, Parked, slog.Any("approval_ids", ids), g.elapsed())
}

// Usage is what Completed logs of a turn's usage (never its response).
type Usage struct {
	Turn, ModelCalls, ToolCalls, InputTokens, OutputTokens int
	CostUsd                                                float64
}

// Completed records a drive that completed its turn, with its usage.
func (g *Log) Completed(ctx context.Context, u Usage) {
	if g == nil {
		return
	}
	g.Log(ctx, Completed, slog.Int("turn", u.Turn),
		slog.Int("model_calls", u.ModelCalls), slog.Int("tool_calls", u.ToolCalls),
		slog.Int("input_tokens", u.InputTokens), slog.Int("output_tokens", u.OutputTokens),
		slog.Float64("cost_usd", u.CostUsd), g.elapsed())
}
