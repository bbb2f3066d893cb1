package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/console"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/pgstore"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

// crashOnce is planModel whose first call panics (a provider that
// crashed): the turn journals the failed attempt and a later drive calls
// again.
type crashOnce struct{ calls atomic.Int32 }

func (*crashOnce) ID() string                   { return "plan" }
func (*crashOnce) Models() []bindings.ModelInfo { return planModel{}.Models() }
func (c *crashOnce) Generate(ctx context.Context, req bindings.GenerateRequest) (bindings.GenerateResponse, error) {
	if c.calls.Add(1) == 1 {
		panic("the provider crashed")
	}
	return planModel{}.Generate(ctx, req)
}

// debuggedRun drives a mailer turn over store to its end: its first model
// call crashes (a retried step), the second asks for acme.send-email, the
// gate parks the run until ops-alice approves, the tool runs, the model
// answers. It returns the run id.
func debuggedRun(t *testing.T, store *pgstore.Store, keys *memstore.Keys) string {
	t.Helper()
	ctx := context.Background()
	mailer, err := mailerAgent("")
	if err != nil {
		t.Fatal(err)
	}
	tools := registry.NewTools()
	if err := tools.Add("acme", bindings.ToolDescriptor{ID: "acme.send-email", Version: "2.1.0", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
			return json.RawMessage(`{"sent":true,"messageId":"<nda-4711@globex.test>"}`), nil
		}); err != nil {
		t.Fatal(err)
	}
	b := turn.StoreBindings(store)
	b.Providers = bindings.Providers{&crashOnce{}}
	b.Tools = tools
	b.Provenance = bindings.ProvenanceBindings{Emitter: memstore.New(nil), Keys: keys}
	b.LeaseTTL = 500 * time.Millisecond // the crashed drive's lease frees soon
	conv, err := store.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: "acme", ProjectID: "globex-nda", AgentID: mailer.ID, AgentVersion: mailer.Version, Title: "NDA for Globex"})
	if err != nil {
		t.Fatal(err)
	}
	in := turn.Input{TenantID: "acme", ProjectID: "globex-nda", Agent: mailer, ConversationID: conv.ID, RunID: "run-debugged",
		UserMessage: "Send the NDA draft to legal@globex.test."}
	func() {
		defer func() {
			if p := recover(); p == nil {
				t.Fatal("the first model call did not crash the drive")
			}
		}()
		_, _ = turn.Invoke(ctx, in, b)
	}()
	drive := func(want turn.Status) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			res, err := turn.Invoke(ctx, in, b)
			if agents.CodeOf(err) == agents.CodeRunBusy && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond) // the dead driver's lease
				continue
			}
			if err != nil || res.Status != want {
				t.Fatalf("Invoke = %+v, %v; want %s", res, err, want)
			}
			return
		}
	}
	drive(turn.StatusSuspended)
	aps, err := store.ListApprovals(ctx, "acme", in.RunID)
	if err != nil || len(aps) != 1 {
		t.Fatalf("approvals = %v, %v", aps, err)
	}
	if _, err := store.ResolveApproval(ctx, "acme", aps[0].Request.ID, bindings.ApprovalDecision{Approved: true, Reviewer: "ops-alice", Comment: "Recipient checked with legal."}); err != nil {
		t.Fatal(err)
	}
	drive(turn.StatusCompleted)
	return in.RunID
}

// openAll opens every <details> of the page (what a reviewer clicking each
// step sees).
const openAll = `document.querySelectorAll("details").forEach(d => d.open = true)`

