package turn

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
	"github.com/kindgi/agents/turn/internal/childrun"
	"github.com/kindgi/agents/turn/internal/codes"
	"github.com/kindgi/agents/turn/internal/drive"
	"github.com/kindgi/agents/turn/internal/precheck"
	"github.com/kindgi/agents/turn/internal/routing"
)

// Invoke runs one turn of a conversation as a journaled run of the flow
// agent.turn (the TypeScript package's invokeAgent).
//
// Before its first side effect the turn writes the run snapshot and starts
// the run with a lease; every side effect is then a journal step whose
// result is stored before the next one starts. The turn returns a Result
// with StatusCompleted, or StatusSuspended when it parked on human
// approvals: continue it with Resume. Every error carries a code
// (agents.CodeOf); once the run is created (its snapshot written and the
// run started), a failed Invoke still returns its Result.RunID (and
// ConversationID), so the host can inspect or resume the run. A transient
// storage failure or a lost lease (persistence-error that
// agents.IsRetryable accepts, run-busy) leaves the run resumable; any
// other error is the run's final outcome. Cancelling ctx stops the turn
// for good (turn-aborted, reason
// external).
//
// Every id of in is checked with bindings.CheckID first (invalid-message).
// With an explicit in.RunID the run's snapshot is read before anything is
// written: a run started with another input is
// *agents.RunInputMismatchError, and nothing is stored, leased or called;
// a run that has ended returns its recorded outcome and calls nothing,
// even while its last driver still holds the lease.
// A drive that ends on a deterministic storage refusal, or on a model or
// tool step that failed Bindings.MaxStepAttempts times, fails the run for
// good; agents.IsRetryable tells whether driving it again can help.
//
// Tools receive each call's request id (bindings.CallContext.RequestID),
// which is stable across retries of the call: a call interrupted by a
// crash is sent again with the same request id, so a tool with side
// effects must treat it as an idempotency key.
func Invoke(ctx context.Context, in Input, b Bindings) (Result, error) {
	res, err := invoke(ctx, in, b)
	if err != nil {
		err = precheck.AbortedBy(ctx, err)
	}
	return res, err
}

// invoke is Invoke; Invoke only reports a cancellation before the drive
// as the turn's abort.
func invoke(ctx context.Context, in Input, b Bindings) (Result, error) {
	in, raw, stored, explicit, err := prepare(ctx, in, &b)
	if err != nil {
		return Result{}, err
	}
	owner := newID(&b)
	jd, native := driverOf(&b)
	limit := historyLimit(in.Agent)
	open := journal.OpenInput{
		TenantID: in.TenantID, RunID: in.RunID, Owner: owner, TTL: leaseTTL(&b),
		Create: &journal.Create{Snapshot: bindings.RunSnapshotWriteInput{
			TenantID: in.TenantID, RunID: in.RunID, FlowID: FlowID, FlowVersion: FlowVersion,
			AgentID: in.Agent.ID, AgentVersion: in.Agent.Version,
			ConversationID: in.ConversationID, ProjectID: in.ProjectID, Input: raw,
		}},
		ReadConversation: true, HistoryLimit: max(limit, 0), Trusted: true,
	}
	if c := b.child; c != nil {
		open.Create.ParentRunID, open.Create.ParentStepKey = c.ParentRunID, c.ParentStepKey
	}
	if limit > 0 {
		// A new run may be created by its first write (see commit.go):
		// the deferred user message's, which needs the history read.
		open.Lease = journal.LeaseOnWrite
	}
	d, err := jd.Open(ctx, open)
	if err != nil {
		return openFailed(ctx, &b, in, err)
	}
	if p := d.Pending; p != nil && p.Create != nil {
		r := newPooledRun(&b, jd, native, stored, in.RunID, owner, bindings.RunRunning, nil)
		r.Reads = drive.ReadsOf(d.Conversation, d.HasConversation, d.History, limit)
		r.SetPending(p)
		res, err := r.driveReporting(ctx)
		r.release()
		if reopen := (*drive.RunOpenedError)(nil); !errors.As(err, &reopen) {
			return res, err
		}
		// Another driver created the run since the read, and nothing of
		// this drive is stored: open it as it is now.
		open.Lease = journal.LeaseNow
		if d, err = jd.Open(ctx, open); err != nil {
			return openFailed(ctx, &b, in, err)
		}
	}
	if explicit || len(d.Journal) > 0 {
		// Perhaps an existing run: drive it as the snapshot recorded it
		// (the first write of a run's snapshot is the one kept). Another
		// Invoke may have opened the run since prepare's check.
		err := checkSameInput(d.Snapshot, stored)
		if err == nil {
			err = precheck.SnapshotFlow(d.Snapshot, FlowID, FlowVersion)
		}
		if err == nil {
			stored, err = decodeSnapshot(d.Snapshot, in)
		}
		if err != nil {
			if d.Pending == nil {
				_ = b.Runs.ReleaseLease(context.WithoutCancel(ctx), in.TenantID, in.RunID, owner)
			}
			return Result{RunID: in.RunID, ConversationID: in.ConversationID}, coded(err, "read run snapshot")
		}
	}
	r := newPooledRun(&b, jd, native, stored, in.RunID, owner, d.Run.Status, d.Journal)
	defer r.release()
	r.Reads = drive.ReadsOf(d.Conversation, d.HasConversation, d.History, limit)
	r.SetPending(d.Pending)
	return r.driveReporting(ctx)
}

