package turn

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/toolcall"
)

// dispatch is the dispatch-tools node of iteration i.
//
// Every call is decided first, in code, and the decisions are journaled
// (the plan). Calls whose gate asks are then sent for approval together,
// each with its own approval id; while any of them waits, nothing of this
// response runs — not even its calls that need no approval, which are held
// so that the response's calls run together, in order, once every approval
// is decided. Then, in the model's order: a call that may run runs once (a
// journal step keyed by its id, sent with the step's request id) and its
// result is stored before the next model call; a refused, denied or
// expired call stores a tool message telling the model why.
//
// It returns the approvals to wait on when the turn parks.
func (r *run) dispatch(ctx context.Context, i int, calls []bindings.ToolCall) ([]bindings.ApprovalRequest, error) {
	plans, err := decide(ctx, r, keysOf(i).dispatch, NodeDispatchTools, func(ctx context.Context, _ string) ([]callPlan, error) {
		return r.plan(ctx, i, calls)
	})
	if err != nil {
		return nil, err
	}
	var decidedRoom [2]approvalOutcome // on the stack for the usual one or two calls
	decided := decidedRoom[:0]
	if len(plans) <= len(decidedRoom) {
		decided = decidedRoom[:len(plans)]
	} else {
		decided = make([]approvalOutcome, len(plans))
	}
	var waiting []bindings.ApprovalRequest
	for j, p := range plans {
		if p.Action != actionApprove {
			continue
		}
		o, w, err := r.approval(ctx, p.Key+"/approval", NodeDispatchTools, p.ReviewerRole, func(string) bindings.ApprovalRequest {
			return bindings.ApprovalRequest{
				ConversationID: r.in.ConversationID, ToolCallID: p.ID, ToolID: p.ToolID, ToolVersion: p.ToolVersion,
				Arguments: p.Arguments, Reason: p.Reason,
			}
		})
		if err != nil {
			return nil, err
		}
		if w != nil {
			waiting = append(waiting, *w)
			continue
		}
		decided[j] = o
	}
	if len(waiting) > 0 {
		return r.park(waiting)
	}
	for j, p := range plans {
		if p.Action == actionRun && p.Kind == callSubAgent {
			if waiting, err := r.runSubAgent(ctx, p); err != nil || waiting != nil {
				if err != nil {
					return nil, err
				}
				return r.park(waiting) // the child parked: so does the turn
			}
			continue
		}
		if p.Action == actionRun && p.Kind == callHandoff {
			if err := r.runHandoff(ctx, p); err != nil {
				return nil, err
			}
			continue
		}
		if p.Action == actionRun || (p.Action == actionApprove && decided[j].Status == approvalApproved) {
			if err := r.runCall(ctx, p); err != nil {
				return nil, err
			}
			continue
		}
		status, msg := p.Status, p.Message
		if p.Action == actionApprove {
			expired := decided[j].Status == approvalExpired
			status, msg = toolRejected, toolcall.NotRun(expired, decided[j].Comment)
			if expired {
				status = toolExpired
			}
		}
		if err := r.toolMessage(ctx, p, errorContent(msg), status, msg); err != nil {
			return nil, err
		}
	}
	return nil, r.applyHandoff(ctx) // the turn goes on as a handoff's target, if any
}

// runCall runs one call as its step and stores its result.
func (r *run) runCall(ctx context.Context, p callPlan) error {
	res, err := step(ctx, r, p.Key, NodeDispatchTools, func(ctx context.Context, requestID string) (toolResult, error) {
		if res, refused, err := r.toolQuotas(ctx, p); err != nil || refused {
			return res, err
		}
		return r.invokeTool(ctx, p, requestID)
	})
	if err != nil {
		return err
	}
	r.usage.ToolCalls++
	tc := bindings.TraceToolCall{ID: p.ID, ToolID: p.ToolID, ToolVersion: p.ToolVersion, Input: p.Arguments}
	content := string(res.Output)
	if res.Status == toolOK {
		if !slices.Contains(r.usedTools, p.ToolID) {
			r.usedTools = append(r.usedTools, p.ToolID)
		}
		tc.Output = res.Output
	} else {
		tc.Error = res.Error
		content = errorContent(res.Error)
	}
	r.traceCalls = append(r.traceCalls, tc)
	return r.toolMessage(ctx, p, content, res.Status, "")
}

// toolMessage stores the tool message answering call p and adds it to the
// model's messages. failure, when set, is reported as a tool.failed event
// when the message is first stored.
func (r *run) toolMessage(ctx context.Context, p callPlan, content, status, failure string) error {
	meta := toolMeta{ToolID: p.ToolID, ToolVersion: p.ToolVersion, Status: status}
	var after func(context.Context, bindings.ConversationMessage)
	if failure != "" {
		after = r.toolFailedAfter(p, failure)
	}
	if _, err := r.persist(ctx, p.Key+"/message", NodeDispatchTools, bindings.AppendMessageInput{
		Role: bindings.RoleTool, Content: content, ToolCallID: p.ID, Metadata: meta.raw(),
	}, after); err != nil {
		return err
	}
	r.messages = append(r.messages, bindings.ChatMessage{Role: bindings.ChatTool, Content: content, ToolCallID: p.ID})
	return nil
}

// toolFailedAfter is toolMessage's event of a failed call: a closure made
// only when there is a failure (persist may keep it until the message is
// stored, so what it captures lives on the heap).
func (r *run) toolFailedAfter(p callPlan, failure string) func(context.Context, bindings.ConversationMessage) {
	return func(ctx context.Context, _ bindings.ConversationMessage) {
		emit(r, ctx, ToolFailedEvent{RunID: r.id, ToolCallID: p.ID, ToolID: p.ToolID, ToolVersion: p.ToolVersion, Error: failure})
	}
}

// errorContent is the tool message content of a call that did not
// succeed: {"error": msg}.
func errorContent(msg string) string {
	b, _ := json.Marshal(map[string]string{"error": msg})
	return string(b)
}
