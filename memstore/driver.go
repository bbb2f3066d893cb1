package memstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/storeio"
	// driver, as memstore has a journal type of its own.
	driver "github.com/kindgi/agents/bindings/journal"
)

var _ driver.Driver = (*Store)(nil)

// Open implements driver.Driver natively, deferring what it may: with
// LeaseOnWrite an existing run is read under the run lock, with its
// journal, and its lease left to the first Commit (Pending.AsRead, its
// version the journal's length); a new run that neither exists nor has a
// snapshot is not stored at all until the first Commit creates it
// (Pending.Create). The conversation and its history are read under one
// conversation lock, so History is always read when asked for; approvals
// are never read ahead (a GetApproval in memory costs no round trip).
// Everything returned is a copy.
func (s *Store) Open(ctx context.Context, in driver.OpenInput) (driver.Drive, error) {
	if err := driver.CheckOpen(in); err != nil {
		return driver.Drive{}, err
	}
	if err := alive(ctx); err != nil {
		return driver.Drive{}, err
	}
	var d driver.Drive
	var err error
	switch {
	case in.Create != nil && in.Lease == driver.LeaseOnWrite && s.unstored(in.TenantID, in.RunID):
		if err := checkSnapshot(&in.Create.Snapshot); err != nil {
			return driver.Drive{}, err
		}
		d = driver.Drive{
			Snapshot: cloneSnapshot(in.Create.Snapshot), Journal: []bindings.JournalEntry{},
			Pending: &driver.Pending{TTL: in.TTL, Create: in.Create},
		}
	case in.Create != nil:
		d, err = s.openCreate(ctx, in)
	default:
		d, err = s.openExisting(in)
	}
	if err != nil {
		return driver.Drive{}, err
	}
	if in.ReadConversation && d.Snapshot.ConversationID != "" {
		d.Conversation, d.HasConversation, d.History = s.readConversation(in.TenantID, d.Snapshot.ConversationID, in.HistoryLimit)
	}
	// Approvals are not read ahead (HasApprovals false): ListApprovals
	// scans every approval of the store, while the caller's GetApproval of
	// each parked one is a lookup by key, in memory.
	return d, nil
}

// unstored reports whether neither the run nor its snapshot is stored.
func (s *Store) unstored(tenantID, runID string) bool {
	k := key{tenantID, runID}
	s.runMu.RLock()
	defer s.runMu.RUnlock()
	s.snapMu.RLock()
	defer s.snapMu.RUnlock()
	_, snap := s.snapshots[k]
	return s.runs[k] == nil && !snap
}

// openCreate is Open of a new run, leased now: openRun.
func (s *Store) openCreate(ctx context.Context, in driver.OpenInput) (driver.Drive, error) {
	snap := in.Create.Snapshot
	res, err := s.openRun(ctx, storeio.OpenRunInput{Snapshot: snap, Start: bindings.StartRunInput{
		TenantID: in.TenantID, RunID: in.RunID, FlowID: snap.FlowID, FlowVersion: snap.FlowVersion,
		Owner: in.Owner, LeaseTTL: in.TTL, Status: in.Create.Status,
		ParentRunID: in.Create.ParentRunID, ParentStepKey: in.Create.ParentStepKey,
	}})
	if err != nil {
		return driver.Drive{}, err
	}
	// A snapshot this call stored comes back with the caller's bytes.
	return driver.Drive{Run: res.Run, Snapshot: cloneSnapshot(res.Snapshot), Journal: res.Journal}, nil
}

// openExisting is Open of an existing run, under the run lock: the
// snapshot, the lease (now, held, or as read for the first write) and the
// journal, as of one moment.
func (s *Store) openExisting(in driver.OpenInput) (driver.Drive, error) {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	k := key{in.TenantID, in.RunID}
	s.snapMu.RLock()
	rec, ok := s.snapshots[k]
	s.snapMu.RUnlock()
	if !ok {
		return driver.Drive{}, &agents.RunSnapshotMissingError{RunID: in.RunID}
	}
	r, err := s.run(in.TenantID, in.RunID)
	if err != nil {
		return driver.Drive{}, err
	}
	now := s.now()
	d := driver.Drive{Snapshot: rec.record(k)}
	if in.Lease != driver.LeaseHeld && heldByOther(&r.run, in.Owner, now) {
		return driver.Drive{}, &agents.RunBusyError{RunID: in.RunID, Owner: r.run.LeaseOwner}
	}
	switch in.Lease {
	case driver.LeaseNow:
		lease(&r.run, in.Owner, in.TTL, now)
		d.Run = r.run
	case driver.LeaseOnWrite:
		d.Run = r.run
		d.Pending = &driver.Pending{TTL: in.TTL, AsRead: &driver.AsRead{Run: r.run, Version: int64(r.journal.len())}}
	}
	d.Journal = r.journal.entries()
	return d, nil
}

