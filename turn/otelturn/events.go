package otelturn

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/kindgi/agents/turn"
)

// OnEvent records one turn event; use it as turn.Bindings.OnEvent.
func (o *Observer) OnEvent(ctx context.Context, e turn.Event) {
	switch ev := e.(type) {
	case turn.TurnStartedEvent:
		o.turnStarted(ctx, ev)
	case turn.NodeStartedEvent:
		o.stepStarted(ev)
	case turn.NodeCompletedEvent:
		o.stepCompleted(ev)
	case turn.ModelCallStartedEvent:
		o.modelStarted(ev)
	case turn.ModelCallCompletedEvent:
		o.modelCompleted(ctx, ev)
	case turn.ToolStartedEvent:
		o.toolStarted(ev)
	case turn.ToolCompletedEvent:
		o.toolEnded(ctx, ev.RunID, ev.ToolCallID, "")
	case turn.ToolFailedEvent:
		o.toolEnded(ctx, ev.RunID, ev.ToolCallID, ev.Error)
	case turn.GuardrailViolatedEvent:
		o.withRun(ev.RunID, func(r *runSpans) {
			r.current().span.AddEvent("guardrail.violated", trace.WithAttributes(
				attribute.String("kindgi.guardrail.id", ev.GuardrailID), attribute.String("kindgi.guardrail.action", ev.Action)))
		})
	case turn.ApprovalRequestedEvent:
		o.withRun(ev.RunID, func(r *runSpans) {
			r.current().span.AddEvent("approval.requested", trace.WithAttributes(
				attribute.String("kindgi.approval.id", ev.ApprovalID), AttrGenAIToolName.String(ev.ToolID)))
		})
	case turn.TurnSuspendedEvent:
		o.turnEnded(ctx, ev.RunID, "suspended", "", "", nil)
	case turn.TurnCompletedEvent:
		o.turnEnded(ctx, ev.RunID, "completed", "", "", &ev.Usage)
	case turn.QuotaUsedEvent:
		o.quotaUsed.Add(ctx, ev.Amount, metric.WithAttributes(o.quotaAttrs(ev.RunID, ev.Quota, ev.Scope)...))
	case turn.QuotaRefusedEvent:
		o.quotaRefused.Add(ctx, 1, metric.WithAttributes(append(o.quotaAttrs(ev.RunID, ev.Quota, ev.Scope), AttrQuotaWait.Bool(ev.Wait))...))
	case turn.TurnFailedEvent:
		o.turnEnded(ctx, ev.RunID, "failed", ev.Code, ev.Message, nil)
	}
}

// quotaAttrs are a quota metric's attributes: the quota, its scope and,
// for a run the observer follows, the tenant.
func (o *Observer) quotaAttrs(runID, name string, scope string) []attribute.KeyValue {
	attrs := []attribute.KeyValue{AttrQuotaName.String(name), AttrQuotaScope.String(scope)}
	o.withRun(runID, func(r *runSpans) { attrs = append(attrs, r.attrs[1]) })
	return attrs
}

func (o *Observer) withRun(runID string, f func(r *runSpans)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if r, ok := o.runs[runID]; ok {
		f(r)
	}
}

// current is the span new children hang from: the innermost open step,
// else the agent loop, else the turn.
func (r *runSpans) current() *timedSpan {
	if n := len(r.stack); n > 0 {
		return r.steps[r.stack[n-1]]
	}
	if r.loop != nil {
		return r.loop
	}
	return &r.turn
}

func loopNode(node string) bool {
	return node == turn.NodeModelCall || node == turn.NodeDispatchTools || node == turn.NodeBudgetCheck || node == turn.NodeAgentLoop
}

func (o *Observer) turnStarted(ctx context.Context, ev turn.TurnStartedEvent) {
	attrs := []attribute.KeyValue{
		AttrRunID.String(ev.RunID),
		AttrTenantID.String(ev.TenantID),
		AttrAgentID.String(ev.AgentID),
		AttrAgentVersion.String(ev.AgentVersion),
		AttrAgentRef.String(ev.AgentID + "@" + ev.AgentVersion),
	}
	spanAttrs := append([]attribute.KeyValue{
		AttrGenAIOperation.String("invoke_agent"),
		AttrGenAIAgentID.String(ev.AgentID),
		AttrGenAIConversation.String(ev.ConversationID),
		attribute.Bool("kindgi.resumed", ev.Resumed),
	}, attrs...)
	start := o.now()
	sctx, span := o.tracer.Start(ctx, "invoke_agent "+ev.AgentID,
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithTimestamp(start), trace.WithAttributes(spanAttrs...))
	o.mu.Lock()
	defer o.mu.Unlock()
	if old, ok := o.runs[ev.RunID]; ok {
		// A drive that never reported its end (the host panicked): close
		// its spans rather than leak them.
		old.endAll(start, codes.Error, "superseded by a new drive")
	}
	o.runs[ev.RunID] = &runSpans{
		turn:   timedSpan{span: span, ctx: sctx, start: start},
		attrs:  attrs,
		steps:  map[string]*timedSpan{},
		models: map[int]*timedSpan{},
		tools:  map[string]*timedSpan{},
	}
}

