package turn

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
)

// Flow identity and limits of the agent.turn flow.
const (
	// FlowID is the id of the flow every turn runs.
	FlowID = "agent.turn"
	// FlowVersion is the version of the flow (and of its journal layout).
	FlowVersion = "1.1.0"
	// LoopMaxIterations bounds the agent loop whatever the budget says.
	LoopMaxIterations = 32
	// DefaultHistoryLimit is the number of prior messages loaded into the
	// prompt when the agent's conversation policy sets no historyLimit.
	DefaultHistoryLimit = 50
	// DefaultLeaseTTL is the lease a driver takes on its run when
	// Bindings.LeaseTTL is zero.
	DefaultLeaseTTL = 5 * time.Minute
)

// Node ids of the agent.turn flow, as they appear in run journals.
const (
	NodeSetup                = "setup"
	NodeRenderPrompt         = "render-prompt"
	NodePersistUserMessage   = "persist-user-message"
	NodeRunRetrievals        = "run-retrievals"
	NodeBuildInitialMessages = "build-initial-messages"
	NodeAgentLoop            = "agent-loop"
	NodeModelCall            = "model-call"
	NodeDispatchTools        = "dispatch-tools"
	NodeBudgetCheck          = "budget-check"
	NodeEvaluateGuardrails   = "evaluate-guardrails"
	NodePersistFinalMessage  = "persist-final-message"
	NodePersistProvenance    = "persist-provenance"
	NodeComposeResult        = "compose-result"
)

// Status is the outcome of a turn that did not fail.
type Status string

// Turn statuses.
const (
	// StatusCompleted: the turn finished and Result.Response holds the
	// answer.
	StatusCompleted Status = "completed"
	// StatusSuspended: the turn parked on human approvals
	// (Result.Approvals); continue it with Resume once they are decided.
	StatusSuspended Status = "suspended"
)

// Input is one turn of a conversation (the TypeScript package's InvokeAgentInput).
//
// The turn stores Input as the run snapshot (without Agent, which Resume
// takes again, and without anything that is not data), so Parameters
// must be JSON values and must not hold secrets: tools get secrets through
// the SecretResolver.
type Input struct {
	TenantID  string `json:"tenantId"`
	ProjectID string `json:"projectId,omitempty"`
	// Agent is the agent at the version the conversation was opened with.
	Agent agent.Agent `json:"-"`
	// ConversationID names an open conversation of Agent's id@version.
	ConversationID string `json:"conversationId"`
	UserMessage    string `json:"userMessage"`
	// Parameters are the prompt parameters.
	Parameters    map[string]any `json:"parameters,omitempty"`
	ParticipantID string         `json:"participantId,omitempty"`
	// DryRun checks everything but writes nothing to the conversation,
	// memory or provenance, and skips the model call.
	DryRun bool `json:"dryRun,omitempty"`
	// Principal is who the turn acts for. With Bindings.Authz set, every
	// tool call is authorized for it first; a denied call never runs.
	Principal *bindings.Principal `json:"principal,omitempty"`
	// RunID is optional: empty gets a fresh run id. Invoking again with the
	// run id of an existing run and the same input drives that run (as
	// Resume does): a finished run returns its stored result without
	// calling anything, so a host may retry an Invoke safely with the same
	// RunID. With another input (tenant, project, conversation, agent
	// id@version, user message, parameters, participant, principal or dry
	// run) the Invoke fails with *agents.RunInputMismatchError and stores
	// and calls nothing: a run id never answers another input.
	//
	// Every id of the input (tenant, project, conversation, run,
	// participant, principal) must pass bindings.CheckID; one that does
	// not is invalid-message, before anything is stored.
	RunID string `json:"runId,omitempty"`
	// ModelSettings override the agent's modelSettings for this turn,
	// field by field; the zero value overrides nothing (checked as Define
	// checks the agent's:
	// invalid-message when out of range). They are part of the run
	// snapshot, so a resumed run calls the model with them too.
	ModelSettings bindings.ModelSettings `json:"modelSettings,omitzero"`
}

// ResumeInput names a run to continue (the TypeScript package's resumeAgentTurn input).
type ResumeInput struct {
	TenantID string `json:"tenantId"`
	RunID    string `json:"runId"`
	// Agent must be the id@version the run started with. It may be left
	// zero when Bindings.Agents is set: Resume then looks the run's agent
	// up by the id and version its snapshot recorded.
	Agent agent.Agent `json:"-"`
}

// OnEvent receives the turn's events in order, synchronously. A handler
// that panics is recovered and ignored; a slow handler slows the turn.
// It receives the events of the turn's sub-agent child runs too, each
// with the child's run id.
type OnEvent func(ctx context.Context, e Event)

