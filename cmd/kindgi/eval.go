package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/eval"
	"github.com/kindgi/agents/pgstore"
	"github.com/kindgi/agents/providers/anthropic"
	"github.com/kindgi/agents/providers/openai"
	"github.com/kindgi/agents/turn"
)

const evalUsage = `eval --agent agent.yaml (--dataset cases.jsonl | --from-runs --database-url URL --tenant ID (--runs ID,... | --since 24h --agent-id ID)) [--save cases.jsonl] [--grader G]... [--provider openai|anthropic] [--model M] [--concurrency N] [--junit out.xml] [--html out.html] [--json]

Evaluates the agent file's version on a dataset: every case runs as a
turn on an in-memory store (nothing is written to the database), tool
calls answered from what the recorded run's tools returned (a call the
run did not record fails its case). --from-runs builds the dataset from
stored runs (--save writes it out as JSON Lines); --since keeps the
completed runs of --agent-id created that recently.

The model is called through --provider, configured by its environment:
OPENAI_API_KEY and OPENAI_BASE_URL, or ANTHROPIC_API_KEY and
ANTHROPIC_BASE_URL. --model defaults to the agent's preferredModel, then
gpt-4o-mini or claude-sonnet-4-5.

Graders (--grader, repeatable; a case's own expect is graded too):
  contains:TEXT     the answer contains TEXT
  matches:REGEXP    the answer matches REGEXP
  schema:FILE       the answer's structured output fits the JSON Schema in FILE
  judge:RUBRIC      the model grades the answer against RUBRIC

Prints one line per case and a summary; exits 1 when any case fails or
regresses (passed on its recorded run, fails now), 0 when all pass.`

// maxSinceRuns bounds how many runs --since reads.
const maxSinceRuns = 10000

func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("eval", evalUsage, stderr)
	agentFile := fs.String("agent", "", "the agent file (JSON or YAML) of the version to evaluate (required)")
	dataset := fs.String("dataset", "", "the dataset, JSON Lines")
	fromRuns := fs.Bool("from-runs", false, "build the dataset from stored runs")
	sf := addStoreFlags(fs)
	runIDs := fs.String("runs", "", "the runs to replay, comma-separated (--from-runs)")
	since := fs.Duration("since", 0, "replay the completed runs created this recently (--from-runs, with --agent-id)")
	agentID := fs.String("agent-id", "", "the agent whose runs --since keeps")
	save := fs.String("save", "", "write the dataset built from runs to this file")
	var graders []string
	fs.Func("grader", "a grader: contains:TEXT, matches:REGEXP, schema:FILE or judge:RUBRIC (repeatable)", func(s string) error {
		graders = append(graders, s)
		return nil
	})
	providerName := fs.String("provider", "openai", "the model provider: openai or anthropic")
	model := fs.String("model", "", "the model (default: the agent's preferredModel, then the provider's default)")
	concurrency := fs.Int("concurrency", eval.DefaultConcurrency, "cases run at once")
	junit := fs.String("junit", "", "write a JUnit XML report here")
	htmlOut := fs.String("html", "", "write an HTML report here")
	rest, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	problem := ""
	switch {
	case len(rest) > 0:
		problem = fmt.Sprintf("unexpected arguments %q", rest)
	case *agentFile == "":
		problem = "--agent is required"
	case (*dataset == "") == !*fromRuns:
		problem = "give --dataset or --from-runs (one of them)"
	case *fromRuns && (*sf.url == "" || *sf.tenant == ""):
		problem = "--from-runs needs --database-url (or KINDGI_DATABASE_URL) and --tenant"
	case *fromRuns && (*runIDs == "") == (*since == 0):
		problem = "--from-runs needs --runs or --since (one of them)"
	case *since != 0 && (*since < 0 || *agentID == ""):
		problem = "--since needs a positive duration and --agent-id"
	case *save != "" && !*fromRuns:
		problem = "--save applies to --from-runs"
	case *concurrency < 1:
		problem = "--concurrency must be at least 1"
	}
	var gs []eval.Grader
	if problem == "" {
		gs, problem = parseGraders(graders)
	}
	if problem != "" {
		fmt.Fprintln(stderr, "kindgi eval:", problem)
		fs.Usage()
		return exitUsage
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "kindgi eval:", errLine(err))
		return exitFailure
	}
	a, err := agent.Load(*agentFile)
	if err != nil {
		return fail(err)
	}
	p, modelID, err := evalProvider(*providerName, *model, a)
	if err != nil {
		fmt.Fprintln(stderr, "kindgi eval:", err)
		return exitUsage
	}
	for i, g := range graders {
		if rubric, ok := strings.CutPrefix(g, "judge:"); ok {
			gs[i] = eval.Judge(p, modelID, rubric)
		}
	}
	var ds eval.Dataset
	if *fromRuns {
		if ds, err = datasetFromStore(ctx, *sf.url, *sf.tenant, *runIDs, *since, *agentID); err != nil {
			return fail(err)
		}
		if *save != "" {
			if err := writeFile(*save, ds.Write); err != nil {
				return fail(err)
			}
		}
	} else {
		f, err := os.Open(*dataset)
		if err != nil {
			return fail(&agents.PersistenceError{Op: "open dataset", Err: err})
		}
		ds, err = eval.ReadDataset(f)
		f.Close()
		if err != nil {
			return fail(err)
		}
	}
	var b turn.Bindings
	b.Providers = bindings.Providers{p}
	bar := newProgress(stderr)
	rep, err := eval.Run(ctx, ds, eval.Options{
		Agent: a, Bindings: b, Graders: gs, Tools: eval.ReplayTools, Concurrency: *concurrency,
		TenantID: *sf.tenant, OnCase: bar.onCase,
	})
	bar.end()
	if err != nil {
		return fail(err)
	}
	printReport(stdout, rep, *sf.asJSON)
	for _, out := range []struct {
		path  string
		write func(io.Writer) error
	}{{*junit, rep.WriteJUnit}, {*htmlOut, rep.WriteHTML}} {
		if out.path != "" {
			if err := writeFile(out.path, out.write); err != nil {
				return fail(err)
			}
		}
	}
	if !rep.OK() {
		return exitFailure
	}
	return exitOK
}

