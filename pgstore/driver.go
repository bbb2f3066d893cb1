package pgstore

import (
	"context"
	"errors"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
	"github.com/kindgi/agents/internal/storeio"
)

var _ journal.Driver = (*Store)(nil)

// Open implements journal.Driver with the calls that the turn makes today,
// round trip for round trip:
//
//   - a new run, LeaseOnWrite: readTurn (one read-only round trip); when
//     the run or its snapshot exists, openTurn (or OpenRun) as for
//     LeaseNow;
//   - a new run, LeaseNow: openTurn with ReadConversation, else OpenRun
//     (one round trip);
//   - an existing run, LeaseOnWrite: readResumeRun (one read-only round
//     trip: snapshot, journal, approvals, the run and its journal
//     version);
//   - an existing run, LeaseNow or LeaseHeld: resumeRun with
//     ReadApprovals, else ReopenRun (one round trip).
//
// ReadConversation of an existing run adds GetConversation and
// ReadMessages (the turn asks for none). Everything returned is decoded
// into memory of the call's own.
func (s *Store) Open(ctx context.Context, in journal.OpenInput) (journal.Drive, error) {
	if err := journal.CheckOpen(in); err != nil {
		return journal.Drive{}, err
	}
	if err := ctx.Err(); err != nil {
		return journal.Drive{}, err
	}
	if in.Create == nil {
		d, err := s.openExisting(ctx, in)
		if err != nil {
			return journal.Drive{}, err
		}
		if in.ReadConversation && d.Snapshot.ConversationID != "" {
			if d.Conversation, d.HasConversation, d.History, err = journal.ReadConversation(ctx, s, in.TenantID, d.Snapshot.ConversationID, in.HistoryLimit); err != nil {
				s.releaseOpened(ctx, in, d)
				return journal.Drive{}, err
			}
		}
		return d, nil
	}
	open := storeio.OpenRunInput{Snapshot: in.Create.Snapshot, Start: startOf(in)}
	limit := 0
	if in.ReadConversation {
		limit = in.HistoryLimit
	}
	if in.Lease == journal.LeaseOnWrite {
		res, err := s.readTurn(ctx, storeio.OpenTurnInput{OpenRunInput: open, HistoryLimit: limit})
		if err != nil {
			return journal.Drive{}, err
		}
		if !res.Exists {
			d := journal.Drive{
				Snapshot: in.Create.Snapshot, Journal: []bindings.JournalEntry{},
				Pending: &journal.Pending{TTL: in.TTL, Create: in.Create},
			}
			d.Snapshot.Input = append([]byte(nil), d.Snapshot.Input...)
			if in.ReadConversation {
				d.Conversation, d.HasConversation, d.History = res.Conversation, res.HasConversation, res.History
			}
			return d, nil
		}
	}
	if !in.ReadConversation {
		res, err := s.openRun(ctx, open, nil)
		if err != nil {
			return journal.Drive{}, err
		}
		return journal.Drive{Run: res.Run, Snapshot: res.Snapshot, Journal: res.Journal}, nil
	}
	res, err := s.openTurn(ctx, storeio.OpenTurnInput{OpenRunInput: open, HistoryLimit: limit})
	if err != nil {
		return journal.Drive{}, err
	}
	return journal.Drive{
		Run: res.Run, Snapshot: res.Snapshot, Journal: res.Journal,
		Conversation: res.Conversation, HasConversation: res.HasConversation, History: res.History,
	}, nil
}

// startOf is the StartRunInput of a new run's Open.
func startOf(in journal.OpenInput) bindings.StartRunInput {
	sn := in.Create.Snapshot
	return bindings.StartRunInput{
		TenantID: in.TenantID, RunID: in.RunID, FlowID: sn.FlowID, FlowVersion: sn.FlowVersion,
		Owner: in.Owner, LeaseTTL: in.TTL, Status: in.Create.Status,
		ParentRunID: in.Create.ParentRunID, ParentStepKey: in.Create.ParentStepKey,
	}
}

