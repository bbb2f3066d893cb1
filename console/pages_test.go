package console_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/console"
	"github.com/kindgi/agents/memstore"
)

var ops = [3]string{"ops", "admin", "acme"}

// stuckStore is memstore whose runs carry a LastError, as a store that
// records failed drives fills it.
type stuckStore struct {
	*memstore.Store
	last *bindings.RunError
}

func (s stuckStore) GetRun(ctx context.Context, tenant, id string) (bindings.Run, error) {
	r, err := s.Store.GetRun(ctx, tenant, id)
	r.LastError = s.last
	return r, err
}

// TestRunPageShowsTheLastErrorOfAStuckRun: a running run whose drives
// keep failing shows the last failure's code, message, attempts and time.
func TestRunPageShowsTheLastErrorOfAStuckRun(t *testing.T) {
	ms := memstore.New(nil)
	startRun(t, ms, "acme", "run-stuck")
	at := time.Date(2026, 12, 1, 10, 30, 0, 0, time.UTC)
	h, err := console.New(console.Options{Store: stuckStore{ms, &bindings.RunError{Code: "persistence-error", Message: "the database refused: too many connections", At: at, Attempts: 4}},
		Authenticate: headerAuth, RefreshSeconds: -1})
	if err != nil {
		t.Fatal(err)
	}
	body := do(h, "GET", "/runs/acme/run-stuck", ops, nil).Body.String()
	for _, want := range []string{`id="last-error"`, "persistence-error", "the database refused: too many connections", "4 failed drives", "2026-12-01 10:30:00 UTC"} {
		if !strings.Contains(body, want) {
			t.Errorf("the stuck run's page lacks %q", want)
		}
	}
	h2, _ := console.New(console.Options{Store: ms, Authenticate: headerAuth, RefreshSeconds: -1})
	if body := do(h2, "GET", "/runs/acme/run-stuck", ops, nil).Body.String(); strings.Contains(body, "last-error") {
		t.Error("a run without LastError shows one")
	}
}

// TestNotFoundPageHasTheNavigation: an unknown path, another tenant's run
// and an unknown run all answer 404 with the navigation for a signed-in
// reviewer; a request without a reviewer gets a bare 404 (not the login
// redirect: browsers ask for /favicon.ico).
func TestNotFoundPageHasTheNavigation(t *testing.T) {
	s := memstore.New(nil)
	park(t, s, "globex", "run-g", "standard")
	h := newConsole(t, s)
	for _, path := range []string{"/no/such/page", "/runs/globex/run-g", "/runs/acme/nope", "/conversations/acme/nope"} {
		w := do(h, "GET", path, ops, nil)
		if w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), `nav aria-label="Sections"`) || !strings.Contains(w.Body.String(), "<h1>Not found</h1>") {
			t.Errorf("GET %s = %d, want the 404 page with the navigation:\n%s", path, w.Code, w.Body.String())
		}
		if strings.Contains(w.Body.String(), "run-g") {
			t.Errorf("GET %s tells of another tenant's run", path)
		}
	}
	if w := do(h, "GET", "/favicon.ico", [3]string{}, nil); w.Code != http.StatusNotFound || strings.Contains(w.Body.String(), "Sections") {
		t.Errorf("GET /favicon.ico signed out = %d", w.Code)
	}
}

// TestProvenanceWordingFitsTheRunsState: a run without a provenance
// record is told why in words that fit its status.
func TestProvenanceWordingFitsTheRunsState(t *testing.T) {
	s := memstore.New(nil)
	ctx := context.Background()
	h := newConsole(t, s)
	for status, want := range map[bindings.RunStatus]string{
		bindings.RunCompleted: "completed without a provenance record",
		bindings.RunFailed:    "failed before its provenance was recorded",
		bindings.RunSuspended: "waits on an approval",
		bindings.RunRunning:   "has not finished",
	} {
		id := "run-" + string(status)
		if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: "acme", RunID: id, FlowID: "turn", FlowVersion: "1"}); err != nil {
			t.Fatal(err)
		}
		if status != bindings.RunRunning {
			if err := s.SetRunStatus(ctx, "acme", id, status); err != nil {
				t.Fatal(err)
			}
		}
		body := do(h, "GET", "/runs/acme/"+id, ops, nil).Body.String()
		if !strings.Contains(body, want) {
			t.Errorf("a %s run's page lacks %q", status, want)
		}
		if status == bindings.RunCompleted && strings.Contains(body, "has not finished") {
			t.Error("a completed run is told it has not finished")
		}
	}
}

