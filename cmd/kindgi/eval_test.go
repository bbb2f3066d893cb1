package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/eval"
	"github.com/kindgi/agents/internal/pgtest"
	"github.com/kindgi/agents/pgstore"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

const evalTenant = "acme"

// refundAgent is the agent file of the refund agent at version with
// instructions.
func refundAgent(version, instructions string) string {
	return fmt.Sprintf(`id: acme.refunds
version: %s
name: Refunds
instructions: %q
capabilities:
  - needs:
      - feature: tool-use
tools:
  - id: acme.lookup-order
    version: ^1.0.0
`, version, instructions)
}

// recordRefunds records three turns of the refund agent 1.0.0 on the
// PostgreSQL database at url, each answer mentioning a refund, and
// returns their run ids.
func recordRefunds(t *testing.T, url string) []string {
	t.Helper()
	ctx := t.Context()
	store, err := pgstore.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	a, err := agent.Parse([]byte(refundAgent("1.0.0", "You handle refunds.")))
	if err != nil {
		t.Fatal(err)
	}
	tools := registry.NewTools()
	if err := tools.Add(evalTenant, bindings.ToolDescriptor{ID: "acme.lookup-order", Version: "1.0.3"},
		func(_ context.Context, in json.RawMessage, _ bindings.CallContext) (json.RawMessage, error) {
			return json.RawMessage(`{"status":"shipped"}`), nil
		}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for n := 1; n <= 3; n++ {
		conv, err := store.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: evalTenant, AgentID: a.ID, AgentVersion: a.Version})
		if err != nil {
			t.Fatal(err)
		}
		b := turn.StoreBindings(store)
		b.Tools = tools
		b.Providers = bindings.Providers{scripted.New([]scripted.Response{
			scripted.Call("c1", "acme.lookup-order", map[string]int{"order": n}),
			scripted.Say(fmt.Sprintf("Your refund for order %d is on its way.", n)),
		}, nil)}
		res, err := turn.Invoke(ctx, turn.Input{TenantID: evalTenant, Agent: a, ConversationID: conv.ID, UserMessage: fmt.Sprintf("Where is the refund for order %d?", n)}, b)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.RunID)
	}
	return ids
}