// readConversation reads a conversation and its newest limit messages
// under one lock; a missing one is not an error.
func (s *Store) readConversation(tenantID, convID string, limit int) (bindings.Conversation, bool, []bindings.ConversationMessage) {
	s.convMu.RLock()
	defer s.convMu.RUnlock()
	r, err := s.conv(tenantID, convID)
	if err != nil {
		return bindings.Conversation{}, false, nil
	}
	if limit < 1 {
		return cloneConversation(r.c), true, nil
	}
	hist := make([]bindings.ConversationMessage, 0, min(limit, r.msgs.n))
	for i := max(0, r.msgs.n-limit); i < r.msgs.n; i++ {
		hist = append(hist, r.msgs.msg(i, &r.c))
	}
	return cloneConversation(r.c), true, hist
}

// Commit implements driver.Driver natively, all or nothing under the run
// lock (and the snapshot lock, for a pending open): the lease or the
// pending open is checked, then the message appended (under the
// conversation lock, on the count condition), then the entries, the
// message step's among them, and the finish. Nobody reads the journal
// while the run lock is held, so the order of the message and the entries
// is never seen; a refused message stores the entries before it, and
// ErrConversationChanged stores nothing. With Trusted (and without
// Options.CheckTrusted) the checks the caller vouches for are skipped and
// the entries returned are in.Entries, updated in place, as the trusted
// journal's are.
func (s *Store) Commit(ctx context.Context, in driver.CommitInput) (driver.Committed, error) {
	if err := driver.CheckCommit(in); err != nil {
		return driver.Committed{}, err
	}
	trusted := in.Trusted && !s.checkTrusted
	entries := in.Entries
	m := in.Message
	if m != nil {
		// The message step's output is the store's to set: in a copy, or,
		// for a trusting caller, in its entry itself (what a Trusted
		// Commit returns may share the input's memory).
		if !trusted {
			entries = slices.Clone(entries)
		}
		if m.Index < len(entries) {
			entries[m.Index].Output = nil
		}
		if err := bindings.CheckAppendMessage(m.Message, trusted); err != nil {
			return driver.Committed{}, err
		}
	}
	if !trusted {
		if err := checkSteps(storeio.AppendStepsInput{TenantID: in.TenantID, RunID: in.RunID, Owner: in.Owner, Entries: entries}); err != nil {
			return driver.Committed{}, err
		}
	}
	p := in.Pending
	if p != nil && p.Create != nil && !trusted { // Open checked it; a trusting caller passes it on as is
		if err := firstErr(checkSnapshot(&p.Create.Snapshot), bindings.CheckParent(in.RunID, p.Create.ParentRunID, p.Create.ParentStepKey)); err != nil {
			return driver.Committed{}, err
		}
	}
	if err := alive(ctx); err != nil {
		return driver.Committed{}, err
	}
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if p != nil && p.Create != nil {
		s.snapMu.Lock()
		defer s.snapMu.Unlock()
	}
	now := s.now()
	r, err := s.commitRun(in, now)
	if err != nil {
		return driver.Committed{}, err
	}
	steps := storeio.AppendStepsInput{TenantID: in.TenantID, RunID: in.RunID, Owner: in.Owner, Entries: entries}
	if m == nil {
		s.takePending(r, in, now)
		out, appended := s.appendLocked(r, steps, in.Finish, trusted, now)
		return driver.Committed{Entries: out, Appended: appended}, nil
	}
	msg, err := s.appendMessageIf(m, trusted)
	if errors.Is(err, bindings.ErrConversationChanged) {
		return driver.Committed{}, err
	}
	s.takePending(r, in, now)
	head := steps
	head.Entries = entries[:m.Index:m.Index]
	before, beforeAppended := s.appendLocked(r, head, "", trusted, now)
	if err == nil && m.Index < len(entries) {
		entries[m.Index].Output, err = encodeStep(m, msg)
	}
	if err != nil {
		return driver.Committed{Entries: before, Appended: beforeAppended}, err
	}
	tail := steps
	tail.Entries = entries[m.Index:]
	after, afterAppended := s.appendLocked(r, tail, in.Finish, trusted, now)
	res := driver.Committed{Entries: entries, Appended: append(beforeAppended, afterAppended...), Message: msg}
	if !trusted {
		res.Entries = append(append(make([]bindings.JournalEntry, 0, len(entries)), before...), after...)
	} // else before and after are entries, updated in place (appendLocked)
	if m.HistoryLimit > 0 && !m.CheckCount {
		if res.History, err = s.ReadMessages(ctx, bindings.ReadMessagesInput{TenantID: in.TenantID, ConversationID: m.Message.ConversationID, BeforeSeq: msg.Seq, Limit: m.HistoryLimit}); err != nil {
			return driver.Committed{}, err
		}
	}
	return res, nil
}

