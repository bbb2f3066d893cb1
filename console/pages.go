package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn"
)

// Bounds on what one page reads.
const (
	maxSuspendedRuns = 500 // runs looked at for pending approvals, per tenant
	decidedRuns      = 100 // newest runs looked at for decided approvals, per tenant
	contextMessages  = 4   // conversation messages shown with an approval
)

func parsePages() (map[string]*template.Template, error) {
	funcs := template.FuncMap{
		"stamp": func(t time.Time) string {
			if t.IsZero() {
				return "—"
			}
			return t.UTC().Format("2006-01-02 15:04:05 UTC")
		},
		"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"add": func(a, b int) int { return a + b },
	}
	pages := map[string]*template.Template{}
	for _, name := range []string{"approvals", "runs", "run", "conversations", "conversation", "quotas", "login", "notfound"} {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/parts.html", "templates/"+name+".html")
		if err != nil {
			return nil, err
		}
		pages[name] = t
	}
	return pages, nil
}

// page is what every template gets.
type page struct {
	Base     string
	Title    string
	Nav      string
	Reviewer Reviewer
	CSRF     string
	Refresh  int
	Flash    string
	Logout   bool   // offer "Sign out"
	Events   string // the page's event stream (live pages), "" for none
	Pending  int    // pending approvals for the navigation badge (-1: unknown)
	Data     any
}

