package turn

import (
	"context"
	"encoding/json"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/events"
	"github.com/kindgi/agents/turn/internal/runlog"
)

// Event is one event of a turn (the TypeScript package's TurnEvent). Events reach
// Bindings.OnEvent in the order things happen. A driver emits only what it
// does itself: a resumed run never repeats the events of an earlier drive.
type Event interface {
	// Kind is the event's kind: "turn.started", "tool.completed", …
	Kind() string
}

// Event kinds.
const (
	KindTurnStarted        = "turn.started"
	KindNodeStarted        = "node.started"
	KindNodeCompleted      = "node.completed"
	KindRetrievalCompleted = "retrieval.completed"
	KindModelCallStarted   = "model.call.started"
	KindModelCallCompleted = "model.call.completed"
	KindToolStarted        = "tool.started"
	KindToolCompleted      = "tool.completed"
	KindToolFailed         = "tool.failed"
	KindAgentMessage       = "agent.message"
	KindGuardrailViolated  = "guardrail.violated"
	KindApprovalRequested  = "approval.requested"
	KindTurnSuspended      = "turn.suspended"
	KindTurnCompleted      = "turn.completed"
	KindTurnFailed         = "turn.failed"
)

// TurnStartedEvent: a driver started (or, with Resumed, continued) a run.
type TurnStartedEvent struct {
	RunID          string `json:"runId"`
	TenantID       string `json:"tenantId"`
	ConversationID string `json:"conversationId"`
	AgentID        string `json:"agentId"`
	AgentVersion   string `json:"agentVersion"`
	Resumed        bool   `json:"resumed,omitempty"`
}

// NodeStartedEvent: a journal step of node Node starts running (a step
// replayed from the journal emits nothing). Key is the step key.
type NodeStartedEvent struct {
	RunID string `json:"runId"`
	Node  string `json:"node"`
	Key   string `json:"key"`
}

// NodeCompletedEvent: a journal step of node Node finished; Code is the
// error code when it failed ("" when it succeeded).
type NodeCompletedEvent struct {
	RunID string `json:"runId"`
	Node  string `json:"node"`
	Key   string `json:"key"`
	Code  string `json:"code,omitempty"`
}

// MarshalJSON encodes the event with its kind: {"kind":"node.started",
// "runId":…,"node":…,"key":…}, so a logged event says what it is and
// which node it is about.
func (e NodeStartedEvent) MarshalJSON() ([]byte, error) {
	type plain NodeStartedEvent
	return events.WithKind(KindNodeStarted, plain(e))
}

// String returns "node.started NODE (step KEY) run RUNID".
func (e NodeStartedEvent) String() string {
	return events.Node(KindNodeStarted, e.Node, e.Key, e.RunID, "")
}

// MarshalJSON encodes the event with its kind, as NodeStartedEvent's.
func (e NodeCompletedEvent) MarshalJSON() ([]byte, error) {
	type plain NodeCompletedEvent
	return events.WithKind(KindNodeCompleted, plain(e))
}

// String returns "node.completed NODE (step KEY) run RUNID", with
// "failed: CODE" added when the step failed.
func (e NodeCompletedEvent) String() string {
	return events.Node(KindNodeCompleted, e.Node, e.Key, e.RunID, e.Code)
}

// RetrievalCompletedEvent: run-retrievals fetched its facts.
type RetrievalCompletedEvent struct {
	RunID   string   `json:"runId"`
	FactIDs []string `json:"factIds"`
}

// ModelCallStartedEvent: a model call is about to be sent.
type ModelCallStartedEvent struct {
	RunID     string `json:"runId"`
	Iteration int    `json:"iteration"`
	Provider  string `json:"provider"`
	Model     string `json:"model"`
	RequestID string `json:"requestId"`
	// Attempt is 2 when the turn sends the call again after a stream that
	// failed part-way (see ModelCallDeltaEvent); 0 otherwise.
	Attempt int `json:"attempt,omitempty"`
}

// ModelCallCompletedEvent: a model call answered.
type ModelCallCompletedEvent struct {
	RunID     string `json:"runId"`
	Iteration int    `json:"iteration"`
	Provider  string `json:"provider"`
	Model     string `json:"model"`
	// ResponseModel is the model that answered, when the provider names
	// it (it may be more specific than Model).
	ResponseModel string     `json:"responseModel,omitempty"`
	ToolCalls     int        `json:"toolCalls"`
	Usage         UsageDelta `json:"usage"`
}

