package turn

import (
	"sync"
	"time"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
	"github.com/kindgi/agents/turn/internal/drive"
)

// runMem is the memory of a drive that nothing keeps once the drive is
// over: the run itself and its journal's first slabs and arena
// (drive.Mem). Invoke and Resume take it from runPool and give it back
// when the drive returns (release), so that a turn does not allocate it
// afresh (6 KB a turn, a quarter of a memstore turn's allocations, and the
// GC work that comes with them).
//
// What the drive hands out never points into it: a Result holds slices of
// its own (appended messages, retrieved facts), the journal entries a
// store keeps are copies (their outputs live in the drive's output arena,
// which is in runMem only when the store copies them: see drive.Mem),
// and the lease renewal and every step have finished when the drive
// returns.
type runMem struct {
	run run
	b   Bindings
	drive.Mem
	// plans and toolDefs are the backing of a drive's call plans (plan)
	// and of its model requests' tool list (bind), written over by the
	// next: neither outlives the drive. Plans are read within dispatch,
	// which copies what it hands out (approval requests, tool messages);
	// a provider reads the tools only until Generate returns
	// (bindings.Provider).
	plans    [2]callPlan
	toolDefs []bindings.ToolDefinition
}

var runPool = sync.Pool{New: func() any { return new(runMem) }}

// newPooledRun is newRun with the run's memory from runPool; the caller
// releases it once the drive has returned and nothing uses the run.
func newPooledRun(b *Bindings, jd journal.Driver, native bool, in Input, runID, owner string, status bindings.RunStatus, entries []bindings.JournalEntry) *run {
	m := runPool.Get().(*runMem)
	r := &m.run
	r.mem = m
	m.b = *b // the caller's Bindings stay on its stack
	initRun(r, &m.b, jd, native, in, runID, owner, status, entries)
	return r
}

// release gives a pooled run's memory back (nothing else may use r after
// it); a run not from the pool is left to the GC.
func (r *run) release() {
	m := r.mem
	if m == nil || &m.run != r {
		return
	}
	// The run, its Bindings and the slabs are not cleared here: the next
	// newPooledRun overwrites the run and the Bindings (initRun) and
	// uses the slabs only up to the length it fills, and clearing them
	// costs a write barrier per pointer word whenever a GC mark is running
	// (≈10k instructions a turn on average). What they still point to — the
	// finished drive's values, already handed out or stored — stays
	// reachable until the pool drops the memory (sync.Pool keeps it for at
	// most two GC cycles) or a later drive overwrites it.
	m.Release()
	runPool.Put(m)
}

// reset clears a pooled run for initRun, which then sets its identity,
// Input, Bindings, journal and store capabilities: every other field is
// made zero, as in a new run (the journal's own by drive.Journal.Reset).
// It writes field by field, not *r = run{}: while a GC mark runs every
// pointer word written costs a write barrier, and one struct copy of the
// run (146 pointer words) pays the runtime's bulk barrier for each of
// them, nil or not, at ≈ 55 instructions a word before the marking. What
// initRun sets is left to it: the identity, the journal (Init), and the
// capabilities and the agent, written only when they change.
// TestResetClearsEveryField fails when a field of run is left out here.
func (r *run) reset() {
	r.Reset()
	r.logger = nil
	r.wallCtx, r.parked, r.lazyMessages, r.lazyPrompt = nil, drive.Parked[parkRecord]{}, nil, nil
	r.wantHistory, r.held = false, false
	r.pending, r.parkedNow, r.driveStart, r.elapsedBefore = false, 0, time.Time{}, 0
	r.s = setupState{}
	r.provider, r.tools, r.toolDefs, r.prompt = nil, nil, nil, ""
	r.userMsg = bindings.ConversationMessage{}
	r.retrieved, r.messages, r.appended, r.usage, r.traceCalls, r.usedTools = nil, nil, nil, Usage{}, nil, nil
	r.final, r.output, r.outputRetried, r.outcomes, r.provenance, r.quotas = "", nil, false, nil, nil, nil
	r.subRuns, r.handoffs = nil, nil
}

// setInput makes r.in a copy of *in.
func (r *run) setInput(in *Input) { r.in = *in }
