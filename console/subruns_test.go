package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
)

// subAgentTree stores a suspended triage run whose sub-agent call started
// a child run of acme.mailer parked on an approval (park's), and a second,
// completed child of acme.researcher.
func subAgentTree(t *testing.T, s *memstore.Store) {
	t.Helper()
	ctx := context.Background()
	agentRun(t, s, "acme", "triage", "acme.triage")
	if err := s.SetRunStatus(ctx, "acme", "triage", bindings.RunSuspended); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ id, agent string }{{"triage-mail", "acme.mailer"}, {"triage-research", "acme.researcher"}} {
		if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: "acme", RunID: c.id, FlowID: "turn", FlowVersion: "1",
			ParentRunID: "triage", ParentStepKey: "agent-loop/1/dispatch-tools/" + c.id + "/subagent"}); err != nil {
			t.Fatal(err)
		}
		if c.agent == "acme.researcher" {
			if err := s.Write(ctx, bindings.RunSnapshotWriteInput{TenantID: "acme", RunID: c.id, FlowID: "turn", FlowVersion: "1",
				AgentID: c.agent, AgentVersion: "2.0.0", Input: json.RawMessage(`{}`)}); err != nil {
				t.Fatal(err)
			}
			if err := s.SetRunStatus(ctx, "acme", c.id, bindings.RunCompleted); err != nil {
				t.Fatal(err)
			}
		}
	}
	park(t, s, "acme", "triage-mail", "standard") // StartRun of an existing run: keeps its parent
}

// TestRunPageLinksParentAndChildren: a parent's run page lists its
// sub-agent runs (id, agent, status, the approvals a parked one waits on)
// as links, and a child's names its parent as a link.
func TestRunPageLinksParentAndChildren(t *testing.T) {
	s := memstore.New(nil)
	subAgentTree(t, s)
	h := newConsole(t, s)

	w := do(h, "GET", "/runs/acme/triage", alice, nil)
	body := w.Body.String()
	if w.Code != http.StatusOK {
		t.Fatalf("GET the parent's page = %d:\n%s", w.Code, body)
	}
	for _, want := range []string{
		`<h2>Sub-agent runs</h2>`,
		`<a href="/runs/acme/triage-mail">triage-mail</a> acme.mailer@1.0.0 <span class="status s-suspended">suspended</span> — waits on <code>acme.send-email</code>: <a href="/?open=ap-triage-mail#approval-ap-triage-mail">decide</a></li>`,
		`<a href="/runs/acme/triage-research">triage-research</a> acme.researcher@2.0.0 <span class="status s-completed">completed</span>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the parent's page lacks %s", want)
		}
	}
	if strings.Contains(body, `id="parent-run"`) {
		t.Error("a top-level run's page names a parent")
	}

	w = do(h, "GET", "/runs/acme/triage-mail", alice, nil)
	body = w.Body.String()
	if w.Code != http.StatusOK || !strings.Contains(body, `<dd id="parent-run"><a href="/runs/acme/triage">triage</a> (a sub-agent call, step <code>agent-loop/1/dispatch-tools/triage-mail/subagent</code>)</dd>`) {
		t.Fatalf("the child's page (%d) does not link its parent:\n%s", w.Code, body)
	}
	if strings.Contains(body, "Sub-agent runs") {
		t.Error("a run without children lists sub-agent runs")
	}
	// Another tenant's reviewer sees neither.
	if w := do(h, "GET", "/runs/acme/triage", eve, nil); w.Code != http.StatusNotFound {
		t.Errorf("GET another tenant's parent = %d, want 404", w.Code)
	}
}

// TestApprovalsShowTheAskingSubAgent: an approval whose run is a child
// run says which sub-agent asks, linked to the child run, and links the
// parent run; a top-level run's approval says nothing of the kind.
func TestApprovalsShowTheAskingSubAgent(t *testing.T) {
	s := memstore.New(nil)
	subAgentTree(t, s)
	park(t, s, "acme", "solo", "standard")
	h := newConsole(t, s)
	w := do(h, "GET", "/", alice, nil)
	body := w.Body.String()
	if w.Code != http.StatusOK {
		t.Fatalf("GET / = %d", w.Code)
	}
	want := `<dt>Asked by</dt><dd class="subagent">the sub-agent <a href="/runs/acme/triage-mail">acme.mailer</a>, called by run <a href="/runs/acme/triage">triage</a></dd>`
	if !strings.Contains(body, want) {
		t.Fatalf("the approvals page lacks %s:\n%s", want, body)
	}
	if !strings.Contains(body, `sub-agent acme.mailer@1.0.0 · run triage-mail of triage ·`) {
		t.Errorf("the child's approval summary does not name the sub-agent and its parent:\n%s", body)
	}
	if strings.Count(body, `class="subagent"`) != 1 {
		t.Errorf("want exactly one sub-agent approval (solo's run has no parent):\n%s", body)
	}
}
