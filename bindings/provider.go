package bindings

import (
	"context"
	"encoding/json"
	"time"

	"github.com/kindgi/agents/agent"
)

// ModelInfo describes a model a provider serves.
type ModelInfo struct {
	ID string `json:"id"`
	// Features are the capability features the model has ("tool-use",
	// "json-mode", "vision", …); routing matches an agent's needs against
	// them.
	Features      []string `json:"features"`
	ContextWindow int      `json:"contextWindow,omitempty"`
	// Prices in US dollars per one million tokens.
	InputPricePerMTok  float64 `json:"inputPricePerMTok,omitempty"`
	OutputPricePerMTok float64 `json:"outputPricePerMTok,omitempty"`
}

// HasFeature reports whether the model lists feature.
func (m ModelInfo) HasFeature(feature string) bool {
	for _, f := range m.Features {
		if f == feature {
			return true
		}
	}
	return false
}

// Cost prices a usage by the model's per-token prices.
func (m ModelInfo) Cost(inputTokens, outputTokens int) float64 {
	return (float64(inputTokens)*m.InputPricePerMTok + float64(outputTokens)*m.OutputPricePerMTok) / 1e6
}

// ChatRole is the role of a message sent to a model.
type ChatRole string

// Chat roles.
const (
	ChatSystem    ChatRole = "system"
	ChatUser      ChatRole = "user"
	ChatAssistant ChatRole = "assistant"
	ChatTool      ChatRole = "tool"
)

// ToolCall is a model's request to call a tool. Name is the tool id;
// Arguments is a JSON object.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ChatMessage is one message of a model request.
type ChatMessage struct {
	Role    ChatRole `json:"role"`
	Content string   `json:"content"`
	// ToolCalls are the calls an assistant message asked for.
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// ToolCallID links a tool message to the call it answers.
	ToolCallID string `json:"toolCallId,omitempty"`
}

// ToolDefinition offers a tool to a model. Name is the tool id (which may
// contain dots: a provider whose API restricts names encodes them and maps
// the model's calls back to the id).
type ToolDefinition struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}

// GenerateRequest is one model call.
type GenerateRequest struct {
	Model    string           `json:"model"`
	Messages []ChatMessage    `json:"messages"`
	Tools    []ToolDefinition `json:"tools,omitempty"`
	// RequestID is the call's idempotency key (stable across a retry of the
	// same journal step).
	RequestID string `json:"requestId,omitempty"`
	TenantID  string `json:"tenantId,omitempty"`
	RunID     string `json:"runId,omitempty"`
	// Settings are the generation settings (the agent's modelSettings
	// overridden by the turn's). A provider maps what its API supports and
	// documents what it ignores; the zero value leaves every default.
	Settings ModelSettings `json:"settings,omitzero"`
	// Output, when set, is the JSON Schema (for an object) the final answer
	// must fit: the provider asks for it natively (a JSON-schema response
	// format), and the answer's Text is that JSON. The turn validates it
	// whatever the provider did.
	Output json.RawMessage `json:"output,omitempty"`
}

// ModelSettings are generation settings: Temperature, TopP,
// MaxOutputTokens, Stop and Seed, each optional (nil or empty: the
// provider's default). It is the type of an agent's modelSettings, so an
// agent's settings pass to a request unchanged.
type ModelSettings = agent.ModelSettings

