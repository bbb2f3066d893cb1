// Package otelturn turns the events of a turn into OpenTelemetry spans and
// metrics. It is its own package so that the core does not import
// OpenTelemetry.
//
// Pass Observer.OnEvent as turn.Bindings.OnEvent (or call it from your own
// handler). Each drive of a run becomes a span named "invoke_agent
// AGENT_ID", a child of the span in the turn's context. Each journal step
// it runs is a child span named after the step's node (setup,
// render-prompt, …); the steps of the agent loop (model-call,
// dispatch-tools, budget-check) hang from one "agent-loop" span. A model
// call is a span "chat MODEL" and a tool call a span "execute_tool
// TOOL_ID", children of the step that makes them. Steps replayed from the
// journal run nothing and make no span. Spans carry the GenAI semantic-convention attributes
// (gen_ai.system, gen_ai.provider.name, gen_ai.request.model,
// gen_ai.response.model, gen_ai.usage.input_tokens,
// gen_ai.usage.output_tokens, gen_ai.tool.name, gen_ai.tool.call.id) and
// kindgi.run.id, kindgi.tenant.id, kindgi.agent.id, kindgi.agent.version.
//
// Metrics: kindgi.turns (counter, by outcome), gen_ai.client.token.usage
// (histogram, by gen_ai.token.type), kindgi.turn.cost (counter, USD),
// kindgi.turn.duration, gen_ai.client.operation.duration and
// kindgi.tool.duration (histograms, seconds).
//
// Message content and tool inputs and outputs are never recorded.
package otelturn

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the tracer and meter.
const ScopeName = "github.com/kindgi/agents/turn/otelturn"

// Attribute keys of the GenAI semantic conventions and of kindgi.
const (
	AttrGenAISystem        = attribute.Key("gen_ai.system")
	AttrGenAIProviderName  = attribute.Key("gen_ai.provider.name")
	AttrGenAIOperation     = attribute.Key("gen_ai.operation.name")
	AttrGenAIRequestModel  = attribute.Key("gen_ai.request.model")
	AttrGenAIResponseModel = attribute.Key("gen_ai.response.model")
	AttrGenAIInputTokens   = attribute.Key("gen_ai.usage.input_tokens")
	AttrGenAIOutputTokens  = attribute.Key("gen_ai.usage.output_tokens")
	AttrGenAITokenType     = attribute.Key("gen_ai.token.type")
	AttrGenAIToolName      = attribute.Key("gen_ai.tool.name")
	AttrGenAIToolCallID    = attribute.Key("gen_ai.tool.call.id")
	AttrGenAIAgentID       = attribute.Key("gen_ai.agent.id")
	AttrGenAIConversation  = attribute.Key("gen_ai.conversation.id")
	AttrRunID              = attribute.Key("kindgi.run.id")
	AttrTenantID           = attribute.Key("kindgi.tenant.id")
	AttrAgentID            = attribute.Key("kindgi.agent.id")
	AttrAgentVersion       = attribute.Key("kindgi.agent.version")
	AttrAgentRef           = attribute.Key("kindgi.agent")
	AttrNode               = attribute.Key("kindgi.node")
	AttrToolVersion        = attribute.Key("kindgi.tool.version")
	AttrOutcome            = attribute.Key("kindgi.outcome")
	AttrCostUsd            = attribute.Key("kindgi.cost_usd")
	AttrErrorCode          = attribute.Key("error.type")
	AttrQuotaName          = attribute.Key("kindgi.quota.name")
	AttrQuotaScope         = attribute.Key("kindgi.quota.scope")
	AttrQuotaWait          = attribute.Key("kindgi.quota.wait")
)

// Options configures an Observer; nil fields use the global providers.
type Options struct {
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	// Now is the clock for durations (nil: time.Now).
	Now func() time.Time
}

// Observer records turns. It is safe for concurrent use by many turns.
type Observer struct {
	tracer trace.Tracer
	now    func() time.Time

	turns        metric.Int64Counter
	tokens       metric.Int64Histogram
	cost         metric.Float64Counter
	turnDuration metric.Float64Histogram
	opDuration   metric.Float64Histogram
	toolDuration metric.Float64Histogram
	quotaUsed    metric.Float64Counter
	quotaRefused metric.Int64Counter

	mu   sync.Mutex
	runs map[string]*runSpans
}

type timedSpan struct {
	span  trace.Span
	ctx   context.Context
	start time.Time
}

// runSpans are the open spans of one drive of a run.
type runSpans struct {
	turn  timedSpan
	attrs []attribute.KeyValue // run, tenant, agent id, agent version, agent ref
	// loop is the agent-loop span, open while steps of its nodes run.
	loop *timedSpan
	// steps are the open journal-step spans by key; stack orders them.
	steps  map[string]*timedSpan
	stack  []string
	models map[int]*timedSpan
	tools  map[string]*timedSpan
}

// New returns an Observer.
func New(opts *Options) (*Observer, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.TracerProvider == nil {
		o.TracerProvider = otel.GetTracerProvider()
	}
	if o.MeterProvider == nil {
		o.MeterProvider = otel.GetMeterProvider()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	m := o.MeterProvider.Meter(ScopeName)
	ob := &Observer{tracer: o.TracerProvider.Tracer(ScopeName), now: o.Now, runs: map[string]*runSpans{}}
	var err error
	if ob.turns, err = m.Int64Counter("kindgi.turns", metric.WithDescription("Turns driven, by outcome."), metric.WithUnit("{turn}")); err != nil {
		return nil, err
	}
	if ob.tokens, err = m.Int64Histogram("gen_ai.client.token.usage", metric.WithDescription("Tokens used per model call."), metric.WithUnit("{token}")); err != nil {
		return nil, err
	}
	if ob.cost, err = m.Float64Counter("kindgi.turn.cost", metric.WithDescription("Provider-reported model cost."), metric.WithUnit("USD")); err != nil {
		return nil, err
	}
	if ob.turnDuration, err = m.Float64Histogram("kindgi.turn.duration", metric.WithDescription("Wall time of a drive of a turn."), metric.WithUnit("s")); err != nil {
		return nil, err
	}
	if ob.opDuration, err = m.Float64Histogram("gen_ai.client.operation.duration", metric.WithDescription("Duration of a model call."), metric.WithUnit("s")); err != nil {
		return nil, err
	}
	if ob.toolDuration, err = m.Float64Histogram("kindgi.tool.duration", metric.WithDescription("Duration of a tool call."), metric.WithUnit("s")); err != nil {
		return nil, err
	}
	if ob.quotaUsed, err = m.Float64Counter("kindgi.quota.consumed", metric.WithDescription("Units counted against tenant quotas: calls, turns, tokens or US dollars, by quota.")); err != nil {
		return nil, err
	}
	if ob.quotaRefused, err = m.Int64Counter("kindgi.quota.refused", metric.WithDescription("Units tenant quotas refused, by quota and whether the run waits."), metric.WithUnit("{unit}")); err != nil {
		return nil, err
	}
	return ob, nil
}