// render executes page name; for a signed-in reviewer it adds the CSRF
// token and the count of pending approvals shown in the navigation.
func (h *handler) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	p.Refresh = h.opts.RefreshSeconds
	if p.Base == "" {
		p.Base = h.opts.BasePath
	}
	if p.Reviewer.ID != "" {
		p.CSRF, p.Logout = h.csrf(p.Reviewer), h.opts.Logout != nil
		p.Pending = h.pendingCount(r.Context(), p.Reviewer)
	}
	var buf bytes.Buffer
	if err := h.pages[name].Execute(&buf, p); err != nil {
		http.Error(w, "render: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// pendingCount counts the approvals waiting for the reviewer, for the
// navigation's badge: -1 when the store cannot list a tenant's approvals
// (no badge then).
func (h *handler) pendingCount(ctx context.Context, rv Reviewer) int {
	l, ok := h.opts.Store.(bindings.ApprovalLister)
	if !ok {
		return -1
	}
	n := 0
	for _, t := range rv.TenantIDs {
		list, err := l.ListTenantApprovals(ctx, bindings.ListApprovalsInput{TenantID: t, Pending: true, Limit: maxSuspendedRuns})
		if err != nil {
			return -1
		}
		n += len(list)
	}
	return n
}

// notFound answers 404, with the navigation, for anything a reviewer may
// not see or that is not there: the two are not told apart.
func (h *handler) notFound(w http.ResponseWriter, r *http.Request, rv Reviewer) {
	h.render(w, r, http.StatusNotFound, "notfound", page{Title: "Not found", Reviewer: rv})
}

// notFoundPage answers a path the console does not serve: the 404 page
// with the navigation for a signed-in reviewer, a bare 404 otherwise (a
// browser's own requests, such as /favicon.ico, are not sent to the login
// form).
func (h *handler) notFoundPage(w http.ResponseWriter, r *http.Request) {
	rv, err := h.opts.Authenticate(r)
	if err != nil || rv.ID == "" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	h.notFound(w, r, rv)
}

// pathRecord returns the {tenant} and {id} of r's path; when rv may not
// see the tenant it answers not found, and ok is false.
func (h *handler) pathRecord(w http.ResponseWriter, r *http.Request, rv Reviewer) (tenant, id string, ok bool) {
	tenant, id = r.PathValue("tenant"), r.PathValue("id")
	if !allowed(rv, tenant) {
		h.notFound(w, r, rv)
		return "", "", false
	}
	return tenant, id, true
}

// storeError answers a store error: not found for the missing-record
// codes, 500 otherwise.
func (h *handler) storeError(w http.ResponseWriter, r *http.Request, rv Reviewer, err error) {
	switch agents.CodeOf(err) {
	case agents.CodeApprovalNotFound, agents.CodeRunJournalUnavailable, agents.CodeConversationNotFound, agents.CodeRunSnapshotMissing:
		h.notFound(w, r, rv)
		return
	}
	http.Error(w, "the store failed: "+agents.CodeOf(err), http.StatusInternalServerError)
}

// relative says how far t is from now, in words ("in 3h 20m", "5m ago").
func relative(t, now time.Time) string {
	d := t.Sub(now)
	past := d < 0
	if past {
		d = -d
	}
	var s string
	switch {
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		s = fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%dh %dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		s = fmt.Sprintf("%dd %dh", int(d.Hours())/24, int(d.Hours())%24)
	}
	if past {
		return s + " ago"
	}
	return "in " + s
}

func pretty(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "{}"
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}

// approvalView is one approval as the approvals page shows it.
type approvalView struct {
	A            bindings.Approval
	Tenant       string
	Agent        string
	Tool         string
	Arguments    string
	Role         string
	Expires      time.Time
	TimeLeft     string
	Messages     []bindings.ConversationMessage
	MayDecide    bool
	DecidedAt    time.Time
	DecidedWords string
	// ParentRunID is set when the approval's run is a sub-agent's child
	// run: the approval asks for the sub-agent (AgentID, the child run's
	// agent), which the run ParentRunID called.
	ParentRunID string
	AgentID     string
}

func (h *handler) view(ctx context.Context, rv Reviewer, a bindings.Approval, now time.Time) approvalView {
	r := a.Request
	v := approvalView{A: a, Tenant: r.TenantID, Arguments: pretty(r.Arguments), Role: r.ReviewerRole, Expires: r.ExpiresAt}
	if v.Role == "" {
		v.Role = "standard"
	}
	v.Tool = "session gate"
	if r.ToolID != "" {
		v.Tool = r.ToolID + "@" + r.ToolVersion
	}
	if snap, err := h.opts.Store.Read(ctx, r.TenantID, r.RunID); err == nil {
		v.Agent, v.AgentID = snap.AgentID+"@"+snap.AgentVersion, snap.AgentID
	}
	if r.RunID != "" {
		if run, err := h.opts.Store.GetRun(ctx, r.TenantID, r.RunID); err == nil {
			v.ParentRunID = run.ParentRunID
		}
	}
	if !r.ExpiresAt.IsZero() {
		v.TimeLeft = relative(r.ExpiresAt, now)
	}
	if a.ResolvedAt != nil {
		v.DecidedAt = *a.ResolvedAt
		v.DecidedWords = relative(*a.ResolvedAt, now)
	}
	v.MayDecide = a.Status == bindings.ApprovalPending && MayDecide(rv.Role, r.ReviewerRole)
	return v
}

// approvalsOf lists the approvals of a tenant: pending ones or decided
// and expired ones, through bindings.ApprovalLister when the store has it
// (memstore and pgstore do), else those of the suspended runs (pending) or
// of the newest runs (decided).
func (h *handler) approvalsOf(ctx context.Context, tenant string, pending bool) ([]bindings.Approval, error) {
	if l, ok := h.opts.Store.(bindings.ApprovalLister); ok {
		// Every approval of the tenant, parked run or not.
		limit := decidedRuns
		if pending {
			limit = maxSuspendedRuns
		}
		return l.ListTenantApprovals(ctx, bindings.ListApprovalsInput{TenantID: tenant, Pending: pending, Limit: limit})
	}
	in := bindings.ListRunsInput{TenantID: tenant, Limit: decidedRuns}
	if pending {
		in = bindings.ListRunsInput{TenantID: tenant, Statuses: []bindings.RunStatus{bindings.RunSuspended}, Limit: maxSuspendedRuns}
	}
	var runs []bindings.Run
	for {
		p, err := h.opts.Store.ListRuns(ctx, in)
		if err != nil {
			return nil, err
		}
		runs = append(runs, p.Runs...)
		if !pending || p.Next == "" || len(runs) >= maxSuspendedRuns {
			break
		}
		in.After = p.Next
	}
	var out []bindings.Approval
	for _, run := range runs {
		list, err := h.opts.Store.ListApprovals(ctx, tenant, run.ID)
		if err != nil {
			return nil, err
		}
		for _, a := range list {
			if (a.Status == bindings.ApprovalPending) == pending {
				out = append(out, a)
			}
		}
	}
	return out, nil
}

func (h *handler) approvals(w http.ResponseWriter, r *http.Request, rv Reviewer) {
	ctx := r.Context()
	f, bad := parseFilters(r)
	if bad != "" {
		http.Error(w, bad, http.StatusBadRequest)
		return
	}
	pending := r.URL.Query().Get("tab") != "decided"
	now := h.opts.Now()
	var rows []keyed[bindings.Approval]
	for _, t := range rv.TenantIDs {
		list, err := h.approvalsOf(ctx, t, pending)
		if err != nil {
			h.storeError(w, r, rv, err)
			return
		}
		for _, a := range list {
			if (f.Tool != "" && a.Request.ToolID != f.Tool) || (f.ID != "" && !strings.Contains(a.Request.ID, f.ID) && !strings.Contains(a.Request.RunID, f.ID)) || !f.inRange(a.Request.CreatedAt) {
				continue
			}
			if f.Agent != "" {
				if snap, err := h.opts.Store.Read(ctx, t, a.Request.RunID); err != nil || snap.AgentID != f.Agent {
					continue
				}
			}
			key := sortKey(a.Request.CreatedAt, t, a.Request.ID)
			if !pending {
				key = sortKey(decidedAt(a), t, a.Request.ID)
			}
			rows = append(rows, keyed[bindings.Approval]{key, a})
		}
	}
	ap := paginate(rows, f, pending, false)
	p := pager[approvalView]{Total: ap.Total, More: ap.More, Older: ap.Older, Newer: ap.Newer, First: ap.First}
	for _, a := range ap.Rows {
		p.Rows = append(p.Rows, h.view(ctx, rv, a, now))
	}
	for i := range p.Rows {
		v := &p.Rows[i]
		if pending && v.A.Request.ConversationID != "" {
			msgs, err := h.opts.Store.ReadMessages(ctx, bindings.ReadMessagesInput{TenantID: v.A.Request.TenantID, ConversationID: v.A.Request.ConversationID, Limit: contextMessages})
			if err == nil {
				v.Messages = msgs
			}
		}
	}
	title := "Pending approvals"
	if !pending {
		title = "Decided and expired approvals"
	}
	var extra url.Values
	if !pending {
		extra = url.Values{"tab": {"decided"}}
	}
	l := newList(f, p, nil, extra)
	events := ""
	if pending {
		since, _ := h.state(ctx, rv, "", "")
		events = h.opts.BasePath + "/events?" + url.Values{"since": {since}}.Encode()
	}
	h.render(w, r, http.StatusOK, "approvals", page{Title: title, Nav: "approvals", Reviewer: rv, Flash: flash(r.URL.Query().Get("done")), Events: events,
		Data: struct {
			Pending bool
			List    listData[approvalView]
			Open    string // the approval shown open (?open=id)
		}{pending, l, r.URL.Query().Get("open")}})
}

// flash is the confirmation the page after a decision shows: only a
// status and an approval id of the id alphabet, so that a crafted link
// cannot make the console say anything else.
func flash(done string) string {
	status, id, _ := strings.Cut(done, " ")
	if (status != "approved" && status != "denied") || bindings.CheckID("approval id", id) != nil {
		return ""
	}
	return status + " " + id
}

func decidedAt(a bindings.Approval) time.Time {
	if a.ResolvedAt != nil {
		return *a.ResolvedAt
	}
	return a.Request.ExpiresAt
}

// decide records a reviewer's decision: refused (403) below the required
// role, 404 for another tenant's or an unknown approval, 409 when the
// approval is no longer pending.
func (h *handler) decide(w http.ResponseWriter, r *http.Request, rv Reviewer) {
	ctx := r.Context()
	tenant, id, ok := h.pathRecord(w, r, rv)
	if !ok {
		return
	}
	var approve bool
	switch r.PostForm.Get("decision") {
	case "approve":
		approve = true
	case "deny":
	default:
		http.Error(w, "decision must be approve or deny", http.StatusBadRequest)
		return
	}
	reason := strings.TrimSpace(r.PostForm.Get("reason"))
	if len(reason) > 4000 {
		http.Error(w, "the reason is longer than 4000 bytes", http.StatusBadRequest)
		return
	}
	a, err := h.opts.Store.GetApproval(ctx, tenant, id)
	if err != nil {
		h.storeError(w, r, rv, err)
		return
	}
	if !MayDecide(rv.Role, a.Request.ReviewerRole) {
		http.Error(w, fmt.Sprintf("this approval needs the %s role", a.Request.ReviewerRole), http.StatusForbidden)
		return
	}
	if a.Status != bindings.ApprovalPending {
		http.Error(w, "this approval is "+string(a.Status)+" already", http.StatusConflict)
		return
	}
	got, err := h.opts.Store.ResolveApproval(ctx, tenant, id, bindings.ApprovalDecision{
		Approved: approve, Reviewer: rv.ID, ReviewerRoles: []string{rv.Role}, Comment: reason,
	})
	if err != nil {
		if agents.CodeOf(err) == agents.CodeHitlRequired {
			http.Error(w, "the store refused the decision: "+err.Error(), http.StatusConflict)
			return
		}
		h.storeError(w, r, rv, err)
		return
	}
	if got.Reviewer != rv.ID {
		http.Error(w, "this approval was decided already by "+got.Reviewer, http.StatusConflict)
		return
	}
	http.Redirect(w, r, h.opts.BasePath+"/?done="+url.QueryEscape(string(got.Status)+" "+id), http.StatusSeeOther)
}

// runRow is one run of the runs page.
type runRow struct {
	Run   bindings.Run
	Agent string
}

var runStatuses = []bindings.RunStatus{bindings.RunQueued, bindings.RunRunning, bindings.RunSuspended, bindings.RunCompleted, bindings.RunFailed}

// listData is what a list page's template gets.
type listData[T any] struct {
	F        filters
	Statuses []string
	Page     pager[T]
	Last     int          // the 1-based position of the page's last row
	Older    template.URL // the paging links ("" for none)
	Newer    template.URL
}

// newList makes the list page's data; extra joins the query of the paging
// links (the approvals' tab).
func newList[T any](f filters, p pager[T], statuses []string, extra url.Values) listData[T] {
	l := listData[T]{F: f, Statuses: statuses, Page: p, Last: p.First + len(p.Rows) - 1}
	link := func(k, cur string) template.URL {
		q := f.Query()
		for ek, ev := range extra {
			q[ek] = ev
		}
		q.Set(k, cur)
		return template.URL("?" + q.Encode()) // a query the console made: safe
	}
	if p.Older != "" {
		l.Older = link("older", p.Older)
	}
	if p.Newer != "" {
		l.Newer = link("newer", p.Newer)
	}
	return l
}

func (h *handler) runs(w http.ResponseWriter, r *http.Request, rv Reviewer) {
	ctx := r.Context()
	f, bad := parseFilters(r)
	if bad == "" && f.Status != "" && !slices.Contains(runStatuses, bindings.RunStatus(f.Status)) {
		bad = "unknown status"
	}
	if bad != "" {
		http.Error(w, bad, http.StatusBadRequest)
		return
	}
	rows, more, err := h.allRuns(ctx, rv, f)
	if err != nil {
		h.storeError(w, r, rv, err)
		return
	}
	p := paginate(rows, f, false, more)
	for i := range p.Rows {
		if row := &p.Rows[i]; row.Agent == "" {
			if snap, err := h.opts.Store.Read(ctx, row.Run.TenantID, row.Run.ID); err == nil {
				row.Agent = snap.AgentID + "@" + snap.AgentVersion
			}
		}
	}
	statuses := make([]string, len(runStatuses))
	for i, s := range runStatuses {
		statuses[i] = string(s)
	}
	h.render(w, r, http.StatusOK, "runs", page{Title: "Runs", Nav: "runs", Reviewer: rv, Data: newList(f, p, statuses, nil)})
}

// runPage is what the run page's template gets.
type runPage struct {
	Run          bindings.Run
	Agent        string
	Conversation string
	Steps        []stepRow
	StepCount    int
	Wall         string
	Older, Newer int // step paging: the first step of the next and previous pages (0: none)
	Total        bindings.Usage
	Approvals    []approvalView
	Provenance   *bindings.ProvenanceRecord
	ProvJSON     string
	Verified     string
	VerifyOK     bool
	NoProvenance string
	// Children are the run's child runs (its sub-agent calls), newest
	// first; MoreChildren says there are more than the page shows.
	Children     []childRow
	MoreChildren bool
}

// childRow is one child run on the run page, with the pending approvals
// of a suspended one (what its parent waits on).
type childRow struct {
	Run     bindings.Run
	Agent   string
	Pending []bindings.Approval
}

// maxChildren caps the child runs the run page lists.
const maxChildren = 200

// children reads the first maxChildren child runs of run, each with the
// agent of its snapshot.
func (h *handler) children(ctx context.Context, tenant, runID string) ([]childRow, bool, error) {
	page, err := h.opts.Store.ListRuns(ctx, bindings.ListRunsInput{TenantID: tenant, ParentRunID: runID, Limit: maxChildren})
	if err != nil {
		return nil, false, err
	}
	rows := make([]childRow, len(page.Runs))
	for i, c := range page.Runs {
		rows[i].Run = c
		if snap, err := h.opts.Store.Read(ctx, tenant, c.ID); err == nil {
			rows[i].Agent = snap.AgentID + "@" + snap.AgentVersion
		}
		if c.Status != bindings.RunSuspended {
			continue
		}
		list, err := h.opts.Store.ListApprovals(ctx, tenant, c.ID)
		if err != nil {
			return nil, false, err
		}
		for _, a := range list {
			if a.Status == bindings.ApprovalPending {
				rows[i].Pending = append(rows[i].Pending, a)
			}
		}
	}
	return rows, page.Next != "", nil
}

// record serves the page of the record r's path names ({tenant}, {id}):
// build reads it from the store and makes the page, and a store error it
// returns is answered as storeError answers it.
func (h *handler) record(w http.ResponseWriter, r *http.Request, rv Reviewer, name string,
	build func(ctx context.Context, r *http.Request, rv Reviewer, tenant, id string) (page, error)) {
	tenant, id, ok := h.pathRecord(w, r, rv)
	if !ok {
		return
	}
	p, err := build(r.Context(), r, rv, tenant, id)
	if err != nil {
		h.storeError(w, r, rv, err)
		return
	}
	h.render(w, r, http.StatusOK, name, p)
}

func (h *handler) run(w http.ResponseWriter, r *http.Request, rv Reviewer) {
	h.record(w, r, rv, "run", h.runPage)
}

// runPage reads run id of tenant, its journal, approvals and children, and
// makes its page.
func (h *handler) runPage(ctx context.Context, r *http.Request, rv Reviewer, tenant, id string) (page, error) {
	run, err := h.opts.Store.GetRun(ctx, tenant, id)
	if err != nil {
		return page{}, err
	}
	entries, err := h.opts.Store.ReadJournal(ctx, tenant, id)
	if err != nil {
		return page{}, err
	}
	approvals, err := h.opts.Store.ListApprovals(ctx, tenant, id)
	if err != nil {
		return page{}, err
	}
	now := h.opts.Now()
	var d runPage
	d.Run = run
	if d.Children, d.MoreChildren, err = h.children(ctx, tenant, id); err != nil {
		return page{}, err
	}
	if snap, err := h.opts.Store.Read(ctx, tenant, id); err == nil {
		d.Agent, d.Conversation = snap.AgentID+"@"+snap.AgentVersion, snap.ConversationID
	}
	byID := map[string]approvalView{}
	for _, a := range approvals {
		v := h.view(ctx, rv, a, now)
		d.Approvals = append(d.Approvals, v)
		byID[a.Request.ID] = v
	}
	rows, wall := steps(run, entries, byID, now)
	d.StepCount, d.Wall = len(rows), duration(wall)
	for _, s := range rows {
		if s.Usage != nil {
			d.Total = d.Total.Add(*s.Usage)
		}
	}
	from, _ := strconv.Atoi(r.URL.Query().Get("from"))
	from = max(0, min(from, len(rows)))
	to := min(from+stepsPerPage, len(rows))
	d.Steps = rows[from:to]
	if to < len(rows) {
		d.Older = to
	}
	if from > 0 {
		d.Newer = max(0, from-stepsPerPage) + 1 // +1: 0 is "none"
	}
	for _, e := range entries {
		if e.Node == turn.NodePersistProvenance && len(e.Output) > 0 && string(e.Output) != "null" {
			var rec bindings.ProvenanceRecord
			if json.Unmarshal(e.Output, &rec) == nil && rec.RunID != "" {
				d.Provenance = &rec
			}
		}
	}
	if d.Provenance != nil {
		d.ProvJSON = pretty(mustJSON(d.Provenance))
		switch {
		case len(d.Provenance.Signature) == 0:
			d.Verified = "unsigned: the turn had no signing keys"
		case h.opts.Keys == nil:
			d.Verified = "not checked: the console has no key provider"
		default:
			if err := turn.VerifyProvenance(ctx, *d.Provenance, h.opts.Keys); err != nil {
				d.Verified = "signature does NOT verify: " + err.Error()
			} else {
				d.Verified, d.VerifyOK = "signature verifies (key "+d.Provenance.KeyID+")", true
			}
		}
	} else {
		switch run.Status {
		case bindings.RunCompleted:
			d.NoProvenance = "This run completed without a provenance record: it was a dry run or ran without a provenance emitter."
		case bindings.RunFailed:
			d.NoProvenance = "This run failed before its provenance was recorded."
		case bindings.RunSuspended:
			d.NoProvenance = "No provenance record yet: the run waits on an approval, and its provenance is recorded when it finishes."
		default:
			d.NoProvenance = "No provenance record yet: the run has not finished."
		}
	}
	p := page{Title: "Run " + id, Nav: "runs", Reviewer: rv, Data: d}
	if !finished(run.Status) {
		p.Events = h.opts.BasePath + "/events?" + url.Values{"run": {tenant + "/" + id}, "since": {runState(run, entries)}}.Encode()
	}
	return p, nil
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

var conversationStatuses = []string{string(bindings.ConversationOpen), string(bindings.ConversationClosed)}

func (h *handler) conversations(w http.ResponseWriter, r *http.Request, rv Reviewer) {
	f, bad := parseFilters(r)
	if bad == "" && f.Status != "" && !slices.Contains(conversationStatuses, f.Status) {
		bad = "unknown status"
	}
	if bad != "" {
		http.Error(w, bad, http.StatusBadRequest)
		return
	}
	rows, more, err := h.allConversations(r.Context(), rv, f)
	if err != nil {
		h.storeError(w, r, rv, err)
		return
	}
	h.render(w, r, http.StatusOK, "conversations", page{Title: "Conversations", Nav: "conversations", Reviewer: rv,
		Data: newList(f, paginate(rows, f, false, more), conversationStatuses, nil)})
}

func (h *handler) conversation(w http.ResponseWriter, r *http.Request, rv Reviewer) {
	h.record(w, r, rv, "conversation", h.conversationPage)
}

// conversationPage reads conversation id of tenant and its first messages,
// and makes its page.
func (h *handler) conversationPage(ctx context.Context, _ *http.Request, rv Reviewer, tenant, id string) (page, error) {
	c, err := h.opts.Store.GetConversation(ctx, tenant, id)
	if err != nil {
		return page{}, err
	}
	msgs, err := h.opts.Store.ReadMessages(ctx, bindings.ReadMessagesInput{TenantID: tenant, ConversationID: id, Limit: 200})
	if err != nil {
		return page{}, err
	}
	var runs []string
	for _, m := range msgs {
		if m.RunID != "" && !slices.Contains(runs, m.RunID) {
			runs = append(runs, m.RunID)
		}
	}
	return page{Title: "Conversation " + id, Nav: "conversations", Reviewer: rv,
		Data: struct {
			C        bindings.Conversation
			Messages []bindings.ConversationMessage
			Runs     []string
		}{c, msgs, runs}}, nil
}
