package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/console"
	"github.com/kindgi/agents/internal/browsertest"
	"github.com/kindgi/agents/internal/pgtest"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/pgstore"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

// browser starts headless Chromium for the test (internal/browsertest).
func browser(t *testing.T) context.Context { return browsertest.Start(t) }

// pgStore opens a fresh database of its own on KINDGI_TEST_DATABASE_URL
// (dropped when the test ends), or skips without one.
func pgStore(t *testing.T) *pgstore.Store {
	t.Helper()
	ctx := context.Background()
	dbURL := pgtest.FreshDatabase(t, pgtest.AdminURL(t), "kindgi_console_")
	store, err := pgstore.Open(ctx, dbURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	return store
}

// planModel asks for each offered tool once, then answers.
type planModel struct{}

func (planModel) ID() string { return "plan" }
func (planModel) Models() []bindings.ModelInfo {
	return []bindings.ModelInfo{{ID: "plan-1", Features: []string{"tool-use"}}}
}
func (planModel) Generate(_ context.Context, req bindings.GenerateRequest) (bindings.GenerateResponse, error) {
	for _, m := range req.Messages {
		if m.Role == bindings.ChatTool {
			return bindings.GenerateResponse{Model: "plan-1", Text: "Sent the NDA draft to legal.", Usage: bindings.Usage{InputTokens: 150, OutputTokens: 12, CostUsd: 0.00042}}, nil
		}
	}
	return bindings.GenerateResponse{Model: "plan-1", ToolCalls: []bindings.ToolCall{{ID: "call_1", Name: "acme.send-email",
		Arguments: json.RawMessage(`{"to":"legal@globex.test","subject":"NDA draft","body":"Please find the draft attached."}`)}},
		Usage: bindings.Usage{InputTokens: 100, OutputTokens: 10, CostUsd: 0.00031}}, nil
}

// mailerAgent is the browser tests' agent: it sends documents with
// acme.send-email, gated always-ask (for requiredRole, when set).
func mailerAgent(requiredRole string) (agent.Agent, error) {
	return agent.Define(agent.Spec{
		ID: "acme.mailer", Version: "1.0.0", Name: "Mailer",
		Instructions: "You send documents to counterparties on request.",
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
		Tools:        []agent.ToolRef{{ID: "acme.send-email", Version: "^2.0.0"}},
		ConversationPolicy: &agent.ConversationPolicy{Hitl: &agent.HitlPolicy{Tools: &agent.ToolGates{
			Overrides: map[string]agent.ToolGate{"acme.send-email": {Mode: agent.GateAlwaysAsk, RequiredRole: requiredRole}},
		}}},
	})
}

// parkedTurn submits a mailer turn whose send-email gate needs a senior
// reviewer, starts a worker for tenant acme, and waits until the run is
// parked on its approval. It returns the run id and how many times the
// tool ran (read after the test decides).
func parkedTurn(t *testing.T, store *pgstore.Store, keys *memstore.Keys) (runID string, sent *atomic.Int32) {
	t.Helper()
	ctx := context.Background()
	mailer, err := mailerAgent("senior")
	if err != nil {
		t.Fatal(err)
	}
	sent = new(atomic.Int32)
	tools := registry.NewTools()
	if err := tools.Add("acme", bindings.ToolDescriptor{ID: "acme.send-email", Version: "2.1.0", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
			sent.Add(1)
			return json.RawMessage(`{"sent":true}`), nil
		}); err != nil {
		t.Fatal(err)
	}
	b := turn.StoreBindings(store)
	b.Providers = bindings.Providers{planModel{}}
	b.Tools = tools
	b.Provenance = bindings.ProvenanceBindings{Emitter: memstore.New(nil), Keys: keys}
	b.Agents = func(_ context.Context, _, id, version string) (agent.Agent, error) {
		if id != mailer.ID || version != mailer.Version {
			return agent.Agent{}, fmt.Errorf("no agent %s@%s", id, version)
		}
		return mailer, nil
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- turn.NewWorker(b, turn.WorkerOptions{TenantIDs: []string{"acme"}}).Run(wctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil && wctx.Err() == nil {
			t.Errorf("worker: %v", err)
		}
	})
	conv, err := store.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: "acme", ProjectID: "globex-nda", AgentID: mailer.ID, AgentVersion: mailer.Version, Title: "NDA for Globex"})
	if err != nil {
		t.Fatal(err)
	}
	runID, err = turn.Submit(ctx, turn.Input{TenantID: "acme", ProjectID: "globex-nda", Agent: mailer, ConversationID: conv.ID,
		UserMessage: "Send the NDA draft to legal@globex.test."}, b)
	if err != nil {
		t.Fatal(err)
	}
	wait, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	res, err := turn.Wait(wait, b, "acme", runID)
	if err != nil || res.Status != turn.StatusSuspended {
		t.Fatalf("Wait = %+v, %v; want the run parked", res, err)
	}
	return runID, sent
}