// openExisting is Open of an existing run: readResumeRun, resumeRun or
// ReopenRun.
func (s *Store) openExisting(ctx context.Context, in journal.OpenInput) (journal.Drive, error) {
	re := storeio.ReopenRunInput{TenantID: in.TenantID, RunID: in.RunID, Owner: in.Owner, TTL: in.TTL, Held: in.Lease == journal.LeaseHeld}
	var d journal.Drive
	switch {
	case in.Lease == journal.LeaseOnWrite:
		res, err := s.readResumeRun(ctx, re)
		if err != nil {
			return journal.Drive{}, err
		}
		d = journal.Drive{Run: res.Run, Snapshot: res.Snapshot, Journal: res.Journal}
		d.Pending = &journal.Pending{TTL: in.TTL, AsRead: &journal.AsRead{Run: res.Run, Version: res.JournalVersion}}
		if in.ReadApprovals {
			d.Approvals, d.HasApprovals = res.Approvals, true
		}
	case in.ReadApprovals:
		res, err := s.resumeRun(ctx, re)
		if err != nil {
			return journal.Drive{}, s.reopenFailed(ctx, in, err)
		}
		d = journal.Drive{Run: res.Run, Snapshot: res.Snapshot, Journal: res.Journal, Approvals: res.Approvals, HasApprovals: true}
	default:
		res, err := s.reopenRun(ctx, re, nil)
		if err != nil {
			return journal.Drive{}, s.reopenFailed(ctx, in, err)
		}
		d = journal.Drive{Run: res.Run, Snapshot: res.Snapshot, Journal: res.Journal}
	}
	if d.Journal == nil {
		d.Journal = []bindings.JournalEntry{}
	}
	return d, nil
}

// reopenFailed releases a lease a failed reopen may have taken (as the
// turn does today: any failure but a refused lease or a missing snapshot)
// and returns err.
func (s *Store) reopenFailed(ctx context.Context, in journal.OpenInput, err error) error {
	if c := agents.CodeOf(err); c != agents.CodeRunBusy && c != agents.CodeRunSnapshotMissing && in.Lease != journal.LeaseHeld {
		_ = s.ReleaseLease(context.WithoutCancel(ctx), in.TenantID, in.RunID, in.Owner)
	}
	return err
}

// releaseOpened releases the lease an Open took, after a later read of
// the Open failed.
func (s *Store) releaseOpened(ctx context.Context, in journal.OpenInput, d journal.Drive) {
	if in.Lease == journal.LeaseNow && d.Pending == nil {
		_ = s.ReleaseLease(context.WithoutCancel(ctx), in.TenantID, in.RunID, in.Owner)
	}
}

// Commit implements journal.Driver with one transaction per call, the
// round trips of today's turn:
//
//   - entries (and Finish): kindgi_append_steps, after kindgi_lease_as_read
//     for a pending lease or kindgi_open_new_run for a pending open, in one
//     round trip;
//   - a message step: kindgi_message_step, after the same, or after
//     kindgi_expect_messages for CheckCount, in
//     one round trip (a retry of a stored message writes its step in a
//     second, as AppendMessageStep does); with a pending open and
//     CheckCount, after kindgi_open_new_run too;
//   - a message step with HistoryLimit: appendUserMessage, then the step's
//     entry and the rest (two round trips, as today); with a pending
//     lease, a message step with CheckCount or HistoryLimit takes the
//     lease first (takeLeaseAsRead: one round trip more, as today);
//   - a pending open without a count-checked message reads the
//     conversation's count first (GetConversation), for
//     kindgi_open_new_run's check: one round trip more; a pending open
//     taken alone (nothing else to write) is OpenRun, ErrRunExists when it
//     did not create the run.
//
// With Trusted the calls skip the checks the caller vouches for (the
// ids, keys, nodes, statuses and JSON of what it writes).
func (s *Store) Commit(ctx context.Context, in journal.CommitInput) (journal.Committed, error) {
	if err := journal.CheckCommit(in); err != nil {
		return journal.Committed{}, err
	}
	if err := ctx.Err(); err != nil {
		return journal.Committed{}, err
	}
	m, p := in.Message, in.Pending
	if m != nil && m.Index == len(in.Entries) {
		return s.commitBareMessage(ctx, in)
	}
	var pre *batchExtra
	switch {
	case p != nil && p.AsRead != nil:
		if !in.Writes() || (m != nil && (m.CheckCount || m.HistoryLimit > 0)) {
			if _, err := s.takeLeaseAsRead(ctx, storeio.LeaseAsRead{TTL: p.TTL, Run: p.AsRead.Run, JournalVersion: p.AsRead.Version},
				bindings.LeaseInput{TenantID: in.TenantID, RunID: in.RunID, Owner: in.Owner, TTL: p.TTL}); err != nil {
				return journal.Committed{}, err
			}
			if !in.Writes() {
				return journal.Committed{Entries: []bindings.JournalEntry{}, Appended: []bool{}}, nil
			}
			break
		}
		var err error
		if pre, err = s.leaseAsRead(storeio.LeaseAsRead{TTL: p.TTL, Run: p.AsRead.Run, JournalVersion: p.AsRead.Version}, in.TenantID, in.RunID, in.Owner); err != nil {
			return journal.Committed{}, err
		}
	case p != nil:
		return s.commitOpen(ctx, in)
	}
	if m == nil {
		return s.commitEntries(ctx, in, pre)
	}
	if m.CheckCount && pre == nil {
		pre = s.expectMessages(m.Message.TenantID, m.Message.ConversationID, m.Count, m.Message.ID)
	} else if m.HistoryLimit > 0 && !m.CheckCount {
		return s.commitWithHistory(ctx, in)
	}
	return s.commitMessage(ctx, in, pre)
}