// parseGraders reads the --grader flags; a judge grader is left nil, to be
// made once the provider is known.
func parseGraders(specs []string) ([]eval.Grader, string) {
	gs := make([]eval.Grader, len(specs))
	for i, s := range specs {
		kind, arg, ok := strings.Cut(s, ":")
		if !ok || arg == "" {
			return nil, fmt.Sprintf("--grader %q: want KIND:ARGUMENT (contains, matches, schema or judge)", s)
		}
		switch kind {
		case "contains":
			gs[i] = eval.Contains(arg)
		case "matches":
			gs[i] = eval.Matches(arg)
		case "schema":
			raw, err := os.ReadFile(arg)
			if err != nil {
				return nil, fmt.Sprintf("--grader %q: %v", s, err)
			}
			gs[i] = eval.OutputSchema(json.RawMessage(raw))
		case "judge":
		default:
			return nil, fmt.Sprintf("--grader %q: unknown kind %q (want contains, matches, schema or judge)", s, kind)
		}
	}
	return gs, ""
}

// evalProvider is the provider the new version's model is called through,
// configured by the provider's environment, serving one model.
func evalProvider(name, model string, a agent.Agent) (bindings.Provider, string, error) {
	if model == "" {
		model = a.PreferredModel
	}
	switch name {
	case "openai":
		if model == "" {
			model = "gpt-4o-mini"
		}
		return generateOnly{openai.New(&openai.Options{Models: oneModel(model, openai.DefaultModels)})}, model, nil
	case "anthropic":
		if model == "" {
			model = "claude-sonnet-4-5"
		}
		return generateOnly{anthropic.New(&anthropic.Options{Models: oneModel(model, anthropic.DefaultModels)})}, model, nil
	}
	return nil, "", fmt.Errorf("unknown --provider %q (want openai or anthropic)", name)
}

// oneModel is the table of model: the provider's entry when it has one,
// else a model with tool use and JSON mode and unknown prices.
func oneModel(model string, defaults []bindings.ModelInfo) []bindings.ModelInfo {
	for _, m := range defaults {
		if m.ID == model {
			return []bindings.ModelInfo{m}
		}
	}
	return []bindings.ModelInfo{{ID: model, Features: []string{"tool-use", "json-mode"}}}
}

