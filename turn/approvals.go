package turn

import (
	"context"
	"encoding/json"
	"strconv"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/drive"
	"github.com/kindgi/agents/turn/internal/tighten"
)

// Approval outcomes journaled for an approval step.
const (
	approvalApproved  = "approved"
	approvalDenied    = "denied"
	approvalExpired   = "expired"
	approvalEscalated = "escalated"
)

// maxApprovalAttempts bounds escalations of one approval.
const maxApprovalAttempts = 8

// approvalOutcome is the journaled result of one approval attempt.
type approvalOutcome struct {
	Status     string `json:"status"`
	ApprovalID string `json:"approvalId"`
	Reviewer   string `json:"reviewer,omitempty"`
	Comment    string `json:"comment,omitempty"`
	// NextRole is the role an escalation asks next.
	NextRole string `json:"nextRole,omitempty"`
}

// parkRecord is the output of a parked approval entry: the request as the
// HITL binding stored it, and the run's running time when it parked (wall
// time counts only time spent running).
type parkRecord struct {
	Request   bindings.ApprovalRequest `json:"request"`
	ElapsedMs int64                    `json:"elapsedMs"`
}

// approval drives the approval chain of one gated call (or of the session
// gate) at step key base. Each attempt has its own id, derived from the run
// id and the step key, so answers never cross between calls:
//
//   - a decided attempt returns its journaled outcome;
//   - a parked attempt reads the HITL binding: approved or denied is
//     journaled and returned, pending returns the request to wait on, and
//     expired applies the policy's on-timeout action (deny: an expired
//     outcome; fail: hitl-required, final; escalate: a new attempt asking
//     the next reviewer role);
//   - otherwise the attempt is asked for (started, RequestApproval, parked)
//     and its request returned to wait on.
func (r *run) approval(ctx context.Context, base, node, role string, mk func(role string) bindings.ApprovalRequest) (approvalOutcome, *bindings.ApprovalRequest, error) {
	for attempt := 1; attempt <= maxApprovalAttempts; attempt++ {
		key := base
		if attempt > 1 {
			key += "/" + strconv.Itoa(attempt)
		}
		st := r.Key(key)
		if st != nil && st.Result != 0 {
			o, err := drive.DecodeResult[approvalOutcome](r.At(st.Result))
			if err != nil {
				if r.At(st.Result).Status == bindings.StepFailed {
					r.Failed = true
				}
				return o, nil, err
			}
			if o.Status == approvalEscalated {
				role = o.NextRole
				continue
			}
			return o, nil, nil
		}
		if r.Replaying && st != nil && st.Parked != 0 {
			// Folding a parked run for Wait: it waits on this approval
			// unless the approval was decided since.
			return r.foldParked(ctx, r.At(st.Parked))
		}
		if r.b.Hitl == nil {
			if st != nil && st.Parked != 0 {
				// Asked by an earlier drive: a later drive with a HITL
				// binding can still continue the run.
				r.pending = true
				return approvalOutcome{}, nil, &agents.HitlRequiredError{Reason: "the run waits on an approval and no HITL binding is bound"}
			}
			return approvalOutcome{}, nil, r.Fail(ctx, key, node, &agents.HitlRequiredError{Reason: "a call needs approval and no HITL binding is bound"})
		}
		if st != nil && st.Parked != 0 {
			pr, err := r.parkedRecord(r.At(st.Parked))
			if err != nil {
				return approvalOutcome{}, nil, &agents.RunJournalUnavailableError{RunID: r.id, Err: err}
			}
			a, err := r.getApproval(ctx, pr.Request.ID)
			if err != nil {
				return approvalOutcome{}, nil, coded(err, "get approval")
			}
			o := approvalOutcome{ApprovalID: pr.Request.ID, Reviewer: a.Reviewer, Comment: a.Comment}
			switch a.Status {
			case bindings.ApprovalApproved:
				o.Status = approvalApproved
			case bindings.ApprovalDenied:
				o.Status = approvalDenied
			case bindings.ApprovalExpired:
				switch r.s.Hitl.OnTimeout {
				case OnTimeoutDeny:
					o.Status = approvalExpired
				case OnTimeoutFail:
					return o, nil, r.Fail(ctx, key, node, &agents.HitlRequiredError{
						ToolID: pr.Request.ToolID, ApprovalID: pr.Request.ID, Reason: "the approval expired",
					})
				default:
					o.Status, o.NextRole = approvalEscalated, tighten.NextRole(pr.Request.ReviewerRole)
				}
			default:
				req := pr.Request
				return approvalOutcome{}, &req, nil
			}
			stored, err := r.complete(ctx, key, node, o)
			if err != nil {
				return o, nil, err
			}
			if stored.Status == approvalEscalated {
				role = stored.NextRole
				continue
			}
			return stored, nil, nil
		}
		if st == nil || st.Started == 0 {
			if _, _, err := r.AppendEntry(ctx, key, node, bindings.StepStarted, nil, nil); err != nil {
				return approvalOutcome{}, nil, err
			}
		}
		req := mk(role)
		now := r.now()
		req.TenantID, req.RunID, req.ID = r.tenantID, r.id, r.DerivedID(key)
		req.ReviewerRole = role
		req.CreatedAt = now
		req.ExpiresAt = now.Add(msDuration(r.s.Hitl.TimeoutMs))
		if err := r.OpenPending(ctx); err != nil {
			return approvalOutcome{}, nil, err
		}
		a, err := r.b.Hitl.RequestApproval(ctx, req)
		if err != nil {
			return approvalOutcome{}, nil, coded(err, "request approval")
		}
		raw, err := json.Marshal(parkRecord{Request: a.Request, ElapsedMs: r.elapsedMs()})
		if err != nil {
			return approvalOutcome{}, nil, &agents.PersistenceError{Op: "encode approval", Err: err, Permanent: true}
		}
		e, _, err := r.AppendEntry(ctx, key, node, bindings.StepParked, raw, nil)
		if err != nil {
			return approvalOutcome{}, nil, err
		}
		var pr parkRecord
		if err := json.Unmarshal(e.Output, &pr); err != nil {
			return approvalOutcome{}, nil, &agents.RunJournalUnavailableError{RunID: r.id, Err: err}
		}
		emit(r, ctx, ApprovalRequestedEvent{RunID: r.id, ApprovalID: pr.Request.ID, ToolCallID: pr.Request.ToolCallID, ToolID: pr.Request.ToolID, ReviewerRole: pr.Request.ReviewerRole})
		if a.Status != bindings.ApprovalPending {
			// Decided already (asked by a driver that died before parking):
			// read the decision as for any parked attempt.
			attempt--
			continue
		}
		r.parkedNow++
		return approvalOutcome{}, &pr.Request, nil
	}
	return approvalOutcome{}, nil, r.Fail(ctx, base+"/exhausted", node, &agents.HitlRequiredError{Reason: "the approval expired after every escalation"})
}

