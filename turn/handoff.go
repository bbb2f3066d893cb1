package turn

import (
	"context"
	"encoding/json"
	"fmt"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/agenttool"
	"github.com/kindgi/agents/turn/internal/chatlog"
	"github.com/kindgi/agents/turn/internal/codes"
	"github.com/kindgi/agents/turn/internal/provsig"
	"github.com/kindgi/agents/turn/internal/tighten"
)

// A handoff hands the rest of a turn to another agent. The model calls a
// handoff's tool (Agent.Handoffs; setup resolved and journaled each
// target's id@version); the call's step — keyed by the call, like a tool's
// — journals everything the target decides as setup decides it for the
// turn's own agent: its rendered instructions, its tools (resolved with
// the tenant's pins), guardrails, sub-agents and handoffs, its policy
// merged stricter-wins with the tenant's, its HITL policy and route, and
// the budget (the stricter of the turn's and the target's caps). Once the
// response's calls have run, the turn continues as the target: the model
// sees the target's instructions as its system message and the target's
// tools; the conversation so far carries over, and the handoff call's
// tool result tells the model the handoff happened. A resume folds the
// journaled step and continues as the target with nothing resolved again.
//
// Handoffs nest like sub-agent calls: each is one level of
// Bindings.MaxAgentDepth, and one past it is refused in the journaled
// plan (agent-depth-exceeded, told to the model; nothing switches). A
// target the turn cannot run as — a prompt parameter it requires that the
// turn lacks (missing-parameter), a tool or guardrail it cannot resolve —
// is the call's tool error, journaled, and the turn goes on as it was.
//
// The final message of a turn that handed over records the answering
// agent in its Metadata (answererMeta); Result.AgentID and AgentVersion
// name it, and the provenance record lists the handoffs.

// callHandoff is the Kind of a callPlan that hands the turn over.
const callHandoff = "handoff"

// handoffRecord is the journaled outcome of a handoff call. Status is
// toolOK when the turn switched to the target, with Prompt and Setup what
// it runs with; otherwise the tool status, Error and Code say why not.
type handoffRecord struct {
	Status           string      `json:"status"`
	AgentID          string      `json:"agentId"`
	AgentVersion     string      `json:"agentVersion"`
	FromAgentID      string      `json:"fromAgentId"`
	FromAgentVersion string      `json:"fromAgentVersion"`
	Error            string      `json:"error,omitempty"`
	Code             string      `json:"code,omitempty"`
	Prompt           string      `json:"prompt,omitempty"`
	Setup            *setupState `json:"setup,omitempty"`
}

// handoffState is what a turn's handoffs leave in its drive: the handoff
// of the current response still to apply, and those applied.
type handoffState struct {
	next     *handoffRecord
	nextCall string // the call id of next
	done     []bindings.ProvenanceHandoff
}

// answererMeta is the metadata of a final message in a turn that handed
// over: {"agentId": …, "agentVersion": …}, the agent that answered. A
// turn without handoffs stores none (the conversation's agent answered).
func (r *run) answererMeta() json.RawMessage {
	if r.handoffs == nil || len(r.handoffs.done) == 0 {
		return nil
	}
	b, _ := json.Marshal(AnswererMeta{AgentID: r.in.Agent.ID, AgentVersion: r.in.Agent.Version})
	return b
}

// AnswererMeta is the Metadata of the final message of a turn that a
// handoff gave to another agent: the agent that answered. Decode a
// message's Metadata into it; a final message without these fields was
// answered by the conversation's own agent.
type AnswererMeta struct {
	AgentID      string `json:"agentId"`
	AgentVersion string `json:"agentVersion"`
}

// planHandoff completes the plan p of a call of handoff t: planned as a
// sub-agent call is (arguments checked against its schema,
// agent-depth-exceeded past Bindings.MaxAgentDepth), and refused when an
// earlier call of the same response already hands over (one handoff a
// response) — decided here and journaled with the plan.
func (r *run) planHandoff(p callPlan, t agentTool, earlier []callPlan) (callPlan, error) {
	p, err := r.planSubAgent(p, t)
	p.Kind = callHandoff
	if err != nil || p.Action != actionRun {
		return p, err
	}
	for _, e := range earlier {
		if e.Kind == callHandoff && e.Action == actionRun {
			p.Action, p.Status, p.Message = actionRefuse, toolError, "not run: call "+e.ID+" of this response already hands the conversation over to "+e.ToolID+"; make one handoff at a time"
			return p, nil
		}
	}
	return p, nil
}

// runHandoff is the step of handoff call p: the target decided and
// journaled (handOver), the call's tool message stored, and the switch
// left for the end of the response's calls (applyHandoff).
func (r *run) runHandoff(ctx context.Context, p callPlan) error {
	rec, err := decide(ctx, r, p.Key, NodeDispatchTools, func(ctx context.Context, _ string) (handoffRecord, error) {
		emit(r, ctx, ToolStartedEvent{RunID: r.id, ToolCallID: p.ID, ToolID: p.ToolID, ToolVersion: p.ToolVersion, Input: p.Arguments})
		return r.handOver(ctx, p)
	})
	if err != nil {
		return err
	}
	r.usage.ToolCalls++
	if rec.Status != toolOK {
		r.traceCall(p, nil, rec.Error)
		return r.toolMessage(ctx, p, errorContent(rec.Error), rec.Status, rec.Error)
	}
	b := agenttool.HandoffResult(rec.AgentID, rec.AgentVersion)
	r.traceCall(p, b, "")
	if r.handoffs == nil {
		r.handoffs = &handoffState{}
	}
	r.handoffs.next, r.handoffs.nextCall = &rec, p.ID
	return r.toolMessage(ctx, p, string(b), rec.Status, "")
}

