package turn

import (
	"context"
	"encoding/json"
	"fmt"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/agenttool"
	"github.com/kindgi/agents/turn/internal/childrun"
	"github.com/kindgi/agents/turn/internal/codes"
	"github.com/kindgi/agents/turn/internal/drive"
	"github.com/kindgi/agents/turn/internal/schemacheck"
)

// StatusFailed is the Status of a SubRun whose child run failed (its error
// is the sub-agent call's tool error). A turn's own Result never has it: a
// failed turn returns its error.
const StatusFailed Status = "failed"

// callSubAgent is the Kind of a callPlan that calls a sub-agent.
const callSubAgent = "sub-agent"

// toolDepthExceeded is the tool status of a sub-agent call refused by the
// depth bound.
const toolDepthExceeded = agents.CodeAgentDepthExceeded

// childOutcome is the journaled result of a sub-agent call: what the model
// is told (the child's answer, or its error and code) and the child run as
// Result.SubRuns lists it.
type childOutcome struct {
	Status string          `json:"status"`
	Output json.RawMessage `json:"output,omitempty"`
	Error  string          `json:"error,omitempty"`
	Code   string          `json:"code,omitempty"`
	Run    SubRun          `json:"run"`
}

// childPark is the output of a sub-agent call's parked entry (childrun.Park).
type childPark = childrun.Park

// planSubAgent completes the plan p of a call to sub-agent t: arguments
// checked against its input schema (refused when they do not fit), and
// refused with agent-depth-exceeded when the child would nest past
// Bindings.MaxAgentDepth — decided here, journaled with the plan, so no
// child run is ever created for it.
func (r *run) planSubAgent(p callPlan, t agentTool) (callPlan, error) {
	p.Kind, p.ToolVersion = callSubAgent, t.AgentVersion
	d := bindings.ToolDescriptor{ID: t.Name, Version: t.AgentVersion, InputSchema: t.InputSchema}
	if msg, err := schemacheck.ValidateArguments(d, p.Arguments); err != nil {
		return p, err
	} else if msg != "" {
		p.Action, p.Status, p.Message = actionRefuse, toolInvalid, "invalid arguments: "+msg
		return p, nil
	}
	if depth, bound := r.s.Depth+1, r.b.maxAgentDepth(); depth > bound {
		err := &agents.AgentDepthExceededError{AgentID: t.AgentID, Depth: depth, Max: bound}
		p.Action, p.Status, p.Message = actionRefuse, toolDepthExceeded, agents.CodeAgentDepthExceeded+": "+err.Error()
	}
	return p, nil
}

// runSubAgent runs a sub-agent call as a child run and stores its result
// as the call's, like a tool's. It returns the approvals the call waits on
// when the child parked (the parent parks too).
//
// The call is one journal step of the parent, keyed by the call: started
// before the child is created, parked while the child waits on approvals,
// completed with the child's outcome. The child is a run of its own
// (childRunID), in a conversation of its own (childConversationID), driven
// inline through Invoke under its own lease; Invoke with its run id drives
// it again from its own journal, so a parent drive after a crash or a park
// continues the child where it stopped and nothing the child did runs
// twice. A child that another driver holds parks the parent (run-busy,
// the parent suspended) rather than waiting on it: once the child ends,
// the store's claim rule makes the parent claimable again.
func (r *run) runSubAgent(ctx context.Context, p callPlan) ([]bindings.ApprovalRequest, error) {
	o, waiting, err := r.subAgentOutcome(ctx, p)
	if err != nil || waiting != nil {
		return waiting, err
	}
	r.usage.ToolCalls++
	r.usage.add(o.Run.Usage)
	r.subRuns = append(r.subRuns, o.Run)
	if o.Status != toolOK {
		r.traceCall(p, nil, o.Error)
		return nil, r.toolMessage(ctx, p, errorContent(o.Error), o.Status, "")
	}
	r.traceCall(p, o.Output, "")
	return nil, r.toolMessage(ctx, p, string(o.Output), o.Status, "")
}

// traceCall records sub-agent or handoff call p in the turn's trace: its
// output, or its error when failure is set.
func (r *run) traceCall(p callPlan, output json.RawMessage, failure string) {
	r.traceCalls = append(r.traceCalls, bindings.TraceToolCall{ID: p.ID, ToolID: p.ToolID, ToolVersion: p.ToolVersion, Input: p.Arguments, Output: output, Error: failure})
}