// Bindings are what a turn runs on (the TypeScript package's InvokeAgentBindings).
// Conversations, Snapshots, Runs, Providers and Tools are required; Memory
// is required when the agent has retrieval intents; the rest are optional
// (nil).
type Bindings struct {
	Providers     bindings.ProviderRegistry
	Tools         bindings.ToolRegistry
	Memory        bindings.MemoryQueryBinding
	Conversations bindings.ConversationBinding
	Snapshots     bindings.RunSnapshotBinding
	Runs          bindings.RunBinding
	// Journal is the drive's journal: every open of a drive and every write
	// of its journal (entries, a message step, the finish, the deferred
	// open or lease) goes through it. StoreBindings sets it to a store
	// that is a journal.Driver (memstore, pgstore); when nil the turn uses
	// journal.Adapt of Snapshots, Runs, Conversations and Hitl, so a host
	// that binds wrappers of its own is never bypassed. Set it only to the
	// Driver of the very store bound as those four.
	Journal journal.Driver

	// TenantPolicy and the policy PolicyRegistry evaluates are merged so
	// the turn is at least as strict as each.
	TenantPolicy   *bindings.TenantPolicy
	PolicyRegistry bindings.PolicyRegistry

	// Embeddings and EmbeddingModel embed the user message for semantic
	// and both retrieval modes.
	Embeddings     bindings.EmbeddingRegistry
	EmbeddingModel string

	OnEvent    OnEvent
	Provenance bindings.ProvenanceBindings
	Hitl       bindings.HitlBinding
	Secrets    bindings.SecretResolver
	// Authz authorizes tool calls for Input.Principal (when both are set).
	// It is a binding rather than an input field so that Resume, in
	// another process, applies it too.
	Authz      bindings.Authorizer
	Guardrails bindings.GuardrailRegistry
	Checks     bindings.CheckRegistry
	// Compliance, when set, receives one audit record per guardrail
	// evaluation (see bindings.ComplianceRecorder): the GuardrailsBindings'
	// compliance of the TypeScript package.
	Compliance bindings.ComplianceRecorder

	// MaxToolCallsPerResponse caps the tool calls of one model response
	// (zero or less: DefaultMaxToolCallsPerResponse). Calls past the cap
	// never run and are not stored: the model is told, in the request
	// that follows, that each of them was ignored. The cap a run's setup
	// saw is journaled, so every drive of the run applies the same one.
	MaxToolCallsPerResponse int
	// MaxStepAttempts bounds the attempts of a model or tool step that end
	// without a stored result (zero or less: DefaultMaxStepAttempts): a
	// drive that ends on a retryable error with such a step in flight
	// journals the failed attempt, and once a step has this many, the next
	// drive fails the run with *agents.StepAttemptsExhaustedError instead
	// of calling again. A failure that recurs on every drive thus ends the
	// run; the count is in the journal, so the bound holds across
	// processes. (A driver killed mid-step records nothing: a crash is not
	// counted.)
	MaxStepAttempts int

	// Quotas counts the tenant's quotas (bindings.TenantPolicy.Quotas of
	// TenantPolicy and of PolicyRegistry's bindings.PolicyKindQuota) across
	// turns, workers and time. Nil applies none (a static TenantPolicy
	// with quotas is then invalid bindings: the turn fails).
	//
	//   - The quotas are read at the start of every drive, not journaled:
	//     a quota changed while a run waits or is resumed applies from its
	//     next drive. A registry quota replaces a static one of its name.
	//   - A turn's start (its setup step) takes its "turns" quotas. A model
	//     call checks its "tokens" and "cost-usd" quotas (refused when the
	//     window is already at the limit), takes its "model-calls" quotas,
	//     and adds the call's real tokens and cost once it answered: a call
	//     never starts past a limit, but may end a window of tokens or cost
	//     a little over it. A tool call takes the "tool-calls" quotas of
	//     its tool and those with no ToolID. Each take happens inside its
	//     journal step, under the run's lease, right before the effect.
	//   - A unit is the run id and the step key: a replayed or resumed step
	//     never counts twice, a crashed one at most once. With two quotas of
	//     one scope, a unit the second refuses stays counted by the first
	//     (once: the step's next try reuses it).
	//   - A refusal by an onExceeded "fail" quota ends the turn with
	//     *agents.QuotaExceededError before the call (the run fails with its
	//     code); a refused tool call is instead answered to the model with a
	//     tool error naming the quota, and the tool does not run. With
	//     "wait" the run goes back to queued until the window frees
	//     (bindings.Run.NotBefore, through bindings.RunDeferrer): Invoke
	//     returns the *agents.QuotaExceededError (with its RetryAfter) and
	//     the Result's RunID, a Worker continues the run once the window
	//     frees, and Wait waits for it. Without a RunDeferrer (or when the
	//     unit can never fit) "wait" fails as "fail" does.
	//   - A dry run takes nothing. QuotaUsedEvent and QuotaRefusedEvent
	//     report each counted and refused unit (otelturn counts them).
	Quotas bindings.QuotaCounter

	// Agents finds a run's agent by the id and version its snapshot
	// recorded, so that Resume (and a Worker) can continue any run
	// without being handed its agent (ResumeInput.Agent left zero).
	Agents AgentLookup
	// AgentVersions lists the versions of an agent a tenant may run, so
	// that a turn resolves the semver range of each sub-agent and handoff
	// (agent.AgentRef.Version) when it starts; Agents then fetches the one
	// chosen. registry.Agents.Versions is one. Required by an agent with
	// SubAgents or Handoffs.
	AgentVersions AgentVersions
	// MaxAgentDepth bounds how deep agents nest through sub-agent calls and
	// handoffs (zero or less: DefaultMaxAgentDepth). The top-level agent
	// runs at depth 0; a call past the bound is
	// *agents.AgentDepthExceededError, reported to the model as the tool's
	// error, and nothing runs.
	MaxAgentDepth int
	// child is set by a sub-agent call on the bindings it drives its child
	// run with (see childContext); nil for every other run.
	child *childContext

	// LeaseTTL is how long a driver's lease on its run lasts; the driver
	// renews it every third of it while it runs. Zero is DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Now is the clock (nil: time.Now). The turn reads it for its journaled
	// decisions, approval expiry and wall-time budget.
	Now func() time.Time
	// NewID makes run ids and lease owner ids (nil: 128 random bits, hex).
	NewID func() string

	// Logger, when set, receives the turn's lifecycle at debug level: the
	// run started, resumed or already finished; each step run (key, node,
	// duration, error code) or replayed from the journal; and the end —
	// parked (approval ids), completed (usage) or failed (code, whether
	// resumable). Every record carries run_id, tenant_id and agent
	// (id@version). Nil logs nothing.
	Logger *slog.Logger
	// LogContent adds what the records leave out by default because it
	// may be sensitive: step outputs (messages, tool inputs and outputs,
	// model responses) and error messages. Secrets are never logged (they
	// reach tools through Secrets, never the journal).
	LogContent bool
}