// run does steps in ctx's tab, failing the test on an error.
func run(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	browsertest.Run(t, ctx, steps...)
}

// value runs one action that returns a value.
func value[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	return browsertest.Value(t, ctx, a)
}

func css(sel string) chromedp.CSS { return chromedp.CSS(sel) }

const consoleToken = "browser-test-token-0123456789"

// serve starts the console for a token-signed-in reviewer.
func serve(t *testing.T, store *pgstore.Store, keys bindings.KeyProvider, rv console.Reviewer) string {
	t.Helper()
	login, err := console.NewTokenLogin(consoleToken, rv)
	if err != nil {
		t.Fatal(err)
	}
	h, err := console.New(console.Options{Store: store, Authenticate: login.Authenticate, Login: login, Logout: login.Logout, Keys: keys, RefreshSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.CloseClientConnections() // the pages' event streams
		srv.Close()
	})
	return srv.URL
}

// signIn opens the console at base in ctx's tab and signs in: a first
// visit is sent to the login form; later ones open it directly (cookies do
// not tell ports apart, so the tab may hold another console's session).
func signIn(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	run(t, ctx, chromedp.Navigate(base+"/"))
	if loc := value(t, ctx, chromedp.Evaluate[string](`location.pathname`)); loc != "/login" {
		run(t, ctx, chromedp.Navigate(base+"/login"))
	}
	run(t, ctx,
		chromedp.WaitVisible(css(`#token`)),
		chromedp.SendKeys(css(`#token`), consoleToken),
		chromedp.Submit(css(`#token`)),
		chromedp.WaitVisible(css(`nav[aria-label="Sections"]`)),
	)
}

// TestBrowserApproveContinuesTheRun parks a run over PostgreSQL, signs in
// to the console in Chromium, approves the request after seeing its
// arguments, and sees the run completed by the worker.
func TestBrowserApproveContinuesTheRun(t *testing.T) {
	store := pgStore(t)
	ctx := browser(t)
	keys := memstore.NewKeys([]byte("console-browser-test"))
	runID, sent := parkedTurn(t, store, keys)
	base := serve(t, store, keys, console.Reviewer{ID: "ops-alice", Role: "senior", TenantIDs: []string{"acme"}})
	signIn(t, ctx, base)

	run(t, ctx, chromedp.WaitVisible(css(`article.approval`)))
	args := value(t, ctx, chromedp.Text(css(`article.approval pre.args`)))
	head := value(t, ctx, chromedp.Text(css(`article.approval`)))
	if !strings.Contains(args, `"to": "legal@globex.test"`) {
		t.Errorf("arguments shown = %q, want them pretty-printed", args)
	}
	for _, want := range []string{"acme.mailer@1.0.0", "acme.send-email@2.1.0", "senior", "Send the NDA draft"} {
		if !strings.Contains(head, want) {
			t.Errorf("the approval card lacks %q:\n%s", want, head)
		}
	}
	if sent.Load() != 0 {
		t.Fatal("the gated tool ran before its approval")
	}
	run(t, ctx,
		chromedp.SendKeys(css(`article.approval textarea`), "Recipient checked with legal."),
		chromedp.Click(css(`article.approval button.approve`)),
		chromedp.WaitVisible(css(`.flash`)),
	)
	flash := value(t, ctx, chromedp.Text(css(`.flash`)))
	if !strings.Contains(flash, "approved") {
		t.Errorf("flash = %q", flash)
	}
	run(t, ctx, chromedp.Navigate(base+"/runs/acme/"+runID))
	// The page refreshes itself (console.js) until the worker is done.
	value(t, ctx, chromedp.Poll[chromedp.Void](`document.getElementById("run-status").textContent === "completed"`, chromedp.WithPollingTimeout(20*time.Second)))
	run(t, ctx, chromedp.Reload(), chromedp.WaitVisible(css(`#provenance-verify`)))
	verify := value(t, ctx, chromedp.Text(css(`#provenance-verify`)))
	timeline := value(t, ctx, chromedp.TextContent(css(`#steps`)))
	if !strings.Contains(verify, "signature verifies") {
		t.Errorf("provenance check = %q, want it verified", verify)
	}
	if !strings.Contains(timeline, "model-call") || !strings.Contains(timeline, "tokens") {
		t.Errorf("timeline lacks model calls with tokens:\n%s", timeline)
	}
	if n := sent.Load(); n != 1 {
		t.Errorf("send-email ran %d times, want once", n)
	}
	aps, err := store.ListApprovals(context.Background(), "acme", runID)
	if err != nil || len(aps) != 1 || aps[0].Reviewer != "ops-alice" || aps[0].Comment != "Recipient checked with legal." || aps[0].Status != bindings.ApprovalApproved {
		t.Errorf("approvals = %+v, %v; want one approved by ops-alice with the reason", aps, err)
	}
}

