package journal

import (
	"context"
	"fmt"
	"slices"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// Bindings are the basic bindings Adapt builds a Driver from. Snapshots,
// Runs and Conversations are required; Hitl may be nil (its approvals are
// then never read ahead).
type Bindings struct {
	Snapshots     bindings.RunSnapshotBinding
	Runs          bindings.RunBinding
	Conversations bindings.ConversationBinding
	Hitl          bindings.HitlBinding
}

// Adapt returns the Driver of b's basic bindings: every call of Open and
// Commit is made of the calls of the bindings that it stands for, one
// after the other, and of nothing else (no optional capability of b's
// values is used, so a wrapper's own methods are never bypassed). It is
// the reference implementation of Driver, simpler than a native one:
//
//   - Open never defers: it creates a new run (Write, then StartRun) and
//     takes the lease (AcquireLease) in Open, whatever OpenInput.Lease
//     says but LeaseHeld, so Drive.Pending is always nil (and a Commit
//     with a Pending is invalid-message). It reads the stored snapshot
//     (Read) and the journal (ReadJournal) after the lease. With
//     ReadConversation it reads GetConversation and, with HistoryLimit,
//     ReadMessages, and keeps the history only when its newest message is
//     the conversation's last as read (a message appended between the two
//     reads leaves History nil). It never reads approvals ahead
//     (HasApprovals false: the caller calls GetApproval).
//   - Commit appends the entries one at a time with AppendStep (the owner
//     checked with each), the message with AppendMessage between them,
//     and finishes with SetRunStatus then ReleaseLease (a finish with no
//     entries checks the owner with AcquireLease first, which takes a free
//     lease rather than refuse it). CheckCount is
//     checked with GetConversation before the first write, not under the
//     message's lock: a message another writer appends between that read
//     and the append is not caught (the stored message's Seq is then not
//     Count+1, which the caller can see). With HistoryLimit it reads the
//     history with ReadMessages after the append.
//   - It is not all or nothing: a call that fails part way (a lease lost
//     between two entries, the store gone) leaves what it stored before,
//     as a crash between the calls would. Every call is idempotent, so a
//     retry of the whole Commit completes it.
//   - It checks every entry (CheckEntries) before the first write, so an
//     invalid one stores nothing, and it ignores Trusted: the bindings
//     check everything as for any caller.
//     It copies every entry output, snapshot input and message value it
//     returns, so the Memory contract holds whatever the bindings share.
func Adapt(b Bindings) Driver { return adapter(b) }

type adapter Bindings

// Open implements Driver.
func (a adapter) Open(ctx context.Context, in OpenInput) (Drive, error) {
	if err := CheckOpen(in); err != nil {
		return Drive{}, err
	}
	if err := ctx.Err(); err != nil {
		return Drive{}, err
	}
	var d Drive
	var err error
	leased := in.Lease != LeaseHeld
	if in.Create != nil {
		d, err = a.openNew(ctx, in)
	} else {
		d, err = a.openExisting(ctx, in)
	}
	if err != nil {
		return Drive{}, err
	}
	if in.ReadConversation && d.Snapshot.ConversationID != "" {
		d.Conversation, d.HasConversation, d.History, err = ReadConversation(ctx, a.Conversations, in.TenantID, d.Snapshot.ConversationID, in.HistoryLimit)
		if err != nil {
			if leased {
				_ = a.Runs.ReleaseLease(context.WithoutCancel(ctx), in.TenantID, in.RunID, in.Owner)
			}
			return Drive{}, err
		}
	}
	return d, nil
}

// openNew is Open of a Create: Write, StartRun, ReadJournal, Read.
func (a adapter) openNew(ctx context.Context, in OpenInput) (Drive, error) {
	snap := in.Create.Snapshot
	if err := a.Snapshots.Write(ctx, snap); err != nil {
		return Drive{}, coded(err, "write run snapshot")
	}
	run, err := a.Runs.StartRun(ctx, bindings.StartRunInput{
		TenantID: in.TenantID, RunID: in.RunID, FlowID: snap.FlowID, FlowVersion: snap.FlowVersion,
		Owner: in.Owner, LeaseTTL: in.TTL, Status: in.Create.Status,
		ParentRunID: in.Create.ParentRunID, ParentStepKey: in.Create.ParentStepKey,
	})
	if err != nil {
		return Drive{}, coded(err, "start run")
	}
	d, err := a.readRun(ctx, in)
	if err != nil {
		return Drive{}, err
	}
	d.Run = run
	return d, nil
}

// openExisting is Open of an existing run: Read, AcquireLease (unless
// held), ReadJournal.
func (a adapter) openExisting(ctx context.Context, in OpenInput) (Drive, error) {
	snap, err := a.Snapshots.Read(ctx, in.TenantID, in.RunID)
	if err != nil {
		if agents.CodeOf(err) == "" {
			return Drive{}, &agents.RunSnapshotMissingError{RunID: in.RunID}
		}
		return Drive{}, err
	}
	var run bindings.Run
	if in.Lease != LeaseHeld {
		run, err = a.Runs.AcquireLease(ctx, bindings.LeaseInput{TenantID: in.TenantID, RunID: in.RunID, Owner: in.Owner, TTL: in.TTL})
		if err != nil {
			return Drive{}, journalError(in.RunID, err)
		}
	}
	entries, err := a.Runs.ReadJournal(ctx, in.TenantID, in.RunID)
	if err != nil {
		a.release(ctx, in)
		return Drive{}, journalError(in.RunID, err)
	}
	return Drive{Run: run, Snapshot: cloneSnapshot(snap), Journal: cloneEach(entries, cloneEntry)}, nil
}

// readRun reads a started run's journal and stored snapshot, releasing
// the lease when either read fails.
func (a adapter) readRun(ctx context.Context, in OpenInput) (Drive, error) {
	entries, err := a.Runs.ReadJournal(ctx, in.TenantID, in.RunID)
	if err != nil {
		a.release(ctx, in)
		return Drive{}, journalError(in.RunID, err)
	}
	snap, err := a.Snapshots.Read(ctx, in.TenantID, in.RunID)
	if err != nil {
		a.release(ctx, in)
		return Drive{}, coded(err, "read run snapshot")
	}
	return Drive{Snapshot: cloneSnapshot(snap), Journal: cloneEach(entries, cloneEntry)}, nil
}

// release frees the lease Open took, after a failed read.
func (a adapter) release(ctx context.Context, in OpenInput) {
	if in.Lease != LeaseHeld {
		_ = a.Runs.ReleaseLease(context.WithoutCancel(ctx), in.TenantID, in.RunID, in.Owner)
	}
}

// ReadConversation is GetConversation and, with limit at least 1,
// ReadMessages of its newest limit messages, kept only when they end at
// the conversation's last message as read (nil otherwise): Open's read of
// the conversation from the basic bindings, for Adapt and for a driver
// that has no read of its own for a case. A missing conversation is
// has false and no error.
func ReadConversation(ctx context.Context, cb bindings.ConversationBinding, tenantID, convID string, limit int) (bindings.Conversation, bool, []bindings.ConversationMessage, error) {
	c, err := cb.GetConversation(ctx, tenantID, convID)
	if agents.CodeOf(err) == agents.CodeConversationNotFound {
		return bindings.Conversation{}, false, nil, nil
	}
	if err != nil {
		return bindings.Conversation{}, false, nil, coded(err, "get conversation")
	}
	if limit < 1 {
		return c, true, nil, nil
	}
	hist, err := cb.ReadMessages(ctx, bindings.ReadMessagesInput{TenantID: tenantID, ConversationID: convID, Limit: limit})
	if err != nil {
		return bindings.Conversation{}, false, nil, coded(err, "read messages")
	}
	last := int64(0)
	if len(hist) > 0 {
		last = hist[len(hist)-1].Seq
	}
	if last != int64(c.MessageCount) {
		return c, true, nil, nil // a message came between the reads
	}
	return c, true, cloneEach(hist, cloneMessage), nil
}

// Commit implements Driver.
func (a adapter) Commit(ctx context.Context, in CommitInput) (Committed, error) {
	if err := CheckCommit(in); err != nil {
		return Committed{}, err
	}
	if in.Pending != nil {
		return Committed{}, invalid("journal.Adapt never defers an open or a lease: a Pending is another driver's")
	}
	if err := CheckEntries(in.Entries); err != nil {
		return Committed{}, err
	}
	if err := ctx.Err(); err != nil {
		return Committed{}, err
	}
	entries := in.Entries
	var res Committed
	if m := in.Message; m != nil {
		if m.CheckCount {
			c, err := a.Conversations.GetConversation(ctx, in.TenantID, m.Message.ConversationID)
			if err != nil {
				return Committed{}, coded(err, "get conversation")
			}
			if c.MessageCount != m.Count {
				return Committed{}, bindings.ErrConversationChanged
			}
		}
		head, headAppended, err := a.appendEach(ctx, in, entries[:m.Index])
		if err != nil {
			return Committed{}, err
		}
		msg, err := a.Conversations.AppendMessage(ctx, m.Message)
		if err != nil {
			return Committed{Entries: head, Appended: headAppended}, coded(err, "append message")
		}
		res.Message = cloneMessage(msg)
		res.Entries, res.Appended = head, headAppended
		entries = entries[m.Index:]
		if len(entries) > 0 {
			encode := m.Encode
			if encode == nil {
				encode = bindings.EncodeMessageStep
			}
			out, err := encode(res.Message)
			if err != nil {
				return Committed{}, &agents.PersistenceError{Op: "encode message step " + entries[0].Key, Err: err, Permanent: true}
			}
			entries = slices.Clone(entries)
			entries[0].Output = out
		}
	}
	rest, restAppended, err := a.appendEach(ctx, in, entries)
	if err != nil {
		return Committed{}, err
	}
	res.Entries, res.Appended = append(res.Entries, rest...), append(res.Appended, restAppended...)
	if in.Finish != "" {
		if in.Owner != "" && len(in.Entries) == 0 {
			// No AppendStep checked the owner: AcquireLease does (it renews
			// the owner's lease, and refuses another's).
			if _, err := a.Runs.AcquireLease(ctx, bindings.LeaseInput{TenantID: in.TenantID, RunID: in.RunID, Owner: in.Owner}); err != nil {
				return Committed{}, journalError(in.RunID, err)
			}
		}
		if err := a.Runs.SetRunStatus(ctx, in.TenantID, in.RunID, in.Finish); err != nil {
			return Committed{}, journalError(in.RunID, err)
		}
		if in.Owner != "" {
			if err := a.Runs.ReleaseLease(ctx, in.TenantID, in.RunID, in.Owner); err != nil {
				return Committed{}, journalError(in.RunID, err)
			}
		}
	}
	if m := in.Message; m != nil && m.HistoryLimit > 0 && !m.CheckCount {
		hist, err := a.Conversations.ReadMessages(ctx, bindings.ReadMessagesInput{
			TenantID: in.TenantID, ConversationID: m.Message.ConversationID, BeforeSeq: res.Message.Seq, Limit: m.HistoryLimit,
		})
		if err != nil {
			return Committed{}, coded(err, "read messages")
		}
		res.History = cloneEach(hist, cloneMessage)
	}
	if res.Entries == nil {
		res.Entries, res.Appended = []bindings.JournalEntry{}, []bool{}
	}
	return res, nil
}

// appendEach appends entries with AppendStep, one at a time, in order.
func (a adapter) appendEach(ctx context.Context, in CommitInput, entries []bindings.JournalEntry) ([]bindings.JournalEntry, []bool, error) {
	stored := make([]bindings.JournalEntry, len(entries))
	appended := make([]bool, len(entries))
	for i, e := range entries {
		got, ok, err := a.Runs.AppendStep(ctx, bindings.AppendStepInput{TenantID: in.TenantID, RunID: in.RunID, Owner: in.Owner, Entry: e})
		if err != nil {
			return nil, nil, coded(err, fmt.Sprintf("append step %s", e.Key))
		}
		stored[i], appended[i] = cloneEntry(got), ok
	}
	return stored, appended, nil
}

func cloneEntry(e bindings.JournalEntry) bindings.JournalEntry {
	e.Output = slices.Clone(e.Output)
	if e.Error != nil {
		se := *e.Error
		e.Error = &se
	}
	return e
}

// cloneEach is xs with each value cloned by clone, in a slice of its own.
func cloneEach[T any](xs []T, clone func(T) T) []T {
	out := make([]T, len(xs))
	for i, x := range xs {
		out[i] = clone(x)
	}
	return out
}

func cloneSnapshot(s bindings.RunSnapshotRecord) bindings.RunSnapshotRecord {
	s.Input = slices.Clone(s.Input)
	return s
}

func cloneMessage(m bindings.ConversationMessage) bindings.ConversationMessage {
	m.Metadata = slices.Clone(m.Metadata)
	if m.ToolCalls != nil {
		m.ToolCalls = slices.Clone(m.ToolCalls)
		for i := range m.ToolCalls {
			m.ToolCalls[i].Arguments = slices.Clone(m.ToolCalls[i].Arguments)
		}
	}
	return m
}