// openFailed is Invoke's outcome when opening the run failed with err: a
// run-busy run that has in fact ended (its last driver has not released
// the lease yet) is folded, as Resume does; any other err stands.
func openFailed(ctx context.Context, b *Bindings, in Input, err error) (Result, error) {
	if agents.CodeOf(err) == agents.CodeRunBusy {
		if res, ended, ferr := foldEnded(ctx, b, ResumeInput{TenantID: in.TenantID, RunID: in.RunID}); ended {
			return res, ferr
		}
	}
	return Result{}, coded(err, "open run")
}

// driveReporting drives the run; a failed drive still tells the run id
// (and conversation), so the host can inspect or resume the run.
func (r *run) driveReporting(ctx context.Context) (Result, error) {
	res, err := r.drive(ctx)
	if err != nil && res.RunID == "" {
		res = Result{RunID: r.id, ConversationID: r.in.ConversationID, Appended: []bindings.ConversationMessage{}, Retrieved: []RetrievedFact{}, Violations: []Violation{}, Approvals: []bindings.ApprovalRequest{}}
	}
	return res, err
}

// Resume continues a run — parked on approvals, or left running by a
// driver that died — from the step it stopped at (the TypeScript package's
// resumeAgentTurn). It reads the snapshot first (run-snapshot-missing, also
// for a run id that names no run), then takes the run's lease: while
// another driver holds it, Resume fails with *agents.RunBusyError and calls
// nothing else. It then reads the journal
// (run-journal-unavailable), checks that in.Agent is the run's id@version
// (agent-version-mismatch) and that the run's provider and model are still
// registered and allowed (capability-routing-failed), and drives the flow:
// journaled steps return their stored results, so calls that ran before
// keep their results and nothing runs twice. An approval still pending is
// *agents.HitlRequiredError and nothing runs. A finished run returns its
// recorded result or error without calling anything.
//
// With a store whose journal.Driver defers the lease (memstore, pgstore:
// Bindings.Journal), the read takes no lease: the drive's first write
// takes it, only if the run is still as read, and a model or tool call
// that was in flight when a driver died is sent again only once the
// lease is taken (alone, when no write comes before it). A driver that
// took or drove the run in between makes that write store nothing, and
// Resume fails with *agents.RunBusyError before it calls anything (having
// emitted a TurnStartedEvent and a TurnFailedEvent). The error's
// LeaseExpired says when the refused driver's own lease expired instead
// (it stalled past Bindings.LeaseTTL and nobody took the run).
func Resume(ctx context.Context, in ResumeInput, b Bindings) (Result, error) {
	res, err := resume(ctx, in, b, newID(&b), nil)
	if err != nil {
		err = precheck.AbortedBy(ctx, err)
	}
	return res, err
}