// TestBrowserRunPageShowsEachStepsContent: over PostgreSQL, the page of a
// run with a model call, a tool call, an approval and a retried step shows
// one row per step, and expanding the steps shows the rendered prompt, the
// model's request and response (tool call, text, usage, cost), the tool's
// arguments and result, who approved when and why, and the failed attempt
// with its code.
func TestBrowserRunPageShowsEachStepsContent(t *testing.T) {
	store := pgStore(t)
	ctx := browser(t)
	keys := memstore.NewKeys([]byte("console-browser-test"))
	runID := debuggedRun(t, store, keys)
	base := serve(t, store, keys, console.Reviewer{ID: "ops-alice", Role: "senior", TenantIDs: []string{"acme"}})
	signIn(t, ctx, base)
	run(t, ctx, chromedp.Navigate(base+"/runs/acme/"+runID), chromedp.WaitVisible(css(`#steps`)))

	entries, err := store.ReadJournal(context.Background(), "acme", runID)
	if err != nil {
		t.Fatal(err)
	}
	rows := value(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("#steps > li").length`))
	keysSeen := map[string]bool{}
	for _, e := range entries {
		k, _, _ := strings.Cut(e.Key, "/attempt/")
		keysSeen[strings.TrimSuffix(k, "/message")] = true
	}
	if rows != len(keysSeen) || rows >= len(entries) {
		t.Errorf("%d step rows for %d entries of %d steps, want one row per step", rows, len(entries), len(keysSeen))
	}
	closed := value(t, ctx, chromedp.Text(css(`#steps`)))
	if strings.Contains(closed, "legal@globex.test") {
		t.Error("a step's content shows before it is expanded")
	}
	// The screenshot: the first model call, the tool call and its approval
	// open.
	run(t, ctx, chromedp.Evaluate[chromedp.Void](`document.querySelectorAll("#steps > li").forEach(li => {
		if (/^agent-loop\/1\/(model-call|dispatch-tools\/call_1)/.test(li.querySelector("code").textContent)) li.querySelector("details").open = true })`))
	screenshotAt(t, ctx, "console-run")
	run(t, ctx, chromedp.Evaluate[chromedp.Void](openAll))
	text := value(t, ctx, chromedp.Text(css(`#steps`)))
	for _, want := range []string{
		"Rendered prompt", "You send documents to counterparties on request.", // render-prompt
		"tools offered: acme.send-email@2.1.0", "Send the NDA draft to legal@globex.test.", // the model's request
		"tool call acme.send-email (call_1)", `"to": "legal@globex.test"`, "100 in / 10 out tokens", "$0.000310", // the first model call
		"Sent the NDA draft to legal.", "150 in / 12 out tokens", // the second
		"Tool call acme.send-email@2.1.0", `"messageId": "<nda-4711@globex.test>"`, "status ok", // the tool call
		"approved by ops-alice", "Recipient checked with legal.", // the approval
		"1 failed attempt", "attempt 1 failed", "model-invocation-failed", "the provider crashed", // the retried step
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the expanded steps lack %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "-0.") || strings.Contains(text, "took -") {
		t.Errorf("a negative duration is shown:\n%s", text)
	}
	bars := value(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("#steps svg.bar rect.fill").length`))
	if bars != rows {
		t.Errorf("%d waterfall bars for %d steps", bars, rows)
	}
	none := value(t, ctx, chromedp.Text(css(`#provenance-verify`)))
	if !strings.Contains(none, "signature verifies") {
		t.Errorf("provenance = %q", none)
	}
}

// TestBrowserRunsPagingReachesThe121stRun: 121 runs over PostgreSQL, 50 a
// page: the runs page counts them, and "Older" twice reaches the 121st
// (the oldest), "Newer" comes back, a lookup by id finds one; then "Sign
// out" ends the session.
func TestBrowserRunsPagingReachesThe121stRun(t *testing.T) {
	store := pgStore(t)
	ctx := browser(t)
	bg := context.Background()
	for i := 1; i <= 121; i++ {
		id := fmt.Sprintf("run-%03d", i)
		if _, err := store.StartRun(bg, bindings.StartRunInput{TenantID: "acme", RunID: id, FlowID: "agent.turn", FlowVersion: "1.1.0", Status: bindings.RunQueued}); err != nil {
			t.Fatal(err)
		}
	}
	base := serve(t, store, nil, console.Reviewer{ID: "ops-alice", Role: "senior", TenantIDs: []string{"acme"}})
	signIn(t, ctx, base)
	run(t, ctx, chromedp.Navigate(base+"/runs"), chromedp.WaitVisible(css(`#list-count`)))
	seen := map[string]bool{}
	var counts []string
	for page := 1; ; page++ {
		counts = append(counts, value(t, ctx, chromedp.Text(css(`#list-count`))))
		ids := value(t, ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("table.list tbody td.id a")).map(a => a.textContent)`))
		for _, id := range ids {
			if seen[id] {
				t.Errorf("page %d repeats %s", page, id)
			}
			seen[id] = true
		}
		if value(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('a[rel="next"]').length`)) == 0 || page > 5 {
			break
		}
		clickAndWait(t, ctx, `a[rel="next"]`)
	}
	if len(seen) != 121 || !seen["run-001"] || !seen["run-121"] {
		t.Errorf("paging saw %d runs (run-001 %v), want all 121", len(seen), seen["run-001"])
	}
	if want := []string{"1–50 of 121", "51–100 of 121", "101–121 of 121"}; strings.Join(counts, "|") != strings.Join(want, "|") {
		t.Errorf("counts = %q, want %q", counts, want)
	}
	last := value(t, ctx, chromedp.Text(css(`table.list tbody tr:last-child td.id`)))
	if last != "run-001" {
		t.Errorf("the last row of the last page = %q, want run-001 (the 121st, oldest)", last)
	}
	screenshotAt(t, ctx, "console-runs")
	clickAndWait(t, ctx, `a[rel="prev"]`)
	if got := value(t, ctx, chromedp.Text(css(`#list-count`))); got != "51–100 of 121" {
		t.Errorf("Newer from the last page = %q, want 51–100 of 121", got)
	}
	run(t, ctx, chromedp.Navigate(base+"/runs?id=run-077"), chromedp.WaitVisible(css(`#list-count`)))
	if got := value(t, ctx, chromedp.Text(css(`table.list tbody`))); !strings.Contains(got, "run-077") || strings.Contains(got, "run-076") {
		t.Errorf("lookup by id shows:\n%s", got)
	}
	// Signing out ends the session: the console asks for the token again.
	run(t, ctx, chromedp.Click(css(`form.logout button`)), chromedp.WaitVisible(css(`#token`)))
	run(t, ctx, chromedp.Navigate(base+"/runs"), chromedp.WaitVisible(css(`#token`)))
	if loc := value(t, ctx, chromedp.Evaluate[string](`location.pathname`)); loc != "/login" {
		t.Errorf("after signing out /runs opens %s, want /login", loc)
	}
}