// commitEntries is a Commit of entries (and a finish), after pre.
func (s *Store) commitEntries(ctx context.Context, in journal.CommitInput, pre *batchExtra) (journal.Committed, error) {
	op := "append steps"
	if in.Finish != "" {
		op = "finish run"
	}
	entries, appended, err := s.appendStepsAfter(ctx, op, pre, storeio.AppendStepsInput{TenantID: in.TenantID, RunID: in.RunID, Owner: in.Owner, Entries: in.Entries}, in.Finish, nil, in.Trusted)
	if err != nil {
		return journal.Committed{}, err
	}
	return journal.Committed{Entries: entries, Appended: appended}, nil
}

// commitMessage is a Commit of a message step, after pre.
func (s *Store) commitMessage(ctx context.Context, in journal.CommitInput, pre *batchExtra) (journal.Committed, error) {
	m := in.Message
	res, err := s.appendMessageStep(ctx, storeio.MessageStepInput{
		Steps:     storeio.AppendStepsInput{TenantID: in.TenantID, RunID: in.RunID, Owner: in.Owner, Entries: in.Entries},
		StepIndex: m.Index, Message: m.Message, Finish: in.Finish, Encode: m.Encode,
	}, pre, in.Trusted)
	if sentinel := unwrapSentinel(err); sentinel != err {
		return journal.Committed{}, sentinel
	}
	return journal.Committed{Entries: res.Entries, Appended: res.Appended, Message: res.Message}, err
}

// commitWithHistory is a Commit of a message step that reads the history
// before the message: appendUserMessage of the entries before the step
// and the message, then the step's entry (its Output the stored message's
// encoding) and those after it.
func (s *Store) commitWithHistory(ctx context.Context, in journal.CommitInput) (journal.Committed, error) {
	m := in.Message
	steps := storeio.AppendStepsInput{TenantID: in.TenantID, RunID: in.RunID, Owner: in.Owner, Entries: in.Entries[:m.Index:m.Index]}
	head, err := s.appendUserMessage(ctx, storeio.UserMessageInput{Steps: steps, Message: m.Message, HistoryLimit: m.HistoryLimit})
	if err != nil {
		return journal.Committed{Entries: head.Entries, Appended: head.Appended}, err
	}
	encode := m.Encode
	if encode == nil {
		encode = bindings.EncodeMessageStep
	}
	out, err := encode(head.Message)
	if err != nil {
		return journal.Committed{Entries: head.Entries, Appended: head.Appended}, &agents.PersistenceError{Op: "encode message step of " + head.Message.ID, Err: err, Permanent: true}
	}
	if m.Index == len(in.Entries) && in.Finish == "" {
		return journal.Committed{Entries: head.Entries, Appended: head.Appended, Message: head.Message, History: head.History}, nil
	}
	rest := append([]bindings.JournalEntry(nil), in.Entries[m.Index:]...)
	if len(rest) > 0 {
		rest[0].Output = out
	}
	tail, err := s.commitEntries(ctx, journal.CommitInput{TenantID: in.TenantID, RunID: in.RunID, Owner: in.Owner, Entries: rest, Finish: in.Finish, Trusted: in.Trusted}, nil)
	if err != nil {
		return journal.Committed{}, err
	}
	return journal.Committed{
		Entries:  append(head.Entries, tail.Entries...),
		Appended: append(head.Appended, tail.Appended...),
		Message:  head.Message,
		History:  head.History,
	}, nil
}