// subAgentOutcome is the journaled outcome of sub-agent call p, running
// the child when the journal has none (see runSubAgent).
func (r *run) subAgentOutcome(ctx context.Context, p callPlan) (childOutcome, []bindings.ApprovalRequest, error) {
	st := r.Key(p.Key)
	if st != nil && st.Result != 0 {
		e := r.At(st.Result)
		o, err := drive.DecodeResult[childOutcome](e)
		if err != nil && e.Status == bindings.StepFailed {
			r.Failed = true
		}
		return o, nil, err
	}
	if r.Replaying {
		if st != nil && st.Parked != 0 {
			waiting, err := r.foldChildPark(ctx, r.At(st.Parked))
			return childOutcome{}, waiting, err
		}
		return childOutcome{}, nil, &agents.RunJournalUnavailableError{RunID: r.id, Err: fmt.Errorf("the finished run's journal has no result for step %s", p.Key)}
	}
	if err := r.live(ctx); err != nil {
		return childOutcome{}, nil, err
	}
	fresh := false
	if st == nil || st.Started == 0 {
		_, appended, err := r.AppendEntry(ctx, p.Key, NodeDispatchTools, bindings.StepStarted, nil, nil)
		if err != nil {
			return childOutcome{}, nil, err
		}
		fresh = appended
	} else if err := r.HoldLease(ctx); err != nil {
		return childOutcome{}, nil, err
	}
	t, ok := r.s.subAgent(p.ToolID)
	if !ok {
		return childOutcome{}, nil, &agents.RunJournalUnavailableError{RunID: r.id, Err: fmt.Errorf("the plan of step %s calls sub-agent %s, which setup did not resolve", p.Key, p.ToolID)}
	}
	childID := drive.DerivedID(r.id, p.Key+"/run")
	emit(r, ctx, ToolStartedEvent{RunID: r.id, ToolCallID: p.ID, ToolID: p.ToolID, ToolVersion: p.ToolVersion, RequestID: childID, Input: p.Arguments})
	res, err := r.driveChild(ctx, p, t, childID, fresh)
	o := childOutcome{Run: SubRun{RunID: childID, AgentID: t.AgentID, AgentVersion: t.AgentVersion, Status: res.Status, Usage: res.Usage}}
	switch {
	case err == nil && res.Status == StatusSuspended:
		if err := r.parkOnChild(ctx, p, childPark{RunID: childID, Approvals: res.Approvals}); err != nil {
			return childOutcome{}, nil, err
		}
		r.parkedNow++
		return childOutcome{}, nonNil(res.Approvals), nil
	case err == nil:
		answer, merr := json.Marshal(childrun.Answer{Answer: res.Response.Content, Output: res.Response.Output})
		if merr != nil {
			return childOutcome{}, nil, &agents.PersistenceError{Op: "encode sub-agent answer", Err: merr, Permanent: true}
		}
		o.Status, o.Output = toolOK, answer
		emit(r, ctx, ToolCompletedEvent{RunID: r.id, ToolCallID: p.ID, ToolID: p.ToolID, ToolVersion: p.ToolVersion, Output: answer})
	default:
		if final, cerr := r.childStopped(ctx, p, childID, err); !final {
			return childOutcome{}, nil, cerr
		}
		o.Status = toolError
		o.Code, o.Error = codes.Message(err)
		o.Run.Status, o.Run.Usage = StatusFailed, r.childUsage(ctx, childID)
		emit(r, ctx, ToolFailedEvent{RunID: r.id, ToolCallID: p.ID, ToolID: p.ToolID, ToolVersion: p.ToolVersion, Error: o.Error})
	}
	raw, err := encodeStep(r, &o)
	if err != nil {
		return childOutcome{}, nil, &agents.PersistenceError{Op: "encode step " + p.Key, Err: err, Permanent: true}
	}
	e, appended, err := r.AppendEntry(ctx, p.Key, NodeDispatchTools, bindings.StepCompleted, raw, nil)
	if err != nil {
		return childOutcome{}, nil, err
	}
	if !appended {
		o, err := drive.DecodeResult[childOutcome](&e) // another driver's outcome is the one
		return o, nil, err
	}
	return o, nil, nil
}

