package turn

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
	"github.com/kindgi/agents/turn/internal/drive"
	"github.com/kindgi/agents/turn/internal/runlog"
	"github.com/kindgi/agents/turn/internal/toolcall"
)

// run is one drive of a journaled turn: the bindings, the run's identity,
// its journal, and the turn state folded from the journal's entries as the
// flow replays them.
type run struct {
	mem      *runMem // the pooled memory r lives in (nil: not pooled)
	b        *Bindings
	in       Input // in.Agent is the run's agent
	tenantID string
	id       string
	owner    string
	resumed  bool
	// held marks a Worker's claimed run: a drive that fails and leaves
	// the run unfinished keeps its lease, for the Worker to hold it for
	// the retry (or fail it) without another worker claiming it between.
	held   bool
	status bindings.RunStatus // the run's status when this drive took it

	// Journal is the drive's journal (turn/internal/drive): its
	// driver, index, slabs, arena, buffer, deferred message and lease.
	drive.Journal
	logger  *runlog.Log // Bindings.Logger with the run's identity; nil: no logging
	wallCtx context.Context
	// parked holds the parked approval records loadParked decoded,
	// each handed once to the approval step that reads it (parkedRecord).
	parked drive.Parked[parkRecord]
	// lazyMessages is the replayed build-initial-messages entry whose
	// messages are not decoded yet (see loadMessages); nil once they are.
	lazyMessages *bindings.JournalEntry
	// lazyPrompt is the replayed render-prompt entry, likewise.
	lazyPrompt *bindings.JournalEntry
	// wantHistory says the user message is being appended (see
	// appendStepsAndMessage).
	wantHistory bool

	pending       bool // waiting on approvals asked by an earlier drive
	parkedNow     int  // approvals this drive asked for
	driveStart    time.Time
	elapsedBefore int64 // ms of running time of earlier drives

	// Folded turn state.
	s             setupState
	provider      bindings.Provider
	tools         bindings.TenantTools
	toolDefs      []bindings.ToolDefinition
	prompt        string
	userMsg       bindings.ConversationMessage
	retrieved     []RetrievedFact
	messages      []bindings.ChatMessage
	appended      []bindings.ConversationMessage
	usage         Usage
	traceCalls    []bindings.TraceToolCall
	usedTools     []string // the tools that ran in this run (few: a list)
	final         string
	output        json.RawMessage // the validated answer (validateOutput)
	outputRetried bool            // an invalid answer went back to the model
	outcomes      []guardrailOutcome
	provenance    *bindings.ProvenanceRecord
	quotas        []bindings.Quota // the drive's quotas (loadQuotas)
	subRuns       []SubRun         // the sub-agent calls' child runs (runSubAgent)
	handoffs      *handoffState    // the turn's handoffs (handoff.go); nil: none
}

// newRun prepares a drive over a run's journal, written through jd
// (native: the store's own Driver).
func newRun(b *Bindings, jd journal.Driver, native bool, in Input, runID, owner string, status bindings.RunStatus, entries []bindings.JournalEntry) *run {
	r := &run{}
	initRun(r, b, jd, native, in, runID, owner, status, entries)
	return r
}

// initRun sets up r, a zero run (see newRun) or a pooled one (r.mem set),
// which reset clears first; a pooled run starts its index and buffer in the
// pooled slabs.
func initRun(r *run, b *Bindings, jd journal.Driver, native bool, in Input, runID, owner string, status bindings.RunStatus, entries []bindings.JournalEntry) {
	if r.mem != nil {
		r.reset()
		r.setInput(&in)
	} else {
		r.in = in
	}
	r.b, r.tenantID, r.id, r.owner, r.status, r.resumed = b, in.TenantID, runID, owner, status, len(entries) > 0
	var mem *drive.Mem
	if r.mem != nil {
		mem = &r.mem.Mem
	}
	r.Init(&drive.Config{
		TenantID: in.TenantID, RunID: runID, Owner: owner, Now: b.Now, LeaseTTL: leaseTTL(b),
		Runs: b.Runs, Driver: jd, Native: native, Flow: r, Steps: r,
		MaxAttempts: r.maxAttempts(), Events: b.OnEvent != nil,
	}, mem, entries)
	r.loadParked(entries)
}

// now reads the clock seam (drive.Journal.Now: Bindings.Now, in UTC).
func (r *run) now() time.Time { return r.Now() }

// elapsedMs is the run's running time: earlier drives plus this one.
func (r *run) elapsedMs() int64 {
	return r.elapsedBefore + r.now().Sub(r.driveStart).Milliseconds()
}

