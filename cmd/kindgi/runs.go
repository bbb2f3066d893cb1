package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/pgstore"
)

const runsUsage = `runs list --database-url URL --tenant ID [--status S] [--parent RUN_ID] [--limit N] [--after RUN_ID] [--json]
       kindgi runs show --database-url URL --tenant ID [--json] RUN_ID

list prints a tenant's runs, newest first: id, status, lease owner and
expiry, created and updated times. --status keeps one status (queued,
running, suspended, completed, failed; a comma-separated list keeps
several); --parent keeps the child runs of one run (its sub-agent calls);
a full page ends with the --after to pass for the next one.

show prints one run: its status, lease, agent, its parent run and step
when it is a sub-agent's child run, its journal steps in order with the
time each took (from the previous entry), its child runs, and, for a run
parked on a child, the child runs' pending approvals with the command
that decides them.

Both only read; they apply no migrations (run kindgi migrate first).`

const approvalsUsage = `approvals list --database-url URL --tenant ID [--run RUN_ID] [--json]
       kindgi approvals approve --database-url URL --tenant ID --approver ID [--reason TEXT] [--role ROLE]... APPROVAL_ID
       kindgi approvals deny --database-url URL --tenant ID --approver ID [--reason TEXT] [--role ROLE]... APPROVAL_ID

list prints the approvals still pending: of one run with --run, else of
every parked run of the tenant. approve and deny decide one approval, as
the approver, with the reason as the decision's comment: the first
decision wins (deciding again prints the stored one), an expired approval
cannot be decided (exit 1). Once a parked run's approvals are all decided,
a worker (turn.Worker) continues it: nothing else needs to run.`

// storeFlags are the flags every runs and approvals subcommand has.
type storeFlags struct {
	url, tenant *string
	asJSON      *bool
}

func addStoreFlags(fs *flag.FlagSet) storeFlags {
	return storeFlags{
		url:    fs.String("database-url", os.Getenv("KINDGI_DATABASE_URL"), "PostgreSQL URL (default $KINDGI_DATABASE_URL)"),
		tenant: fs.String("tenant", "", "the tenant (required)"),
		asJSON: fs.Bool("json", false, "print JSON"),
	}
}

// missing says which required store flag is not set ("" when none).
func (sf storeFlags) missing() string {
	switch {
	case *sf.url == "":
		return "--database-url (or KINDGI_DATABASE_URL) is required"
	case *sf.tenant == "":
		return "--tenant is required"
	}
	return ""
}

// open connects to the store of --database-url; when it cannot, it says
// why on stderr, as the command cmd, and ok is false.
func (sf storeFlags) open(ctx context.Context, cmd string, stderr io.Writer) (store *pgstore.Store, closeFn func(), ok bool) {
	store, closeFn, err := connect(ctx, *sf.url)
	if err != nil {
		fmt.Fprintf(stderr, "kindgi %s: %s\n", cmd, errLine(err))
		return nil, nil, false
	}
	return store, closeFn, true
}

// connect opens a Store on url without migrating.
func connect(ctx context.Context, url string) (*pgstore.Store, func(), error) {
	pool, err := pgxpool.New(ctx, url)
	if err == nil {
		if err = pool.Ping(ctx); err != nil {
			pool.Close()
		}
	}
	if err != nil {
		return nil, nil, &agents.PersistenceError{Op: "connect", Err: err}
	}
	return pgstore.New(pool, nil), pool.Close, nil
}

// storeCommand is one subcommand of runs, approvals or quotas: its name
// ("runs list") and its flag set, which holds the store flags.
type storeCommand struct {
	name, sub string
	fs        *flag.FlagSet
	sf        storeFlags
}

// newStoreCommand checks args[0] against subs as subcommand does (ok
// false: exit with code) and returns that subcommand with the store flags
// on its flag set; the caller adds the subcommand's own flags.
func newStoreCommand(cmd string, subs []string, usage string, args []string, stdout, stderr io.Writer) (c storeCommand, code int, ok bool) {
	if code, ok := subcommand(cmd, subs, usage, args, stdout, stderr); !ok {
		return storeCommand{}, code, false
	}
	c = storeCommand{name: cmd + " " + args[0], sub: args[0]}
	c.fs = newFlags(c.name, usage, stderr)
	c.sf = addStoreFlags(c.fs)
	return c, 0, true
}

