package journaltest

import (
	"context"

	"github.com/kindgi/agents/bindings"
)

// ResumeStore is a store that is a turn's RunBinding, RunSnapshotBinding,
// ConversationBinding and HitlBinding at once, with every optional
// capability a resumed drive uses (pgstore is one).
type ResumeStore interface {
	Store
	bindings.HitlBinding
	bindings.MessageStepAppender
	bindings.OptimisticTurnOpener
	bindings.OptimisticRunResumer
}

// ResumeStore wraps s as Store does, as one value that is also the
// turn's HitlBinding (its calls count as those of Hitl do), so that a
// driver holding it as its Runs, Snapshots, Conversations and Hitl
// resumes a run with bindings.RunResumer and bindings.OptimisticRunResumer:
// ResumeRun is one write (it takes the lease) unless its input is Held,
// ReadResumeRun is a read, and the writes as read are one write each,
// named as the writes they do are (AppendSteps, AppendMessageStep,
// FinishRun, AcquireLease), so that a resumed run crashes first at the
// write that takes its lease.
func (c *Crasher) ResumeStore(s ResumeStore) ResumeStore {
	return &resumeStore{optimisticStore: c.Store(s).(*optimisticStore), hitl: hitl{c, s}, or: s}
}

type resumeStore struct {
	*optimisticStore
	hitl
	or bindings.OptimisticRunResumer
}

// ResumeRun counts the call as one write (a read when the lease is held),
// then delegates (once crashed, it fails).
func (s *resumeStore) ResumeRun(ctx context.Context, in bindings.ReopenRunInput) (bindings.ResumeRunResult, error) {
	var err error
	if in.Held {
		err = s.hitl.c.read("ResumeRun")
	} else {
		err = s.hitl.c.write("ResumeRun")
	}
	if err != nil {
		return bindings.ResumeRunResult{}, err
	}
	return s.or.ResumeRun(ctx, in)
}

// ReadResumeRun delegates (once crashed, it fails): it writes nothing.
func (s *resumeStore) ReadResumeRun(ctx context.Context, in bindings.ReopenRunInput) (bindings.ReadResumeRunResult, error) {
	if err := s.hitl.c.read("ReadResumeRun"); err != nil {
		return bindings.ReadResumeRunResult{}, err
	}
	return s.or.ReadResumeRun(ctx, in)
}

// AppendStepsAsRead counts the call as one write, named as AppendSteps is,
// then delegates (once crashed, it fails).
func (s *resumeStore) AppendStepsAsRead(ctx context.Context, lease bindings.LeaseAsRead, in bindings.AppendStepsInput) ([]bindings.JournalEntry, []bool, error) {
	if err := s.hitl.c.write("AppendSteps " + entryNames(in.Entries)); err != nil {
		return nil, nil, err
	}
	return s.or.AppendStepsAsRead(ctx, lease, in)
}

// AppendMessageStepAsRead counts the call as one write, named as
// AppendMessageStep is, then delegates (once crashed, it fails).
func (s *resumeStore) AppendMessageStepAsRead(ctx context.Context, lease bindings.LeaseAsRead, in bindings.MessageStepInput) (bindings.MessageStepResult, error) {
	op := "AppendMessageStep " + in.Message.ID + " " + entryNames(in.Steps.Entries)
	if in.Finish != "" {
		op += " " + string(in.Finish)
	}
	if err := s.hitl.c.write(op); err != nil {
		return bindings.MessageStepResult{}, err
	}
	return s.or.AppendMessageStepAsRead(ctx, lease, in)
}

// FinishRunAsRead counts the call as one write, named as FinishRun is,
// then delegates (once crashed, it fails).
func (s *resumeStore) FinishRunAsRead(ctx context.Context, lease bindings.LeaseAsRead, in bindings.FinishRunInput) ([]bindings.JournalEntry, []bool, error) {
	if err := s.hitl.c.write("FinishRun " + string(in.Status) + " " + entryNames(in.Entries)); err != nil {
		return nil, nil, err
	}
	return s.or.FinishRunAsRead(ctx, lease, in)
}

// TakeLeaseAsRead counts the call as one write, named as AcquireLease is,
// then delegates (once crashed, it fails).
func (s *resumeStore) TakeLeaseAsRead(ctx context.Context, lease bindings.LeaseAsRead, in bindings.LeaseInput) (bindings.Run, error) {
	if err := s.hitl.c.write("AcquireLease"); err != nil {
		return bindings.Run{}, err
	}
	return s.or.TakeLeaseAsRead(ctx, lease, in)
}

// RunResumerStore is the wrapper itself: the binding its driver holds.
func (s *resumeStore) RunResumerStore() bindings.RunBinding { return s }

// OptimisticRunResumerStore is the wrapper itself.
func (s *resumeStore) OptimisticRunResumerStore() bindings.RunBinding { return s }

// OptimisticTurnOpenerStore is the wrapper itself.
func (s *resumeStore) OptimisticTurnOpenerStore() bindings.RunBinding { return s }

// TurnOpenerStore is the wrapper itself.
func (s *resumeStore) TurnOpenerStore() bindings.RunBinding { return s }

// MessageStepStore is the wrapper itself.
func (s *resumeStore) MessageStepStore() bindings.RunBinding { return s }
