// Package journaltest injects crashes into storage bindings: a Crasher
// lets a number of writes through and then behaves like a dead process —
// the next write fails (or panics) and every later call fails — so tests
// can abort a turn at every journal step and check what a resumed run
// does.
package journaltest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
)

// ErrCrashed is the cause of every error a crashed binding returns.
var ErrCrashed = errors.New("injected crash: the process is dead")

// Crash is the value a Crasher panics with in panic mode.
type Crash struct {
	// Op names the write that crashed ("AppendStep setup completed").
	Op string
}

// String names the crashed write.
func (c Crash) String() string { return "injected crash at " + c.Op }

// Survive runs a drive, turning an injected crash (a Crash panic) into an
// error that says "crashed"; any other panic goes on.
func Survive[R any](drive func() (R, error)) (res R, err error) {
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(Crash); !ok {
				panic(p)
			}
			err = fmt.Errorf("crashed: %v", p)
		}
	}()
	return drive()
}

// Crasher counts writes across the bindings it wraps. Writes are the calls
// that change stored state: snapshot writes, run starts, journal appends,
// run status changes, lease acquisition and release, message appends,
// approval requests and decisions, and provenance emits.
type Crasher struct {
	mu      sync.Mutex
	allowed int
	panics  bool
	writes  int
	crashed bool
	failed  string
	ops     []string
}

// New returns a Crasher that lets allowed writes through; the next one
// fails with a *agents.PersistenceError wrapping ErrCrashed, or, with
// panics set, panics with a Crash. A negative allowed never crashes (to
// count the writes of a run).
func New(allowed int, panics bool) *Crasher {
	return &Crasher{allowed: allowed, panics: panics}
}

// Writes returns the writes let through.
func (c *Crasher) Writes() int { return locked(c, func() int { return c.writes }) }

// Crashed reports whether the crash happened.
func (c *Crasher) Crashed() bool { return locked(c, func() bool { return c.crashed }) }

// FailedOp names the write that crashed ("" before the crash).
func (c *Crasher) FailedOp() string { return locked(c, func() string { return c.failed }) }

// Ops returns the writes let through, in order.
func (c *Crasher) Ops() []string {
	return locked(c, func() []string { return append([]string(nil), c.ops...) })
}

// locked is f's reading of c, under c's lock.
func locked[T any](c *Crasher, f func() T) T {
	c.mu.Lock()
	defer c.mu.Unlock()
	return f()
}

// write admits or crashes one write.
func (c *Crasher) write(op string) error {
	c.mu.Lock()
	if c.crashed {
		c.mu.Unlock()
		return &agents.PersistenceError{Op: op, Err: ErrCrashed}
	}
	if c.allowed >= 0 && c.writes >= c.allowed {
		c.crashed, c.failed = true, op
		c.mu.Unlock()
		if c.panics {
			panic(Crash{Op: op})
		}
		return &agents.PersistenceError{Op: op, Err: ErrCrashed}
	}
	c.writes++
	c.ops = append(c.ops, op)
	c.mu.Unlock()
	return nil
}

// Kill crashes the process now, between two writes (say while a model or
// tool call is in flight): every later call fails, as after the crash of a
// write.
func (c *Crasher) Kill() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.crashed {
		c.crashed, c.failed = true, "kill"
	}
}

// read fails once the process is dead.
func (c *Crasher) read(op string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.crashed {
		return &agents.PersistenceError{Op: op, Err: ErrCrashed}
	}
	return nil
}

// then is call's result, unless err — the Crasher's verdict on the call,
// taken before it — fails the call first.
func then[R any](err error, call func() (R, error)) (R, error) {
	if err != nil {
		var zero R
		return zero, err
	}
	return call()
}

// thenErr is then for a call that returns only an error.
func thenErr(err error, call func() error) error {
	if err != nil {
		return err
	}
	return call()
}

// Runs wraps a RunBinding: each of its writes is one write of the
// Crasher, and once crashed every call fails.
func (c *Crasher) Runs(b bindings.RunBinding) bindings.RunBinding { return runs{c, b} }

