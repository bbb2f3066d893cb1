// Command worker runs turn workers over PostgreSQL, and submits turns for
// them: any number of worker processes share one database, any of them
// finishes any run, and a run whose worker died is finished by another.
//
//	export KINDGI_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable
//	go run ./examples/worker                  # a worker: claims and drives runs until Ctrl-C
//	go run ./examples/worker submit -n 20     # submits 20 turns and waits for their outcomes
//	go run ./examples/worker wait             # waits for every run of the tenant and prints its outcome
//
// To kill a worker, run it as a binary (go install ./examples/worker, as
// the README's walkthrough does): kill -KILL of a go run stops go run and
// leaves the worker running.
//
// Its runs are the tenant acme-workers' and its agents acme.worker-*, so
// it shares a database with the other examples without touching their
// runs: a worker claims only the tenants of -tenants (its own by default).
// -tool-delay makes each tool call take that long, so that a worker
// killed a few seconds after a submit dies in the middle of its runs.
//
// Every turn calls two tools, one after the other (acme.clause-search,
// then acme.clause-fetch), except every fifth, which asks to send an email
// with acme.send-email behind an always_ask gate: it parks until somebody
// decides it (`kindgi approvals approve`), then a worker continues it.
// The tools record every execution in the table example_tool_calls, so
// you can check that nothing ran twice except, after a crash between a
// call and its stored result, the same call with the same request id.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/pgstore"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

const (
	defaultTenant = "acme-workers"
	projectID     = "globex-nda"
	databaseEnv   = "KINDGI_DATABASE_URL"
	// listenEnv is the URL of a direct session for LISTEN when
	// KINDGI_DATABASE_URL is a PgBouncer in transaction mode.
	listenEnv = "KINDGI_LISTEN_DATABASE_URL"
)

func main() {
	os.Exit(report(run(context.Background(), os.Args[1:], os.Stdout), os.Stdout, os.Stderr))
}

// report prints how run ended and returns the exit code: 0, 1 for a
// failure, 2 for a bad command line (its error on a line of its own, a
// blank line, then the usage); -h prints the usage and is 0.
func report(err error, stdout, stderr io.Writer) int {
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue) && errors.Is(ue.err, flag.ErrHelp):
		fmt.Fprint(stdout, ue.usage)
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "worker: %v\n\n%s", ue.err, ue.usage)
		return 2
	}
	fmt.Fprintln(stderr, "worker:", err)
	return 1
}

// usageError is a command-line mistake (or -h), with the usage to print.
type usageError struct {
	err   error
	usage string
}

func (e *usageError) Error() string { return e.err.Error() }

// parseFlags parses args into fs, which must take no arguments: a mistake
// is a *usageError with the usage (synopsis, then the flags). The flag
// package prints nothing itself: report prints the error first.
func parseFlags(fs *flag.FlagSet, synopsis string, args []string) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err == nil {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "usage: %s\n\nflags:\n", synopsis)
	fs.SetOutput(&b)
	fs.PrintDefaults()
	return &usageError{err: err, usage: b.String()}
}

// run is the program: a worker, "submit" or "wait".
func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) > 0 && args[0] == "submit" {
		return submitCmd(ctx, args[1:], out)
	}
	if len(args) > 0 && args[0] == "wait" {
		return waitCmd(ctx, args[1:], out)
	}
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	url := fs.String("database-url", os.Getenv(databaseEnv), "PostgreSQL URL (default $"+databaseEnv+")")
	listenURL := fs.String("listen-url", os.Getenv(listenEnv), "direct PostgreSQL URL for LISTEN when -database-url is PgBouncer in transaction mode (default $"+listenEnv+")")
	concurrency := fs.Int("concurrency", 4, "runs driven at once")
	lease := fs.Duration("lease", 5*time.Second, "lease TTL: how soon another worker takes over a dead worker's run")
	tenants := fs.String("tenants", defaultTenant, "comma-separated tenants to work for (empty: every tenant the role may claim)")
	toolDelay := fs.Duration("tool-delay", 0, "how long each tool call takes (to kill a worker in the middle of its runs)")
	verbose := fs.Bool("v", false, "log every drive")
	if err := parseFlags(fs, "worker [flags] | worker submit [flags] | worker wait [flags]", args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	store, err := open(ctx, *url, *listenURL)
	if err != nil {
		return err
	}
	defer store.Close()
	pid := os.Getpid()
	b, err := newBindings(&claimLog{Store: store, out: out, pid: pid}, store)
	if err != nil {
		return err
	}
	b.Tools.(*everyTenant).delay = *toolDelay
	b.LeaseTTL = *lease
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	b.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	opts := turn.WorkerOptions{MaxConcurrent: *concurrency, SweepInterval: 10 * time.Second,
		OnRun: func(r bindings.Run, res turn.Result, err error) {
			switch {
			case err != nil:
				fmt.Fprintf(out, "worker %d: run %s of %s: %s\n", pid, r.ID, r.TenantID, agents.CodeOf(err))
			default:
				fmt.Fprintf(out, "worker %d: run %s of %s: %s\n", pid, r.ID, r.TenantID, res.Status)
			}
		}}
	if *tenants != "" {
		opts.TenantIDs = strings.Split(*tenants, ",")
	}
	fmt.Fprintf(out, "worker %d started\n", pid)
	return turn.NewWorker(b, opts).Run(ctx)
}