// TestDecidedApprovalShowsWhenDecided: a decided approval shows who
// decided and when, and no time left or expiry.
func TestDecidedApprovalShowsWhenDecided(t *testing.T) {
	s := memstore.New(nil)
	id := park(t, s, "acme", "run-1", "standard")
	if _, err := s.ResolveApproval(context.Background(), "acme", id, bindings.ApprovalDecision{Approved: true, Reviewer: "rita", Comment: "fine"}); err != nil {
		t.Fatal(err)
	}
	body := do(newConsole(t, s), "GET", "/?tab=decided", ops, nil).Body.String()
	if !strings.Contains(body, `class="decided">approved by <strong class="reviewer">rita</strong>`) || !strings.Contains(body, "decided ") {
		t.Errorf("the decided approval does not say who decided when:\n%s", body)
	}
	if strings.Contains(body, "Time left") || strings.Contains(body, "Expires") || strings.Contains(body, "expires in") {
		t.Errorf("a decided approval shows an expiry:\n%s", body)
	}
}

// TestApprovalsAreCompactFilteredPagedAndCounted: several pending
// approvals are listed closed (one line each), filtered by tool and id,
// paged, and counted in the navigation's badge on every page.
func TestApprovalsAreCompactFilteredPagedAndCounted(t *testing.T) {
	s := memstore.New(nil)
	for i := range 55 {
		park(t, s, "acme", fmt.Sprintf("run-%02d", i), "standard")
	}
	h := newConsole(t, s)
	body := do(h, "GET", "/", ops, nil).Body.String()
	if n := strings.Count(body, `<details class="card approval"`); n != 50 {
		t.Errorf("%d approvals on the first page, want 50", n)
	}
	if strings.Contains(body, `approval" id="approval-ap-run-00" open`) {
		t.Error("approvals are open by default")
	}
	if !strings.Contains(body, "1–50 of 55") || !strings.Contains(body, `rel="next"`) {
		t.Errorf("no count or next link on the approvals page")
	}
	for _, path := range []string{"/", "/runs", "/conversations"} {
		if b := do(h, "GET", path, ops, nil).Body.String(); !strings.Contains(b, `id="pending-count" aria-label="55 pending">55<`) {
			t.Errorf("GET %s lacks the pending badge", path)
		}
	}
	one := do(h, "GET", "/?id=run-07", ops, nil).Body.String()
	if !strings.Contains(one, "1–1 of 1") || !strings.Contains(one, `id="approval-ap-run-07" open`) {
		t.Errorf("lookup by run id does not show the one approval open")
	}
	if b := do(h, "GET", "/?tool=acme.other", ops, nil).Body.String(); !strings.Contains(b, "none of 0") {
		t.Errorf("the tool filter keeps other tools' approvals")
	}
	if w := do(h, "GET", "/?from=yesterday", ops, nil); w.Code != http.StatusBadRequest {
		t.Errorf("a bad date = %d, want 400", w.Code)
	}
}

