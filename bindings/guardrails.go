package bindings

import (
	"context"
	"encoding/json"
)

// Guardrail actions the turn knows; kinds and actions are open strings.
const (
	ActionHalt = "halt"
	ActionLog  = "log-only"
	// KindLLMJudge marks a guardrail whose check asks a model; the turn
	// gives it a Judge routed under the merged tenant policy.
	KindLLMJudge = "llm-judge"
)

// Guardrail is a resolved guardrail definition.
type Guardrail struct {
	ID      string          `json:"id"`
	Kind    string          `json:"kind"`
	CheckID string          `json:"checkId"`
	Action  string          `json:"action"`
	Config  json.RawMessage `json:"config,omitempty"`
}

// GuardrailRegistry resolves guardrail ids for a tenant. An unknown id is
// *agents.UnresolvedGuardrailError.
type GuardrailRegistry interface {
	Guardrail(ctx context.Context, tenantID, id string) (Guardrail, error)
}

// CheckRegistry finds the check a guardrail names; ok is false for an
// unknown check id.
type CheckRegistry interface {
	Check(checkID string) (Check, bool)
}

// TraceMessage is a message of a RunTrace.
type TraceMessage struct {
	Role       string `json:"role"`
	Content    string `json:"content"`
	ToolCallID string `json:"toolCallId,omitempty"`
}

// TraceToolCall is a tool call of a RunTrace, with its result.
type TraceToolCall struct {
	ID          string          `json:"id"`
	ToolID      string          `json:"toolId"`
	ToolVersion string          `json:"toolVersion"`
	Input       json.RawMessage `json:"input"`
	Output      json.RawMessage `json:"output,omitempty"`
	Error       string          `json:"error,omitempty"`
}

// TraceResponse is the final response a check evaluates.
type TraceResponse struct {
	Content string `json:"content"`
}

// RunTrace is what a guardrail check sees of a turn.
type RunTrace struct {
	RunID          string          `json:"runId"`
	TenantID       string          `json:"tenantId"`
	AgentID        string          `json:"agentId"`
	AgentVersion   string          `json:"agentVersion"`
	ConversationID string          `json:"conversationId,omitempty"`
	Messages       []TraceMessage  `json:"messages"`
	ToolCalls      []TraceToolCall `json:"toolCalls"`
	Response       TraceResponse   `json:"response"`
}

// CheckResult is a check's verdict. Attributes is open.
type CheckResult struct {
	Passed        bool           `json:"passed"`
	Reason        string         `json:"reason,omitempty"`
	JudgeResponse string         `json:"judgeResponse,omitempty"`
	Attributes    map[string]any `json:"attributes,omitempty"`
}

// Check evaluates a guardrail on a run trace. An error means the check
// could not run (the turn fails); a failed check is Passed false.
type Check interface {
	Evaluate(ctx context.Context, config json.RawMessage, trace RunTrace) (CheckResult, error)
}

// CheckFunc adapts a function to Check.
type CheckFunc func(ctx context.Context, config json.RawMessage, trace RunTrace) (CheckResult, error)

// Evaluate calls f.
func (f CheckFunc) Evaluate(ctx context.Context, config json.RawMessage, trace RunTrace) (CheckResult, error) {
	return f(ctx, config, trace)
}

// Judge asks a model on behalf of an llm-judge check; the turn routes it to
// a provider and model the merged tenant policy allows.
type Judge interface {
	Judge(ctx context.Context, messages []ChatMessage) (GenerateResponse, error)
}

// JudgeCheck is an optional interface of a Check: an llm-judge guardrail's
// check that implements it is called with a Judge instead of Evaluate.
type JudgeCheck interface {
	Check
	EvaluateWithJudge(ctx context.Context, config json.RawMessage, trace RunTrace, judge Judge) (CheckResult, error)
}