// Usage is what a call consumed. CostUsd is the provider-reported cost.
type Usage struct {
	InputTokens  int     `json:"inputTokens"`
	OutputTokens int     `json:"outputTokens"`
	CostUsd      float64 `json:"costUsd"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{InputTokens: u.InputTokens + o.InputTokens, OutputTokens: u.OutputTokens + o.OutputTokens, CostUsd: u.CostUsd + o.CostUsd}
}

// GenerateResponse is a model's answer: text, tool calls, or both.
type GenerateResponse struct {
	Text         string     `json:"text,omitempty"`
	ToolCalls    []ToolCall `json:"toolCalls,omitempty"`
	FinishReason string     `json:"finishReason,omitempty"`
	// Model is the model that answered (may be more specific than asked).
	Model string `json:"model,omitempty"`
	Usage Usage  `json:"usage"`
}

// Provider is a model provider.
//
// Generate returns *agents.ModelInvocationError on failure and honours ctx.
// Models is static for the provider's life, or cheap to call.
//
// req is read-only to the provider, and only until Generate returns: its
// slices and raw JSON (messages, tool calls' arguments, tools' input
// schemas) are the turn's own, shared with its journal and the next
// calls, not copies. A provider that needs to change one copies it first.
type Provider interface {
	ID() string
	Models() []ModelInfo
	Generate(ctx context.Context, req GenerateRequest) (GenerateResponse, error)
}

// Delta is one piece of a streamed answer. A text delta has Text; a tool
// call delta has ToolCallIndex, the call's position in the response's
// ToolCalls, and carries the call's ToolCallID and ToolName on its first
// delta and a piece of its JSON arguments in ArgumentsDelta (pieces are
// split anywhere in the JSON text, even inside a token or a string).
// Concatenating a call's ArgumentsDelta in order gives its arguments as the
// API sent them. ToolName is the tool id (decoded as in the response).
type Delta struct {
	Text           string `json:"text,omitempty"`
	ToolCallIndex  int    `json:"toolCallIndex"`
	ToolCallID     string `json:"toolCallId,omitempty"`
	ToolName       string `json:"toolName,omitempty"`
	ArgumentsDelta string `json:"argumentsDelta,omitempty"`
}

// StreamingProvider is a Provider that can stream its answer. A turn uses
// it whenever its provider has it.
//
// GenerateStream sends req like Generate, calls onDelta for each piece of
// the answer as it arrives (synchronously, in order, from the calling
// goroutine, never after it returns), and returns the assembled response:
// exactly what Generate would have returned for the same answer. A stream
// that breaks or reports an error part-way fails with
// *agents.ModelInvocationError (the deltas already delivered are not
// taken back: the caller discards them); cancelling ctx stops it at once.
// A provider retries a failed attempt only while nothing has been
// delivered to onDelta.
type StreamingProvider interface {
	Provider
	GenerateStream(ctx context.Context, req GenerateRequest, onDelta func(Delta)) (GenerateResponse, error)
}

// ModelRetry describes a model call attempt that failed and that the
// provider is about to send again: which attempt failed (1 for the first),
// the HTTP status of its answer (0 when none came: a transport error), the
// wait the answer's Retry-After asked for (0 when it had none), the wait
// the provider chose before the next attempt, and the attempt's error
// (*agents.ModelInvocationError from the providers of this module).
type ModelRetry struct {
	Attempt    int
	Status     int
	RetryAfter time.Duration
	Wait       time.Duration
	Err        error
}

type modelRetryKey struct{}

// WithModelRetryReporter returns a context that carries report: a
// provider sending a call with it reports each retry it makes
// (ReportModelRetry) before it waits. This is how a provider's retries,
// invisible in its answer, reach whoever sends the call: a turn installs
// one for each model call, logs each retry at warn and emits
// turn.ModelCallRetryEvent. report is called synchronously from the
// provider's calling goroutine and must not block.
func WithModelRetryReporter(ctx context.Context, report func(context.Context, ModelRetry)) context.Context {
	return context.WithValue(ctx, modelRetryKey{}, report)
}

// ReportModelRetry tells the reporter ctx carries (WithModelRetryReporter),
// if any, that a model call attempt failed and is being retried. Providers
// call it once per retry, before waiting; without a reporter it does
// nothing.
func ReportModelRetry(ctx context.Context, r ModelRetry) {
	if report, ok := ctx.Value(modelRetryKey{}).(func(context.Context, ModelRetry)); ok && report != nil {
		report(ctx, r)
	}
}

// ProviderRegistry lists the providers a turn may route to. Providers
// returns them in a stable order; Provider returns nil, false for an
// unknown id.
type ProviderRegistry interface {
	Providers() []Provider
	Provider(id string) (Provider, bool)
}

// Providers is a ProviderRegistry over a fixed list, in the given order.
type Providers []Provider

// Providers returns the list.
func (p Providers) Providers() []Provider { return p }

// Provider finds a provider by id.
func (p Providers) Provider(id string) (Provider, bool) {
	for _, pr := range p {
		if pr.ID() == id {
			return pr, true
		}
	}
	return nil, false
}

// EmbeddingRegistry embeds texts with a named model.
type EmbeddingRegistry interface {
	Embed(ctx context.Context, model string, texts []string) ([][]float32, error)
}
