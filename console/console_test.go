package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/console"
	"github.com/kindgi/agents/memstore"
)

// startRun stores a new run of tenant, of the flow "turn" 1.
func startRun(t *testing.T, s *memstore.Store, tenant, runID string) {
	t.Helper()
	if _, err := s.StartRun(context.Background(), bindings.StartRunInput{TenantID: tenant, RunID: runID, FlowID: "turn", FlowVersion: "1"}); err != nil {
		t.Fatal(err)
	}
}

// agentRun stores a new run of tenant with a snapshot naming the agent
// agentID at 1.0.0.
func agentRun(t *testing.T, s *memstore.Store, tenant, runID, agentID string) {
	t.Helper()
	startRun(t, s, tenant, runID)
	if err := s.Write(context.Background(), bindings.RunSnapshotWriteInput{TenantID: tenant, RunID: runID, FlowID: "turn", FlowVersion: "1",
		AgentID: agentID, AgentVersion: "1.0.0", Input: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
}

// park stores a suspended run of tenant with one pending approval asking
// role to approve acme.send-email, as a turn parked on a gate leaves it.
func park(t *testing.T, s *memstore.Store, tenant, runID, role string) string {
	t.Helper()
	ctx := context.Background()
	agentRun(t, s, tenant, runID, "acme.mailer")
	id := "ap-" + runID
	if _, err := s.RequestApproval(ctx, bindings.ApprovalRequest{TenantID: tenant, ID: id, RunID: runID, ToolCallID: "call_1",
		ToolID: "acme.send-email", ToolVersion: "2.1.0", Arguments: json.RawMessage(`{"to":"legal@globex.test","subject":"NDA draft"}`),
		ReviewerRole: role, ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetRunStatus(ctx, tenant, runID, bindings.RunSuspended); err != nil {
		t.Fatal(err)
	}
	return id
}

// headerAuth authenticates by test headers: X-Reviewer, X-Role, X-Tenants.
func headerAuth(r *http.Request) (console.Reviewer, error) {
	id := r.Header.Get("X-Reviewer")
	if id == "" {
		return console.Reviewer{}, errors.New("no reviewer")
	}
	return console.Reviewer{ID: id, Role: r.Header.Get("X-Role"), TenantIDs: strings.Split(r.Header.Get("X-Tenants"), ",")}, nil
}

func newConsole(t *testing.T, s *memstore.Store) http.Handler {
	t.Helper()
	h, err := console.New(console.Options{Store: s, Authenticate: headerAuth, RefreshSeconds: -1})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func do(h http.Handler, method, target string, who [3]string, form url.Values) *httptest.ResponseRecorder {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req := httptest.NewRequest(method, target, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if who[0] != "" {
		req.Header.Set("X-Reviewer", who[0])
		req.Header.Set("X-Role", who[1])
		req.Header.Set("X-Tenants", who[2])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

var csrfRE = regexp.MustCompile(`(?:name="csrf" value|name="csrf-token" content)="([^"]+)"`)

func csrfOf(t *testing.T, body string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token in the page:\n%s", body)
	}
	return m[1]
}

var (
	alice = [3]string{"alice", "senior", "acme"}
	bob   = [3]string{"bob", "standard", "acme"}
	eve   = [3]string{"eve", "admin", "globex"}
)

func TestUnauthenticatedIsRefused(t *testing.T) {
	s := memstore.New(nil)
	park(t, s, "acme", "run-1", "standard")
	h := newConsole(t, s)
	for _, target := range []string{"/", "/runs", "/runs/acme/run-1", "/conversations"} {
		if w := do(h, "GET", target, [3]string{}, nil); w.Code != http.StatusUnauthorized {
			t.Errorf("GET %s without a reviewer = %d, want 401", target, w.Code)
		}
	}
	w := do(h, "POST", "/approvals/acme/ap-run-1", [3]string{}, url.Values{"decision": {"approve"}})
	if w.Code != http.StatusUnauthorized {
		t.Errorf("POST without a reviewer = %d, want 401", w.Code)
	}
	if a, _ := s.GetApproval(context.Background(), "acme", "ap-run-1"); a.Status != bindings.ApprovalPending {
		t.Errorf("approval is %s, want pending", a.Status)
	}
}

func TestSecurityHeaders(t *testing.T) {
	h := newConsole(t, memstore.New(nil))
	w := do(h, "GET", "/", alice, nil)
	if w.Code != 200 {
		t.Fatalf("GET / = %d", w.Code)
	}
	csp := w.Header().Get("Content-Security-Policy")
	for _, want := range []string{"frame-ancestors 'none'", "script-src 'self'", "default-src 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") {
		t.Errorf("CSP %q allows inline code", csp)
	}
	if got := w.Header().Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("X-Content-Type-Options = %q", got)
	}
	if got := w.Header().Get("Referrer-Policy"); got != "no-referrer" {
		t.Errorf("Referrer-Policy = %q", got)
	}
	if body := w.Body.String(); strings.Contains(body, "<script>") || !strings.Contains(body, "Nothing waits for you") {
		t.Errorf("home page has inline script or no empty state:\n%s", body)
	}
	if w := do(h, "GET", "/assets/console.js", alice, nil); w.Code != 200 || !strings.Contains(w.Body.String(), "setInterval") {
		t.Errorf("GET /assets/console.js = %d", w.Code)
	}
}

func TestApprovalsAreTenantScoped(t *testing.T) {
	s := memstore.New(nil)
	park(t, s, "acme", "run-1", "standard")
	park(t, s, "globex", "run-9", "standard")
	h := newConsole(t, s)
	body := do(h, "GET", "/", alice, nil).Body.String()
	if !strings.Contains(body, "ap-run-1") || strings.Contains(body, "ap-run-9") {
		t.Errorf("acme's reviewer should see run-1's approval only:\n%s", body)
	}
	if !strings.Contains(body, "legal@globex.test") || !strings.Contains(body, "acme.mailer@1.0.0") || !strings.Contains(body, "acme.send-email@2.1.0") {
		t.Errorf("the approval lacks its arguments, agent or tool:\n%s", body)
	}
	body = do(h, "GET", "/", eve, nil).Body.String()
	if strings.Contains(body, "ap-run-1") || !strings.Contains(body, "ap-run-9") {
		t.Errorf("globex's reviewer should see run-9's approval only")
	}
	for _, target := range []string{"/runs/acme/run-1", "/conversations/acme/c1"} {
		if w := do(h, "GET", target, eve, nil); w.Code != http.StatusNotFound {
			t.Errorf("GET %s by another tenant's reviewer = %d, want 404", target, w.Code)
		}
	}
	if body := do(h, "GET", "/runs", eve, nil).Body.String(); strings.Contains(body, "run-1") {
		t.Errorf("the runs page shows another tenant's run")
	}
	// Eve decides acme's approval with a valid token of her own: not found.
	approveRefused(t, h, s, eve, http.StatusNotFound)
}

// approveRefused posts an approval of acme's ap-run-1 as who, with who's
// own CSRF token, and checks the console answers want and the approval
// stays pending.
func approveRefused(t *testing.T, h http.Handler, s *memstore.Store, who [3]string, want int) {
	t.Helper()
	token := csrfOf(t, do(h, "GET", "/runs", who, nil).Body.String())
	w := do(h, "POST", "/approvals/acme/ap-run-1", who, url.Values{"decision": {"approve"}, "csrf": {token}})
	if w.Code != want {
		t.Errorf("POST by %s = %d, want %d", who[0], w.Code, want)
	}
	if a, _ := s.GetApproval(context.Background(), "acme", "ap-run-1"); a.Status != bindings.ApprovalPending {
		t.Errorf("approval is %s after %s's POST, want pending", a.Status, who[0])
	}
}

func TestReviewerBelowTheRoleCannotDecide(t *testing.T) {
	s := memstore.New(nil)
	park(t, s, "acme", "run-1", "senior")
	h := newConsole(t, s)
	body := do(h, "GET", "/", bob, nil).Body.String()
	if !strings.Contains(body, "ap-run-1") {
		t.Fatalf("bob should see the approval")
	}
	if strings.Contains(body, `value="approve"`) || !strings.Contains(body, "needs the <strong>senior</strong> role") {
		t.Errorf("bob (standard) is offered a decision on a senior approval:\n%s", body)
	}
	approveRefused(t, h, s, bob, http.StatusForbidden)
	if body := do(h, "GET", "/", alice, nil).Body.String(); !strings.Contains(body, `value="approve"`) {
		t.Errorf("alice (senior) is not offered the decision")
	}
}

func TestPostWithoutCSRFTokenIsRefused(t *testing.T) {
	s := memstore.New(nil)
	park(t, s, "acme", "run-1", "standard")
	h := newConsole(t, s)
	bobToken := csrfOf(t, do(h, "GET", "/", bob, nil).Body.String())
	for name, form := range map[string]url.Values{
		"no token":          {"decision": {"approve"}},
		"another's token":   {"decision": {"approve"}, "csrf": {bobToken}},
		"a malformed token": {"decision": {"approve"}, "csrf": {"x" + bobToken}},
	} {
		if w := do(h, "POST", "/approvals/acme/ap-run-1", alice, form); w.Code != http.StatusForbidden {
			t.Errorf("%s: POST = %d, want 403", name, w.Code)
		}
	}
	if a, _ := s.GetApproval(context.Background(), "acme", "ap-run-1"); a.Status != bindings.ApprovalPending {
		t.Fatalf("approval is %s after refused POSTs, want pending", a.Status)
	}
	token := csrfOf(t, do(h, "GET", "/", alice, nil).Body.String())
	w := do(h, "POST", "/approvals/acme/ap-run-1", alice, url.Values{"decision": {"deny"}, "reason": {"wrong recipient"}, "csrf": {token}})
	if w.Code != http.StatusSeeOther {
		t.Fatalf("POST with the token = %d %s, want 303", w.Code, w.Body)
	}
	a, _ := s.GetApproval(context.Background(), "acme", "ap-run-1")
	if a.Status != bindings.ApprovalDenied || a.Reviewer != "alice" || a.Comment != "wrong recipient" {
		t.Errorf("decision = %+v, want denied by alice with the reason", a)
	}
	body := do(h, "GET", "/?tab=decided", alice, nil).Body.String()
	if !strings.Contains(body, "wrong recipient") || !strings.Contains(body, "alice") {
		t.Errorf("the decided tab lacks the decision:\n%s", body)
	}
	if w := do(h, "POST", "/approvals/acme/ap-run-1", alice, url.Values{"decision": {"approve"}, "csrf": {token}}); w.Code != http.StatusConflict {
		t.Errorf("deciding again = %d, want 409", w.Code)
	}
}

func TestTokenLogin(t *testing.T) {
	s := memstore.New(nil)
	park(t, s, "acme", "run-1", "standard")
	login, err := console.NewTokenLogin("0123456789abcdef-secret", console.Reviewer{ID: "ops", Role: "admin", TenantIDs: []string{"acme"}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := console.New(console.Options{Store: s, Authenticate: login.Authenticate, Login: login})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	get := func(path string) (int, string) {
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("/")
	if code != 200 || !strings.Contains(body, `name="token"`) {
		t.Fatalf("GET / signed out = %d, want the login form:\n%s", code, body)
	}
	post := func(form url.Values) (*http.Response, string) {
		resp, err := c.PostForm(srv.URL+"/login", form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	if resp, _ := post(url.Values{"token": {"0123456789abcdef-secret"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("login without its CSRF token = %d, want 403", resp.StatusCode)
	}
	_, body = get("/login")
	if resp, _ := post(url.Values{"token": {"wrong-token-wrong-token"}, "csrf": {csrfOf(t, body)}}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("login with a wrong token = %d, want 401", resp.StatusCode)
	}
	_, body = get("/login")
	resp, body := post(url.Values{"token": {"0123456789abcdef-secret"}, "csrf": {csrfOf(t, body)}})
	if resp.StatusCode != 200 || !strings.Contains(body, "ap-run-1") {
		t.Fatalf("after login = %d, want the approvals page:\n%s", resp.StatusCode, body)
	}
	u, _ := url.Parse(srv.URL)
	var session *http.Cookie
	for _, ck := range jar.Cookies(u) {
		if ck.Name == "kindgi_console_session" {
			session = ck
		}
	}
	if session == nil || strings.Contains(session.Value, "secret") {
		t.Fatalf("session cookie = %+v, want one not holding the token", session)
	}
	// The Set-Cookie attributes: HttpOnly and SameSite=Strict.
	req := httptest.NewRequest("GET", "/login", nil)
	w := httptest.NewRecorder()
	login.ServeHTTP(w, req)
	req = httptest.NewRequest("POST", "/login", strings.NewReader(url.Values{"token": {"0123456789abcdef-secret"}, "csrf": {csrfOf(t, w.Body.String())}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, ck := range w.Result().Cookies() {
		req.AddCookie(ck)
	}
	w = httptest.NewRecorder()
	login.ServeHTTP(w, req)
	var set string
	for _, v := range w.Header().Values("Set-Cookie") {
		if strings.HasPrefix(v, "kindgi_console_session=") {
			set = v
		}
	}
	if !strings.Contains(set, "HttpOnly") || !strings.Contains(set, "SameSite=Strict") {
		t.Errorf("session Set-Cookie = %q, want HttpOnly and SameSite=Strict", set)
	}
}

func TestNewChecksOptions(t *testing.T) {
	if _, err := console.New(console.Options{Authenticate: headerAuth}); err == nil {
		t.Error("New without a store succeeded")
	}
	if _, err := console.New(console.Options{Store: memstore.New(nil)}); err == nil {
		t.Error("New without Authenticate succeeded")
	}
}

func TestRunsFilterAndConversationPage(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(nil)
	park(t, s, "acme", "run-1", "standard")
	agentRun(t, s, "acme", "run-2", "acme.researcher")
	if err := s.SetRunStatus(ctx, "acme", "run-2", bindings.RunCompleted); err != nil {
		t.Fatal(err)
	}
	h := newConsole(t, s)
	body := do(h, "GET", "/runs?status=suspended", alice, nil).Body.String()
	if !strings.Contains(body, "run-1") || strings.Contains(body, "run-2") {
		t.Errorf("status filter: want run-1 only")
	}
	body = do(h, "GET", "/runs?agent=acme.researcher", alice, nil).Body.String()
	if strings.Contains(body, ">run-1<") || !strings.Contains(body, ">run-2<") {
		t.Errorf("agent filter: want run-2 only:\n%s", body)
	}
	if w := do(h, "GET", "/runs?status=bogus", alice, nil); w.Code != http.StatusBadRequest {
		t.Errorf("unknown status = %d, want 400", w.Code)
	}
	if body := do(h, "GET", "/runs?status=failed", alice, nil).Body.String(); !strings.Contains(body, "No run matches") {
		t.Errorf("no empty state for an empty filter")
	}

	conv, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: "acme", ProjectID: "p", AgentID: "acme.mailer", AgentVersion: "1.0.0", Title: "NDA"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessage(ctx, bindings.AppendMessageInput{TenantID: "acme", ConversationID: conv.ID, Role: bindings.RoleUser, Content: "Send the draft.", TurnNumber: 1, RunID: "run-1"}); err != nil {
		t.Fatal(err)
	}
	body = do(h, "GET", "/conversations", alice, nil).Body.String()
	if !strings.Contains(body, "/conversations/acme/"+conv.ID) {
		t.Errorf("conversations page lacks the conversation:\n%s", body)
	}
	body = do(h, "GET", "/conversations/acme/"+conv.ID, alice, nil).Body.String()
	if !strings.Contains(body, "Send the draft.") || !strings.Contains(body, `href="/runs/acme/run-1"`) {
		t.Errorf("conversation page lacks the message or the run that wrote it:\n%s", body)
	}
	if w := do(h, "GET", "/conversations/acme/"+conv.ID, eve, nil); w.Code != http.StatusNotFound {
		t.Errorf("another tenant's conversation = %d, want 404", w.Code)
	}
	body = do(h, "GET", "/runs/acme/run-1", alice, nil).Body.String()
	if !strings.Contains(body, "acme.mailer@1.0.0") || !strings.Contains(body, "No provenance record") {
		t.Errorf("run page:\n%s", body)
	}
}

func TestExpiredApprovalIsInTheDecidedTab(t *testing.T) {
	now := time.Now()
	clock := func() time.Time { return now }
	s := memstore.New(&memstore.Options{Now: func() time.Time { return clock() }})
	park(t, s, "acme", "run-1", "standard")
	h := newConsole(t, s)
	token := csrfOf(t, do(h, "GET", "/", alice, nil).Body.String())
	now = now.Add(2 * time.Hour) // past the approval's hour
	if body := do(h, "GET", "/", alice, nil).Body.String(); strings.Contains(body, "ap-run-1") {
		t.Errorf("an expired approval is listed as pending")
	}
	body := do(h, "GET", "/?tab=decided", alice, nil).Body.String()
	if !strings.Contains(body, "ap-run-1") || !strings.Contains(body, "expired") || strings.Contains(body, `value="approve"`) {
		t.Errorf("decided tab should show the expired approval without buttons:\n%s", body)
	}
	if w := do(h, "POST", "/approvals/acme/ap-run-1", alice, url.Values{"decision": {"approve"}, "csrf": {token}}); w.Code != http.StatusConflict {
		t.Errorf("deciding an expired approval = %d, want 409", w.Code)
	}
}

func TestMayDecide(t *testing.T) {
	for _, c := range []struct {
		role, required string
		want           bool
	}{
		{"standard", "", true}, {"standard", "standard", true}, {"standard", "senior", false},
		{"senior", "standard", true}, {"admin", "senior", true}, {"senior", "admin", false},
		{"legal", "legal", true}, {"legal", "standard", false}, {"admin", "legal", false}, {"", "standard", true}, {"", "senior", false},
	} {
		if got := console.MayDecide(c.role, c.required); got != c.want {
			t.Errorf("MayDecide(%q, %q) = %v, want %v", c.role, c.required, got, c.want)
		}
	}
}

// TestApprovalWithoutAParkedRunIsListed: the approvals page lists every
// pending approval of the reviewer's tenants, whether or not a run is
// parked on it (the store's bindings.ApprovalLister), and it can be
// decided from there.
func TestApprovalWithoutAParkedRunIsListed(t *testing.T) {
	s := memstore.New(nil)
	ctx := context.Background()
	if _, err := s.RequestApproval(ctx, bindings.ApprovalRequest{TenantID: "acme", ID: "ap-loose", ToolCallID: "call_1",
		ToolID: "acme.send-email", ToolVersion: "2.1.0", Arguments: json.RawMessage(`{"to":"loose@globex.test"}`),
		ReviewerRole: "standard", ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	h := newConsole(t, s)
	body := do(h, "GET", "/", bob, nil).Body.String()
	if !strings.Contains(body, "ap-loose") || !strings.Contains(body, "loose@globex.test") {
		t.Fatalf("the approval with no parked run is not listed:\n%s", body)
	}
	w := do(h, "POST", "/approvals/acme/ap-loose", bob, url.Values{"decision": {"approve"}, "reason": {"fine"}, "csrf": {csrfOf(t, body)}})
	if w.Code >= 400 {
		t.Fatalf("deciding it = %d: %s", w.Code, w.Body.String())
	}
	if a, _ := s.GetApproval(ctx, "acme", "ap-loose"); a.Status != bindings.ApprovalApproved || a.Reviewer != "bob" {
		t.Errorf("approval = %+v, want approved by bob", a)
	}
}