// TestBrowserOthersCannotSeeOrDecide: a reviewer of another tenant sees
// nothing of the parked run, and a standard reviewer of its tenant sees
// the senior approval without a button, and a POST of theirs is refused.
func TestBrowserOthersCannotSeeOrDecide(t *testing.T) {
	store := pgStore(t)
	ctx := browser(t)
	keys := memstore.NewKeys([]byte("console-browser-test"))
	runID, sent := parkedTurn(t, store, keys)
	aps, err := store.ListApprovals(context.Background(), "acme", runID)
	if err != nil || len(aps) != 1 {
		t.Fatalf("approvals = %v, %v", aps, err)
	}
	apID := aps[0].Request.ID
	// post decides from the page, with the page's own CSRF token.
	post := func(base string) int {
		js := fmt.Sprintf(`fetch(%q, {method: "POST", headers: {"Content-Type": "application/x-www-form-urlencoded"},
			body: "decision=approve&reason=x&csrf=" + encodeURIComponent(document.querySelector('meta[name="csrf-token"]').content)}).then(r => r.status)`,
			base+"/approvals/acme/"+apID)
		return value(t, ctx, chromedp.Evaluate[int](js, chromedp.EvalAwaitPromise))
	}

	other := serve(t, store, keys, console.Reviewer{ID: "globex-admin", Role: "admin", TenantIDs: []string{"globex"}})
	signIn(t, ctx, other)
	body := value(t, ctx, chromedp.Text(css(`main`)))
	if strings.Contains(body, apID) || strings.Contains(body, "legal@globex.test") || !strings.Contains(body, "Nothing waits for you") {
		t.Errorf("another tenant's reviewer sees the approval:\n%s", body)
	}
	run(t, ctx, chromedp.Navigate(other+"/runs/acme/"+runID))
	body = value(t, ctx, chromedp.Text(css(`body`)))
	if !strings.Contains(strings.ToLower(body), "not found") {
		t.Errorf("another tenant's reviewer opens the run page:\n%s", body)
	}
	run(t, ctx, chromedp.Navigate(other+"/runs"))
	if code := post(other); code != 404 {
		t.Errorf("another tenant's decision POST = %d, want 404", code)
	}

	standard := serve(t, store, keys, console.Reviewer{ID: "acme-bob", Role: "standard", TenantIDs: []string{"acme"}})
	signIn(t, ctx, standard)
	run(t, ctx, chromedp.WaitVisible(css(`article.approval`)))
	body = value(t, ctx, chromedp.Text(css(`article.approval`)))
	buttons := value(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("button.approve, button.deny").length`))
	if buttons != 0 || !strings.Contains(body, "needs the senior role") {
		t.Errorf("a standard reviewer is offered %d decision buttons on a senior approval:\n%s", buttons, body)
	}
	if code := post(standard); code != 403 {
		t.Errorf("a standard reviewer's decision POST = %d, want 403", code)
	}
	a, err := store.GetApproval(context.Background(), "acme", apID)
	if err != nil || a.Status != bindings.ApprovalPending {
		t.Errorf("approval = %+v, %v; want still pending", a, err)
	}
	if sent.Load() != 0 {
		t.Error("the gated tool ran")
	}
}