// TestConversationsPageAndFilter: conversations are counted and paged
// newest first, and filtered by agent.
func TestConversationsPageAndFilter(t *testing.T) {
	s := memstore.New(nil)
	ctx := context.Background()
	for i := range 60 {
		agentID := "acme.mailer"
		if i%3 == 0 {
			agentID = "acme.writer"
		}
		if _, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: "acme", ProjectID: "p", AgentID: agentID, AgentVersion: "1.0.0", Title: fmt.Sprintf("talk %02d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	h := newConsole(t, s)
	body := do(h, "GET", "/conversations", ops, nil).Body.String()
	if !strings.Contains(body, "1–50 of 60") || strings.Count(body, "<tr><td class=\"id\">") != 50 {
		t.Errorf("the first page of conversations:\n%s", body)
	}
	if b := do(h, "GET", "/conversations?agent=acme.writer", ops, nil).Body.String(); !strings.Contains(b, "1–20 of 20") || strings.Contains(b, "acme.mailer@") {
		t.Errorf("the agent filter:\n%s", b)
	}
}

// TestLongJournalsArePagedAndLongValuesFolded: a run with 700 steps shows
// 300 at a time with a link to the later ones, and a long tool output is
// folded behind "show all".
func TestLongJournalsArePagedAndLongValuesFolded(t *testing.T) {
	s := memstore.New(nil)
	ctx := context.Background()
	startRun(t, s, "acme", "run-long")
	long, _ := json.Marshal(map[string]string{"text": strings.Repeat("lorem ipsum ", 400)})
	for i := range 700 {
		e := bindings.JournalEntry{Key: fmt.Sprintf("step-%03d", i), Node: "custom", Status: bindings.StepCompleted, Output: json.RawMessage(`{"n":1}`)}
		if i == 0 {
			e.Output = long
		}
		if _, _, err := s.AppendStep(ctx, bindings.AppendStepInput{TenantID: "acme", RunID: "run-long", Entry: e}); err != nil {
			t.Fatal(err)
		}
	}
	h := newConsole(t, s)
	body := do(h, "GET", "/runs/acme/run-long", ops, nil).Body.String()
	if n := strings.Count(body, `<li class="step`); n != 300 {
		t.Errorf("%d step rows on the first page, want 300", n)
	}
	if !strings.Contains(body, `href="?from=300"`) || !strings.Contains(body, "<summary>show all</summary>") {
		t.Error("no link to the later steps, or the long output is not folded")
	}
	last := do(h, "GET", "/runs/acme/run-long?from=600", ops, nil).Body.String()
	if n := strings.Count(last, `<li class="step`); n != 100 || !strings.Contains(last, "step-699") || !strings.Contains(last, `href="?from=300"`) {
		t.Errorf("the last page of steps has %d rows", n)
	}
}

// TestEventsTellARunsPageOfANewStep: the run page's event stream sends a
// change when a step is journaled (memstore has a RunWatcher; the journal
// growing is seen by the stream's check), and ends once the run ended;
// another tenant's run has no stream.
func TestEventsTellARunsPageOfANewStep(t *testing.T) {
	s := memstore.New(nil)
	ctx := context.Background()
	startRun(t, s, "acme", "run-live")
	h, err := console.New(console.Options{Store: s, Authenticate: headerAuth, RefreshSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func(target string) *http.Response {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+target, nil)
		req.Header.Set("X-Reviewer", "ops")
		req.Header.Set("X-Tenants", "acme")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if resp := get("/events?run=globex/run-live"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("another tenant's stream = %d, want 404", resp.StatusCode)
	}
	resp := get("/events?run=acme/run-live")
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	if _, _, err := s.AppendStep(ctx, bindings.AppendStepInput{TenantID: "acme", RunID: "run-live", Entry: bindings.JournalEntry{Key: "setup", Node: "setup", Status: bindings.StepCompleted}}); err != nil {
		t.Fatal(err)
	}
	await := func(want, after string) {
		t.Helper()
		timeout := time.After(15 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the stream ended without %q", want)
				}
				if l == want {
					return
				}
			case <-timeout:
				t.Fatalf("no %q after %s", want, after)
			}
		}
	}
	await("event: change", "a step was journaled")
	if err := s.SetRunStatus(ctx, "acme", "run-live", bindings.RunCompleted); err != nil {
		t.Fatal(err)
	}
	await("event: end", "the run completed")
	for range lines { // the server ends the stream
	}
}

// TestRunsFilterByToolAndTimeAndID: the runs page keeps the runs that
// called a tool, that were created in a date range, or whose id holds the
// lookup.
func TestRunsFilterByToolAndTimeAndID(t *testing.T) {
	s := memstore.New(nil)
	ctx := context.Background()
	for _, id := range []string{"run-mail", "run-calc"} {
		if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: "acme", RunID: id, FlowID: "turn", FlowVersion: "1"}); err != nil {
			t.Fatal(err)
		}
	}
	out := json.RawMessage(`[{"id":"call_1","key":"agent-loop/1/dispatch-tools/call_1","toolId":"acme.send-email","toolVersion":"2.1.0","arguments":{}}]`)
	if _, _, err := s.AppendStep(ctx, bindings.AppendStepInput{TenantID: "acme", RunID: "run-mail", Entry: bindings.JournalEntry{Key: "agent-loop/1/dispatch-tools", Node: "dispatch-tools", Status: bindings.StepCompleted, Output: out}}); err != nil {
		t.Fatal(err)
	}
	h := newConsole(t, s)
	if b := do(h, "GET", "/runs?tool=acme.send-email", ops, nil).Body.String(); !strings.Contains(b, "run-mail") || strings.Contains(b, "run-calc") || !strings.Contains(b, "1–1 of 1") {
		t.Errorf("the tool filter:\n%s", b)
	}
	if b := do(h, "GET", "/runs?id=calc", ops, nil).Body.String(); !strings.Contains(b, "run-calc") || strings.Contains(b, "run-mail") {
		t.Errorf("the id lookup:\n%s", b)
	}
	now := time.Now().UTC()
	from, to := now.AddDate(0, 0, -1).Format(time.DateOnly), now.AddDate(0, 0, 1).Format(time.DateOnly)
	if b := do(h, "GET", "/runs?from="+from+"&to="+to, ops, nil).Body.String(); !strings.Contains(b, "1–2 of 2") {
		t.Errorf("the runs of yesterday to tomorrow:\n%s", b)
	}
	if b := do(h, "GET", "/runs?to=2020-01-01", ops, nil).Body.String(); !strings.Contains(b, "none of 0") {
		t.Errorf("runs created by 2020:\n%s", b)
	}
}