// clickAndWait clicks the link sel and waits for the next page to load:
// the old document is marked, so only the new one passes.
func clickAndWait(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	run(t, ctx, chromedp.Evaluate[chromedp.Void](`window.oldPage = true`), chromedp.Click(css(sel)))
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		ready, err := chromedp.Run(c, chromedp.Evaluate[bool](`window.oldPage !== true && document.readyState === "complete" && document.getElementById("list-count") !== null`))
		cancel()
		if err == nil && ready {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page after clicking %s did not load: %v", sel, err)
		}
		time.Sleep(50 * time.Millisecond) // an evaluation during the navigation fails: try again
	}
}

// widths are the viewport widths no page may overflow.
var widths = []int64{390, 768, 1280, 1920}

// TestBrowserNoPageOverflows opens every page of the console (with every
// step and approval expanded) at 390, 768, 1280 and 1920 px and checks
// that nothing is wider than the window.
func TestBrowserNoPageOverflows(t *testing.T) {
	store := pgStore(t)
	ctx := browser(t)
	keys := memstore.NewKeys([]byte("console-browser-test"))
	done := debuggedRun(t, store, keys)
	parked, _ := parkedTurn(t, store, keys)
	base := serve(t, store, keys, console.Reviewer{ID: "ops-alice", Role: "senior", TenantIDs: []string{"acme"}})
	run(t, ctx, chromedp.Navigate(base+"/login"), chromedp.WaitVisible(css(`#token`)))
	for _, w := range widths {
		run(t, ctx, chromedp.EmulateViewport(w, 900))
		if sw, iw := value(t, ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)), value(t, ctx, chromedp.Evaluate[int](`window.innerWidth`)); sw > iw {
			t.Errorf("login at %d px: scrollWidth %d > innerWidth %d", w, sw, iw)
		}
	}
	screenshotAt(t, ctx, "console-login")
	signIn(t, ctx, base)
	snap, err := store.Read(context.Background(), "acme", done)
	if err != nil {
		t.Fatal(err)
	}
	pages := map[string]string{
		"approvals":     "/",
		"decided":       "/?tab=decided",
		"runs":          "/runs",
		"run":           "/runs/acme/" + done,
		"parked-run":    "/runs/acme/" + parked,
		"conversations": "/conversations",
		"conversation":  "/conversations/acme/" + snap.ConversationID,
		"quotas":        "/quotas",
		"not-found":     "/runs/acme/no-such-run-with-a-rather-long-identifier-0123456789abcdef",
	}
	for _, w := range widths {
		for name, path := range pages {
			run(t, ctx, chromedp.EmulateViewport(w, 900), chromedp.Navigate(base+path), chromedp.WaitVisible(css(`main h1`)),
				chromedp.Evaluate[chromedp.Void](openAll))
			sw := value(t, ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
			iw := value(t, ctx, chromedp.Evaluate[int](`window.innerWidth`))
			if sw > iw {
				t.Errorf("%s at %d px: scrollWidth %d > innerWidth %d", name, w, sw, iw)
			}
		}
	}
	nf := value(t, ctx, chromedp.Evaluate[string](`document.querySelector('nav[aria-label="Sections"]') ? "nav" : "bare"`))
	if nf != "nav" {
		t.Error("the 404 page has no navigation")
	}
	// Screenshots of the pages no other test takes.
	for _, name := range []string{"approvals", "decided", "conversations", "conversation", "quotas", "not-found"} {
		run(t, ctx, chromedp.Navigate(base+pages[name]), chromedp.WaitVisible(css(`main h1`)))
		screenshotAt(t, ctx, "console-"+name)
	}
	run(t, ctx, chromedp.Navigate(base+"/?tab=decided"), chromedp.Evaluate[chromedp.Void](openAll))
	decided := value(t, ctx, chromedp.Text(css(`main`)))
	if strings.Contains(decided, "Expires in") || strings.Contains(decided, "Time left") || !strings.Contains(decided, "decided") {
		t.Errorf("a decided approval shows its expiry instead of its decision:\n%s", decided)
	}
}