// handOver decides what the turn runs with as the target of handoff p
// (see the package comment above): the target's agentSetup and agentHitl
// under the turn's time and turn number, its budget the stricter of the
// turn's and its own, one level deeper, and its instructions rendered. The
// state is returned as its journaled JSON decodes, so this drive and a
// later one that replays the step work from the same values.
func (r *run) handOver(ctx context.Context, p callPlan) (handoffRecord, error) {
	rec := handoffRecord{FromAgentID: r.in.Agent.ID, FromAgentVersion: r.in.Agent.Version}
	t, ok := r.s.handoff(p.ToolID)
	if !ok {
		return rec, &agents.RunJournalUnavailableError{RunID: r.id, Err: fmt.Errorf("the plan of step %s hands over to %s, which setup did not resolve", p.Key, p.ToolID)}
	}
	rec.AgentID, rec.AgentVersion = t.AgentID, t.AgentVersion
	refuse := func(err error) (handoffRecord, error) {
		if !codes.HandoffRefusal(err) {
			return handoffRecord{}, err
		}
		rec.Status, rec.Code = toolError, agents.CodeOf(err)
		rec.Error = rec.Code + ": the conversation cannot be handed over to " + t.AgentID + "@" + t.AgentVersion + ": " + err.Error()
		return rec, nil
	}
	a, err := r.targetAgent(ctx, t.AgentID, t.AgentVersion)
	if err != nil {
		return refuse(err)
	}
	s := setupState{Now: r.s.Now, TurnNumber: r.s.TurnNumber, SessionGate: r.s.SessionGate, HistoryLimit: r.s.HistoryLimit, Depth: r.s.Depth + 1}
	if err := r.agentSetup(ctx, &a, &s); err != nil {
		return refuse(err)
	}
	if err := r.agentHitl(&a, &s); err != nil {
		return refuse(err)
	}
	s.Budget = stricterCaps(r.s.Budget, capsFor(a, s.Policy))
	text, err := r.renderInstructions(ctx, &a)
	if err != nil {
		return refuse(err)
	}
	raw, err := json.Marshal(&s)
	if err != nil {
		return handoffRecord{}, &agents.PersistenceError{Op: "encode step " + p.Key, Err: err, Permanent: true}
	}
	var journaled setupState
	if err := json.Unmarshal(raw, &journaled); err != nil {
		return handoffRecord{}, &agents.RunJournalUnavailableError{RunID: r.id, Err: fmt.Errorf("decode step %s: %w", p.Key, err)}
	}
	rec.Status, rec.Prompt, rec.Setup = toolOK, text, &journaled
	emit(r, ctx, ToolCompletedEvent{RunID: r.id, ToolCallID: p.ID, ToolID: p.ToolID, ToolVersion: p.ToolVersion, Output: agenttool.HandoffOutput(t.AgentID, t.AgentVersion)})
	return rec, nil
}

// stricterCaps is the stricter of two budgets for each of steps and cost;
// the running time and the tool calls a response may make stay the
// turn's (its wall-clock deadline is set for the drive).
func stricterCaps(turn, target budgetCaps) budgetCaps {
	out := turn
	if target.MaxSteps > 0 && (out.MaxSteps <= 0 || target.MaxSteps < out.MaxSteps) {
		out.MaxSteps = target.MaxSteps
	}
	out.MaxCostUsd = tighten.MinPtr(turn.MaxCostUsd, target.MaxCostUsd)
	return out
}

// targetAgent fetches a handoff's target at the version setup resolved.
func (r *run) targetAgent(ctx context.Context, id, version string) (agent.Agent, error) {
	if r.b.Agents == nil {
		return agent.Agent{}, &agents.InvalidBindingsError{Reason: "a handoff needs Bindings.Agents to look up agent " + id + "@" + version}
	}
	return agenttool.LookupExact(ctx, r.b.Agents, "handoff lookup", r.tenantID, id, version)
}

// applyHandoff switches the turn to the target of the response's handoff,
// once its calls have all run (they were planned for the agent that made
// them): the target agent (for its output schema, model settings and the
// identity its tools and guardrails see), its journaled setup, its
// instructions as the system message, its tools and route. A finished run
// being folded that can no longer look the target up goes on with its
// identity alone (nothing runs in a fold).
func (r *run) applyHandoff(ctx context.Context) error {
	h := r.handoffs
	if h == nil || h.next == nil {
		return nil
	}
	rec, callID := h.next, h.nextCall
	h.next, h.nextCall = nil, ""
	if rec.Setup == nil {
		return &agents.RunJournalUnavailableError{RunID: r.id, Err: fmt.Errorf("the handoff of call %s to %s has no setup", callID, rec.AgentID)}
	}
	a, err := r.targetAgent(ctx, rec.AgentID, rec.AgentVersion)
	if err != nil {
		if !r.Replaying {
			return err
		}
		a = agent.Agent{ID: rec.AgentID, Version: rec.AgentVersion}
	}
	if err := r.loadMessages(); err != nil {
		return err
	}
	r.messages = chatlog.WithSystem(r.messages, r.systemMessage(rec.Prompt))
	r.in.Agent = a
	r.s = *rec.Setup
	h.done = append(h.done, bindings.ProvenanceHandoff{
		ToolCallID: callID, FromAgentID: rec.FromAgentID, FromAgentVersion: rec.FromAgentVersion,
		AgentID: rec.AgentID, AgentVersion: rec.AgentVersion, PromptHash: provsig.HashString(rec.Prompt),
	})
	// The tool definitions are the target's, in a list of their own: the
	// pooled one may still be held by a request of this drive.
	mem := r.mem
	r.mem = nil
	err = r.bind()
	r.mem = mem
	return err
}
