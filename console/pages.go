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
	runsPerPage      = 50
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
	}
	pages := map[string]*template.Template{}
	for _, name := range []string{"approvals", "runs", "run", "conversations", "conversation", "login"} {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/"+name+".html")
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
	Data     any
}

func (h *handler) render(w http.ResponseWriter, status int, name string, p page) {
	p.Refresh = h.opts.RefreshSeconds
	if p.Base == "" {
		p.Base = h.opts.BasePath
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
		v.Agent = snap.AgentID + "@" + snap.AgentVersion
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
	tab := r.URL.Query().Get("tab")
	pending := tab != "decided"
	now := h.opts.Now()
	var all []bindings.Approval
	for _, t := range rv.TenantIDs {
		list, err := h.approvalsOf(ctx, t, pending)
		if err != nil {
			storeError(w, err)
			return
		}
		all = append(all, list...)
	}
	if pending {
		slices.SortStableFunc(all, func(a, b bindings.Approval) int { return a.Request.CreatedAt.Compare(b.Request.CreatedAt) })
	} else {
		slices.SortStableFunc(all, func(a, b bindings.Approval) int { return decidedAt(b).Compare(decidedAt(a)) })
	}
	views := make([]approvalView, 0, len(all))
	for _, a := range all {
		v := h.view(ctx, rv, a, now)
		if pending && a.Request.ConversationID != "" {
			msgs, err := h.opts.Store.ReadMessages(ctx, bindings.ReadMessagesInput{TenantID: a.Request.TenantID, ConversationID: a.Request.ConversationID, Limit: contextMessages})
			if err == nil {
				v.Messages = msgs
			}
		}
		views = append(views, v)
	}
	title := "Pending approvals"
	if !pending {
		title = "Decided and expired approvals"
	}
	h.render(w, http.StatusOK, "approvals", page{Title: title, Nav: "approvals", Reviewer: rv, CSRF: h.csrf(rv), Flash: flash(r.URL.Query().Get("done")),
		Data: struct {
			Pending   bool
			Approvals []approvalView
		}{pending, views}})
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
	tenant, id := r.PathValue("tenant"), r.PathValue("id")
	if !allowed(rv, tenant) {
		notFound(w)
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
		storeError(w, err)
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
		storeError(w, err)
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

func (h *handler) runs(w http.ResponseWriter, r *http.Request, rv Reviewer) {
	ctx := r.Context()
	q := r.URL.Query()
	status, agentID := q.Get("status"), strings.TrimSpace(q.Get("agent"))
	var statuses []bindings.RunStatus
	if status != "" {
		if !slices.Contains(runStatuses, bindings.RunStatus(status)) {
			http.Error(w, "unknown status", http.StatusBadRequest)
			return
		}
		statuses = []bindings.RunStatus{bindings.RunStatus(status)}
	}
	var rows []runRow
	for _, t := range rv.TenantIDs {
		p, err := h.opts.Store.ListRuns(ctx, bindings.ListRunsInput{TenantID: t, Statuses: statuses, Limit: runsPerPage})
		if err != nil {
			storeError(w, err)
			return
		}
		for _, run := range p.Runs {
			row := runRow{Run: run}
			snap, err := h.opts.Store.Read(ctx, t, run.ID)
			if err == nil {
				row.Agent = snap.AgentID + "@" + snap.AgentVersion
			}
			if agentID != "" && (err != nil || snap.AgentID != agentID) {
				continue
			}
			rows = append(rows, row)
		}
	}
	slices.SortStableFunc(rows, func(a, b runRow) int { return b.Run.CreatedAt.Compare(a.Run.CreatedAt) })
	h.render(w, http.StatusOK, "runs", page{Title: "Runs", Nav: "runs", Reviewer: rv, CSRF: h.csrf(rv),
		Data: struct {
			Status   string
			Agent    string
			Statuses []bindings.RunStatus
			Runs     []runRow
		}{status, agentID, runStatuses, rows}})
}

// stepView is one journal entry of the run page.
type stepView struct {
	E        bindings.JournalEntry
	Took     string
	Model    string
	Tool     string
	Usage    *bindings.Usage
	Cost     string
	ErrCode  string
	ErrText  string
	Critical bool
}

// stepOutput is what the console reads out of a step's output, whatever
// the step: a model call's model and usage, a tool call's tool.
type stepOutput struct {
	Model       string          `json:"model"`
	Usage       *bindings.Usage `json:"usage"`
	ToolID      string          `json:"toolId"`
	ToolVersion string          `json:"toolVersion"`
}

func (h *handler) run(w http.ResponseWriter, r *http.Request, rv Reviewer) {
	ctx := r.Context()
	tenant, id := r.PathValue("tenant"), r.PathValue("id")
	if !allowed(rv, tenant) {
		notFound(w)
		return
	}
	run, err := h.opts.Store.GetRun(ctx, tenant, id)
	if err != nil {
		storeError(w, err)
		return
	}
	entries, err := h.opts.Store.ReadJournal(ctx, tenant, id)
	if err != nil {
		storeError(w, err)
		return
	}
	approvals, err := h.opts.Store.ListApprovals(ctx, tenant, id)
	if err != nil {
		storeError(w, err)
		return
	}
	now := h.opts.Now()
	var d struct {
		Run          bindings.Run
		Agent        string
		Conversation string
		Steps        []stepView
		Total        bindings.Usage
		Approvals    []approvalView
		Provenance   *bindings.ProvenanceRecord
		ProvJSON     string
		Verified     string
		VerifyOK     bool
	}
	d.Run = run
	if snap, err := h.opts.Store.Read(ctx, tenant, id); err == nil {
		d.Agent, d.Conversation = snap.AgentID+"@"+snap.AgentVersion, snap.ConversationID
	}
	prev := run.CreatedAt
	for _, e := range entries {
		s := stepView{E: e, Took: e.At.Sub(prev).Round(time.Microsecond).String()}
		prev = e.At
		if e.Error != nil {
			s.ErrCode, s.ErrText = e.Error.Code, e.Error.Message
		}
		var out stepOutput
		if len(e.Output) > 0 && e.Output[0] == '{' && json.Unmarshal(e.Output, &out) == nil {
			s.Model, s.Usage = out.Model, out.Usage
			if out.ToolID != "" {
				s.Tool = out.ToolID + "@" + out.ToolVersion
			}
			if s.Usage != nil && e.Node == turn.NodeModelCall {
				d.Total = d.Total.Add(*s.Usage)
			}
			if s.Usage != nil {
				s.Cost = fmt.Sprintf("$%.6f", s.Usage.CostUsd)
			}
		}
		if e.Node == turn.NodePersistProvenance && len(e.Output) > 0 && string(e.Output) != "null" {
			var rec bindings.ProvenanceRecord
			if json.Unmarshal(e.Output, &rec) == nil && rec.RunID != "" {
				d.Provenance = &rec
			}
		}
		d.Steps = append(d.Steps, s)
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
	}
	for _, a := range approvals {
		d.Approvals = append(d.Approvals, h.view(ctx, rv, a, now))
	}
	h.render(w, http.StatusOK, "run", page{Title: "Run " + id, Nav: "runs", Reviewer: rv, CSRF: h.csrf(rv), Data: d})
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

func (h *handler) conversations(w http.ResponseWriter, r *http.Request, rv Reviewer) {
	ctx := r.Context()
	var list []bindings.Conversation
	for _, t := range rv.TenantIDs {
		p, err := h.opts.Store.ListConversationsPage(ctx, bindings.ListConversationsPageInput{ListConversationsInput: bindings.ListConversationsInput{TenantID: t, Limit: runsPerPage}})
		if err != nil {
			storeError(w, err)
			return
		}
		list = append(list, p.Conversations...)
	}
	slices.SortStableFunc(list, func(a, b bindings.Conversation) int { return b.LastActivityAt.Compare(a.LastActivityAt) })
	h.render(w, http.StatusOK, "conversations", page{Title: "Conversations", Nav: "conversations", Reviewer: rv, CSRF: h.csrf(rv), Data: list})
}

func (h *handler) conversation(w http.ResponseWriter, r *http.Request, rv Reviewer) {
	ctx := r.Context()
	tenant, id := r.PathValue("tenant"), r.PathValue("id")
	if !allowed(rv, tenant) {
		notFound(w)
		return
	}
	c, err := h.opts.Store.GetConversation(ctx, tenant, id)
	if err != nil {
		storeError(w, err)
		return
	}
	msgs, err := h.opts.Store.ReadMessages(ctx, bindings.ReadMessagesInput{TenantID: tenant, ConversationID: id, Limit: 200})
	if err != nil {
		storeError(w, err)
		return
	}
	var runs []string
	for _, m := range msgs {
		if m.RunID != "" && !slices.Contains(runs, m.RunID) {
			runs = append(runs, m.RunID)
		}
	}
	h.render(w, http.StatusOK, "conversation", page{Title: "Conversation " + id, Nav: "conversations", Reviewer: rv, CSRF: h.csrf(rv),
		Data: struct {
			C        bindings.Conversation
			Messages []bindings.ConversationMessage
			Runs     []string
		}{c, msgs, runs}})
}
