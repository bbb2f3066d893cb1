package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

// DefaultConcurrency is how many cases run at once when
// Options.Concurrency is zero or less.
const DefaultConcurrency = 4

// DefaultTenantID is the tenant a case without one runs for when
// Options.TenantID is empty.
const DefaultTenantID = "eval"

// maxResumes bounds how many times one case's turn is resumed after
// parking on approvals.
const maxResumes = 8

// Options configure Run.
type Options struct {
	// Agent is the version under evaluation (required).
	Agent agent.Agent
	// Bindings are the host's: Run takes its Providers (required) and
	// Tools, and the tenant's TenantPolicy, PolicyRegistry, Guardrails,
	// Checks, Secrets, Memory, Embeddings and Provenance keys, but never
	// its stores: every case runs on its own in-memory store.
	Bindings turn.Bindings
	// Graders grade every case's answer (and its baseline's), after the
	// case's own Expect.
	Graders []Grader
	// Tools is how tool calls are answered (see ToolMode; zero: replay
	// for cases from runs, live for the others).
	Tools ToolMode
	// Concurrency is how many cases run at once (zero or less:
	// DefaultConcurrency). With a scripted provider, whose answers follow
	// the order of its calls, cases run one at a time whatever it says,
	// so that every run gives the same report.
	Concurrency int
	// OnCase, when set, is told of each case as it finishes: how many are
	// done, of how many. Calls never overlap.
	OnCase func(done, total int, c CaseResult)
	// TenantID is the tenant of the cases that name none (empty:
	// DefaultTenantID).
	TenantID string
}

// CaseError is the coded error that ended a case's turn.
type CaseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// CaseResult is one case's outcome: the new answer beside the baseline's,
// every grade of each, and whether it passes and regressed.
type CaseResult struct {
	ID          string `json:"id"`
	FromRunID   string `json:"fromRunId,omitempty"`
	UserMessage string `json:"userMessage"`
	// Pass: the turn completed and every grade passed.
	Pass bool `json:"pass"`
	// Regressed: the baseline's answer passed every grade and the new one
	// does not pass.
	Regressed bool `json:"regressed"`
	// Reason says why a case fails: the error, or each failed grade.
	Reason    string          `json:"reason,omitempty"`
	Answer    string          `json:"answer"`
	Output    json.RawMessage `json:"output,omitempty"`
	ToolCalls []RecordedCall  `json:"toolCalls"`
	Grades    []Grade         `json:"grades"`
	Error     *CaseError      `json:"error,omitempty"`
	Usage     turn.Usage      `json:"usage"`
	// Baseline is the recorded run's answer, graded the same way (nil for
	// a case without one); BaselinePass is whether every grade passed.
	Baseline       *Baseline `json:"baseline,omitempty"`
	BaselineGrades []Grade   `json:"baselineGrades,omitempty"`
	BaselinePass   bool      `json:"baselinePass,omitempty"`
}

// Outcomes of a case, as CaseResult.Outcome names them.
const (
	OutcomePass      = "pass"
	OutcomeFail      = "fail"
	OutcomeRegressed = "regressed"
)

// Outcome names the case's outcome: OutcomeRegressed, OutcomeFail or
// OutcomePass.
func (c CaseResult) Outcome() string {
	switch {
	case c.Regressed:
		return OutcomeRegressed
	case !c.Pass:
		return OutcomeFail
	}
	return OutcomePass
}

// Report is the outcome of Run: the cases in dataset order, how many pass
// and fail (Regressed of those failing passed on their baseline), and the
// usage of every turn together.
type Report struct {
	Agent     string       `json:"agent"`
	Cases     []CaseResult `json:"cases"`
	Passed    int          `json:"passed"`
	Failed    int          `json:"failed"`
	Regressed int          `json:"regressed"`
	Usage     turn.Usage   `json:"usage"`
}

// OK reports whether every case passed.
func (r Report) OK() bool { return r.Failed == 0 }

// Run evaluates every case of ds as a turn of opts.Agent and grades it
// (see the package doc). A case's failure — a turn error, an unrecorded
// tool call, a failed grade, a grader's error — is in its CaseResult; Run
// itself fails only on options it cannot run with (*agents.InvalidAgentError
// for a missing agent, *agents.InvalidBindingsError for missing providers,
// *agents.InvalidMessageError for an unknown tool mode) and when ctx ends
// (*agents.TurnAbortedError, external), before or between cases.
func Run(ctx context.Context, ds Dataset, opts Options) (Report, error) {
	if opts.Agent.ID == "" || opts.Agent.Version == "" {
		return Report{}, &agents.InvalidAgentError{Issues: []agents.Issue{{Path: "agent", Message: "eval.Run needs the agent version to evaluate (Options.Agent)"}}}
	}
	if opts.Bindings.Providers == nil {
		return Report{}, &agents.InvalidBindingsError{Reason: "eval.Run needs Bindings.Providers to call the model"}
	}
	switch opts.Tools {
	case "", ReplayTools, LiveTools:
	default:
		return Report{}, &agents.InvalidMessageError{Reason: "eval.Run: unknown tool mode " + strconv.Quote(string(opts.Tools)) + " (want replay or live)"}
	}
	n := opts.Concurrency
	if n <= 0 {
		n = DefaultConcurrency
	}
	if callOrdered(opts.Bindings.Providers) {
		n = 1
	}
	results := make([]CaseResult, len(ds.Cases))
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		done int
	)
	sem := make(chan struct{}, n)
	for i := range ds.Cases {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			res := runCase(ctx, i, ds.Cases[i], opts)
			results[i] = res
			if opts.OnCase != nil {
				mu.Lock()
				done++
				opts.OnCase(done, len(ds.Cases), res)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Report{}, &agents.TurnAbortedError{Reason: agents.AbortExternal, Err: err}
	}
	rep := Report{Agent: opts.Agent.ID + "@" + opts.Agent.Version, Cases: results}
	for _, c := range results {
		if c.Pass {
			rep.Passed++
		} else {
			rep.Failed++
		}
		if c.Regressed {
			rep.Regressed++
		}
		addUsage(&rep.Usage, c.Usage)
	}
	return rep, nil
}

