package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/turn"
)

// failingConversations fails AppendMessage with a storage error.
type failingConversations struct {
	bindings.ConversationBinding
}

func (failingConversations) AppendMessage(context.Context, bindings.AppendMessageInput) (bindings.ConversationMessage, error) {
	return bindings.ConversationMessage{}, &agents.PersistenceError{Op: "append message", Err: errors.New("disk full")}
}

// TestInvokeErrorCodes reaches every error code a turn can return through
// turn.Invoke.
func TestInvokeErrorCodes(t *testing.T) {
	answer := []scripted.Response{scripted.Say("Done.")}
	tests := []struct {
		name   string
		code   string
		script []scripted.Response
		spec   func(*agent.Spec)
		setup  func(t *testing.T, f *fixture, in *turn.Input, b *turn.Bindings)
		// check, when set, inspects the error further.
		check func(t *testing.T, err error)
		// noRun marks a failure before the run is created: the Result
		// names no run. Every other failure's Result names the run.
		noRun bool
		// after, when set, inspects the fixture after the failure.
		after func(t *testing.T, f *fixture)
	}{
		{
			name: "empty user message", code: agents.CodeInvalidMessage, script: answer, noRun: true,
			setup: func(_ *testing.T, _ *fixture, in *turn.Input, _ *turn.Bindings) { in.UserMessage = " " },
		},
		{
			name: "missing required binding", code: agents.CodeInvalidBindings, script: answer, noRun: true,
			setup: func(_ *testing.T, _ *fixture, _ *turn.Input, b *turn.Bindings) { b.Runs = nil },
		},
		{
			name: "conversation idle past autoCloseAfterInactiveSeconds", code: agents.CodeConversationClosed, script: answer,
			spec:  func(s *agent.Spec) { s.ConversationPolicy.AutoCloseAfterInactiveSeconds = new(60) },
			setup: func(_ *testing.T, f *fixture, _ *turn.Input, _ *turn.Bindings) { f.clock.Advance(2 * time.Hour) },
			after: func(t *testing.T, f *fixture) {
				c, err := f.store.GetConversation(t.Context(), tenant, f.conv.ID)
				if err != nil || c.Status != bindings.ConversationClosed || c.MessageCount != 0 {
					t.Errorf("conversation after the turn: %+v, %v; want closed with no message", c, err)
				}
				if f.provider.Calls() != 0 {
					t.Errorf("the model was called %d times", f.provider.Calls())
				}
			},
		},
		{
			name: "conversation not found", code: agents.CodeConversationNotFound, script: answer,
			setup: func(_ *testing.T, _ *fixture, in *turn.Input, _ *turn.Bindings) { in.ConversationID = "nope" },
		},
		{
			name: "conversation closed", code: agents.CodeConversationClosed, script: answer,
			setup: func(t *testing.T, f *fixture, _ *turn.Input, _ *turn.Bindings) {
				if err := f.store.CloseConversation(t.Context(), tenant, f.conv.ID); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name: "conversation of another agent version", code: agents.CodeAgentVersionMismatch, script: answer,
			setup: func(t *testing.T, f *fixture, in *turn.Input, _ *turn.Bindings) {
				c, err := f.store.OpenConversation(t.Context(), bindings.OpenConversationInput{
					TenantID: tenant, ProjectID: project, AgentID: f.agent.ID, AgentVersion: "0.9.0",
				})
				if err != nil {
					t.Fatal(err)
				}
				in.ConversationID = c.ID
			},
		},
		{
			name: "missing parameter", code: agents.CodeMissingParameter, script: answer,
			setup: func(_ *testing.T, _ *fixture, in *turn.Input, _ *turn.Bindings) { in.Parameters = nil },
		},
		{
			name: "render failure", code: agents.CodeRenderFailure, script: answer,
			// LiquidJS renders "x" | divided_by: 0 as NaN; a loop past the
			// render's work limit is a render failure.
			spec: func(s *agent.Spec) {
				s.Instructions = "You draft for {{ firmName }}.{% for i in (1..1000000000) %}x{% endfor %}"
			},
		},
		{
			name: "unresolved tool", code: agents.CodeUnresolvedTool, script: answer,
			spec: func(s *agent.Spec) { s.Tools = append(s.Tools, agent.ToolRef{ID: "acme.missing", Version: "^1.0.0"}) },
		},
		{
			name: "tool version unresolvable", code: agents.CodeToolVersionUnresolvable, script: answer,
			spec: func(s *agent.Spec) { s.Tools[0].Version = "^9.0.0" },
		},
		{
			name: "capability routing", code: agents.CodeCapabilityRoutingFailed, script: answer,
			spec: func(s *agent.Spec) { s.Capabilities = []agent.Capability{{Needs: []agent.Need{{Feature: "vision"}}}} },
			check: func(t *testing.T, err error) {
				var cre *agents.CapabilityRoutingError
				if !errors.As(err, &cre) || len(cre.Refusals) != 1 || cre.Refusals[0].Reason != "lacks feature vision" {
					t.Errorf("refusals = %+v", cre)
				}
			},
		},
		{
			name: "routing refused by tenant policy", code: agents.CodeCapabilityRoutingFailed, script: answer,
			setup: func(_ *testing.T, _ *fixture, _ *turn.Input, b *turn.Bindings) {
				b.TenantPolicy = &bindings.TenantPolicy{DenyProviders: []string{scripted.DefaultID}}
			},
		},
		{
			name: "model invocation", code: agents.CodeModelInvocationFailed,
			script: []scripted.Response{{Err: errors.New("HTTP 503")}},
		},
		{
			name: "script exhausted", code: agents.CodeModelInvocationFailed, script: nil,
		},
		{
			name: "tool invocation", code: agents.CodeToolInvocationFailed, script: searchThenAnswer(),
			setup: func(t *testing.T, f *fixture, _ *turn.Input, _ *turn.Bindings) {
				f.addTool("acme.clause-search", "1.3.0", clauseSchema, func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
					return json.RawMessage(`not json`), nil
				})
			},
		},
		{
			name: "steps budget", code: agents.CodeBudgetExceeded, script: searchThenAnswer(),
			spec: func(s *agent.Spec) { one := 1; s.Budget.MaxSteps = &one },
			check: func(t *testing.T, err error) {
				var be *agents.BudgetExceededError
				if !errors.As(err, &be) || be.Kind != agents.BudgetSteps {
					t.Errorf("error = %#v, want kind steps", err)
				}
			},
		},
		{
			name: "cost budget capped by tenant policy", code: agents.CodeBudgetExceeded, script: searchThenAnswer(),
			setup: func(_ *testing.T, _ *fixture, _ *turn.Input, b *turn.Bindings) {
				c := 0.0005
				b.TenantPolicy = &bindings.TenantPolicy{MaxCostUsd: &c}
			},
			check: func(t *testing.T, err error) {
				var be *agents.BudgetExceededError
				if !errors.As(err, &be) || be.Kind != agents.BudgetCost || be.Limit != 0.0005 {
					t.Errorf("error = %#v, want kind cost, limit 0.0005", err)
				}
			},
		},
		{
			name: "cancelled context", code: agents.CodeTurnAborted, script: searchThenAnswer(),
			setup: func(_ *testing.T, f *fixture, _ *turn.Input, _ *turn.Bindings) {
				f.addTool("acme.clause-search", "1.3.0", clauseSchema, func(ctx context.Context, _ json.RawMessage, _ bindings.CallContext) (json.RawMessage, error) {
					cancelFromTool(ctx)
					return nil, ctx.Err()
				})
			},
			check: func(t *testing.T, err error) {
				var ta *agents.TurnAbortedError
				if !errors.As(err, &ta) || ta.Reason != agents.AbortExternal {
					t.Errorf("error = %#v, want reason external", err)
				}
			},
		},
		{
			name: "wall time", code: agents.CodeTurnAborted, script: searchThenAnswer(),
			setup: func(_ *testing.T, f *fixture, _ *turn.Input, _ *turn.Bindings) {
				f.addTool("acme.clause-search", "1.3.0", clauseSchema, func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
					f.clock.Advance(2 * time.Minute) // past maxWallMs 60 000
					return json.RawMessage(`{}`), nil
				})
			},
			check: func(t *testing.T, err error) {
				var ta *agents.TurnAbortedError
				if !errors.As(err, &ta) || ta.Reason != agents.AbortTimeout {
					t.Errorf("error = %#v, want reason timeout", err)
				}
			},
		},
		{
			name: "gated tool without a HITL binding", code: agents.CodeInvalidBindings, script: emailThenAnswer(), noRun: true,
			setup: func(_ *testing.T, _ *fixture, _ *turn.Input, b *turn.Bindings) { b.Hitl = nil },
			after: func(t *testing.T, f *fixture) {
				if f.provider.Calls() != 0 || f.log.total() != 0 {
					t.Errorf("the model was called %d times, tools %d times; want neither", f.provider.Calls(), f.log.total())
				}
			},
		},
		{
			name: "tool gated by the tenant's floor without a HITL binding", code: agents.CodeInvalidBindings, script: answer,
			spec: func(s *agent.Spec) { s.ConversationPolicy.Hitl = nil },
			setup: func(_ *testing.T, _ *fixture, _ *turn.Input, b *turn.Bindings) {
				b.Hitl = nil
				b.TenantPolicy = &bindings.TenantPolicy{Hitl: &bindings.HitlSpec{ToolFloors: map[string]agent.ToolGate{"acme.clause-search": {Mode: agent.GateAlwaysAsk}}}}
			},
			after: func(t *testing.T, f *fixture) {
				if f.provider.Calls() != 0 {
					t.Errorf("the model was called %d times; want none", f.provider.Calls())
				}
			},
		},
		{
			// A registry's default gate (an MCP tool's destructiveHint,
			// bindings.ToolDescriptor.Gate) is a floor like the tenant's.
			name: "tool gated by its registry without a HITL binding", code: agents.CodeInvalidBindings, script: answer,
			spec: func(s *agent.Spec) { s.ConversationPolicy.Hitl = nil },
			setup: func(t *testing.T, f *fixture, _ *turn.Input, b *turn.Bindings) {
				b.Hitl = nil
				err := f.tools.Add(tenant, bindings.ToolDescriptor{ID: "acme.clause-search", Version: "1.9.0", InputSchema: clauseSchema, Gate: &agent.ToolGate{Mode: agent.GateAlwaysAsk}},
					func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
						return json.RawMessage(`{}`), nil
					})
				if err != nil {
					t.Fatal(err)
				}
			},
			after: func(t *testing.T, f *fixture) {
				if f.provider.Calls() != 0 {
					t.Errorf("the model was called %d times; want none", f.provider.Calls())
				}
			},
		},
		{
			name: "halting guardrail", code: agents.CodeGuardrailViolation,
			script: []scripted.Response{scripted.Say("Write to jane@globex.test.")},
		},
		{
			name: "unresolved guardrail", code: agents.CodeUnresolvedGuardrail, script: answer,
			spec: func(s *agent.Spec) { s.Guardrails = append(s.Guardrails, "acme.unknown") },
		},
		{
			name: "policy registry down", code: agents.CodeTenantPolicyUnavailable, script: answer,
			setup: func(_ *testing.T, _ *fixture, _ *turn.Input, b *turn.Bindings) {
				b.PolicyRegistry = memstore.Policies{Fail: func(req bindings.PolicyRequest) error {
					if req.Kind == bindings.PolicyKindHitl {
						return errors.New("policy service unreachable")
					}
					return nil
				}}
			},
			check: func(t *testing.T, err error) {
				var tp *agents.TenantPolicyUnavailableError
				if !errors.As(err, &tp) || tp.PolicyKind != bindings.PolicyKindHitl {
					t.Errorf("error = %#v, want policy kind hitl", err)
				}
			},
		},
		{
			// The run is another Invoke's (this one created nothing; the
			// caller named it): noRun.
			name: "run leased by another driver", code: agents.CodeRunBusy, script: answer, noRun: true,
			setup: func(t *testing.T, f *fixture, in *turn.Input, _ *turn.Bindings) {
				in.RunID = "run-held"
				if _, err := f.store.StartRun(t.Context(), bindings.StartRunInput{TenantID: tenant, RunID: in.RunID, Owner: "someone-else", LeaseTTL: time.Hour}); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name: "storage failure", code: agents.CodePersistence, script: answer,
			setup: func(_ *testing.T, f *fixture, _ *turn.Input, b *turn.Bindings) {
				b.Conversations, b.Journal = failingConversations{f.store}, nil
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.script, tt.spec)
			in, b := f.input("Draft a confidentiality clause."), f.bindings()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			ctx = context.WithValue(ctx, cancelKey{}, cancel)
			if tt.setup != nil {
				tt.setup(t, f, &in, &b)
			}
			res, err := turn.Invoke(ctx, in, b)
			if got := agents.CodeOf(err); got != tt.code {
				t.Fatalf("Invoke = %+v, %v (code %q); want code %q", res, err, got, tt.code)
			}
			if tt.check != nil {
				tt.check(t, err)
			}
			if tt.after != nil {
				tt.after(t, f)
			}
			switch {
			case tt.noRun && res.RunID != "":
				t.Errorf("a failure before the run was created names run %q", res.RunID)
			case !tt.noRun && res.RunID == "":
				t.Errorf("the failed Invoke's Result names no run")
			case !tt.noRun && in.RunID == "":
				// A run this Invoke created: the host can look it up.
				if _, err := f.store.GetRun(t.Context(), tenant, res.RunID); err != nil {
					t.Errorf("Result.RunID %q: %v", res.RunID, err)
				}
			}
		})
	}
}