// driveChild creates (or finds) the child run of call p and drives it to
// its end or its park: the child agent at its journaled version, in its
// own conversation, with the call's message as its user message and the
// call's other arguments as its prompt parameters, under the parent's
// bindings with the child's context (childContextFor). fresh says this
// drive stored the call's started entry, so no child run exists yet.
func (r *run) driveChild(ctx context.Context, p callPlan, t agentTool, childID string, fresh bool) (Result, error) {
	if r.b.Agents == nil {
		return Result{}, &agents.InvalidBindingsError{Reason: "a sub-agent call needs Bindings.Agents to look up agent " + t.AgentID + "@" + t.AgentVersion}
	}
	a, err := agenttool.Lookup(ctx, r.b.Agents, r.tenantID, t.AgentID, t.AgentVersion)
	if err != nil {
		return Result{}, err
	}
	msg, args, err := agenttool.SplitArguments(p.Arguments)
	if err != nil {
		return Result{}, &agents.RunJournalUnavailableError{RunID: r.id, Err: fmt.Errorf("decode the arguments of step %s: %w", p.Key, err)}
	}
	convID := drive.DerivedID(r.id, p.Key+"/conversation")
	if _, err := r.b.Conversations.OpenConversation(ctx, bindings.OpenConversationInput{
		TenantID: r.tenantID, ProjectID: r.in.ProjectID, ID: convID, AgentID: a.ID, AgentVersion: a.Version,
		Title: "sub-agent call " + p.ID + " of run " + r.id,
	}); err != nil {
		return Result{}, coded(err, "open the sub-agent's conversation")
	}
	in := Input{
		TenantID: r.tenantID, ProjectID: r.in.ProjectID, Agent: a, ConversationID: convID,
		UserMessage: msg, Parameters: args, DryRun: r.in.DryRun, Principal: r.in.Principal, RunID: childID,
	}
	cb := *r.b
	cb.child = r.childContextFor(p.Key)
	cb.child.Fresh = fresh
	return invoke(ctx, in, cb)
}

// childStopped decides what a child drive that returned err means for the
// parent, by the child run's status: failed (or refused before it was
// created, for a reason of its input) is final — the call's tool error;
// suspended on approvals still pending, or held by another driver, parks
// the parent again (r.pending: the parent is suspended, and claimable once
// the child ends); anything else (a storage failure, a lost lease, this
// process's bindings) ends the parent's drive with err, the run
// resumable.
func (r *run) childStopped(ctx context.Context, p callPlan, childID string, err error) (final bool, _ error) {
	if ctx.Err() != nil {
		return false, err
	}
	run, gerr := r.b.Runs.GetRun(ctx, r.tenantID, childID)
	busy := agents.CodeOf(err) == agents.CodeRunBusy
	switch {
	case gerr != nil:
		return endsRun(err) && !codes.DriverFault(err), err
	case run.Status == bindings.RunFailed:
		return true, err
	case run.Status == bindings.RunSuspended || busy:
		if perr := r.parkOnChild(ctx, p, childPark{RunID: childID}); perr != nil {
			return false, perr
		}
		r.pending = true
		if busy {
			return false, &agents.RunBusyError{RunID: childID}
		}
		return false, &agents.HitlRequiredError{Reason: "the sub-agent's run " + childID + " waits on approvals still pending"}
	}
	return false, err
}

// parkOnChild journals that call p waits on its child run (once: a later
// park of the same call keeps the first record).
func (r *run) parkOnChild(ctx context.Context, p callPlan, pk childPark) error {
	if st := r.Key(p.Key); st != nil && st.Parked != 0 {
		return nil
	}
	raw, err := json.Marshal(pk)
	if err != nil {
		return &agents.PersistenceError{Op: "encode sub-agent park", Err: err, Permanent: true}
	}
	_, _, err = r.AppendEntry(ctx, p.Key, NodeDispatchTools, bindings.StepParked, raw, nil)
	return err
}

// foldChildPark is a call parked on its child in a run folded for Wait:
// the child's run is folded in turn, and while it is parked the call waits
// on the approvals it waits on (its own, or its children's); once it is
// not (decided, continued, ended), errNotParked: a driver is about to move
// the tree on.
func (r *run) foldChildPark(ctx context.Context, parked *bindings.JournalEntry) ([]bindings.ApprovalRequest, error) {
	var pk childPark
	if err := json.Unmarshal(parked.Output, &pk); err != nil {
		return nil, &agents.RunJournalUnavailableError{RunID: r.id, Err: err}
	}
	run, err := r.b.Runs.GetRun(ctx, r.tenantID, pk.RunID)
	if err != nil || run.Status != bindings.RunSuspended {
		return nil, errNotParked
	}
	res, err := fold(ctx, r.b, run)
	if err != nil || res.Status != StatusSuspended {
		return nil, errNotParked
	}
	r.parkedNow++
	return nonNil(res.Approvals), nil
}

// childUsage is what a failed child run used, summed from its journal's
// model calls (its Result, which would say, is not returned with its
// error). Best effort: a journal that cannot be read counts nothing.
func (r *run) childUsage(ctx context.Context, childID string) Usage {
	u := childrun.UsedByRun(ctx, r.b.Runs, r.tenantID, childID, NodeModelCall)
	return Usage{ModelCalls: u.ModelCalls, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CostUsd: u.CostUsd}
}

// add adds o to u.
func (u *Usage) add(o Usage) {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CostUsd += o.CostUsd
	u.ModelCalls += o.ModelCalls
	u.ToolCalls += o.ToolCalls
}