// commitRun returns the run a Commit writes, under runMu: the stored one,
// its owner's lease checked (or the lease as read, for a pending lease),
// or, for a pending open, a new record not stored yet (the caller holds
// snapMu too).
func (s *Store) commitRun(in driver.CommitInput, now time.Time) (*runRec, error) {
	p := in.Pending
	if p != nil && p.Create != nil {
		k := key{in.TenantID, in.RunID}
		if _, snap := s.snapshots[k]; snap || s.runs[k] != nil {
			return nil, bindings.ErrRunExists
		}
		status, err := bindings.StartStatus(p.Create.Status)
		if err != nil {
			return nil, err
		}
		snap := p.Create.Snapshot
		return newRunRec(bindings.Run{
			TenantID: in.TenantID, ID: in.RunID, FlowID: snap.FlowID, FlowVersion: snap.FlowVersion,
			Status: status, CreatedAt: now, ParentRunID: p.Create.ParentRunID, ParentStepKey: p.Create.ParentStepKey,
		}), nil
	}
	r, err := s.run(in.TenantID, in.RunID)
	if err != nil {
		return nil, err
	}
	if p != nil {
		if !asRead(&r.run, p.AsRead, r.journal.len(), in.Owner, now) {
			return nil, &agents.RunBusyError{RunID: in.RunID, Owner: r.run.LeaseOwner}
		}
		return r, nil
	}
	if in.Owner != "" && !holds(&r.run, in.Owner, now) {
		return nil, runBusy(&r.run, now)
	}
	return r, nil
}

// asRead reports whether run is still as read and its lease free for
// owner: the condition of a pending lease.
func asRead(run *bindings.Run, read *driver.AsRead, version int, owner string, now time.Time) bool {
	was := &read.Run
	return run.Status == was.Status && run.LeaseOwner == was.LeaseOwner && run.LeaseExpiresAt.Equal(was.LeaseExpiresAt) &&
		int64(version) == read.Version && !heldByOther(run, owner, now)
}

// takePending takes what in.Pending defers, under runMu (and, for a
// pending open, snapMu): the run and its snapshot are stored, or the
// lease taken as read.
func (s *Store) takePending(r *runRec, in driver.CommitInput, now time.Time) {
	p := in.Pending
	if p == nil {
		return
	}
	lease(&r.run, in.Owner, p.TTL, now)
	if p.Create == nil {
		return
	}
	k := key{in.TenantID, in.RunID}
	snap := p.Create.Snapshot
	if snap.CreatedAt.IsZero() {
		snap.CreatedAt = now
	}
	s.snapshots[k] = newSnapRec(&snap)
	s.runs[k] = r
	s.changed(&r.run)
}

// appendMessageIf appends m's message under the conversation lock, on its
// count condition: bindings.ErrConversationChanged when the conversation
// no longer holds m.Count messages (or is gone).
func (s *Store) appendMessageIf(m *driver.Message, trusted bool) (bindings.ConversationMessage, error) {
	s.convMu.Lock()
	defer s.convMu.Unlock()
	c, err := s.conv(m.Message.TenantID, m.Message.ConversationID)
	if m.CheckCount && (err != nil || c.c.MessageCount != m.Count) {
		return bindings.ConversationMessage{}, bindings.ErrConversationChanged
	}
	if err != nil {
		return bindings.ConversationMessage{}, err
	}
	return s.addMessage(c, m.Message, trusted)
}

// encodeStep is the message step's Output: m.Encode (or
// bindings.EncodeMessageStep) of the stored message.
func encodeStep(m *driver.Message, msg bindings.ConversationMessage) ([]byte, error) {
	encode := m.Encode
	if encode == nil {
		encode = bindings.EncodeMessageStep
	}
	out, err := encode(msg)
	if err != nil {
		return nil, &agents.PersistenceError{Op: fmt.Sprintf("encode message step of %s", msg.ID), Err: err, Permanent: true}
	}
	return out, nil
}

// cloneSnapshot is a snapshot record with its own Input.
func cloneSnapshot(s bindings.RunSnapshotRecord) bindings.RunSnapshotRecord {
	s.Input = cloneJSON(s.Input)
	return s
}