// TestBrowserRunningRunShowsANewStepWithoutAReload: the page of a running
// run shows a step appended to its journal while the page is open, without
// the page being loaded again.
func TestBrowserRunningRunShowsANewStepWithoutAReload(t *testing.T) {
	store := pgStore(t)
	ctx := browser(t)
	bg := context.Background()
	if _, err := store.StartRun(bg, bindings.StartRunInput{TenantID: "acme", RunID: "run-live", FlowID: "agent.turn", FlowVersion: "1.1.0", Owner: "worker-1", LeaseTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	appendStep := func(key string) {
		if _, _, err := store.AppendStep(bg, bindings.AppendStepInput{TenantID: "acme", RunID: "run-live", Owner: "worker-1",
			Entry: bindings.JournalEntry{Key: key, Node: key, Status: bindings.StepCompleted, Output: json.RawMessage(`{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	appendStep("setup")
	base := serve(t, store, nil, console.Reviewer{ID: "ops-alice", Role: "senior", TenantIDs: []string{"acme"}})
	signIn(t, ctx, base)
	run(t, ctx, chromedp.Navigate(base+"/runs/acme/run-live"), chromedp.WaitVisible(css(`#steps`)),
		chromedp.Evaluate[chromedp.Void](`window.sameDocument = true`))
	if text := value(t, ctx, chromedp.Text(css(`#steps`))); strings.Contains(text, "render-prompt") {
		t.Fatalf("the step is shown before it is journaled:\n%s", text)
	}
	appendStep("render-prompt")
	value(t, ctx, chromedp.Poll[chromedp.Void](`document.getElementById("steps").textContent.includes("render-prompt")`, chromedp.WithPollingTimeout(20*time.Second)))
	if !value(t, ctx, chromedp.Evaluate[bool](`window.sameDocument === true`)) {
		t.Error("the page was loaded again to show the step")
	}
}

// screenshotAt saves the page at desktop (1280 px) and phone (390 px)
// width as docs/NAME-desktop.png and docs/NAME-phone.png, when
// KINDGI_UPDATE_SCREENSHOTS is set (scripts/screenshots.sh).
func screenshotAt(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if os.Getenv("KINDGI_UPDATE_SCREENSHOTS") == "" {
		return
	}
	for _, s := range []struct {
		suffix string
		w      int64
	}{{"desktop", 1280}, {"phone", 390}} {
		run(t, ctx, chromedp.EmulateViewport(s.w, 800), chromedp.Sleep(200*time.Millisecond))
		png := value(t, ctx, chromedp.FullScreenshot(100))
		if err := os.WriteFile(filepath.Join("..", "docs", name+"-"+s.suffix+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(t, ctx, chromedp.EmulateViewport(1100, 900))
}
