package turn

import (
	"context"
	"errors"
	"sync/atomic"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// The optimistic open (bindings.OptimisticTurnOpener): a turn of a run
// that does not exist yet reads (ReadTurn: is there a run or snapshot with
// this id? the conversation, the history) instead of opening the run, and
// its first write — the deferred user message's, with model-call 1's
// started entry — also creates the snapshot and the run under the lease,
// only if neither is stored yet (OpenUserMessageStep). One commit fewer.
//
// Why the crash contract holds: the snapshot before any effect, and one
// driver per run.
//   - Before that write nothing of the run is durable, and the drive has
//     had no external effect (the write carries the first model call's
//     started entry, and nothing is called before it). A crash there
//     leaves nothing: a retry with the same run id starts fresh, as after
//     a crash in today's OpenRun.
//   - An existing run id is checked before any write: prepare reads the
//     snapshot of an explicit run id (input mismatch), and ReadTurn
//     finding the run or its snapshot takes today's path (OpenTurn).
//   - Two Invokes of one run id that both read it as missing: the write
//     creates the run only if it still does not exist, all or nothing
//     (the unique keys order them). The one that created it drives it;
//     the other's write stores nothing (bindings.ErrRunExists) and its
//     Invoke opens the run as today (errRunOpened → OpenRun: run-busy
//     while the first holds the lease, its recorded result or a driven
//     run afterwards, input mismatch for another input).
//   - Any other write coming first (an early failure's FinishRun, a
//     conversation's auto-close, a user message that cannot wait, the
//     conversation changed since the read) opens the run with OpenRun
//     first (openPending), then writes as today; a run found created
//     meanwhile stops the drive (errRunOpened) before it writes.
//   - The lease is renewed only once the run exists; until then there is
//     no lease to lose, nor to release.
//
// Worker-driven turns (Submit, then a claim) and Resume open the run as
// before.

// pendingOpen is the run a drive has read as missing and creates with its
// first write.
type pendingOpen struct {
	oo     bindings.OptimisticTurnOpener
	in     bindings.OpenRunInput
	stored Input // what the snapshot records, for a run found opened meanwhile
	// opened is set once the run is stored (by this drive, or found
	// stored); the lease's renewal reads it.
	opened atomic.Bool
}

// errRunOpened stops a drive whose run another driver created since
// ReadTurn read it as missing: nothing of this drive was stored, and
// Invoke opens the run as an existing one (invokeOpened). It is coded
// run-busy for the drive's own handling of it.
type errRunOpened struct{ runID string }

func (e *errRunOpened) Error() string {
	return "run " + e.runID + " was opened by another driver since it was read"
}

// Code is agents.CodeRunBusy.
func (e *errRunOpened) Code() string { return agents.CodeRunBusy }

// optimisticOpener returns b's bindings.OptimisticTurnOpener when it is
// the turn's TurnOpener (turnOpener) and bound as itself; nil otherwise.
func optimisticOpener(b *Bindings) bindings.OptimisticTurnOpener {
	to := turnOpener(b)
	if to == nil {
		return nil
	}
	oo, ok := to.(bindings.OptimisticTurnOpener)
	if !ok || !sameBinding(oo.OptimisticTurnOpenerStore(), b.Runs) {
		return nil
	}
	if _, ok := b.Runs.(bindings.RunOpener); !ok {
		return nil // openPending opens with OpenRun
	}
	return oo
}

// readTurn is the optimistic open's read: ok when the run does not exist,
// with the reads OpenTurn would have made (the conversation and its
// history).
func readTurn(ctx context.Context, oo bindings.OptimisticTurnOpener, limit int, in bindings.OpenRunInput) (reads *turnReads, ok bool, err error) {
	res, err := oo.ReadTurn(ctx, bindings.OpenTurnInput{OpenRunInput: in, HistoryLimit: max(limit, 0)})
	if err != nil {
		return nil, false, coded(err, "open run")
	}
	if res.Exists {
		return nil, false, nil
	}
	return readsOf(res.Conversation, res.HasConversation, res.History, limit), true, nil
}

// unopened is the run's open still to be made (nil when the run is
// stored, or was opened as before).
func (r *run) unopened() *pendingOpen {
	if rd := r.reads; rd != nil && rd.open != nil && !rd.open.opened.Load() {
		return rd.open
	}
	return nil
}

// openPending opens the run with OpenRun before a write other than the
// one that creates it (see the comment at the top of this file); nothing
// when the run is stored. It also takes a resumed drive's lease still to
// be taken (takeLease) before a write that does not take it as read (see
// optimisticresume.go). A run found opened by another driver (a journal,
// another input) stops the drive with errRunOpened.
func (r *run) openPending(ctx context.Context) error {
	if rd := r.reads; rd == nil || (rd.open == nil && rd.lease == nil) {
		return nil
	}
	return r.openPendingNow(ctx)
}

// openPendingNow is openPending for a run with a pending open or lease.
func (r *run) openPendingNow(ctx context.Context) error {
	if err := r.takeLease(ctx); err != nil {
		return err
	}
	p := r.unopened()
	if p == nil {
		return nil
	}
	_, entries, snap, hasSnap, err := openRun(ctx, r.b, p.in)
	if agents.CodeOf(err) == agents.CodeRunBusy {
		return &errRunOpened{runID: r.id}
	}
	if err != nil {
		return err
	}
	p.opened.Store(true)
	if len(entries) > 0 || !hasSnap || checkSameInput(snap, p.stored) != nil {
		return &errRunOpened{runID: r.id}
	}
	return nil
}

// openUserMessageStep is the deferred user message's write of a run not
// stored yet: OpenUserMessageStep, which creates it.
func (r *run) openUserMessageStep(ctx context.Context, p *pendingOpen, in bindings.UserMessageStepInput) (bindings.MessageStepResult, error) {
	res, err := p.oo.OpenUserMessageStep(ctx, bindings.OpenUserMessageStepInput{Open: p.in, UserMessageStepInput: in})
	switch {
	case errors.Is(err, bindings.ErrRunExists):
		return bindings.MessageStepResult{}, &errRunOpened{runID: r.id}
	case err == nil || res.Entries != nil:
		p.opened.Store(true)
	}
	return res, err
}
