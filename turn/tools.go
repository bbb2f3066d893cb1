package turn

import (
	"context"
	"encoding/json"
	"slices"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/chatlog"
	"github.com/kindgi/agents/turn/internal/drive"
	"github.com/kindgi/agents/turn/internal/schemacheck"
	"github.com/kindgi/agents/turn/internal/toolcall"
)

// Plan actions of a tool call, decided before anything runs.
const (
	actionRun     = "run"     // call the tool
	actionRefuse  = "refuse"  // do not call it; tell the model why
	actionApprove = "approve" // ask a reviewer first
)

// Tool result statuses, stored in tool messages' metadata.
const (
	toolOK       = "ok"
	toolError    = "error"
	toolUnknown  = "unknown-tool"
	toolInvalid  = "invalid-arguments"
	toolDenied   = "denied"
	toolRejected = "rejected"
	toolExpired  = "expired"
)

// callPlan is the decision for one tool call of a model response.
type callPlan struct {
	ID           string          `json:"id"`
	Key          string          `json:"key"`
	ToolID       string          `json:"toolId"`
	ToolVersion  string          `json:"toolVersion,omitempty"`
	Arguments    json.RawMessage `json:"arguments"`
	Action       string          `json:"action"`
	Status       string          `json:"status,omitempty"`
	Message      string          `json:"message,omitempty"`
	ReviewerRole string          `json:"reviewerRole,omitempty"`
	Reason       string          `json:"reason,omitempty"`
	// Kind is callSubAgent for a call of a sub-agent (empty: a tool).
	Kind string `json:"kind,omitempty"`
}

// toolResult is the journaled outcome of a tool call that ran: the tool's
// output, or the error the tool itself returned (told to the model).
type toolResult struct {
	Status string          `json:"status"`
	Output json.RawMessage `json:"output,omitempty"`
	Error  string          `json:"error,omitempty"`
	// outputAsIs reports that invokeTool checked Output (valid JSON in
	// UTF-8) and compacted it as the journal stores it (journaled): its
	// encoder copies it without checking it again. Not journaled.
	outputAsIs bool
}

// tool finds a resolved tool by id.
func (r *run) tool(id string) (bindings.ToolDescriptor, bool) { return toolcall.Find(r.s.Tools, id) }

// plan decides each call of a response before any runs: an unknown tool
// or arguments that break the input schema are refused (the model is
// told), a call the authorizer denies is refused, and a call whose gate
// asks is sent for approval.
func (r *run) plan(ctx context.Context, i int, calls []bindings.ToolCall) ([]callPlan, error) {
	var plans []callPlan
	var err error
	if m := r.mem; m != nil && &m.run == r && len(calls) <= len(m.plans) {
		plans = m.plans[:len(calls)] // every element is written below
	} else {
		plans = make([]callPlan, len(calls))
	}
	for j, c := range calls {
		p := callPlan{ID: c.ID, Key: callKey(i, c.ID), ToolID: c.Name, Arguments: c.Arguments, Action: actionRun}
		d, ok := r.tool(c.Name)
		if !ok && len(r.s.SubAgents) > 0 {
			if t, sub := r.s.subAgent(c.Name); sub {
				if plans[j], err = r.planSubAgent(p, t); err != nil {
					return nil, err
				}
				continue
			}
		}
		if t, ho := r.s.handoff(c.Name); !ok && ho {
			if plans[j], err = r.planHandoff(p, t, plans[:j]); err != nil {
				return nil, err
			}
			continue
		}
		if !ok {
			p.Action, p.Status, p.Message = actionRefuse, toolUnknown, toolcall.Unknown(c.Name, InvalidToolName, MaxToolNameLength)
			plans[j] = p
			continue
		}
		p.ToolVersion = d.Version
		if msg, err := schemacheck.ValidateArguments(d, c.Arguments); err != nil {
			return nil, err
		} else if msg != "" {
			p.Action, p.Status, p.Message = actionRefuse, toolInvalid, "invalid arguments: "+msg
			plans[j] = p
			continue
		}
		if r.in.Principal != nil && r.b.Authz != nil {
			if msg := toolcall.Denied(ctx, r.b.Authz, bindings.AuthzRequest{
				TenantID: r.tenantID, Principal: *r.in.Principal, ToolID: d.ID, ToolVersion: d.Version, Input: c.Arguments,
			}); msg != "" {
				p.Action, p.Status, p.Message = actionRefuse, toolDenied, msg
				plans[j] = p
				continue
			}
		}
		g := toolcall.Gate(r.s.Hitl.Gate(d.ID), d)
		if p.Reason, err = toolcall.AskReason(ctx, g, d.ID, r.toolUsed); err != nil {
			return nil, err
		}
		if p.Reason != "" {
			p.Action, p.ReviewerRole = actionApprove, r.s.Hitl.reviewerFor(g)
		}
		plans[j] = p
	}
	return plans, nil
}