// run parses args (what follows the subcommand). A missing store flag, or
// the problem check finds with the flags and positional arguments ("" when
// none), is answered on stderr, then the usage (exit 2); otherwise run
// opens the store and runs do on it.
func (c storeCommand) run(ctx context.Context, args []string, stderr io.Writer, check func(rest []string) string, do func(store *pgstore.Store, rest []string) int) int {
	rest, err := parseInterleaved(c.fs, args)
	if err != nil {
		return flagExit(err)
	}
	problem := c.sf.missing()
	if problem == "" {
		problem = check(rest)
	}
	if problem != "" {
		fmt.Fprintf(stderr, "kindgi %s: %s\n", c.name, problem)
		c.fs.Usage()
		return exitUsage
	}
	store, closeFn, ok := c.sf.open(ctx, c.name, stderr)
	if !ok {
		return exitFailure
	}
	defer closeFn()
	return do(store, rest)
}

func runRuns(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, code, ok := newStoreCommand("runs", []string{"list", "show"}, runsUsage, args, stdout, stderr)
	if !ok {
		return code
	}
	sub, sf := c.sub, c.sf
	status := c.fs.String("status", "", "keep runs in this status (comma-separated for several)")
	limit := c.fs.Int("limit", bindings.DefaultRunPageLimit, "runs per page (list)")
	after := c.fs.String("after", "", "start after this run id (list: the previous page's last)")
	parent := c.fs.String("parent", "", "list: only the child runs of this run")
	check := func(rest []string) string {
		switch {
		case sub == "list" && len(rest) > 0:
			return fmt.Sprintf("unexpected arguments %q", rest)
		case sub == "list" && *limit < 1:
			return "--limit must be at least 1"
		case sub == "show" && len(rest) != 1:
			return "give one RUN_ID"
		}
		return ""
	}
	return c.run(ctx, args[1:], stderr, check, func(store *pgstore.Store, rest []string) int {
		if sub == "list" {
			var statuses []bindings.RunStatus
			for _, s := range strings.Split(*status, ",") {
				if s = strings.TrimSpace(s); s != "" {
					statuses = append(statuses, bindings.RunStatus(s))
				}
			}
			next := "kindgi runs list" + storeArgs(*sf.url, *sf.tenant)
			if *status != "" {
				next += " --status " + shellQuote(*status)
			}
			if *parent != "" {
				next += " --parent " + shellQuote(*parent)
			}
			if *limit != bindings.DefaultRunPageLimit {
				next += fmt.Sprintf(" --limit %d", *limit)
			}
			in := bindings.ListRunsInput{TenantID: *sf.tenant, Statuses: statuses, After: *after, Limit: *limit, ParentRunID: *parent}
			return listRuns(ctx, store, in, next, *sf.asJSON, stdout, stderr)
		}
		return showRun(ctx, store, *sf.tenant, rest[0], *sf.asJSON, stdout, stderr)
	})
}

// listRuns prints a page of runs; next is the command that lists the
// same runs, to which the hint for the next page adds --after.
func listRuns(ctx context.Context, store *pgstore.Store, in bindings.ListRunsInput, next string, asJSON bool, stdout, stderr io.Writer) int {
	page, err := store.ListRuns(ctx, in)
	if err != nil {
		fmt.Fprintf(stderr, "kindgi runs list: %s\n", errLine(err))
		return exitFailure
	}
	if asJSON {
		return printJSON(page, stdout, stderr)
	}
	tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTATUS\tLEASE\tCREATED\tUPDATED\tLAST ERROR")
	for _, r := range page.Runs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Status, lease(r), stamp(r.CreatedAt), stamp(r.UpdatedAt), lastError(r.LastError, 80))
	}
	_ = tw.Flush()
	if page.Next != "" {
		fmt.Fprintf(stdout, "more: %s --after %s\n", next, shellQuote(page.Next))
	}
	return exitOK
}