// entryNames lists entries as "[key status, key status]".
func entryNames(es []bindings.JournalEntry) string {
	var sb strings.Builder
	sb.WriteByte('[')
	for i, e := range es {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(e.Key + " " + string(e.Status))
	}
	sb.WriteByte(']')
	return sb.String()
}

// Snapshots wraps a RunSnapshotBinding.
func (c *Crasher) Snapshots(b bindings.RunSnapshotBinding) bindings.RunSnapshotBinding {
	return snapshots{c, b}
}

// Conversations wraps a ConversationBinding.
func (c *Crasher) Conversations(b bindings.ConversationBinding) bindings.ConversationBinding {
	return conversations{c, b}
}

// Hitl wraps a HitlBinding.
func (c *Crasher) Hitl(b bindings.HitlBinding) bindings.HitlBinding { return hitl{c, b} }

// Emitter wraps a ProvenanceEmitter.
func (c *Crasher) Emitter(b bindings.ProvenanceEmitter) bindings.ProvenanceEmitter {
	return emitter{c, b}
}

type runs struct {
	c *Crasher
	b bindings.RunBinding
}

// StartRun counts the call, then delegates (once crashed, it fails).
func (r runs) StartRun(ctx context.Context, in bindings.StartRunInput) (bindings.Run, error) {
	return then(r.c.write("StartRun"), func() (bindings.Run, error) { return r.b.StartRun(ctx, in) })
}

// GetRun counts the call, then delegates (once crashed, it fails).
func (r runs) GetRun(ctx context.Context, tenantID, runID string) (bindings.Run, error) {
	return then(r.c.read("GetRun"), func() (bindings.Run, error) { return r.b.GetRun(ctx, tenantID, runID) })
}

// AppendStep counts the call, then delegates (once crashed, it fails).
func (r runs) AppendStep(ctx context.Context, in bindings.AppendStepInput) (bindings.JournalEntry, bool, error) {
	if err := r.c.write(fmt.Sprintf("AppendStep %s %s", in.Entry.Key, in.Entry.Status)); err != nil {
		return bindings.JournalEntry{}, false, err
	}
	return r.b.AppendStep(ctx, in)
}

// ReadJournal counts the call, then delegates (once crashed, it fails).
func (r runs) ReadJournal(ctx context.Context, tenantID, runID string) ([]bindings.JournalEntry, error) {
	return then(r.c.read("ReadJournal"), func() ([]bindings.JournalEntry, error) { return r.b.ReadJournal(ctx, tenantID, runID) })
}

// SetRunStatus counts the call, then delegates (once crashed, it fails).
func (r runs) SetRunStatus(ctx context.Context, tenantID, runID string, status bindings.RunStatus) error {
	return thenErr(r.c.write("SetRunStatus "+string(status)), func() error { return r.b.SetRunStatus(ctx, tenantID, runID, status) })
}

// AcquireLease counts the call, then delegates (once crashed, it fails).
func (r runs) AcquireLease(ctx context.Context, in bindings.LeaseInput) (bindings.Run, error) {
	return then(r.c.write("AcquireLease"), func() (bindings.Run, error) { return r.b.AcquireLease(ctx, in) })
}

// ReleaseLease counts the call, then delegates (once crashed, it fails).
func (r runs) ReleaseLease(ctx context.Context, tenantID, runID, owner string) error {
	return thenErr(r.c.write("ReleaseLease"), func() error { return r.b.ReleaseLease(ctx, tenantID, runID, owner) })
}

type snapshots struct {
	c *Crasher
	b bindings.RunSnapshotBinding
}

// Write counts the call, then delegates (once crashed, it fails).
func (s snapshots) Write(ctx context.Context, in bindings.RunSnapshotWriteInput) error {
	return thenErr(s.c.write("WriteSnapshot"), func() error { return s.b.Write(ctx, in) })
}