// resume is Resume as lease owner owner. claimed, when set, is the run as
// a Worker's claim just leased it to owner: its lease is not taken again,
// and a failure before the drive leaves it leased (the Worker releases
// it).
func resume(ctx context.Context, in ResumeInput, b Bindings, owner string, claimed *bindings.Run) (Result, error) {
	lookup := in.Agent.ID == "" && in.Agent.Version == ""
	if lookup && b.Agents == nil {
		return Result{}, &agents.InvalidBindingsError{Reason: "Resume needs the run's agent: set ResumeInput.Agent or Bindings.Agents"}
	}
	if err := checkAgentBindings(&b, in.Agent); err != nil {
		return Result{}, err
	}
	if err := precheck.Resume(ctx, in.TenantID, in.RunID); err != nil {
		return Result{}, err
	}
	jd, native := driverOf(&b)
	open := journal.OpenInput{TenantID: in.TenantID, RunID: in.RunID, Owner: owner, TTL: leaseTTL(&b), Lease: journal.LeaseOnWrite, ReadApprovals: true, Trusted: true}
	if claimed != nil {
		open.Lease = journal.LeaseHeld
	}
	d, err := jd.Open(ctx, open)
	if err != nil {
		if agents.CodeOf(err) == agents.CodeRunBusy && claimed == nil {
			if res, ended, ferr := foldEnded(ctx, &b, in); ended {
				return res, ferr
			}
		}
		if agents.CodeOf(err) == "" {
			err = codes.Journal(in.RunID, err)
		}
		return Result{}, err
	}
	snap, leased, pending := d.Snapshot, d.Run, d.Pending
	if claimed != nil {
		leased = *claimed
	}
	release := func() {
		// With pending, nothing is leased yet; a Worker's claimed run it
		// keeps leased, to hold it for a retry or to fail it without
		// another worker claiming it in between.
		if pending == nil && claimed == nil {
			_ = b.Runs.ReleaseLease(context.WithoutCancel(ctx), in.TenantID, in.RunID, owner)
		}
	}
	stored, err := resumedInput(ctx, &b, &in, snap, lookup)
	if err != nil {
		release()
		return Result{}, err
	}
	if b.child == nil && leased.ParentRunID != "" {
		b.child = childrun.FromSnapshot(snap.Input) // a sub-agent's child run: its place in the tree
	}
	r := newPooledRun(&b, jd, native, stored, in.RunID, owner, leased.Status, d.Journal)
	defer r.release()
	r.held = claimed != nil
	if d.HasApprovals {
		r.Reads = drive.ReadsOfApprovals(d.Approvals)
	}
	r.SetPending(pending)
	if st := r.Key(NodeComposeResult); st == nil || st.Result == 0 {
		if err := r.recheckRoute(ctx); err != nil {
			release()
			return Result{RunID: in.RunID, ConversationID: stored.ConversationID}, err
		}
	}
	return r.driveReporting(ctx)
}

// resumedInput checks the run's snapshot against in — its agent found
// first (Bindings.Agents) when lookup says so, and the bindings that agent
// needs checked then — and rebuilds the turn input it stored.
func resumedInput(ctx context.Context, b *Bindings, in *ResumeInput, snap bindings.RunSnapshotRecord, lookup bool) (Input, error) {
	if lookup {
		var err error
		if in.Agent, err = findAgent(ctx, b, snap); err != nil {
			return Input{}, err
		}
		if err := checkAgentBindings(b, in.Agent); err != nil {
			return Input{}, err
		}
	}
	if err := precheck.SnapshotAgent(snap, in.Agent.ID, in.Agent.Version); err != nil {
		return Input{}, err
	}
	if err := precheck.SnapshotFlow(snap, FlowID, FlowVersion); err != nil {
		return Input{}, err
	}
	return decodeSnapshotIn(snap, Input{Agent: in.Agent}, true) // read by Open: the caller's own
}

// recheckRoute verifies, before a resumed drive, that the provider and
// model setup chose are still registered and allowed by the tenant's
// current policy. A run whose setup has not completed routes afresh.
func (r *run) recheckRoute(ctx context.Context) error {
	// Decoded into the run's own setup state (zero until the flow sets it
	// from setup's replay, to this same value), in place: no copy on the
	// heap, and no whole-struct copy into the pooled run (a bulk write
	// barrier while a GC mark runs). The drive replays setup next: it
	// takes this decode instead of decoding the state (its tools and their
	// schemas) a second time.
	s := &r.s
	if ok, err := drive.PredecodeResult(&r.Journal, NodeSetup, s); !ok {
		return err
	}
	p, err := evaluatePolicy(ctx, r.b, r.tenantID, r.in.ProjectID, r.in.Agent.ID, bindings.PolicyKindModel)
	if err != nil {
		return err
	}
	_, _, err = routing.Check(r.in.Agent, r.b.Providers, p.allow(), s.Route.Provider, s.Route.Model)
	return err
}

// checkSameInput reports a run snapshot written for another input than in
// (in as the snapshot would store it): *agents.RunInputMismatchError naming
// the first field that differs, or nil when the input is the same and
// Invoke may replay the run (precheck.SameInput).
func checkSameInput(snap bindings.RunSnapshotRecord, in Input) error {
	var prior Input
	err := json.Unmarshal(snap.Input, &prior)
	return precheck.SameInput(snap, sameInputOf(&prior), err, in.TenantID, in.Agent.ID, in.Agent.Version, sameInputOf(&in))
}

// sameInputOf is what precheck.SameInput compares of in.
func sameInputOf(in *Input) precheck.SnapInput {
	return precheck.SnapInput{ProjectID: in.ProjectID, ConversationID: in.ConversationID, UserMessage: in.UserMessage,
		ParticipantID: in.ParticipantID, Parameters: in.Parameters, Principal: in.Principal, DryRun: in.DryRun}
}