// foldParked is a parked approval step of a run folded for Wait: the
// request it waits on, or errNotParked once the approval is decided or
// expired (a driver is about to move the run on).
func (r *run) foldParked(ctx context.Context, parked *bindings.JournalEntry) (approvalOutcome, *bindings.ApprovalRequest, error) {
	pr, err := r.parkedRecord(parked)
	if err != nil {
		return approvalOutcome{}, nil, &agents.RunJournalUnavailableError{RunID: r.id, Err: err}
	}
	if r.b.Hitl != nil {
		a, err := r.b.Hitl.GetApproval(ctx, r.tenantID, pr.Request.ID)
		if err != nil {
			return approvalOutcome{}, nil, coded(err, "get approval")
		}
		if a.Status != bindings.ApprovalPending {
			return approvalOutcome{}, nil, errNotParked
		}
	}
	r.parkedNow++
	return approvalOutcome{}, &pr.Request, nil
}

// complete journals a decided approval attempt and returns the outcome the
// journal keeps (the first one recorded).
func (r *run) complete(ctx context.Context, key, node string, o approvalOutcome) (approvalOutcome, error) {
	raw, err := encodeStep(r, &o) // into the drive's output arena
	if err != nil {
		return o, &agents.PersistenceError{Op: "encode approval outcome", Err: err, Permanent: true}
	}
	// The outcome only records what the HITL binding says, which a decided
	// approval keeps saying: it is buffered as a decide step's result
	// (bufferEntry), written with the next entry — the call's started
	// entry, the tool message, the next attempt, the run's end. A crash
	// that loses it reads the same decision again.
	e, appended, err := r.BufferEntry(ctx, key, node, raw)
	if err != nil {
		return o, err
	}
	if !appended {
		return drive.DecodeResult[approvalOutcome](&e)
	}
	return o, nil
}

// park ends a drive that waits on approvals. When this drive asked for any
// of them, the turn is suspended and returns them; when every one was
// asked by an earlier drive and is still pending, nothing has run and the
// caller gets *agents.HitlRequiredError.
func (r *run) park(waiting []bindings.ApprovalRequest) ([]bindings.ApprovalRequest, error) {
	if r.parkedNow > 0 {
		return waiting, nil
	}
	r.pending = true
	return nil, &agents.HitlRequiredError{ToolID: waiting[0].ToolID, ApprovalID: waiting[0].ID, Reason: "the approval is still pending"}
}

// sessionGate asks for the session gate's approval before the turn runs
// anything. A denied or expired gate fails the turn with hitl-required.
func (r *run) sessionGate(ctx context.Context) (Result, bool, error) {
	o, w, err := r.approval(ctx, NodeSetup+"/session-gate", NodeSetup, r.s.Hitl.ReviewerRole, func(string) bindings.ApprovalRequest {
		return bindings.ApprovalRequest{
			ConversationID: r.in.ConversationID,
			Reason:         "turn " + strconv.Itoa(r.s.TurnNumber) + " is past the session gate of " + strconv.Itoa(r.s.SessionGate.AfterTurns) + " turns",
		}
	})
	if err != nil {
		return Result{}, false, err
	}
	if w != nil {
		approvals, err := r.park([]bindings.ApprovalRequest{*w})
		if err != nil {
			return Result{}, false, err
		}
		return r.compose(StatusSuspended, "", approvals), true, nil
	}
	if o.Status != approvalApproved {
		r.Failed = true
		return Result{}, false, &agents.HitlRequiredError{ApprovalID: o.ApprovalID, Reason: "the session gate was " + o.Status}
	}
	return Result{}, false, nil
}

// encodeApprovalOutcome is json.Marshal(*o), through the journal codec;
// a drive encodes it with encodeStep, into its output arena.
func encodeApprovalOutcome(o *approvalOutcome) ([]byte, error) { return encodeOutput(o) }