// callOrdered reports whether a provider answers by the order of its calls
// (the scripted provider), so that cases must run one at a time to get the
// same answers on every run.
func callOrdered(reg bindings.ProviderRegistry) bool {
	for _, p := range reg.Providers() {
		if _, ok := p.(*scripted.Provider); ok {
			return true
		}
	}
	return false
}

func addUsage(to *turn.Usage, u turn.Usage) {
	to.InputTokens += u.InputTokens
	to.OutputTokens += u.OutputTokens
	to.CostUsd += u.CostUsd
	to.ModelCalls += u.ModelCalls
	to.ToolCalls += u.ToolCalls
}

// epoch is the time of every case's store and turn, so that nothing a
// report shows depends on when it ran.
var epoch = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

func fixedNow() time.Time { return epoch }

// counter returns an id source prefix-1, prefix-2, …, safe for concurrent
// use.
func counter(prefix string) func() string {
	var mu sync.Mutex
	n := 0
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return prefix + strconv.Itoa(n)
	}
}

// turnOutcome is what one case's turn gave.
type turnOutcome struct {
	answer string
	output json.RawMessage
	calls  []RecordedCall
	usage  turn.Usage
	err    error
	missed []RecordedCall
}

// runCase plays and grades case c (the i-th of the dataset).
func runCase(ctx context.Context, i int, c Case, opts Options) CaseResult {
	tenant := c.TenantID
	if tenant == "" {
		tenant = opts.TenantID
	}
	if tenant == "" {
		tenant = DefaultTenantID
	}
	res := CaseResult{ID: c.ID, FromRunID: c.FromRunID, UserMessage: c.UserMessage, Baseline: c.Baseline, ToolCalls: []RecordedCall{}, Grades: []Grade{}}
	out := playCase(ctx, i, tenant, c, opts)
	res.Answer, res.Output, res.Usage = out.answer, out.output, out.usage
	if out.calls != nil {
		res.ToolCalls = out.calls
	}
	graders := append(c.Expect.graders(), opts.Graders...)
	in := GradeInput{Case: c, TenantID: tenant, Agent: opts.Agent, Bindings: opts.Bindings}
	var reasons []string
	switch {
	case len(out.missed) > 0:
		res.Error = &CaseError{Code: agents.CodeToolInvocationFailed, Message: out.err.Error()}
		for _, m := range out.missed {
			reasons = append(reasons, "unrecorded tool call under replay: "+m.ToolID+" with arguments "+string(m.Arguments))
		}
	case out.err != nil:
		res.Error = &CaseError{Code: agents.CodeOf(out.err), Message: out.err.Error()}
		reasons = append(reasons, "the turn failed: "+out.err.Error())
	default:
		in.Answer, in.Output, in.ToolCalls = out.answer, out.output, res.ToolCalls
		res.Grades = grade(ctx, graders, in)
		for _, g := range res.Grades {
			if !g.Pass {
				reasons = append(reasons, g.Name+": "+g.Reason)
			}
		}
	}
	res.Pass = len(reasons) == 0
	res.Reason = strings.Join(reasons, "; ")
	if b := c.Baseline; b != nil && b.Status == string(bindings.RunCompleted) {
		in.Baseline, in.Answer, in.Output, in.ToolCalls = true, b.Answer, b.Output, b.ToolCalls
		res.BaselineGrades = grade(ctx, graders, in)
		res.BaselinePass = allPass(res.BaselineGrades)
		res.Regressed = res.BaselinePass && !res.Pass
	}
	return res
}

// grade runs every grader on in, in order; an error becomes a failed
// grade with the error as its reason, and a grader that panics is one too.
func grade(ctx context.Context, gs []Grader, in GradeInput) []Grade {
	out := make([]Grade, 0, len(gs))
	for i, g := range gs {
		out = append(out, gradeOne(ctx, i, g, in))
	}
	return out
}