// fakeOpenAI is an OpenAI-compatible chat completions server: it looks the
// order up (a call of the request's one tool, with the order number of the
// user message), then answers, mentioning the refund only when the system
// prompt asks for it.
func fakeOpenAI(t *testing.T, calls *atomic.Int64) *httptest.Server {
	t.Helper()
	type msg struct {
		Role    string  `json:"role"`
		Content *string `json:"content"`
	}
	orderNo := regexp.MustCompile(`\d+`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req struct {
			Messages []msg `json:"messages"`
			Tools    []struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tools"`
		}
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil || len(req.Messages) < 2 || len(req.Tools) != 1 {
			http.Error(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`, http.StatusBadRequest)
			return
		}
		text := func(i int) string {
			if c := req.Messages[i].Content; c != nil {
				return *c
			}
			return ""
		}
		order := orderNo.FindString(text(1))
		message := map[string]any{"role": "assistant"}
		finish := "stop"
		if last := req.Messages[len(req.Messages)-1]; last.Role != "tool" {
			finish = "tool_calls"
			message["content"] = nil
			message["tool_calls"] = []map[string]any{{"id": "call_1", "type": "function",
				"function": map[string]string{"name": req.Tools[0].Function.Name, "arguments": `{"order": ` + order + `}`}}}
		} else if strings.Contains(text(0), "Mention the refund") {
			message["content"] = "Your refund for order " + order + " is on its way."
		} else {
			message["content"] = "Order " + order + " has shipped."
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini",
			"choices": []map[string]any{{"index": 0, "message": message, "finish_reason": finish}},
			"usage":   map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestEvalFromRunsRegressionThenFix: `kindgi eval --from-runs` over runs
// recorded in PostgreSQL exits 1 when the new version's answers regress
// and 0 once the agent file is fixed; it writes the dataset, JUnit and
// HTML, prints a plain line per case when stderr is not a terminal, and
// writes nothing to the database.
func TestEvalFromRunsRegressionThenFix(t *testing.T) {
	url := pgtest.FreshDatabase(t, pgtest.AdminURL(t), "kindgi_eval_")
	runs := recordRefunds(t, url)
	var calls atomic.Int64
	srv := fakeOpenAI(t, &calls)
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "test-key")
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	before := journalCount(t, url)

	broken := write("refunds-1.1.0.yaml", refundAgent("1.1.0", "You handle orders."))
	dataset, junit, html := filepath.Join(dir, "cases.jsonl"), filepath.Join(dir, "out.xml"), filepath.Join(dir, "out.html")
	args := []string{"eval", "--from-runs", "--database-url", url, "--tenant", evalTenant, "--runs", strings.Join(runs, ","),
		"--grader", "contains:refund", "--provider", "openai", "--save", dataset, "--junit", junit, "--html", html}
	r := kindgi(t, append(args, "--agent", broken)...)
	if r.code != 1 {
		t.Fatalf("the regressed version: exit %d, want 1\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	for _, id := range runs {
		if want := "REGRESSED " + id + `: contains "refund": the answer does not contain "refund"`; !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "acme.refunds@1.1.0: 3 cases, 0 passed, 3 failed, 3 regressed") {
		t.Errorf("summary:\n%s", r.stdout)
	}
	if got := strings.Count(r.stderr, "\n"); got != 3 || !strings.HasPrefix(r.stderr, "[1/3] REGRESSED ") {
		t.Errorf("progress on a non-terminal, want 3 plain lines:\n%s", r.stderr)
	}
	if calls.Load() != 6 {
		t.Errorf("the model was called %d times, want 6 (two a case)", calls.Load())
	}
	f, err := os.Open(dataset)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := eval.ReadDataset(f)
	f.Close()
	if err != nil || len(ds.Cases) != 3 || ds.Cases[0].FromRunID != runs[0] || ds.Cases[0].Baseline.Answer != "Your refund for order 1 is on its way." {
		t.Fatalf("saved dataset: %+v, %v", ds, err)
	}
	xmlOut, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal(xmlOut, &doc); err != nil || doc.Failures != 3 {
		t.Errorf("JUnit: failures %d, %v", doc.Failures, err)
	}
	if page, err := os.ReadFile(html); err != nil || !strings.Contains(string(page), "Order 2 has shipped.") {
		t.Errorf("HTML report: %v", err)
	}

	fixed := write("refunds-1.1.1.yaml", refundAgent("1.1.1", "You handle orders. Mention the refund."))
	r = kindgi(t, "eval", "--dataset", dataset, "--tenant", evalTenant, "--agent", fixed, "--grader", "contains:refund")
	if r.code != 0 {
		t.Fatalf("the fixed version: exit %d, want 0\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "acme.refunds@1.1.1: 3 cases, 3 passed, 0 failed, 0 regressed") {
		t.Errorf("summary:\n%s", r.stdout)
	}
	r = kindgi(t, "eval", "--from-runs", "--database-url", url, "--tenant", evalTenant, "--since", "1h", "--agent-id", "acme.refunds",
		"--agent", fixed, "--grader", "contains:refund")
	if r.code != 0 || !strings.Contains(r.stdout, "PASS "+runs[0]+"\nPASS "+runs[1]+"\nPASS "+runs[2]+"\n") {
		t.Errorf("--since 1h: exit %d, want 0 and the three runs oldest first\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	if r = kindgi(t, "eval", "--from-runs", "--database-url", url, "--tenant", evalTenant, "--since", "1h", "--agent-id", "acme.other",
		"--agent", fixed); r.code != 0 || !strings.Contains(r.stdout, "0 cases") {
		t.Errorf("--since for another agent: exit %d stdout %s stderr %s", r.code, r.stdout, r.stderr)
	}
	if after := journalCount(t, url); after != before {
		t.Errorf("kindgi eval wrote to the database: %d journal entries, then %d", before, after)
	}
}

// journalCount counts the database's conversations, messages, runs,
// snapshots and journal entries.
func journalCount(t *testing.T, url string) int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM agent_conversations) + (SELECT count(*) FROM agent_conversation_messages)
		+ (SELECT count(*) FROM agent_runs) + (SELECT count(*) FROM agent_run_snapshots) + (SELECT count(*) FROM agent_run_journal)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestEvalBadCommandLines(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", "--dataset", "x.jsonl"}, "--agent is required"},
		{[]string{"eval", "--agent", "a.yaml"}, "give --dataset or --from-runs"},
		{[]string{"eval", "--agent", "a.yaml", "--from-runs", "--database-url", "postgres://x", "--tenant", "t"}, "--from-runs needs --runs or --since"},
		{[]string{"eval", "--agent", "a.yaml", "--from-runs", "--database-url", "postgres://x", "--tenant", "t", "--since", "24h"}, "--since needs a positive duration and --agent-id"},
		{[]string{"eval", "--agent", "a.yaml", "--dataset", "x", "--grader", "sounds:good"}, `unknown kind "sounds"`},
		{[]string{"eval", "--agent", "a.yaml", "--dataset", "x", "--save", "y"}, "--save applies to --from-runs"},
	} {
		r := kindgi(t, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}
