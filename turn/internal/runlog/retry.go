package runlog

import (
	"context"
	"log/slog"

	"github.com/kindgi/agents/bindings"
)

// RetryCall names the model call whose retries are logged.
type RetryCall struct {
	RunID, TenantID string
	// Agent is the run's agent as id@version.
	Agent     string
	Iteration int
	Provider  string
	Model     string
	RequestID string
}

// Retry writes record msg at warn on logger, when it is enabled, for retry
// mr of call c whose failed attempt had error code code and message
// errMsg; the message is logged only with content set (Bindings.LogContent).
func Retry(ctx context.Context, logger *slog.Logger, msg string, c RetryCall, mr bindings.ModelRetry, code, errMsg string, content bool) {
	if !logger.Enabled(ctx, slog.LevelWarn) {
		return
	}
	attrs := []slog.Attr{
		slog.String("run_id", c.RunID), slog.String("tenant_id", c.TenantID), slog.String("agent", c.Agent),
		slog.Int("iteration", c.Iteration), slog.String("provider", c.Provider), slog.String("model", c.Model),
		slog.String("request_id", c.RequestID), slog.Int("attempt", mr.Attempt), slog.Int("status", mr.Status),
		slog.Duration("retry_after", mr.RetryAfter), slog.Duration("wait", mr.Wait), slog.String("code", code),
	}
	if content {
		attrs = append(attrs, slog.String("error", errMsg))
	}
	logger.LogAttrs(ctx, slog.LevelWarn, msg, attrs...)
}