// Response is the turn's answer.
type Response struct {
	// MessageID is the id of the stored agent message ("" for a dry run or
	// a suspended turn).
	MessageID string `json:"messageId,omitempty"`
	Content   string `json:"content"`
	// Output is the answer's JSON, validated against the agent's output
	// schema (nil for an agent without one). Content keeps the text.
	Output json.RawMessage `json:"output,omitempty"`
}

// Usage is what a turn consumed (the TypeScript package's AgentTurnUsage), across parks.
type Usage struct {
	InputTokens  int     `json:"inputTokens"`
	OutputTokens int     `json:"outputTokens"`
	CostUsd      float64 `json:"costUsd"`
	ModelCalls   int     `json:"modelCalls"`
	ToolCalls    int     `json:"toolCalls"`
}

// ProviderRef names the provider and model a turn was routed to.
type ProviderRef struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
}

// Violation is a failed guardrail whose action is not halt: reported, not
// carried out.
type Violation struct {
	GuardrailID string `json:"guardrailId"`
	Kind        string `json:"kind"`
	Action      string `json:"action"`
	Reason      string `json:"reason,omitempty"`
}

// Result is a turn's outcome (the TypeScript package's AgentTurnResult).
type Result struct {
	Status         Status `json:"status"`
	RunID          string `json:"runId"`
	ConversationID string `json:"conversationId"`
	TurnNumber     int    `json:"turnNumber"`
	// Appended are the messages the turn stored, in order (none for a dry
	// run).
	Appended []bindings.ConversationMessage `json:"appended"`
	// Response is a placeholder (empty) while Status is StatusSuspended.
	Response   Response        `json:"response"`
	Retrieved  []RetrievedFact `json:"retrieved"`
	Violations []Violation     `json:"violations"`
	Usage      Usage           `json:"usage"`
	Provider   ProviderRef     `json:"provider"`
	// Provenance is the signed record (nil for a dry run, a suspended turn
	// or without a provenance emitter).
	Provenance *bindings.ProvenanceRecord `json:"provenance,omitempty"`
	DryRun     bool                       `json:"dryRun,omitempty"`
	// Approvals are the pending approval requests of a suspended turn.
	Approvals []bindings.ApprovalRequest `json:"approvals"`
	// SubRuns are the child runs the turn's sub-agent calls started, in
	// the order they were called.
	SubRuns []SubRun `json:"subRuns,omitempty"`
	// AgentID and AgentVersion name the agent that gave the final answer:
	// the turn's own, or the one a handoff passed the turn to.
	AgentID      string `json:"agentId,omitempty"`
	AgentVersion string `json:"agentVersion,omitempty"`
}

// SubRun is one child run of a turn: a sub-agent call, its run id, the
// agent it ran (id and resolved version), its status and what it used
// (its own usage and its children's).
type SubRun struct {
	RunID        string `json:"runId"`
	AgentID      string `json:"agentId"`
	AgentVersion string `json:"agentVersion"`
	Status       Status `json:"status"`
	Usage        Usage  `json:"usage"`
}

// AgentVersions lists the versions of agent agentID that tenant tenantID
// may run (any order; a semver range picks among them). An unknown agent is
// an empty list or *agents.AgentNotFoundError.
type AgentVersions func(ctx context.Context, tenantID, agentID string) ([]string, error)

// DefaultMaxAgentDepth is the nesting bound of sub-agents and handoffs
// when Bindings.MaxAgentDepth is zero.
const DefaultMaxAgentDepth = 4