// decodeSnapshot rebuilds the turn input a snapshot stored.
func decodeSnapshot(snap bindings.RunSnapshotRecord, in Input) (Input, error) {
	return decodeSnapshotIn(snap, in, false)
}

// decodeSnapshotIn is decodeSnapshot; inPlace says nothing ever writes
// snap.Input (a snapshot the binding read for the caller: returned values
// are copies), which is then decoded in place (unmarshalIn).
func decodeSnapshotIn(snap bindings.RunSnapshotRecord, in Input, inPlace bool) (Input, error) {
	var stored Input
	if err := drive.UnmarshalIn(snap.Input, &stored, inPlace); err != nil {
		return Input{}, &agents.RunSnapshotMissingError{RunID: snap.RunID}
	}
	stored.Agent = in.Agent
	stored.TenantID = snap.TenantID
	stored.RunID = snap.RunID
	return stored, nil
}

// endsRun is codes.EndsRun: whether err, a drive's error that no step
// journaled, is the run's final outcome.
func endsRun(err error) bool { return codes.EndsRun(err) }

func leaseTTL(b *Bindings) time.Duration {
	if b.LeaseTTL > 0 {
		return b.LeaseTTL
	}
	return DefaultLeaseTTL
}

// checkBindings reports a missing required binding as a coded error.
func checkBindings(b *Bindings, needMemory bool) error {
	return precheck.Bindings(precheck.Bound{
		Providers: b.Providers != nil, Tools: b.Tools != nil, Conversations: b.Conversations != nil,
		Snapshots: b.Snapshots != nil, Runs: b.Runs != nil, Memory: b.Memory != nil, NeedMemory: needMemory,
	})
}

// checkAgentBindings is checkBindings and checkHitlBinding for agent a.
func checkAgentBindings(b *Bindings, a agent.Agent) error {
	if err := checkBindings(b, len(a.Retrieval) > 0); err != nil {
		return err
	}
	return checkHitlBinding(b, a)
}

// checkHitlBinding refuses, before any side effect, an agent whose own
// policy gates one of its tools (any mode but never_ask) when no HITL
// binding is bound: such a turn could only fail once the model asked for
// the tool, after the model was called and billed. Gates the tenant's
// policy adds are known once setup merged it; setup checks them the same
// way, still before any model call.
func checkHitlBinding(b *Bindings, a agent.Agent) error {
	if b.Hitl != nil {
		return nil
	}
	return gatedWithoutHitl(ResolveEffectiveHitlPolicy(nil, a), a.Tools)
}

// gatedWithoutHitl is the invalid-bindings error for a policy that gates a
// tool of tools, for a turn with no HITL binding; nil when none is gated.
func gatedWithoutHitl(p EffectiveHitlPolicy, tools []agent.ToolRef) error {
	for _, t := range tools {
		if g := p.Gate(t.ID); g.Mode != agent.GateNeverAsk {
			return &agents.InvalidBindingsError{Reason: "tool " + t.ID + " is gated (" + string(g.Mode) + ") and no HITL binding (Bindings.Hitl) is bound to ask for approvals"}
		}
	}
	return nil
}

// checkInput reports an input the turn cannot run, before any side
// effect (precheck.Input: every id passes bindings.CheckID).
func checkInput(in Input) error {
	return precheck.Input(precheck.Turn{
		TenantID: in.TenantID, ConversationID: in.ConversationID, UserMessage: in.UserMessage,
		AgentID: in.Agent.ID, AgentVersion: in.Agent.Version,
		ProjectID: in.ProjectID, RunID: in.RunID, ParticipantID: in.ParticipantID, Principal: in.Principal,
	})
}

// foldEnded folds, from its journal as Wait does, a run that ended but
// whose lease its last driver has not released yet: a finish over the
// basic bindings (journal.Adapt) sets the status, then releases the lease,
// and so does a Worker that fails a run for good. Re-driving a finished
// run returns its outcome, and reading it needs no lease. ended is false
// when the run has not ended (the caller's run-busy stands) or a read
// failed; otherwise res and err are the run's outcome.
func foldEnded(ctx context.Context, b *Bindings, in ResumeInput) (res Result, ended bool, err error) {
	run, gerr := b.Runs.GetRun(ctx, in.TenantID, in.RunID)
	if gerr != nil || !run.Status.Terminal() {
		return Result{}, false, nil
	}
	res, err = fold(ctx, b, run)
	if err != nil && agents.IsRetryable(err) {
		return Result{}, false, nil
	}
	return res, true, err
}