// live reports an abort before a step starts (drive.Journal.Live).
func (r *run) live(ctx context.Context) error { return r.Live(ctx) }

// drive runs the flow from wherever the journal says the run is. A
// finished run returns its recorded outcome without calling anything or
// emitting events.
func (r *run) drive(parent context.Context) (Result, error) {
	if r.logger = runlog.New(parent, r.b.Logger, r.b.LogContent, r.id, r.tenantID, r.in.Agent.ID, r.in.Agent.Version); r.logger != nil {
		r.LogSteps()
	}
	if e := r.Result(NodeComposeResult); e != nil {
		r.logger.Log(parent, runlog.RunFinished, slog.String("status", string(e.Status)))
		// Finished: make the run's status say so, then return the outcome.
		held, err := r.Finished(parent, e, r.status)
		if err != nil {
			return Result{}, err
		}
		if held {
			defer r.ReleaseLease(parent)
		}
		if e.Status == bindings.StepFailed {
			return drive.DecodeResult[Result](e)
		}
		// Rebuild the result by folding the journal: every step returns
		// its stored output and nothing runs.
		r.Replaying = true
		return r.flow(parent)
	}
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	r.KeepLease(ctx, cancel)
	defer r.StopLease() // also when a binding panics: never renew for a dead drive
	r.driveStart = r.now()
	if r.logger != nil {
		msg := runlog.RunStarted
		if r.resumed {
			msg = runlog.RunResumed
		}
		r.logger.Log(parent, msg, slog.String("conversation_id", r.in.ConversationID), slog.Int("journal_entries", r.Keys()))
	}
	emit(r, parent, TurnStartedEvent{
		RunID: r.id, TenantID: r.tenantID, ConversationID: r.in.ConversationID,
		AgentID: r.in.Agent.ID, AgentVersion: r.in.Agent.Version, Resumed: r.resumed,
	})
	res, err := r.flow(ctx)
	return r.finish(parent, res, err)
}

// finish records how the drive ended: the run's status, and for a failure
// that is the turn's outcome (a journaled step failure, an abort), a failed
// compose-result entry, so any later drive returns the same error. Storage
// and lease failures leave the run as it is, to be resumed.
func (r *run) finish(parent context.Context, res Result, err error) (Result, error) {
	bg := drive.Detached(parent)
	r.StopLease()
	if reopen := (*drive.RunOpenedError)(nil); errors.As(err, &reopen) {
		// Another driver created the run: nothing of this drive is
		// stored, and Invoke opens the run as it finds it.
		return Result{}, err
	}
	if err == nil {
		status := bindings.RunCompleted
		if res.Status == StatusSuspended {
			status = bindings.RunSuspended
		}
		if final, serr := r.Complete(bg, status); final {
			return r.finish(parent, Result{}, serr)
		} else if serr != nil {
			r.logEnd(parent, Result{}, serr, true)
			return Result{}, serr
		}
		r.logEnd(parent, res, nil, false)
		if r.b.OnEvent != nil {
			r.emitEnd(parent, res)
		}
		return res, nil
	}
	err, terminal := r.Outcome(parent, err, errWorkerStopped, r.wallCtx, errWallTimeout)
	switch {
	case terminal:
		r.EndFailed(bg, NodeComposeResult, err)
	case isQuotaWait(err):
		err = r.waitForQuota(bg, err.(*quotaWait))
	case r.pending:
		r.EndOrRelease(bg, bindings.RunSuspended, nil)
	default:
		r.Leave(bg, err, r.held)
	}
	r.logEnd(parent, Result{}, err, !terminal)
	emit(r, parent, TurnFailedEvent{RunID: r.id, Code: agents.CodeOf(err), Message: err.Error()})
	return Result{}, err
}

// logEnd logs how the drive ended (runlog): parked, completed (with the
// usage, never the response), or failed (and whether it is resumable).
func (r *run) logEnd(ctx context.Context, res Result, err error, resumable bool) {
	switch u := res.Usage; {
	case r.logger == nil:
	case err != nil:
		r.logger.Failed(ctx, err, resumable)
	case res.Status == StatusSuspended:
		r.logger.Parked(ctx, res.Approvals)
	default:
		r.logger.Completed(ctx, runlog.Usage{Turn: res.TurnNumber, ModelCalls: u.ModelCalls, ToolCalls: u.ToolCalls,
			InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CostUsd: u.CostUsd})
	}
}