// TestFoldKeepsRunesWhole: a long value folded mid-rune keeps whole runes
// in its head.
func TestFoldKeepsRunesWhole(t *testing.T) {
	s := memstore.New(nil)
	ctx := context.Background()
	startRun(t, s, "acme", "run-u")
	text, _ := json.Marshal("x" + strings.Repeat("é", 2000)) // a rune boundary falls between bytes
	if _, _, err := s.AppendStep(ctx, bindings.AppendStepInput{TenantID: "acme", RunID: "run-u", Entry: bindings.JournalEntry{Key: "render-prompt", Node: "render-prompt", Status: bindings.StepCompleted, Output: text}}); err != nil {
		t.Fatal(err)
	}
	body := do(newConsole(t, s), "GET", "/runs/acme/run-u", ops, nil).Body.String()
	if !strings.Contains(body, "<summary>show all</summary>") || !utf8.ValidString(body) || strings.Contains(body, "\uFFFD") {
		t.Error("the folded prompt is not folded, or breaks a rune")
	}
}

// TestEventsTellTheApprovalsPageOfANewApproval: the pending approvals
// page's stream sends a change when an approval is asked for after the
// page was rendered (its since).
func TestEventsTellTheApprovalsPageOfANewApproval(t *testing.T) {
	s := memstore.New(nil)
	h, err := console.New(console.Options{Store: s, Authenticate: headerAuth, RefreshSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	page := do(h, "GET", "/", ops, nil).Body.String()
	m := regexp.MustCompile(`data-events="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the approvals page has no event stream:\n%s", page)
	}
	park(t, s, "acme", "run-new", "standard") // after the page
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+html.UnescapeString(m[1]), nil)
	req.Header.Set("X-Reviewer", "ops")
	req.Header.Set("X-Tenants", "acme")
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() == "event: change" {
			return
		}
	}
	t.Fatal("the stream ended without a change")
}