func (o *Observer) stepStarted(ev turn.NodeStartedEvent) {
	now := o.now()
	o.withRun(ev.RunID, func(r *runSpans) {
		parent := &r.turn
		if loopNode(ev.Node) {
			if r.loop == nil {
				r.loop = o.startSpan(&r.turn, turn.NodeAgentLoop, now,
					trace.WithAttributes(AttrNode.String(turn.NodeAgentLoop), AttrRunID.String(ev.RunID)))
			}
			parent = r.loop
		} else if r.loop != nil && len(r.stack) == 0 {
			r.loop.span.End(trace.WithTimestamp(now))
			r.loop = nil
		}
		if n := len(r.stack); n > 0 {
			parent = r.steps[r.stack[n-1]]
		}
		r.steps[ev.Key] = o.startSpan(parent, stepSpanName(ev), now,
			trace.WithAttributes(AttrNode.String(ev.Node), attribute.String("kindgi.step.key", ev.Key), AttrRunID.String(ev.RunID)))
		r.stack = append(r.stack, ev.Key)
	})
}

// stepSpanName names a step's span after its node, except a step that
// stores the message of a model call or a tool call (key ".../message"):
// it is "NODE/message", so an iteration's model-call step and the step
// that stores its answer read apart ("model-call", "model-call/message").
func stepSpanName(ev turn.NodeStartedEvent) string {
	if strings.HasSuffix(ev.Key, "/"+messageSuffix) {
		return ev.Node + "/" + messageSuffix
	}
	return ev.Node
}

// messageSuffix is the last segment of the key of a step that stores a
// message inside the agent loop.
const messageSuffix = "message"

func (o *Observer) stepCompleted(ev turn.NodeCompletedEvent) {
	now := o.now()
	o.withRun(ev.RunID, func(r *runSpans) {
		s, ok := take(r.steps, ev.Key)
		if !ok {
			return
		}
		for i := len(r.stack) - 1; i >= 0; i-- {
			if r.stack[i] == ev.Key {
				r.stack = append(r.stack[:i], r.stack[i+1:]...)
				break
			}
		}
		if ev.Code != "" {
			s.span.SetAttributes(AttrErrorCode.String(ev.Code))
			s.span.SetStatus(codes.Error, ev.Code)
		}
		s.span.End(trace.WithTimestamp(now))
	})
}

func (o *Observer) modelStarted(ev turn.ModelCallStartedEvent) {
	now := o.now()
	o.withRun(ev.RunID, func(r *runSpans) {
		r.models[ev.Iteration] = o.startSpan(r.current(), "chat "+ev.Model, now, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(chatAttrs(ev.Provider, ev.Model,
				AttrRunID.String(ev.RunID),
				AttrTenantID.String(r.tenant()),
				attribute.Int("kindgi.iteration", ev.Iteration),
			)...))
	})
}

// chatAttrs are the attributes a model call's span and metrics share —
// the operation, the provider (as gen_ai.system and its successor) and
// the requested model — followed by more.
func chatAttrs(provider, model string, more ...attribute.KeyValue) []attribute.KeyValue {
	return append([]attribute.KeyValue{
		AttrGenAIOperation.String("chat"),
		AttrGenAISystem.String(provider),
		AttrGenAIProviderName.String(provider),
		AttrGenAIRequestModel.String(model),
	}, more...)
}

// startSpan starts a span named name under parent at now, with opts, and
// returns it timed from now.
func (o *Observer) startSpan(parent *timedSpan, name string, now time.Time, opts ...trace.SpanStartOption) *timedSpan {
	ctx, span := o.tracer.Start(parent.ctx, name, append(opts, trace.WithTimestamp(now))...)
	return &timedSpan{span: span, ctx: ctx, start: now}
}

// take removes the open span of key k from open and returns it; ok is
// false when none is open (an end the observer did not see start).
func take[K comparable](open map[K]*timedSpan, k K) (s *timedSpan, ok bool) {
	if s, ok = open[k]; ok {
		delete(open, k)
	}
	return s, ok
}

func (r *runSpans) tenant() string { return r.attrs[1].Value.AsString() }