// submitCmd submits -n turns, each in a conversation of its own, and
// waits for their outcomes unless -wait=false.
func submitCmd(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("submit", flag.ContinueOnError)
	url := fs.String("database-url", os.Getenv(databaseEnv), "PostgreSQL URL (default $"+databaseEnv+")")
	listenURL := fs.String("listen-url", os.Getenv(listenEnv), "direct PostgreSQL URL for LISTEN when -database-url is PgBouncer in transaction mode (default $"+listenEnv+")")
	n := fs.Int("n", 20, "turns to submit")
	tenant := fs.String("tenant", defaultTenant, "tenant of the turns")
	gateEvery := fs.Int("gate-every", 5, "every this many turns asks for an approval (0: none)")
	wait := fs.Bool("wait", true, "wait for the outcomes (parked turns count as an outcome)")
	if err := parseFlags(fs, "worker submit [flags]", args); err != nil {
		return err
	}
	store, b, err := openBindings(ctx, *url, *listenURL)
	if err != nil {
		return err
	}
	defer store.Close()
	researcher, mailer, err := definedAgents()
	if err != nil {
		return err
	}
	ids := make([]string, 0, *n)
	start := time.Now()
	for i := range *n {
		a, msg := researcher, "Find the confidentiality clause and fetch its text."
		if *gateEvery > 0 && (i+1)%*gateEvery == 0 {
			a, msg = mailer, "Send the NDA draft to legal@globex.test."
		}
		conv, err := store.OpenConversation(ctx, bindings.OpenConversationInput{
			TenantID: *tenant, ProjectID: projectID, AgentID: a.ID, AgentVersion: a.Version, Title: fmt.Sprintf("turn %d", i+1),
		})
		if err != nil {
			return err
		}
		id, err := turn.Submit(ctx, turn.Input{TenantID: *tenant, ProjectID: projectID, Agent: a, ConversationID: conv.ID, UserMessage: msg}, b)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "submitted run %s (%s)\n", id, a.ID)
		ids = append(ids, id)
	}
	if !*wait {
		return nil
	}
	printOutcomes(ctx, b, *url, *tenant, ids, out)
	fmt.Fprintf(out, "%d turns in %v\n", len(ids), time.Since(start).Round(time.Millisecond))
	return nil
}

// waitCmd waits for every run of the tenant to complete, fail or park,
// oldest first, and prints each outcome.
func waitCmd(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("wait", flag.ContinueOnError)
	url := fs.String("database-url", os.Getenv(databaseEnv), "PostgreSQL URL (default $"+databaseEnv+")")
	tenant := fs.String("tenant", defaultTenant, "tenant of the runs")
	if err := parseFlags(fs, "worker wait [flags]", args); err != nil {
		return err
	}
	store, b, err := openBindings(ctx, *url, "")
	if err != nil {
		return err
	}
	defer store.Close()
	var ids []string
	for after := ""; ; {
		page, err := store.ListRuns(ctx, bindings.ListRunsInput{TenantID: *tenant, After: after, Limit: bindings.MaxRunPageLimit})
		if err != nil {
			return err
		}
		for _, r := range page.Runs {
			ids = append(ids, r.ID)
		}
		if after = page.Next; after == "" {
			break
		}
	}
	slices.Reverse(ids) // oldest first
	printOutcomes(ctx, b, *url, *tenant, ids, out)
	return nil
}