// toolUsed reports whether a tool already ran in the conversation: in this
// run, or in a stored tool message of an earlier turn (chatlog.Used).
func (r *run) toolUsed(ctx context.Context, toolID string) (bool, error) {
	if slices.Contains(r.usedTools, toolID) {
		return true, nil
	}
	return chatlog.Used(ctx, r.b.Conversations, r.tenantID, r.in.ConversationID, r.userMsg.Seq, func(raw json.RawMessage) bool {
		var meta toolMeta
		return json.Unmarshal(raw, &meta) == nil && meta.ToolID == toolID && meta.Status == toolOK
	})
}

// invokeTool is the body of a tool call's step: secrets resolved, the exact
// journaled tool version called with the step's request id, the output
// checked against the output schema. An error the tool returns is its
// result (the model is told); a coded error — the binding failed — or a
// broken output is *agents.ToolInvocationError and fails the turn.
func (r *run) invokeTool(ctx context.Context, p callPlan, requestID string) (toolResult, error) {
	d, _ := r.tool(p.ToolID)
	call := bindings.CallContext{
		TenantID: r.tenantID, RunID: r.id, ConversationID: r.in.ConversationID, AgentID: r.in.Agent.ID,
		RequestID: requestID, Env: d.Env, Config: d.Config,
	}
	if r.in.Principal != nil {
		call.PrincipalID = r.in.Principal.ID
	}
	var err error
	if call.Secrets, err = toolcall.Secrets(ctx, r.b.Secrets, r.tenantID, d); err != nil {
		return toolResult{}, err
	}
	emit(r, ctx, ToolStartedEvent{RunID: r.id, ToolCallID: p.ID, ToolID: d.ID, ToolVersion: d.Version, RequestID: requestID, Input: p.Arguments})
	out, err := r.tools.Invoke(ctx, d, p.Arguments, call)
	if err != nil {
		if ctx.Err() != nil {
			return toolResult{}, err
		}
		emit(r, ctx, ToolFailedEvent{RunID: r.id, ToolCallID: p.ID, ToolID: d.ID, ToolVersion: d.Version, Error: err.Error()})
		if fail := toolcall.Failure(err, d); fail != nil {
			return toolResult{}, fail
		}
		return toolResult{Status: toolError, Error: err.Error()}, nil
	}
	if msg, bad := checkOutput(d, out); bad {
		emit(r, ctx, ToolFailedEvent{RunID: r.id, ToolCallID: p.ID, ToolID: d.ID, ToolVersion: d.Version, Error: msg})
		return toolResult{}, &agents.ToolInvocationError{ToolID: d.ID, ToolVersion: d.Version, Message: msg}
	}
	out = drive.Journaled(out)
	emit(r, ctx, ToolCompletedEvent{RunID: r.id, ToolCallID: p.ID, ToolID: d.ID, ToolVersion: d.Version, Output: out})
	return toolResult{Status: toolOK, Output: out, outputAsIs: true}, nil
}

// checkOutput reports an output that is not JSON in UTF-8 (validJSON) or
// breaks the tool's output schema (schemacheck.CheckOutput).
func checkOutput(d bindings.ToolDescriptor, out json.RawMessage) (string, bool) {
	if !validJSON(out) {
		return "the tool's output is not JSON", true
	}
	return schemacheck.CheckOutput(d, out)
}