type cancelKey struct{}

// cancelFromTool cancels the turn's context from inside a tool.
func cancelFromTool(ctx context.Context) {
	if c, ok := ctx.Value(cancelKey{}).(context.CancelFunc); ok {
		c()
	}
}

// TestResumeErrorCodes reaches the codes only Resume returns.
func TestResumeErrorCodes(t *testing.T) {
	f := newFixture(t, emailThenAnswer(), nil)
	res := f.park(t, f.bindings(), "Send the draft to Globex.")
	resume := func(b turn.Bindings, in turn.ResumeInput) error {
		_, err := turn.Resume(t.Context(), in, b)
		return err
	}
	ok := turn.ResumeInput{TenantID: tenant, RunID: res.RunID, Agent: f.agent}

	if err := resume(f.bindings(), turn.ResumeInput{TenantID: tenant, RunID: "no-such-run", Agent: f.agent}); agents.CodeOf(err) != agents.CodeRunSnapshotMissing {
		t.Errorf("unknown run: %v, want run-snapshot-missing", err)
	}
	noHitl := f.bindings()
	noHitl.Hitl = nil
	if err := resume(noHitl, ok); agents.CodeOf(err) != agents.CodeInvalidBindings {
		t.Errorf("resume of a gated agent without a HITL binding: %v, want invalid-bindings", err)
	}
	if _, err := f.store.StartRun(t.Context(), bindings.StartRunInput{TenantID: tenant, RunID: "no-snapshot", Owner: "x", LeaseTTL: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Second)
	if err := resume(f.bindings(), turn.ResumeInput{TenantID: tenant, RunID: "no-snapshot", Agent: f.agent}); agents.CodeOf(err) != agents.CodeRunSnapshotMissing {
		t.Errorf("no snapshot: %v", err)
	}
	if err := f.store.Write(t.Context(), bindings.RunSnapshotWriteInput{TenantID: tenant, RunID: "old-flow", FlowID: turn.FlowID, FlowVersion: "1.0.0",
		AgentID: f.agent.ID, AgentVersion: f.agent.Version, Input: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.StartRun(t.Context(), bindings.StartRunInput{TenantID: tenant, RunID: "old-flow", Owner: "x", LeaseTTL: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Second)
	if err := resume(f.bindings(), turn.ResumeInput{TenantID: tenant, RunID: "old-flow", Agent: f.agent}); agents.CodeOf(err) != agents.CodeRunJournalUnavailable {
		t.Errorf("journal of another flow version: %v", err)
	}
	other := f.agent
	other.Version = "1.0.1"
	if err := resume(f.bindings(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID, Agent: other}); agents.CodeOf(err) != agents.CodeAgentVersionMismatch {
		t.Errorf("other agent version: %v", err)
	}
	b := f.bindings()
	b.Providers = bindings.Providers{}
	if err := resume(b, ok); agents.CodeOf(err) != agents.CodeCapabilityRoutingFailed {
		t.Errorf("provider gone: %v", err)
	}
	b = f.bindings()
	b.TenantPolicy = &bindings.TenantPolicy{DenyModels: []string{scripted.DefaultModel}}
	if err := resume(b, ok); agents.CodeOf(err) != agents.CodeCapabilityRoutingFailed {
		t.Errorf("model no longer allowed: %v", err)
	}
	if err := resume(f.bindings(), ok); agents.CodeOf(err) != agents.CodeHitlRequired {
		t.Errorf("approval pending: %v", err)
	}
	// A HITL binding that lost the run's approval: approval-not-found, and
	// the run stays parked for the right binding.
	lost := f.bindings()
	lost.Hitl, lost.Journal = memstore.New(nil), nil
	if err := resume(lost, ok); agents.CodeOf(err) != agents.CodeApprovalNotFound {
		t.Errorf("approval unknown to the HITL binding: %v, want approval-not-found", err)
	}
	if err := resume(f.bindings(), ok); agents.CodeOf(err) != agents.CodeHitlRequired {
		t.Errorf("approval pending, after the lost binding: %v", err)
	}
	if _, err := f.store.AcquireLease(t.Context(), bindings.LeaseInput{TenantID: tenant, RunID: res.RunID, Owner: "other", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := resume(f.bindings(), ok); agents.CodeOf(err) != agents.CodeRunBusy {
		t.Errorf("leased run: %v", err)
	}
	if f.log.total() != 0 || f.provider.Calls() != 1 {
		t.Errorf("failed resumes called tools %d times, the model %d times (want 0, 1)", f.log.total(), f.provider.Calls())
	}
}