// printOutcomes waits for each run and prints its outcome: completed,
// failed, or parked with the complete command that approves it.
func printOutcomes(ctx context.Context, b turn.Bindings, url, tenant string, ids []string, out io.Writer) {
	var completed, parked, failed int
	for _, id := range ids {
		res, err := turn.Wait(ctx, b, tenant, id)
		switch {
		case err != nil:
			failed++
			fmt.Fprintf(out, "run %s failed: %s\n", id, errLine(err))
		case res.Status == turn.StatusSuspended:
			parked++
			fmt.Fprintf(out, "run %s parked on approval %s; approve it with\n  %s\n", id, res.Approvals[0].ID, approveCommand(url, tenant, res.Approvals[0].ID))
		default:
			completed++
			fmt.Fprintf(out, "run %s completed: %s\n", id, res.Response.Content)
		}
	}
	fmt.Fprintf(out, "%d runs: %d completed, %d parked, %d failed\n", len(ids), completed, parked, failed)
}

// approveCommand is the kindgi command line that approves approvalID, as
// the user running the example ($USER): complete, to copy as it is. The database
// is the environment's when url is its value (kindgi reads it too).
func approveCommand(url, tenant, approvalID string) string {
	cmd := "kindgi approvals approve"
	if url != os.Getenv(databaseEnv) {
		cmd += " --database-url " + shellQuote(url)
	}
	approver := os.Getenv("USER")
	if approver == "" {
		approver = "reviewer"
	}
	return cmd + " --tenant " + shellQuote(tenant) + " --approver " + shellQuote(approver) + ` --reason "looks right" ` + shellQuote(approvalID)
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// letters, digits and -._/:@=
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-._/:@=", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// errLine is err as "CODE: message".
func errLine(err error) string {
	if code := agents.CodeOf(err); code != "" {
		return code + ": " + err.Error()
	}
	return err.Error()
}

// claimLog is the store of a worker process that prints, for each run it
// claims with steps already journaled, how far an earlier drive got: a
// run whose worker died (or that parked on an approval since decided) is
// continued after those steps, which are replayed, not run again.
type claimLog struct {
	*pgstore.Store
	out io.Writer
	pid int
}

// ClaimRuns claims as the Store does, then reads each claimed run's
// journal to tell a continued run from a new one.
func (c *claimLog) ClaimRuns(ctx context.Context, in bindings.ClaimRunsInput) ([]bindings.Run, error) {
	runs, err := c.Store.ClaimRuns(ctx, in)
	for _, r := range runs {
		if j, jerr := c.Store.ReadJournal(ctx, r.TenantID, r.ID); jerr == nil && len(j) > 0 {
			fmt.Fprintf(c.out, "worker %d: run %s: continuing after the %d journal entries of an earlier drive\n", c.pid, r.ID, len(j))
		}
	}
	return runs, err
}

// open connects (LISTENing on listenURL when it is set), applies the
// migrations and creates the tool log table.
func open(ctx context.Context, url, listenURL string) (*pgstore.Store, error) {
	if url == "" {
		return nil, fmt.Errorf("no database: pass -database-url or set %s", databaseEnv)
	}
	store, err := pgstore.Open(ctx, url, &pgstore.Options{ListenURL: listenURL})
	if err != nil {
		return nil, err
	}
	// Under a lock: processes started together would otherwise race to
	// create the table (CREATE TABLE IF NOT EXISTS is not safe at once).
	if err := pgx.BeginFunc(ctx, store.DB(), func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('example_tool_calls'))`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS example_tool_calls (
		seq        bigserial PRIMARY KEY,
		tenant_id  text NOT NULL,
		run_id     text NOT NULL,
		request_id text NOT NULL,
		tool       text NOT NULL,
		called_at  timestamptz NOT NULL DEFAULT now()
	)`)
		return err
	}); err != nil {
		store.Close()
		return nil, err
	}
	return store, nil
}

// definedAgents are the example's two agents: a researcher with two tools
// and a mailer with one gated tool.
func definedAgents() (researcher, mailer agent.Agent, err error) {
	needs := []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}}
	researcher, err = agent.Define(agent.Spec{
		ID: "acme.worker-researcher", Version: "1.0.0", Name: "Researcher",
		Instructions: "You find contract clauses and fetch their text.", Capabilities: needs,
		Tools: []agent.ToolRef{{ID: "acme.clause-search", Version: "^1.0.0"}, {ID: "acme.clause-fetch", Version: "^1.0.0"}},
	})
	if err != nil {
		return
	}
	mailer, err = agent.Define(agent.Spec{
		ID: "acme.worker-mailer", Version: "1.0.0", Name: "Mailer",
		Instructions: "You send documents to counterparties on request.", Capabilities: needs,
		Tools: []agent.ToolRef{{ID: "acme.send-email", Version: "^2.0.0"}},
		ConversationPolicy: &agent.ConversationPolicy{Hitl: &agent.HitlPolicy{Tools: &agent.ToolGates{
			Overrides: map[string]agent.ToolGate{"acme.send-email": {Mode: agent.GateAlwaysAsk}},
		}}},
	})
	return
}

