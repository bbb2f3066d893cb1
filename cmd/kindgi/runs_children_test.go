package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/pgstore"
)

// seedChild stores a child run of parent, started at step "call/"+run, of
// agent acme.researcher, in status st.
func seedChild(t *testing.T, s *pgstore.Store, tenant, parent, run string, st bindings.RunStatus) {
	t.Helper()
	ctx := context.Background()
	if err := s.Write(ctx, bindings.RunSnapshotWriteInput{TenantID: tenant, RunID: run, FlowID: "agent.turn", FlowVersion: "1.1.0",
		AgentID: "acme.researcher", AgentVersion: "1.2.0"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: tenant, RunID: run, FlowID: "agent.turn", FlowVersion: "1.1.0",
		ParentRunID: parent, ParentStepKey: "call/" + run}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetRunStatus(ctx, tenant, run, st); err != nil {
		t.Fatal(err)
	}
}

// TestRunsShowParentAndChildren: runs show prints a child run's parent
// and step, and a parent's children (id, agent, status); runs list
// --parent lists only a run's children, and says so in its next-page hint.
func TestRunsShowParentAndChildren(t *testing.T) {
	store, url, tenant := cliStore(t, "runs-tree-")
	seedRun(t, store, tenant, "triage", bindings.RunSuspended, 1)
	seedChild(t, store, tenant, "triage", "triage-kid-1", bindings.RunCompleted)
	time.Sleep(2 * time.Millisecond)
	seedChild(t, store, tenant, "triage", "triage-kid-2", bindings.RunSuspended)
	seedRun(t, store, tenant, "other", bindings.RunCompleted, 0)
	db := []string{"--database-url", url, "--tenant", tenant}

	r := kindgi(t, append(append([]string{"runs", "show"}, db...), "triage")...)
	if r.code != 0 || !strings.Contains(r.stdout, "children (2)") ||
		!regexp.MustCompile(`(?m)^triage-kid-2\s+acme\.researcher@1\.2\.0\s+suspended\s+call/triage-kid-2$`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^triage-kid-1\s+acme\.researcher@1\.2\.0\s+completed\s+call/triage-kid-1$`).MatchString(r.stdout) ||
		strings.Contains(r.stdout, "\nparent ") {
		t.Fatalf("runs show of the parent: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = kindgi(t, append(append([]string{"runs", "show"}, db...), "triage-kid-2")...)
	if r.code != 0 || !strings.Contains(r.stdout, "\nparent triage (step call/triage-kid-2)\n") || strings.Contains(r.stdout, "children") {
		t.Fatalf("runs show of a child: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = kindgi(t, append(append([]string{"runs", "show", "--json"}, db...), "triage")...)
	var v runView
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &v) != nil || len(v.Children) != 2 || v.Children[0].RunID != "triage-kid-2" ||
		v.Children[0].AgentID != "acme.researcher" || v.Children[1].Status != bindings.RunCompleted {
		t.Fatalf("runs show --json: exit %d %q %q", r.code, r.stdout, r.stderr)
	}

	r = kindgi(t, append([]string{"runs", "list", "--parent", "triage", "--limit", "1"}, db...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "triage-kid-2") || strings.Contains(r.stdout, "triage-kid-1") ||
		!strings.Contains(r.stdout, "--parent triage --limit 1 --after triage-kid-2") {
		t.Fatalf("runs list --parent --limit 1: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = kindgi(t, append([]string{"runs", "list", "--parent", "triage", "--json"}, db...)...)
	var page bindings.RunPage
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &page) != nil || len(page.Runs) != 2 || page.Runs[1].ID != "triage-kid-1" ||
		page.Runs[1].ParentRunID != "triage" || page.Runs[1].ParentStepKey != "call/triage-kid-1" {
		t.Fatalf("runs list --parent --json: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := kindgi(t, append([]string{"runs", "list", "--parent", "other"}, db...)...); r.code != 0 || strings.Contains(r.stdout, "triage") {
		t.Fatalf("runs list --parent of a run without children: %+v", r)
	}
}

// TestRunsShowChildApprovals: runs show of a parent parked on a child
// prints the pending approvals of its parked descendants (a child's and a
// grandchild's; not a decided one) with the command that decides them,
// and --json lists them; a child's own show prints none of its parent's.
func TestRunsShowChildApprovals(t *testing.T) {
	store, url, tenant := cliStore(t, "runs-tree-approvals-")
	ctx := context.Background()
	ask := func(run, id, tool string) {
		t.Helper()
		if _, err := store.RequestApproval(ctx, bindings.ApprovalRequest{TenantID: tenant, ID: id, RunID: run, ToolID: tool, ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	seedRun(t, store, tenant, "p", bindings.RunSuspended, 1)
	seedChild(t, store, tenant, "p", "p-kid", bindings.RunSuspended)
	ask("p-kid", "p-kid/refund", "acme.refund")
	ask("p-kid", "p-kid/decided", "acme.lookup")
	if _, err := store.ResolveApproval(ctx, tenant, "p-kid/decided", bindings.ApprovalDecision{Approved: true, Reviewer: "rita"}); err != nil {
		t.Fatal(err)
	}
	seedChild(t, store, tenant, "p-kid", "p-kid-kid", bindings.RunSuspended)
	ask("p-kid-kid", "p-kid-kid/wire", "acme.wire")
	db := []string{"--database-url", url, "--tenant", tenant}

	r := kindgi(t, append(append([]string{"runs", "show"}, db...), "p")...)
	if r.code != 0 || !strings.Contains(r.stdout, "parked on the pending approvals of child runs (2)") ||
		!regexp.MustCompile(`(?m)^p-kid/refund\s+acme\.refund\s+p-kid$`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^p-kid-kid/wire\s+acme\.wire\s+p-kid-kid$`).MatchString(r.stdout) ||
		strings.Contains(r.stdout, "p-kid/decided") ||
		!strings.Contains(r.stdout, "decide each: kindgi approvals approve --tenant "+tenant+" --approver ID APPROVAL_ID") {
		t.Fatalf("runs show of the parked parent: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = kindgi(t, append(append([]string{"runs", "show", "--json"}, db...), "p")...)
	var v runView
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &v) != nil || len(v.ChildApprovals) != 2 ||
		v.ChildApprovals[0] != (childApproval{ID: "p-kid/refund", ToolID: "acme.refund", RunID: "p-kid"}) || v.ChildApprovals[1].RunID != "p-kid-kid" {
		t.Fatalf("runs show --json: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	// Once the child is no longer parked, the parent shows none.
	if err := store.SetRunStatus(ctx, tenant, "p-kid", bindings.RunQueued); err != nil {
		t.Fatal(err)
	}
	if r := kindgi(t, append(append([]string{"runs", "show"}, db...), "p")...); r.code != 0 || strings.Contains(r.stdout, "parked on the pending approvals") {
		t.Fatalf("runs show of a parent whose child is queued: exit %d\n%s", r.code, r.stdout)
	}
}