// commitOpen is a Commit with a pending open: kindgi_open_new_run before
// the write, on the count the message step checks or, without one, the
// conversation's count as read now (read again when a message comes
// between the read and the write).
func (s *Store) commitOpen(ctx context.Context, in journal.CommitInput) (journal.Committed, error) {
	c, m := in.Pending.Create, in.Message
	open := storeio.OpenRunInput{Snapshot: c.Snapshot, Start: bindings.StartRunInput{
		TenantID: in.TenantID, RunID: in.RunID, FlowID: c.Snapshot.FlowID, FlowVersion: c.Snapshot.FlowVersion,
		Owner: in.Owner, LeaseTTL: in.Pending.TTL, Status: c.Status,
		ParentRunID: c.ParentRunID, ParentStepKey: c.ParentStepKey,
	}}
	msgID := ""
	if m != nil {
		msgID = m.Message.ID
		if m.Message.ConversationID != c.Snapshot.ConversationID {
			return journal.Committed{}, &agents.InvalidMessageError{Reason: "the message of a pending open is not of the run's conversation"}
		}
	}
	if m == nil && len(in.Entries) == 0 && in.Finish == "" {
		// The open alone (before a write that is not a Commit): OpenRun,
		// one round trip, with no count to check. A run it did not create
		// is another driver's.
		res, err := s.openRun(ctx, open, nil)
		switch {
		case agents.CodeOf(err) == agents.CodeRunBusy:
			return journal.Committed{}, bindings.ErrRunExists
		case err != nil:
			return journal.Committed{}, err
		case !res.Created:
			_ = s.ReleaseLease(context.WithoutCancel(ctx), in.TenantID, in.RunID, in.Owner)
			return journal.Committed{}, bindings.ErrRunExists
		}
		return journal.Committed{Entries: []bindings.JournalEntry{}, Appended: []bool{}}, nil
	}
	if m != nil && m.CheckCount {
		pre, err := s.openNewRun(open, m.Count, msgID)
		if err != nil {
			return journal.Committed{}, err
		}
		return s.commitMessage(ctx, in, pre)
	}
	for attempt := 0; ; attempt++ {
		count := 0
		if conv := c.Snapshot.ConversationID; conv != "" {
			cv, err := s.GetConversation(ctx, in.TenantID, conv)
			switch {
			case err == nil:
				count = cv.MessageCount
			case agents.CodeOf(err) != agents.CodeConversationNotFound:
				return journal.Committed{}, err
			}
		}
		pre, err := s.openNewRun(open, count, msgID)
		if err != nil {
			return journal.Committed{}, err
		}
		var res journal.Committed
		if m == nil {
			res, err = s.commitEntries(ctx, in, pre)
			if sentinel := unwrapSentinel(err); sentinel != err {
				res, err = journal.Committed{}, sentinel
			}
		} else {
			res, err = s.commitMessage(ctx, in, pre)
		}
		if errors.Is(err, bindings.ErrConversationChanged) && attempt < 3 {
			continue // a message came between the read of the count and the write
		}
		if err == nil && m != nil && m.HistoryLimit > 0 {
			res.History, err = s.ReadMessages(ctx, bindings.ReadMessagesInput{TenantID: in.TenantID, ConversationID: m.Message.ConversationID, BeforeSeq: res.Message.Seq, Limit: m.HistoryLimit})
		}
		return res, err
	}
}

// unwrapSentinel is err as the bindings sentinel it wraps
// (ErrConversationChanged, ErrRunExists), or err.
func unwrapSentinel(err error) error {
	for _, sentinel := range []error{bindings.ErrConversationChanged, bindings.ErrRunExists} {
		if errors.Is(err, sentinel) {
			return sentinel
		}
	}
	return err
}

// commitBareMessage is a Commit of a message with no step entry
// (Message.Index is len(Entries)): what is pending taken alone first (one
// round trip more: the turn's first write is rarely such a message), then
// AppendMessage, or AppendStepsAndMessage after entries, or
// appendUserMessage with a HistoryLimit — one round trip each — and a
// Finish in one more.
func (s *Store) commitBareMessage(ctx context.Context, in journal.CommitInput) (journal.Committed, error) {
	if in.Pending != nil {
		if _, err := s.Commit(ctx, journal.CommitInput{TenantID: in.TenantID, RunID: in.RunID, Owner: in.Owner, Pending: in.Pending, Trusted: in.Trusted}); err != nil {
			return journal.Committed{}, err
		}
		in.Pending = nil
	}
	m := in.Message
	if m.CheckCount {
		return journal.Committed{}, &agents.InvalidMessageError{Reason: "a count-checked message needs its step entry in the commit"}
	}
	if m.HistoryLimit > 0 {
		return s.commitWithHistory(ctx, in)
	}
	var res journal.Committed
	var err error
	if len(in.Entries) == 0 {
		res.Entries, res.Appended = []bindings.JournalEntry{}, []bool{}
		res.Message, err = s.AppendMessage(ctx, m.Message)
	} else {
		steps := storeio.AppendStepsInput{TenantID: in.TenantID, RunID: in.RunID, Owner: in.Owner, Entries: in.Entries}
		res.Entries, res.Appended, res.Message, err = s.appendStepsAndMessage(ctx, steps, m.Message, in.Trusted)
	}
	if err != nil {
		return journal.Committed{Entries: res.Entries, Appended: res.Appended}, err
	}
	if in.Finish != "" {
		if _, err := s.commitEntries(ctx, journal.CommitInput{TenantID: in.TenantID, RunID: in.RunID, Owner: in.Owner, Finish: in.Finish, Trusted: in.Trusted}, nil); err != nil {
			return journal.Committed{}, err
		}
	}
	return res, nil
}