// UsageDelta is the usage of one model call.
type UsageDelta struct {
	InputTokens  int     `json:"inputTokens"`
	OutputTokens int     `json:"outputTokens"`
	CostUsd      float64 `json:"costUsd"`
}

// ToolStartedEvent: a tool call is about to run.
type ToolStartedEvent struct {
	RunID       string          `json:"runId"`
	ToolCallID  string          `json:"toolCallId"`
	ToolID      string          `json:"toolId"`
	ToolVersion string          `json:"toolVersion"`
	RequestID   string          `json:"requestId"`
	Input       json.RawMessage `json:"input"`
}

// ToolCompletedEvent: a tool call returned its output.
type ToolCompletedEvent struct {
	RunID       string          `json:"runId"`
	ToolCallID  string          `json:"toolCallId"`
	ToolID      string          `json:"toolId"`
	ToolVersion string          `json:"toolVersion"`
	Output      json.RawMessage `json:"output"`
}

// ToolFailedEvent: a tool call failed, was refused (invalid arguments,
// denied by authorization or by a reviewer) or could not run.
type ToolFailedEvent struct {
	RunID       string `json:"runId"`
	ToolCallID  string `json:"toolCallId"`
	ToolID      string `json:"toolId"`
	ToolVersion string `json:"toolVersion,omitempty"`
	Error       string `json:"error"`
}

// AgentMessageEvent: the final agent message was stored (or, in a dry run,
// composed).
type AgentMessageEvent struct {
	RunID     string `json:"runId"`
	MessageID string `json:"messageId,omitempty"`
	Content   string `json:"content"`
}

// GuardrailViolatedEvent: a guardrail check failed.
type GuardrailViolatedEvent struct {
	RunID       string `json:"runId"`
	GuardrailID string `json:"guardrailId"`
	Action      string `json:"action"`
	Reason      string `json:"reason,omitempty"`
}

// ApprovalRequestedEvent: the turn asked a reviewer to approve a call (or,
// with ToolID empty, the session gate).
type ApprovalRequestedEvent struct {
	RunID        string `json:"runId"`
	ApprovalID   string `json:"approvalId"`
	ToolCallID   string `json:"toolCallId,omitempty"`
	ToolID       string `json:"toolId,omitempty"`
	ReviewerRole string `json:"reviewerRole"`
}

// TurnSuspendedEvent: the run parked on the approvals named.
type TurnSuspendedEvent struct {
	RunID       string   `json:"runId"`
	ApprovalIDs []string `json:"approvalIds"`
	// Result is the turn's result (what Invoke or Resume returns); it is
	// not part of the event's JSON.
	Result *Result `json:"-"`
}

// TurnCompletedEvent: the turn finished.
type TurnCompletedEvent struct {
	RunID      string `json:"runId"`
	TurnNumber int    `json:"turnNumber"`
	Usage      Usage  `json:"usage"`
	// Result is the turn's result (what Invoke or Resume returns); it is
	// not part of the event's JSON.
	Result *Result `json:"-"`
}

