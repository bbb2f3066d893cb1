package drive

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
	"github.com/kindgi/agents/internal/journalcodec"
)

// Journal is one drive's journal: its journal.Driver, the index of the
// run's entries by key and phase, the slabs and the output arena the
// drive's entries live in, the decide results not written yet, the
// deferred message step, the lease keeper and the drive's derived ids.
// A turn's run embeds it by value, so that a pooled run is one
// allocation; Init sets it up for a drive, Reset clears a pooled one.
type Journal struct {
	tenantID, runID, owner string
	clock                  func() time.Time // nil: time.Now
	leaseTTL               time.Duration
	runs                   bindings.RunBinding // lease renewals and release
	flow                   Flow
	steps                  Steps
	maxAttempts            int
	events                 bool // Steps.Started and Ended report events
	logging                bool // and Ended and Replayed log (LogSteps)
	// decoded is a replayed step's result decoded already, of step
	// decodedKey (Predecode), handed to its Step once (then nil).
	decoded    any
	decodedKey string
	encodeOpts *journalcodec.Options // the running step's (EncodeWith)

	// Replaying marks a finished run folded: nothing may be written.
	Replaying bool
	// Failed marks a failed outcome journaled: the run is over.
	Failed bool
	// Inflight is the key (and InflightNode the node) of the model or
	// tool step started in this drive whose result is not stored yet (""
	// when none).
	Inflight, InflightNode string
	// Reads is what Open read ahead (see reads.go), nil when nothing was:
	// kept out of line, so that a run on a store without them carries
	// (and zeroes, and the GC scans) one pointer.
	Reads *Reads

	mem     *Mem // the pooled memory of the drive (nil: not pooled)
	entries index
	// entrySlab holds the entries the index keeps (see record), after
	// fullSlabs (see At); loaded are the entries read for the drive
	// (Load).
	entrySlab []bindings.JournalEntry
	fullSlabs [][]bindings.JournalEntry
	loaded    []bindings.JournalEntry
	// outArena holds the outputs of the drive's steps (EncodeStep);
	// quoted is the rendered prompt as journaled there.
	outArena []byte
	quoted   quotedString
	// jd is the drive's journal; native says it is the store's own
	// Driver. pend is what Open left for the first Commit (see
	// commit.go), and unheld says so to the lease's renewals. buf holds
	// decide results not written yet (see BufferEntry), in entrySlab's
	// last slots (see bufTail).
	jd        journal.Driver
	native    bool
	pend      *journal.Pending
	unheld    atomic.Bool
	msgIn     journal.Message                                    // the message of writeDeferred's Commit
	deferred  deferredMessage                                    // a message step waiting for the next write (see DeferMessage)
	encodeMsg func(bindings.ConversationMessage) ([]byte, error) // j.encodeMessageInArena, made once per pooled drive
	buf       []bindings.JournalEntry
	carried   bool // buf holds an effect step's result (see Carry)
	lease     *leaseKeeper
	idText    []byte // the text of the drive's derived ids (see DerivedID)
}

// Flow is what the journal asks of the turn it writes for: the messages
// the turn holds, and whether an error is a step's own outcome.
type Flow interface {
	// Appended returns the i-th message the turn appended (see
	// DeferMessage), nil when it holds none.
	Appended(i int) *bindings.ConversationMessage
	// UserMessage returns the turn's user message, which bounds the
	// history it reads.
	UserMessage() *bindings.ConversationMessage
	// MessageRefused tells the turn that its i-th message (and any after
	// it) will never be stored.
	MessageRefused(i int)
	// Final reports whether err is a step's own outcome, to be journaled
	// as failed.
	Final(ctx context.Context, err error) bool
	// DecideAgain rewrites, in entries (buffered results not stored yet),
	// the outputs of the steps decided from the history before the user
	// message, which the store has just read again (see
	// writeUserMessageAgain).
	DecideAgain(ctx context.Context, entries []bindings.JournalEntry) error
}

// Config is what a drive's journal takes from its turn.
type Config struct {
	TenantID, RunID, Owner string
	Now                    func() time.Time // nil: time.Now
	LeaseTTL               time.Duration
	Runs                   bindings.RunBinding
	Driver                 journal.Driver
	Native                 bool // Driver is the store's own
	Flow                   Flow
	Steps                  Steps
	MaxAttempts            int  // the attempts of an effect without a result (Step)
	Events                 bool // Steps.Started and Ended report events
}

// Init sets j up for a drive over the run's entries (read for this drive:
// the index points into them), in the pooled memory mem (nil: none).
func (j *Journal) Init(c *Config, mem *Mem, entries []bindings.JournalEntry) {
	j.tenantID, j.runID, j.owner = c.TenantID, c.RunID, c.Owner
	j.clock, j.leaseTTL, j.runs, j.flow, j.steps = c.Now, c.LeaseTTL, c.Runs, c.Flow, c.Steps
	j.maxAttempts, j.events = c.MaxAttempts, c.Events
	j.jd, j.native = c.Driver, c.Native
	j.mem = mem
	j.load(entries)
	if j.encodeMsg == nil { // a pooled drive keeps its closure (j stays where it is)
		j.encodeMsg = j.encodeMessageInArena
	}
}

// Reset clears a pooled journal for Init: every field Init does not set is
// made zero. It writes field by field, not *j = Journal{}: while a GC mark
// runs every pointer word written costs a write barrier, and one struct
// copy pays the runtime's bulk barrier for each of them.
func (j *Journal) Reset() {
	j.fullSlabs, j.outArena, j.quoted = nil, nil, quotedString{}
	j.deferred = deferredMessage{}
	j.buf, j.carried, j.lease, j.idText = nil, false, nil, nil
	j.Reads, j.Inflight, j.InflightNode = nil, "", ""
	j.pend, j.msgIn = nil, journal.Message{}
	j.unheld.Store(false)
	j.Replaying, j.Failed = false, false
	j.logging, j.decoded, j.decodedKey, j.encodeOpts = false, nil, "", nil
}

// Now reads the drive's clock (Config.Now, in UTC).
func (j *Journal) Now() time.Time { return j.now() }

// now reads the clock.
func (j *Journal) now() time.Time {
	if j.clock != nil {
		return j.clock().UTC()
	}
	return time.Now().UTC()
}

// Key returns the key state of key, or nil when the journal has no entry
// of it.
func (j *Journal) Key(key string) *KeyState { return j.entries.get(key) }

// Result returns the result entry of key, or nil when it has none.
func (j *Journal) Result(key string) *bindings.JournalEntry {
	if st := j.entries.get(key); st != nil && st.Result != 0 {
		return j.At(st.Result)
	}
	return nil
}

// Keys is the number of keys the journal holds.
func (j *Journal) Keys() int { return j.entries.len() }

// Carried reports whether the buffer holds an effect step's result (see
// Carry).
func (j *Journal) Carried() bool { return j.carried }

// Deferred reports whether a message step waits for the next write (see
// DeferMessage).
func (j *Journal) Deferred() bool { return j.deferred.set }