func gradeOne(ctx context.Context, i int, g Grader, in GradeInput) (gr Grade) {
	name := "grader " + strconv.Itoa(i+1)
	defer func() {
		if p := recover(); p != nil {
			gr = Grade{Name: name, Reason: fmt.Sprintf("the grader panicked: %v", p)}
		}
	}()
	gr, err := g.Grade(ctx, in)
	if gr.Name == "" {
		gr.Name = name
	}
	if err != nil {
		return Grade{Name: gr.Name, Reason: "the grader failed: " + err.Error()}
	}
	return gr
}

func allPass(gs []Grade) bool {
	for _, g := range gs {
		if !g.Pass {
			return false
		}
	}
	return true
}

// playCase runs case c as a turn of opts.Agent on a store of its own, with
// a fixed clock and counted ids, approving and resuming a turn that parks.
func playCase(ctx context.Context, i int, tenant string, c Case, opts Options) turnOutcome {
	store := memstore.New(&memstore.Options{Now: fixedNow, IDs: counter("eval-id-")})
	b := isolated(opts.Bindings, store)
	b.Now, b.NewID = fixedNow, counter("eval-"+strconv.Itoa(i+1)+"-")
	var replay *replayRegistry
	mode := opts.Tools
	if mode == "" {
		mode = LiveTools
		if c.Baseline != nil {
			mode = ReplayTools
		}
	}
	if mode == LiveTools && b.Tools == nil {
		b.Tools = registry.NewTools() // no tools: a call is an unknown tool, told to the model
	}
	if mode == ReplayTools {
		var recorded []RecordedCall
		if c.Baseline != nil {
			recorded = c.Baseline.ToolCalls
		}
		replay = newReplayRegistry(opts.Bindings.Tools, recorded)
		b.Tools = replay
	}
	var out turnOutcome
	conv, err := store.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: tenant, AgentID: opts.Agent.ID, AgentVersion: opts.Agent.Version})
	if err != nil {
		out.err = err
		return out
	}
	for j, m := range c.History {
		if _, err := store.AppendMessage(ctx, bindings.AppendMessageInput{TenantID: tenant, ConversationID: conv.ID,
			ID: "history-" + strconv.Itoa(j+1), Role: m.Role, Content: m.Content, TurnNumber: m.TurnNumber}); err != nil {
			out.err = err
			return out
		}
	}
	r, err := turn.Invoke(ctx, turn.Input{
		TenantID: tenant, Agent: opts.Agent, ConversationID: conv.ID,
		UserMessage: c.UserMessage, Parameters: c.Parameters,
	}, b)
	for k := 0; err == nil && r.Status == turn.StatusSuspended; k++ {
		if k == maxResumes {
			err = &agents.HitlRequiredError{Reason: "eval: the turn parked on approvals " + strconv.Itoa(maxResumes) + " times"}
			break
		}
		for _, a := range r.Approvals {
			if _, err = store.ResolveApproval(ctx, tenant, a.ID, bindings.ApprovalDecision{Approved: true, Reviewer: "eval"}); err != nil {
				break
			}
		}
		if err == nil {
			r, err = turn.Resume(ctx, turn.ResumeInput{TenantID: tenant, RunID: r.RunID, Agent: opts.Agent}, b)
		}
	}
	if replay != nil {
		out.missed = replay.misses()
	}
	if err != nil {
		out.err = err
		return out
	}
	out.answer, out.output, out.usage = r.Response.Content, r.Response.Output, r.Usage
	if entries, jerr := store.ReadJournal(ctx, tenant, r.RunID); jerr == nil {
		if base, _, berr := baselineOf(entries); berr == nil {
			out.calls = base.ToolCalls
		}
	}
	return out
}

// plainRuns is a RunBinding with none of the optional capabilities of the
// store it wraps.
type plainRuns struct{ bindings.RunBinding }

// isolated returns the bindings a case runs on: store for everything
// stored, and from host only what is read (providers, tools, the tenant's
// policy, guardrails, checks, secrets, memory, embeddings, provenance
// keys) and the limits.
func isolated(host turn.Bindings, store *memstore.Store) turn.Bindings {
	b := turn.StoreBindings(store)
	// The journal is bound without memstore's fast paths: turns appending
	// at once through them race on a table of flags every store shares
	// (memstore.allAppended). Runs alone is the plain RunBinding.
	b.Runs = plainRuns{store}
	if host.Memory != nil {
		b.Memory = host.Memory // only queried, by retrievals
	}
	b.Providers, b.Tools = host.Providers, host.Tools
	b.TenantPolicy, b.PolicyRegistry = host.TenantPolicy, host.PolicyRegistry
	b.Embeddings, b.EmbeddingModel = host.Embeddings, host.EmbeddingModel
	b.Secrets, b.Guardrails, b.Checks = host.Secrets, host.Guardrails, host.Checks
	b.Provenance.Keys = host.Provenance.Keys
	b.MaxToolCallsPerResponse, b.MaxStepAttempts = host.MaxToolCallsPerResponse, host.MaxStepAttempts
	b.Logger, b.LogContent = host.Logger, host.LogContent
	return b
}

var errNoCase = errors.New("eval: no case")