// generateOnly hides a provider's streaming: an eval needs only answers.
type generateOnly struct{ bindings.Provider }

// datasetFromStore builds the dataset from the runs ids names, or from the
// completed runs of agentID created within since.
func datasetFromStore(ctx context.Context, url, tenant, ids string, since time.Duration, agentID string) (eval.Dataset, error) {
	store, closeFn, err := connect(ctx, url)
	if err != nil {
		return eval.Dataset{}, err
	}
	defer closeFn()
	var runs []string
	for _, id := range strings.Split(ids, ",") {
		if id = strings.TrimSpace(id); id != "" {
			runs = append(runs, id)
		}
	}
	if since > 0 {
		if runs, err = recentRuns(ctx, store, tenant, agentID, time.Now().Add(-since)); err != nil {
			return eval.Dataset{}, err
		}
	}
	return eval.DatasetFromRuns(ctx, turn.StoreBindings(store), tenant, runs)
}

// recentRuns lists the tenant's completed runs of agentID created at or
// after from, oldest first.
func recentRuns(ctx context.Context, store *pgstore.Store, tenant, agentID string, from time.Time) ([]string, error) {
	var ids []string
	in := bindings.ListRunsInput{TenantID: tenant, Statuses: []bindings.RunStatus{bindings.RunCompleted}, Limit: bindings.MaxRunPageLimit}
	for seen := 0; seen < maxSinceRuns; {
		page, err := store.ListRuns(ctx, in)
		if err != nil {
			return nil, err
		}
		old := false
		for _, r := range page.Runs {
			seen++
			if r.CreatedAt.Before(from) {
				old = true
				break
			}
			snap, err := store.Read(ctx, tenant, r.ID)
			if err != nil {
				return nil, err
			}
			if snap.AgentID == agentID {
				ids = append(ids, r.ID)
			}
		}
		if old || page.Next == "" {
			break
		}
		in.After = page.Next
	}
	for i, j := 0, len(ids)-1; i < j; i, j = i+1, j-1 {
		ids[i], ids[j] = ids[j], ids[i]
	}
	return ids, nil
}

// writeFile writes a file with write; a failure is *agents.PersistenceError.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return &agents.PersistenceError{Op: "create " + path, Err: err}
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return &agents.PersistenceError{Op: "write " + path, Err: err}
	}
	return nil
}

// printReport prints one line per case and the summary, or the report as
// JSON.
func printReport(w io.Writer, rep eval.Report, asJSON bool) {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
		return
	}
	for _, c := range rep.Cases {
		fmt.Fprintln(w, caseLine(c))
	}
	fmt.Fprintf(w, "%s: %d cases, %d passed, %d failed, %d regressed; %d model calls, $%.4f\n",
		rep.Agent, len(rep.Cases), rep.Passed, rep.Failed, rep.Regressed, rep.Usage.ModelCalls, rep.Usage.CostUsd)
}

// caseLine is a case's outcome on one line.
func caseLine(c eval.CaseResult) string {
	line := strings.ToUpper(c.Outcome()) + " " + c.ID
	if c.Reason != "" {
		line += ": " + c.Reason
	}
	return line
}

// progress reports finished cases on stderr: a bar redrawn in place on a
// terminal, one plain line a case otherwise.
type progress struct {
	w   io.Writer
	tty bool
	on  bool
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

const barWidth = 30

func (p *progress) onCase(done, total int, c eval.CaseResult) {
	if !p.tty {
		fmt.Fprintf(p.w, "[%d/%d] %s\n", done, total, caseLine(c))
		return
	}
	fill := barWidth * done / max(total, 1)
	fmt.Fprintf(p.w, "\r\033[K[%s%s] %d/%d %s", strings.Repeat("#", fill), strings.Repeat(".", barWidth-fill), done, total, c.ID)
	p.on = true
}

// end finishes the bar's line.
func (p *progress) end() {
	if p.on {
		fmt.Fprintln(p.w)
	}
}