// openBindings opens the store (open) and newBindings over the store
// itself, what a submitter or a waiter runs on. The caller closes the
// store.
func openBindings(ctx context.Context, url, listenURL string) (*pgstore.Store, turn.Bindings, error) {
	store, err := open(ctx, url, listenURL)
	if err != nil {
		return nil, turn.Bindings{}, err
	}
	b, err := newBindings(store, store)
	if err != nil {
		store.Close()
		return nil, turn.Bindings{}, err
	}
	return store, b, nil
}

// newBindings are the bindings every process of the example runs on:
// store (which may wrap db's Store) for every storage binding, the plan
// model, the three tools (recording each execution through db) and the
// agent registry as the lookup.
func newBindings(store any, db *pgstore.Store) (turn.Bindings, error) {
	researcher, mailer, err := definedAgents()
	if err != nil {
		return turn.Bindings{}, err
	}
	reg, err := registry.NewAgents(researcher, mailer)
	if err != nil {
		return turn.Bindings{}, err
	}
	tools := &everyTenant{tools: registry.NewTools(), db: db, added: map[string]error{}}
	b := turn.StoreBindings(store)
	b.Providers = bindings.Providers{planModel{}}
	b.Tools = tools
	b.Agents = func(_ context.Context, _, id, version string) (agent.Agent, error) {
		return reg.Get(id, version)
	}
	return b, nil
}

// planModel answers from the conversation it is sent, the same way in
// every process: the tools it is offered, one per response, in order,
// then a summary.
type planModel struct{}

func (planModel) ID() string { return "plan" }

func (planModel) Models() []bindings.ModelInfo {
	return []bindings.ModelInfo{{ID: "plan-1", Features: []string{"tool-use"}}}
}

func (planModel) Generate(_ context.Context, req bindings.GenerateRequest) (bindings.GenerateResponse, error) {
	done := 0
	for _, m := range req.Messages {
		if m.Role == bindings.ChatTool {
			done++
		}
	}
	if done < len(req.Tools) {
		tool := req.Tools[done].Name
		args := `{"query":"confidentiality"}`
		if tool == "acme.send-email" {
			args = `{"to":"legal@globex.test","subject":"NDA draft"}`
		}
		return bindings.GenerateResponse{Model: "plan-1", ToolCalls: []bindings.ToolCall{{ID: fmt.Sprintf("call_%d", done+1), Name: tool, Arguments: json.RawMessage(args)}},
			Usage: bindings.Usage{InputTokens: 100, OutputTokens: 10}}, nil
	}
	return bindings.GenerateResponse{Model: "plan-1", Text: fmt.Sprintf("Done: %d tool calls.", done), Usage: bindings.Usage{InputTokens: 150, OutputTokens: 12}}, nil
}

// everyTenant serves the example's three tools to every tenant: they are
// registered for a tenant the first time the tenant asks.
type everyTenant struct {
	tools *registry.Tools
	db    *pgstore.Store
	// delay is how long each tool call takes (0: no wait).
	delay time.Duration
	mu    sync.Mutex
	added map[string]error
}

func (e *everyTenant) ForTenant(tenantID string) bindings.TenantTools {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.added[tenantID]; !ok {
		e.added[tenantID] = e.add(tenantID)
	}
	return e.tools.ForTenant(tenantID)
}

// add registers the tools for tenantID; each records every execution in
// example_tool_calls (a real tool would also dedupe on call.RequestID,
// its idempotency key).
func (e *everyTenant) add(tenantID string) error {
	for _, d := range []struct{ id, version, out string }{
		{"acme.clause-search", "1.0.0", `{"clauses":["C-7"]}`},
		{"acme.clause-fetch", "1.0.0", `{"id":"C-7","text":"Mutual confidentiality for three years."}`},
		{"acme.send-email", "2.1.0", `{"sent":true}`},
	} {
		out := json.RawMessage(d.out)
		err := e.tools.Add(tenantID, bindings.ToolDescriptor{ID: d.id, Version: d.version, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, _ json.RawMessage, call bindings.CallContext) (json.RawMessage, error) {
				if err := sleep(ctx, e.delay); err != nil {
					return nil, err
				}
				if _, err := e.db.DB().Exec(ctx, `INSERT INTO example_tool_calls (tenant_id, run_id, request_id, tool) VALUES ($1, $2, $3, $4)`,
					call.TenantID, call.RunID, call.RequestID, d.id); err != nil {
					return nil, err
				}
				return out, nil
			})
		if err != nil {
			return err
		}
	}
	return nil
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