func lease(r bindings.Run) string {
	if r.LeaseOwner == "" {
		return "-"
	}
	state := "until"
	if !time.Now().Before(r.LeaseExpiresAt) {
		state = "expired"
	}
	return fmt.Sprintf("%s %s %s", r.LeaseOwner, state, stamp(r.LeaseExpiresAt))
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// lastError is a stuck run's last failed drive on one line: its code,
// the count of failed drives and the message, at most limit runes of it
// (0: all), with control characters and bytes that are not UTF-8 escaped
// so that a message cannot move the terminal's cursor; "-" for none.
func lastError(e *bindings.RunError, limit int) string {
	if e == nil {
		return "-"
	}
	msg := []rune(e.Message)
	cut := ""
	if limit > 0 && len(msg) > limit {
		msg, cut = msg[:limit], "…"
	}
	quoted := strconv.QuoteToGraphic(string(msg))
	return fmt.Sprintf("%s ×%d: %s%s", e.Code, e.Attempts, quoted[1:len(quoted)-1], cut)
}

// runView is what runs show prints as JSON.
type runView struct {
	Run          bindings.Run        `json:"run"`
	AgentID      string              `json:"agentId,omitempty"`
	AgentVersion string              `json:"agentVersion,omitempty"`
	Conversation string              `json:"conversationId,omitempty"`
	Steps        []stepView          `json:"steps"`
	Approvals    []bindings.Approval `json:"approvals"`
	// Children are the run's child runs (its sub-agent calls), newest
	// first, at most bindings.MaxRunPageLimit of them; MoreChildren says
	// there are more (runs list --parent lists them all).
	Children     []childView `json:"children"`
	MoreChildren bool        `json:"moreChildren,omitempty"`
	// ChildApprovals are the pending approvals of the run's parked
	// descendants (a sub-agent's child run parked on a gated tool parks
	// its parent): what must be decided for the run to go on.
	ChildApprovals []childApproval `json:"childApprovals,omitempty"`
}

// childApproval is a pending approval of a parked descendant run.
type childApproval struct {
	ID     string `json:"id"`
	ToolID string `json:"toolId"`
	RunID  string `json:"runId"`
}

// maxApprovalDepth bounds how deep runs show looks for the pending
// approvals of parked descendants (turn.DefaultMaxAgentDepth is 4).
const maxApprovalDepth = 16

// childApprovals appends the pending approvals of the parked runs among
// kids, and of their parked descendants, depth first.
func childApprovals(ctx context.Context, store *pgstore.Store, tenant string, kids []string, depth int, out []childApproval) ([]childApproval, error) {
	for _, id := range kids {
		aps, err := store.ListApprovals(ctx, tenant, id)
		if err != nil {
			return nil, err
		}
		for _, a := range aps {
			if a.Status == bindings.ApprovalPending {
				out = append(out, childApproval{ID: a.Request.ID, ToolID: a.Request.ToolID, RunID: id})
			}
		}
		if depth >= maxApprovalDepth {
			continue
		}
		page, err := store.ListRuns(ctx, bindings.ListRunsInput{TenantID: tenant, ParentRunID: id, Statuses: []bindings.RunStatus{bindings.RunSuspended}, Limit: bindings.MaxRunPageLimit})
		if err != nil {
			return nil, err
		}
		grand := make([]string, len(page.Runs))
		for i, r := range page.Runs {
			grand[i] = r.ID
		}
		if out, err = childApprovals(ctx, store, tenant, grand, depth+1, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// childView is one child run in runs show.
type childView struct {
	RunID        string             `json:"runId"`
	AgentID      string             `json:"agentId,omitempty"`
	AgentVersion string             `json:"agentVersion,omitempty"`
	Status       bindings.RunStatus `json:"status"`
	StepKey      string             `json:"parentStepKey"`
}

// children reads the child runs of run: the first page of ListRuns by
// parent, each with the agent of its snapshot.
func children(ctx context.Context, store *pgstore.Store, tenant, runID string) ([]childView, bool, error) {
	page, err := store.ListRuns(ctx, bindings.ListRunsInput{TenantID: tenant, ParentRunID: runID, Limit: bindings.MaxRunPageLimit})
	if err != nil {
		return nil, false, err
	}
	out := make([]childView, len(page.Runs))
	for i, c := range page.Runs {
		out[i] = childView{RunID: c.ID, Status: c.Status, StepKey: c.ParentStepKey}
		if snap, err := store.Read(ctx, tenant, c.ID); err == nil {
			out[i].AgentID, out[i].AgentVersion = snap.AgentID, snap.AgentVersion
		}
	}
	return out, page.Next != "", nil
}

type stepView struct {
	Seq        int64               `json:"seq"`
	Key        string              `json:"key"`
	Node       string              `json:"node"`
	Status     string              `json:"status"`
	At         time.Time           `json:"at"`
	DurationMs float64             `json:"durationMs"`
	Error      *bindings.StepError `json:"error,omitempty"`
}

func showRun(ctx context.Context, store *pgstore.Store, tenant, runID string, asJSON bool, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "kindgi runs show: %s\n", errLine(err))
		return exitFailure
	}
	run, err := store.GetRun(ctx, tenant, runID)
	if err != nil {
		return fail(err)
	}
	entries, err := store.ReadJournal(ctx, tenant, runID)
	if err != nil {
		return fail(err)
	}
	v := runView{Run: run, Steps: make([]stepView, len(entries))}
	if snap, err := store.Read(ctx, tenant, runID); err == nil {
		v.AgentID, v.AgentVersion, v.Conversation = snap.AgentID, snap.AgentVersion, snap.ConversationID
	}
	if v.Approvals, err = store.ListApprovals(ctx, tenant, runID); err != nil {
		return fail(err)
	}
	if v.Children, v.MoreChildren, err = children(ctx, store, tenant, runID); err != nil {
		return fail(err)
	}
	if run.Status == bindings.RunSuspended {
		var parked []string
		for _, c := range v.Children {
			if c.Status == bindings.RunSuspended {
				parked = append(parked, c.RunID)
			}
		}
		if v.ChildApprovals, err = childApprovals(ctx, store, tenant, parked, 1, nil); err != nil {
			return fail(err)
		}
	}
	// The run's creation is stamped by the store's clock, its entries by
	// the driver's: never count from before either, nor backwards.
	prev := run.CreatedAt
	if len(entries) > 0 && entries[0].At.Before(prev) {
		prev = entries[0].At
	}
	for i, e := range entries {
		v.Steps[i] = stepView{Seq: e.Seq, Key: e.Key, Node: e.Node, Status: string(e.Status), At: e.At,
			DurationMs: float64(max(0, e.At.Sub(prev)).Microseconds()) / 1000, Error: e.Error}
		if e.At.After(prev) {
			prev = e.At
		}
	}
	if asJSON {
		return printJSON(v, stdout, stderr)
	}
	fmt.Fprintf(stdout, "run %s\nstatus %s\nlease %s\nagent %s@%s\nconversation %s\ncreated %s\nupdated %s\n",
		run.ID, run.Status, lease(run), v.AgentID, v.AgentVersion, v.Conversation, stamp(run.CreatedAt), stamp(run.UpdatedAt))
	if run.ParentRunID != "" {
		fmt.Fprintf(stdout, "parent %s (step %s)\n", run.ParentRunID, run.ParentStepKey)
	}
	if e := run.LastError; e != nil {
		fmt.Fprintf(stdout, "last error %s (%d failed drives, the last at %s)\n", lastError(e, 0), e.Attempts, stamp(e.At))
	}
	fmt.Fprintf(stdout, "\njournal (%d entries)\n", len(entries))
	tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tSTEP\tSTATUS\tAT\tTOOK")
	for _, s := range v.Steps {
		status := s.Status
		if s.Error != nil {
			status += " (" + s.Error.Code + ")"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%.3fms\n", s.Seq, s.Key, status, stamp(s.At), s.DurationMs)
	}
	_ = tw.Flush()
	if len(v.Approvals) > 0 {
		fmt.Fprintln(stdout, "\napprovals")
		for _, a := range v.Approvals {
			fmt.Fprintf(stdout, "%s %s %s\n", a.Request.ID, a.Status, a.Request.ToolID)
		}
	}
	if len(v.Children) > 0 {
		fmt.Fprintf(stdout, "\nchildren (%d)\n", len(v.Children))
		tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "RUN\tAGENT\tSTATUS\tSTEP")
		for _, c := range v.Children {
			agent := "-"
			if c.AgentID != "" {
				agent = c.AgentID + "@" + c.AgentVersion
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.RunID, agent, c.Status, c.StepKey)
		}
		_ = tw.Flush()
		if v.MoreChildren {
			fmt.Fprintf(stdout, "more: kindgi runs list --parent %s\n", shellQuote(runID))
		}
	}
	if len(v.ChildApprovals) > 0 {
		fmt.Fprintf(stdout, "\nparked on the pending approvals of child runs (%d)\n", len(v.ChildApprovals))
		tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "APPROVAL\tTOOL\tRUN")
		for _, a := range v.ChildApprovals {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", a.ID, a.ToolID, a.RunID)
		}
		_ = tw.Flush()
		fmt.Fprintf(stdout, "decide each: kindgi approvals approve --tenant %s --approver ID APPROVAL_ID (or deny); a worker then continues the child, then this run\n", shellQuote(tenant))
	}
	return exitOK
}

func printJSON(v any, stdout, stderr io.Writer) int {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(stderr, "kindgi: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// roles is a repeatable --role flag.
type roles []string

func (r *roles) String() string     { return strings.Join(*r, ",") }
func (r *roles) Set(s string) error { *r = append(*r, s); return nil }

func runApprovals(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, code, ok := newStoreCommand("approvals", []string{"list", "approve", "deny"}, approvalsUsage, args, stdout, stderr)
	if !ok {
		return code
	}
	sub, sf := c.sub, c.sf
	runID := c.fs.String("run", "", "list: only this run's approvals")
	approver := c.fs.String("approver", "", "approve, deny: who decides (required)")
	reason := c.fs.String("reason", "", "approve, deny: the decision's comment")
	var rs roles
	c.fs.Var(&rs, "role", "approve, deny: a role of the approver (repeatable)")
	check := func(rest []string) string {
		switch {
		case sub == "list" && len(rest) > 0:
			return fmt.Sprintf("unexpected arguments %q", rest)
		case sub != "list" && len(rest) != 1:
			return "give one APPROVAL_ID"
		case sub != "list" && *approver == "":
			return "--approver is required"
		}
		return ""
	}
	return c.run(ctx, args[1:], stderr, check, func(store *pgstore.Store, rest []string) int {
		if sub == "list" {
			return listApprovals(ctx, store, *sf.tenant, *runID, *sf.asJSON, stdout, stderr)
		}
		d := bindings.ApprovalDecision{Approved: sub == "approve", Reviewer: *approver, ReviewerRoles: rs, Comment: *reason}
		return decideApproval(ctx, store, *sf.tenant, rest[0], d, *sf.asJSON, stdout, stderr)
	})
}

func listApprovals(ctx context.Context, store *pgstore.Store, tenant, runID string, asJSON bool, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "kindgi approvals list: %s\n", errLine(err))
		return exitFailure
	}
	runs := []string{runID}
	if runID == "" {
		runs = nil
		in := bindings.ListRunsInput{TenantID: tenant, Statuses: []bindings.RunStatus{bindings.RunSuspended}, Limit: bindings.MaxRunPageLimit}
		for {
			page, err := store.ListRuns(ctx, in)
			if err != nil {
				return fail(err)
			}
			for _, r := range page.Runs {
				runs = append(runs, r.ID)
			}
			if page.Next == "" {
				break
			}
			in.After = page.Next
		}
	}
	pending := []bindings.Approval{}
	for _, id := range runs {
		list, err := store.ListApprovals(ctx, tenant, id)
		if err != nil {
			return fail(err)
		}
		for _, a := range list {
			if a.Status == bindings.ApprovalPending {
				pending = append(pending, a)
			}
		}
	}
	if asJSON {
		return printJSON(pending, stdout, stderr)
	}
	tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "APPROVAL\tRUN\tTOOL\tROLE\tEXPIRES\tARGUMENTS")
	for _, a := range pending {
		r := a.Request
		expires := "never"
		if !r.ExpiresAt.IsZero() {
			expires = stamp(r.ExpiresAt)
		}
		tool := r.ToolID
		if tool == "" {
			tool = "(session gate)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.RunID, tool, r.ReviewerRole, expires, r.Arguments)
	}
	_ = tw.Flush()
	return exitOK
}

func decideApproval(ctx context.Context, store *pgstore.Store, tenant, id string, d bindings.ApprovalDecision, asJSON bool, stdout, stderr io.Writer) int {
	verb := "deny"
	if d.Approved {
		verb = "approve"
	}
	a, err := store.ResolveApproval(ctx, tenant, id, d)
	if err != nil {
		fmt.Fprintf(stderr, "kindgi approvals %s: %s\n", verb, errLine(err))
		return exitFailure
	}
	if asJSON {
		return printJSON(a, stdout, stderr)
	}
	if a.Reviewer != d.Reviewer || (a.Status == bindings.ApprovalApproved) != d.Approved {
		fmt.Fprintf(stdout, "approval %s was decided already: %s by %s\n", id, a.Status, a.Reviewer)
		return exitOK
	}
	fmt.Fprintf(stdout, "approval %s %s by %s (run %s); a worker continues the run once its approvals are decided\n", id, a.Status, a.Reviewer, a.Request.RunID)
	return exitOK
}