// flow runs the nodes of agent.turn in order; each side effect is a step.
func (r *run) flow(ctx context.Context) (Result, error) {
	if err := r.loadQuotas(ctx); err != nil {
		return Result{}, err
	}
	ranNow := r.Result(NodeSetup) == nil
	s, err := decide(ctx, r, NodeSetup, NodeSetup, r.setupTakingTurn)
	if err != nil {
		return Result{}, err
	}
	if e := r.Result(NodeSetup); ranNow && e != nil {
		// Work from the journaled form when setup ran in this drive too, so a tool's
		// config (any JSON) reaches it with the same Go types on every
		// drive: float64 numbers, map[string]any objects.
		// s is setup's, built in this drive and held by nothing else.
		if s, err = normalizeSetupOwn(s, e.Output); err != nil {
			return Result{}, err
		}
	}
	r.s = s
	if err := r.bind(); err != nil {
		return Result{}, err
	}
	ctx, cancel, err := r.WallClock(ctx, s.Budget.MaxWallMs, r.elapsedBefore, errWallTimeout)
	defer cancel()
	if err != nil {
		return Result{}, err
	}
	r.wallCtx = ctx

	if s.SessionGate.Required && !r.in.DryRun { // a dry run asks nobody
		if res, waiting, err := r.sessionGate(ctx); err != nil || waiting {
			return res, err
		}
	}
	if err := r.renderPrompt(ctx); err != nil {
		return Result{}, err
	}
	if err := r.persistUserMessage(ctx); err != nil {
		return Result{}, err
	}
	if err := r.runRetrievals(ctx); err != nil {
		return Result{}, err
	}
	if err := r.buildInitialMessages(ctx); err != nil {
		return Result{}, err
	}
	if res, suspended, err := r.loop(ctx); err != nil || suspended {
		return res, err
	}
	if err := r.evaluateGuardrails(ctx); err != nil {
		return Result{}, err
	}
	msgID, err := r.persistFinalMessage(ctx)
	if err != nil {
		return Result{}, err
	}
	if err := r.persistProvenance(ctx); err != nil {
		return Result{}, err
	}
	rec, err := decide(ctx, r, NodeComposeResult, NodeComposeResult, func(context.Context, string) (composeRecord, error) {
		return composeRecord{Status: StatusCompleted, MessageID: msgID}, nil
	})
	if err != nil {
		return Result{}, err
	}
	return r.compose(rec.Status, rec.MessageID, nil), nil
}

// composeRecord is what compose-result journals: the result itself is
// folded from the other steps' outputs, on every drive alike.
type composeRecord struct {
	Status    Status `json:"status"`
	MessageID string `json:"messageId,omitempty"`
}

// bind finds the run's provider and the tenant's tools for this drive.
func (r *run) bind() error {
	pr, ok := r.b.Providers.Provider(r.s.Route.Provider)
	if (!ok || pr == nil) && !r.Replaying {
		return &agents.CapabilityRoutingError{
			Reason:   "the run's provider is no longer registered",
			Refusals: []agents.RoutingRefusal{{Provider: r.s.Route.Provider, Model: r.s.Route.Model, Reason: "provider not registered"}},
		}
	}
	r.provider = pr
	r.tools = r.b.Tools.ForTenant(r.tenantID)
	var pool *[]bindings.ToolDefinition
	if m := r.mem; m != nil && &m.run == r {
		pool = &m.toolDefs
	}
	defs := toolcall.Defs(pool, r.s.Tools, r.s.agentToolCount())
	r.s.agentToolDefs(defs[len(r.s.Tools):])
	r.toolDefs = defs
	return nil
}

// compose builds the turn's result from the folded state.
func (r *run) compose(status Status, msgID string, approvals []bindings.ApprovalRequest) Result {
	res := Result{
		Status:         status,
		RunID:          r.id,
		ConversationID: r.in.ConversationID,
		TurnNumber:     r.s.TurnNumber,
		Appended:       nonNil(r.appended),
		Retrieved:      nonNil(r.retrieved),
		Violations:     []Violation{},
		Usage:          r.usage,
		Provider:       r.s.Route,
		Provenance:     r.provenance,
		DryRun:         r.in.DryRun,
		Approvals:      nonNil(approvals),
		SubRuns:        r.subRuns,
		AgentID:        r.in.Agent.ID, // the target of the last handoff, if any
		AgentVersion:   r.in.Agent.Version,
	}
	if status == StatusCompleted {
		res.Response = Response{MessageID: msgID, Content: r.final, Output: r.output}
		res.Violations = CategorizeOutcomes(r.outcomes).Violations
	}
	return res
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// msDuration is drive.MsDuration: milliseconds as a Duration, saturated.
func msDuration(ms int64) time.Duration { return drive.MsDuration(ms) }

// errWallTimeout is the cancellation cause of a drive past maxWallMs.
var errWallTimeout = errors.New("maxWallMs elapsed")