// Read counts the call, then delegates (once crashed, it fails).
func (s snapshots) Read(ctx context.Context, tenantID, runID string) (bindings.RunSnapshotRecord, error) {
	return then(s.c.read("ReadSnapshot"), func() (bindings.RunSnapshotRecord, error) { return s.b.Read(ctx, tenantID, runID) })
}

type conversations struct {
	c *Crasher
	bindings.ConversationBinding
}

// GetConversation counts the call, then delegates (once crashed, it fails).
func (cv conversations) GetConversation(ctx context.Context, tenantID, id string) (bindings.Conversation, error) {
	return then(cv.c.read("GetConversation"), func() (bindings.Conversation, error) {
		return cv.ConversationBinding.GetConversation(ctx, tenantID, id)
	})
}

// AppendMessage counts the call, then delegates (once crashed, it fails).
func (cv conversations) AppendMessage(ctx context.Context, in bindings.AppendMessageInput) (bindings.ConversationMessage, error) {
	return then(cv.c.write("AppendMessage "+in.ID), func() (bindings.ConversationMessage, error) { return cv.ConversationBinding.AppendMessage(ctx, in) })
}

// ReadMessages counts the call, then delegates (once crashed, it fails).
func (cv conversations) ReadMessages(ctx context.Context, in bindings.ReadMessagesInput) ([]bindings.ConversationMessage, error) {
	return then(cv.c.read("ReadMessages"), func() ([]bindings.ConversationMessage, error) { return cv.ConversationBinding.ReadMessages(ctx, in) })
}

type hitl struct {
	c *Crasher
	b bindings.HitlBinding
}

// RequestApproval counts the call, then delegates (once crashed, it fails).
func (h hitl) RequestApproval(ctx context.Context, req bindings.ApprovalRequest) (bindings.Approval, error) {
	return then(h.c.write("RequestApproval "+req.ID), func() (bindings.Approval, error) { return h.b.RequestApproval(ctx, req) })
}

// GetApproval counts the call, then delegates (once crashed, it fails).
func (h hitl) GetApproval(ctx context.Context, tenantID, id string) (bindings.Approval, error) {
	return then(h.c.read("GetApproval"), func() (bindings.Approval, error) { return h.b.GetApproval(ctx, tenantID, id) })
}

// ResolveApproval counts the call, then delegates (once crashed, it fails).
func (h hitl) ResolveApproval(ctx context.Context, tenantID, id string, d bindings.ApprovalDecision) (bindings.Approval, error) {
	return then(h.c.write("ResolveApproval "+id), func() (bindings.Approval, error) { return h.b.ResolveApproval(ctx, tenantID, id, d) })
}

type emitter struct {
	c *Crasher
	b bindings.ProvenanceEmitter
}

// Emit counts the call, then delegates (once crashed, it fails).
func (e emitter) Emit(ctx context.Context, rec bindings.ProvenanceRecord) error {
	return thenErr(e.c.write("Emit "+rec.RunID), func() error { return e.b.Emit(ctx, rec) })
}

// Driver wraps a journal.Driver: each Commit is one write (named
// "Commit " and its entries, "+message" when it appends one), crashed
// before it reaches d, and each Open a read.
func (c *Crasher) Driver(d journal.Driver) journal.Driver { return crashDriver{c, d} }

type crashDriver struct {
	c *Crasher
	d journal.Driver
}

func (cd crashDriver) Open(ctx context.Context, in journal.OpenInput) (journal.Drive, error) {
	return then(cd.c.read("Open "+in.RunID), func() (journal.Drive, error) { return cd.d.Open(ctx, in) })
}

func (cd crashDriver) Commit(ctx context.Context, in journal.CommitInput) (journal.Committed, error) {
	op := "Commit " + entryNames(in.Entries)
	if in.Message != nil {
		op += "+message"
	}
	if err := cd.c.write(op); err != nil {
		return journal.Committed{}, err
	}
	return cd.d.Commit(ctx, in)
}