// TurnFailedEvent: the turn failed with the coded error Code.
type TurnFailedEvent struct {
	RunID   string `json:"runId"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Kind returns "turn.started".
func (TurnStartedEvent) Kind() string { return KindTurnStarted }

// Kind returns "node.started".
func (NodeStartedEvent) Kind() string { return KindNodeStarted }

// Kind returns "node.completed".
func (NodeCompletedEvent) Kind() string { return KindNodeCompleted }

// Kind returns "retrieval.completed".
func (RetrievalCompletedEvent) Kind() string { return KindRetrievalCompleted }

// Kind returns "model.call.started".
func (ModelCallStartedEvent) Kind() string { return KindModelCallStarted }

// Kind returns "model.call.completed".
func (ModelCallCompletedEvent) Kind() string { return KindModelCallCompleted }

// Kind returns "tool.started".
func (ToolStartedEvent) Kind() string { return KindToolStarted }

// Kind returns "tool.completed".
func (ToolCompletedEvent) Kind() string { return KindToolCompleted }

// Kind returns "tool.failed".
func (ToolFailedEvent) Kind() string { return KindToolFailed }

// Kind returns "agent.message".
func (AgentMessageEvent) Kind() string { return KindAgentMessage }

// Kind returns "guardrail.violated".
func (GuardrailViolatedEvent) Kind() string { return KindGuardrailViolated }

// Kind returns "approval.requested".
func (ApprovalRequestedEvent) Kind() string { return KindApprovalRequested }

// Kind returns "turn.suspended".
func (TurnSuspendedEvent) Kind() string { return KindTurnSuspended }

// Kind returns "turn.completed".
func (TurnCompletedEvent) Kind() string { return KindTurnCompleted }

// Kind returns "turn.failed".
func (TurnFailedEvent) Kind() string { return KindTurnFailed }

// KindModelCallRetry is the kind of ModelCallRetryEvent.
const KindModelCallRetry = "model.call.retry"

// ModelCallRetryEvent: an attempt of a model call failed and the provider
// sends the call again, after WaitMs. The provider reports it through
// bindings.ReportModelRetry (providers/openai and providers/anthropic do,
// for 429, 5xx and 529 answers and transport errors), so the event comes
// between the call's model.call.started and model.call.completed (or the
// step's failure, when the last retry fails too). Retries do not show in
// the call's answer: a host counts these events to see them. Each is
// also logged at warn on Bindings.Logger ("turn model call retry").
type ModelCallRetryEvent struct {
	RunID     string `json:"runId"`
	Iteration int    `json:"iteration"`
	Provider  string `json:"provider"`
	Model     string `json:"model"`
	RequestID string `json:"requestId"`
	// Attempt is the attempt that failed: 1 for the first.
	Attempt int `json:"attempt"`
	// Status is the HTTP status of the failed attempt's answer (0 when
	// none came).
	Status int `json:"status,omitempty"`
	// RetryAfterMs is the wait the answer's Retry-After asked for (0 when
	// it had none); WaitMs is the wait the provider chose.
	RetryAfterMs int64 `json:"retryAfterMs,omitempty"`
	WaitMs       int64 `json:"waitMs"`
	// Code and Message are the failed attempt's error.
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// Kind returns "model.call.retry".
func (ModelCallRetryEvent) Kind() string { return KindModelCallRetry }

// logModelCallRetry is the warn record of a model call's retry.
const logModelCallRetry = "turn model call retry"

// withRetryReport returns ctx carrying a bindings.WithModelRetryReporter
// for model call i (request requestID): each retry the provider reports
// is logged at warn on Bindings.Logger and emitted as a
// ModelCallRetryEvent. Without a logger and an event handler it returns
// ctx as it is.
func (r *run) withRetryReport(ctx context.Context, i int, requestID string) context.Context {
	logger := r.b.Logger
	if r.b.OnEvent == nil && logger == nil {
		return ctx
	}
	return bindings.WithModelRetryReporter(ctx, func(ctx context.Context, mr bindings.ModelRetry) {
		e := ModelCallRetryEvent{
			RunID: r.id, Iteration: i, Provider: r.s.Route.Provider, Model: r.s.Route.Model, RequestID: requestID,
			Attempt: mr.Attempt, Status: mr.Status, RetryAfterMs: mr.RetryAfter.Milliseconds(), WaitMs: mr.Wait.Milliseconds(),
		}
		if mr.Err != nil {
			e.Code, e.Message = agents.CodeOf(mr.Err), mr.Err.Error()
		}
		if logger != nil {
			runlog.Retry(ctx, logger, logModelCallRetry, runlog.RetryCall{
				RunID: r.id, TenantID: r.tenantID, Agent: r.in.Agent.ID + "@" + r.in.Agent.Version,
				Iteration: i, Provider: e.Provider, Model: e.Model, RequestID: requestID,
			}, mr, e.Code, e.Message, r.b.LogContent)
		}
		emit(r, ctx, e)
	})
}

// emit delivers e to r's handler, recovering (and ignoring) a panic. It
// is generic so that e becomes an Event (boxed on the heap) only when
// there is a handler: a turn without one allocates no events.
func emit[E Event](r *run, ctx context.Context, e E) {
	if r.b.OnEvent == nil {
		return
	}
	deliver(r.b.OnEvent, ctx, e)
}

// deliver calls the handler with e, recovering (and ignoring) a panic.
func deliver(on func(context.Context, Event), ctx context.Context, e Event) {
	defer func() { _ = recover() }()
	on(ctx, e)
}