func (o *Observer) modelCompleted(ctx context.Context, ev turn.ModelCallCompletedEvent) {
	now := o.now()
	o.withRun(ev.RunID, func(r *runSpans) {
		s, ok := take(r.models, ev.Iteration)
		if !ok {
			return
		}
		model := ev.ResponseModel
		if model == "" {
			model = ev.Model
		}
		s.span.SetAttributes(
			AttrGenAIResponseModel.String(model),
			AttrGenAIInputTokens.Int(ev.Usage.InputTokens),
			AttrGenAIOutputTokens.Int(ev.Usage.OutputTokens),
			AttrCostUsd.Float64(ev.Usage.CostUsd),
			attribute.Int("kindgi.tool_calls", ev.ToolCalls),
		)
		s.span.End(trace.WithTimestamp(now))
		common := metric.WithAttributes(chatAttrs(ev.Provider, ev.Model, r.attrs[1], r.attrs[2])...)
		o.opDuration.Record(ctx, now.Sub(s.start).Seconds(), common)
		o.tokens.Record(ctx, int64(ev.Usage.InputTokens), common, metric.WithAttributes(AttrGenAITokenType.String("input")))
		o.tokens.Record(ctx, int64(ev.Usage.OutputTokens), common, metric.WithAttributes(AttrGenAITokenType.String("output")))
		if ev.Usage.CostUsd > 0 {
			o.cost.Add(ctx, ev.Usage.CostUsd, common)
		}
	})
}

func (o *Observer) toolStarted(ev turn.ToolStartedEvent) {
	now := o.now()
	o.withRun(ev.RunID, func(r *runSpans) {
		r.tools[ev.ToolCallID] = o.startSpan(r.current(), "execute_tool "+ev.ToolID, now, trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(
				AttrGenAIOperation.String("execute_tool"),
				AttrGenAIToolName.String(ev.ToolID),
				AttrGenAIToolCallID.String(ev.ToolCallID),
				AttrToolVersion.String(ev.ToolVersion),
				AttrRunID.String(ev.RunID),
				AttrTenantID.String(r.tenant()),
			))
	})
}

func (o *Observer) toolEnded(ctx context.Context, runID, callID, failure string) {
	now := o.now()
	o.withRun(runID, func(r *runSpans) {
		s, ok := take(r.tools, callID)
		if !ok {
			return
		}
		outcome := "ok"
		if failure != "" {
			outcome = "error"
			s.span.SetStatus(codes.Error, failure)
		}
		s.span.End(trace.WithTimestamp(now))
		o.toolDuration.Record(ctx, now.Sub(s.start).Seconds(), metric.WithAttributes(AttrOutcome.String(outcome), r.attrs[1], r.attrs[2]))
	})
}

func (o *Observer) turnEnded(ctx context.Context, runID, outcome, code, message string, usage *turn.Usage) {
	now := o.now()
	o.mu.Lock()
	r, ok := o.runs[runID]
	if ok {
		delete(o.runs, runID)
	}
	o.mu.Unlock()
	if !ok {
		return
	}
	if usage != nil {
		r.turn.span.SetAttributes(
			AttrGenAIInputTokens.Int(usage.InputTokens),
			AttrGenAIOutputTokens.Int(usage.OutputTokens),
			AttrCostUsd.Float64(usage.CostUsd),
			attribute.Int("kindgi.model_calls", usage.ModelCalls),
			attribute.Int("kindgi.tool_calls", usage.ToolCalls),
		)
	}
	r.turn.span.SetAttributes(AttrOutcome.String(outcome))
	status, desc := codes.Ok, ""
	if code != "" {
		r.turn.span.SetAttributes(AttrErrorCode.String(code))
		status, desc = codes.Error, code+": "+message
	}
	r.endAll(now, status, desc)
	attrs := metric.WithAttributes(AttrOutcome.String(outcome), r.attrs[1], r.attrs[2], r.attrs[3])
	o.turns.Add(ctx, 1, attrs)
	o.turnDuration.Record(ctx, now.Sub(r.turn.start).Seconds(), attrs)
}

// endAll ends every open span of the drive, innermost first.
func (r *runSpans) endAll(at time.Time, status codes.Code, desc string) {
	for id, s := range r.tools {
		s.span.SetStatus(codes.Error, "unfinished")
		s.span.End(trace.WithTimestamp(at))
		delete(r.tools, id)
	}
	for it, s := range r.models {
		s.span.SetStatus(codes.Error, "unfinished")
		s.span.End(trace.WithTimestamp(at))
		delete(r.models, it)
	}
	for i := len(r.stack) - 1; i >= 0; i-- {
		s := r.steps[r.stack[i]]
		if status == codes.Error {
			s.span.SetStatus(codes.Error, desc)
		}
		s.span.End(trace.WithTimestamp(at))
	}
	r.stack, r.steps = nil, nil
	if r.loop != nil {
		r.loop.span.End(trace.WithTimestamp(at))
		r.loop = nil
	}
	r.turn.span.SetStatus(status, desc)
	r.turn.span.End(trace.WithTimestamp(at))
}
