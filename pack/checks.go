package pack

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/kindgi/agents/bindings"
)

// CheckSource makes a pack service a guardrail check source: it implements
// bindings.CheckRegistry over a Client, and each check it hands out runs as
// a check-invoke on the service. The check ids come from the service's
// /v1/info, loaded by NewCheckSource and again by Refresh (Check has no
// context to ask the service with). It is safe for concurrent use.
type CheckSource struct {
	client *Client

	mu     sync.RWMutex
	checks []string // sorted
}

var _ bindings.CheckRegistry = (*CheckSource)(nil)

// NewCheckSource returns a check source backed by the pack service client
// reaches, loading its check ids from /v1/info; it fails with the client's
// *Error when the service cannot answer.
func NewCheckSource(ctx context.Context, client *Client) (*CheckSource, error) {
	s := &CheckSource{client: client}
	if err := s.Refresh(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Refresh loads the service's check ids again (after a deploy, say). On
// error the ids loaded before are kept.
func (s *CheckSource) Refresh(ctx context.Context) error {
	info, err := s.client.Info(ctx)
	if err != nil {
		return err
	}
	checks := slices.Clone(info.Checks)
	slices.Sort(checks)
	s.mu.Lock()
	s.checks = checks
	s.mu.Unlock()
	return nil
}

// Check returns the check checkID runs on the service; ok is false when
// the service did not list it.
func (s *CheckSource) Check(checkID string) (bindings.Check, bool) {
	s.mu.RLock()
	_, ok := slices.BinarySearch(s.checks, checkID)
	s.mu.RUnlock()
	if !ok {
		return nil, false
	}
	return &remoteCheck{client: s.client, id: checkID}, true
}

// remoteCheck runs one check of the service.
type remoteCheck struct {
	client *Client
	id     string
}

var _ bindings.Check = (*remoteCheck)(nil)

// Evaluate sends config and trace in a check-invoke. A check that ran is
// its result (fields beyond the listed ones are dropped: bindings.CheckResult
// has none); an error message or a transport failure is the client's
// *Error, and the check could not run.
func (c *remoteCheck) Evaluate(ctx context.Context, config json.RawMessage, trace bindings.RunTrace) (bindings.CheckResult, error) {
	if len(config) == 0 || string(config) == "null" {
		config = json.RawMessage(`{}`)
	}
	if trace.Messages == nil {
		trace.Messages = []bindings.TraceMessage{}
	}
	if trace.ToolCalls == nil {
		trace.ToolCalls = []bindings.TraceToolCall{}
	}
	tr, err := json.Marshal(trace)
	if err != nil {
		return bindings.CheckResult{}, &Error{ErrorCode: CodeInvalidRequest, Message: "encoding the trace: " + err.Error(), Err: err}
	}
	out, err := c.client.Check(ctx, c.id, config, tr)
	if err != nil {
		return bindings.CheckResult{}, err
	}
	return bindings.CheckResult{Passed: out.Passed, Reason: out.Reason, JudgeResponse: out.JudgeResponse, Attributes: out.Attributes}, nil
}
