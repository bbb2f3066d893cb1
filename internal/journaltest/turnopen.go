package journaltest

import (
	"context"

	"github.com/kindgi/agents/bindings"
)

// turnOpenStore is a store whose driver also reads ahead with its writes
// (bindings.TurnOpener): OpenTurn is one write, counted and named as
// OpenRun is, AppendUserMessage one, named as AppendStepsAndMessage is,
// and AppendUserMessageStep one, named as AppendMessageStep is, so that a
// run crashes at each of the writes its driver makes.
type turnOpenStore struct {
	*messageStepStore
	to bindings.TurnOpener
}

// OpenTurn counts the call as one write, then delegates (once crashed, it
// fails).
func (s *turnOpenStore) OpenTurn(ctx context.Context, in bindings.OpenTurnInput) (bindings.OpenTurnResult, error) {
	if err := s.finishingRuns.c.write("OpenRun"); err != nil {
		return bindings.OpenTurnResult{}, err
	}
	return s.to.OpenTurn(ctx, in)
}

// AppendUserMessage counts the call as one write, then delegates (once
// crashed, it fails).
func (s *turnOpenStore) AppendUserMessage(ctx context.Context, in bindings.UserMessageInput) (bindings.UserMessageResult, error) {
	if err := s.finishingRuns.c.write("AppendStepsAndMessage " + in.Message.ID + " " + entryNames(in.Steps.Entries)); err != nil {
		return bindings.UserMessageResult{}, err
	}
	return s.to.AppendUserMessage(ctx, in)
}

// AppendUserMessageStep counts the call as one write, named as
// AppendMessageStep is, then delegates (once crashed, it fails).
func (s *turnOpenStore) AppendUserMessageStep(ctx context.Context, in bindings.UserMessageStepInput) (bindings.MessageStepResult, error) {
	op := "AppendMessageStep " + in.Message.ID + " " + entryNames(in.Steps.Entries)
	if in.Finish != "" {
		op += " " + string(in.Finish)
	}
	if err := s.finishingRuns.c.write(op); err != nil {
		return bindings.MessageStepResult{}, err
	}
	return s.to.AppendUserMessageStep(ctx, in)
}

// TurnOpenerStore is the wrapper itself: the binding its driver holds.
func (s *turnOpenStore) TurnOpenerStore() bindings.RunBinding { return s }

// MessageStepStore is the wrapper itself, as for messageStepStore.
func (s *turnOpenStore) MessageStepStore() bindings.RunBinding { return s }

// optimisticStore is a turnOpenStore whose driver opens a new run with its
// first write (bindings.OptimisticTurnOpener): ReadTurn is a read, and
// OpenUserMessageStep one write, named as AppendMessageStep is (the write
// a run crashes at first is then the one that creates it).
type optimisticStore struct {
	*turnOpenStore
	oo bindings.OptimisticTurnOpener
}

// ReadTurn delegates (once crashed, it fails): it writes nothing.
func (s *optimisticStore) ReadTurn(ctx context.Context, in bindings.OpenTurnInput) (bindings.ReadTurnResult, error) {
	if err := s.finishingRuns.c.read("ReadTurn"); err != nil {
		return bindings.ReadTurnResult{}, err
	}
	return s.oo.ReadTurn(ctx, in)
}

// OpenUserMessageStep counts the call as one write, named as
// AppendMessageStep is, then delegates (once crashed, it fails).
func (s *optimisticStore) OpenUserMessageStep(ctx context.Context, in bindings.OpenUserMessageStepInput) (bindings.MessageStepResult, error) {
	op := "AppendMessageStep " + in.Message.ID + " " + entryNames(in.Steps.Entries)
	if in.Finish != "" {
		op += " " + string(in.Finish)
	}
	if err := s.finishingRuns.c.write(op); err != nil {
		return bindings.MessageStepResult{}, err
	}
	return s.oo.OpenUserMessageStep(ctx, in)
}

// OptimisticTurnOpenerStore is the wrapper itself: the binding its driver
// holds.
func (s *optimisticStore) OptimisticTurnOpenerStore() bindings.RunBinding { return s }

// TurnOpenerStore is the wrapper itself.
func (s *optimisticStore) TurnOpenerStore() bindings.RunBinding { return s }

// MessageStepStore is the wrapper itself.
func (s *optimisticStore) MessageStepStore() bindings.RunBinding { return s }
