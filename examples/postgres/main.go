// Command postgres shows a turn that parks on a human approval in one
// process and is approved and resumed from PostgreSQL in another: the way
// turn workers scale out, with pgstore as every storage binding.
//
//	export KINDGI_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable
//	go run ./examples/postgres                 # runs a turn; it parks and prints the run id
//	go run ./examples/postgres approve RUN_ID  # approves it and resumes the run
//
// The agent asks to send an email with acme.send-email, whose gate is
// always_ask. The first process journals the model's tool call, asks for
// the approval, marks the run suspended and exits. The second approves the
// run's pending approvals, then turn.Resume replays the journal (the first
// model call is not made again), runs the tool once and finishes the turn.
// The tool records every execution in the table example_outbox, and the
// second process prints how many times it ran for the run.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/pgstore"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

// The example's tenant and agent are its own (examples/worker has
// others), so the examples share one database without touching each
// other's runs.
const (
	tenantID  = "acme-postgres"
	projectID = "globex-nda"
	// databaseEnv picks the database.
	databaseEnv = "KINDGI_DATABASE_URL"
)

func main() {
	ctx := context.Background()
	var err error
	switch args := os.Args[1:]; {
	case len(args) == 0:
		err = park(ctx)
	case len(args) == 2 && args[0] == "approve":
		err = approve(ctx, args[1])
	default:
		err = errors.New("usage: postgres [approve RUN_ID]")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "postgres:", err)
		os.Exit(1)
	}
}

// mailer is the agent: one gated tool.
func mailer() (agent.Agent, error) {
	return agent.Define(agent.Spec{
		ID:           "acme.postgres-mailer",
		Version:      "1.0.0",
		Name:         "Mailer",
		Instructions: "You send documents to counterparties on request.",
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
		Tools:        []agent.ToolRef{{ID: "acme.send-email", Version: "^2.0.0"}},
		ConversationPolicy: &agent.ConversationPolicy{
			Hitl: &agent.HitlPolicy{Tools: &agent.ToolGates{Overrides: map[string]agent.ToolGate{
				"acme.send-email": {Mode: agent.GateAlwaysAsk},
			}}},
		},
	})
}

// open connects to the database named by KINDGI_DATABASE_URL, applies the
// migrations and creates the example's outbox table.
func open(ctx context.Context) (*pgstore.Store, error) {
	url := os.Getenv(databaseEnv)
	if url == "" {
		return nil, fmt.Errorf("%s is not set; see examples/postgres/README.md for a local database", databaseEnv)
	}
	store, err := pgstore.Open(ctx, url, nil)
	if err != nil {
		return nil, err
	}
	if _, err := store.DB().Exec(ctx, `CREATE TABLE IF NOT EXISTS example_outbox (
		seq        bigserial PRIMARY KEY,
		tenant_id  text NOT NULL,
		run_id     text NOT NULL,
		request_id text NOT NULL,
		recipient  text NOT NULL,
		sent_at    timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		store.Close()
		return nil, err
	}
	return store, nil
}

// openMailer is open then mailer, how both commands start. The caller
// closes the store.
func openMailer(ctx context.Context) (*pgstore.Store, agent.Agent, error) {
	store, err := open(ctx)
	if err != nil {
		return nil, agent.Agent{}, err
	}
	a, err := mailer()
	if err != nil {
		store.Close()
		return nil, agent.Agent{}, err
	}
	return store, a, nil
}

// turnBindings are the bindings both processes run the turn on. script is
// what the model answers in this process: a model call that already ran
// is replayed from the journal, never asked again.
func turnBindings(store *pgstore.Store, script ...scripted.Response) (turn.Bindings, error) {
	tools := registry.NewTools()
	err := tools.Add(tenantID, bindings.ToolDescriptor{
		ID: "acme.send-email", Version: "2.1.3", Description: "Send an email on the firm's behalf.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"},"subject":{"type":"string"}},"required":["to","subject"]}`),
	}, func(ctx context.Context, input json.RawMessage, call bindings.CallContext) (json.RawMessage, error) {
		var in struct {
			To string `json:"to"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		// Every execution is recorded (a real mailer would also dedupe on
		// call.RequestID, its idempotency key).
		if _, err := store.DB().Exec(ctx, `INSERT INTO example_outbox (tenant_id, run_id, request_id, recipient) VALUES ($1, $2, $3, $4)`,
			call.TenantID, call.RunID, call.RequestID, in.To); err != nil {
			return nil, err
		}
		return json.RawMessage(`{"sent":true}`), nil
	})
	if err != nil {
		return turn.Bindings{}, err
	}
	b := turn.StoreBindings(store)
	b.Providers, b.Tools = bindings.Providers{scripted.New(script, nil)}, tools
	return b, nil
}

// park runs the first turn of a new conversation: it stops at the
// approval of the email.
func park(ctx context.Context) error {
	store, a, err := openMailer(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	b, err := turnBindings(store, scripted.Call("call_1", "acme.send-email", map[string]any{
		"to": "legal@globex.test", "subject": "NDA draft for review",
	}))
	if err != nil {
		return err
	}
	conv, err := store.OpenConversation(ctx, bindings.OpenConversationInput{
		TenantID: tenantID, ProjectID: projectID, AgentID: a.ID, AgentVersion: a.Version, Title: "NDA for globex",
	})
	if err != nil {
		return err
	}
	res, err := turn.Invoke(ctx, turn.Input{
		TenantID: tenantID, ProjectID: projectID, Agent: a, ConversationID: conv.ID,
		UserMessage: "Send the NDA draft to legal@globex.test.",
	}, b)
	if err != nil {
		return err
	}
	if res.Status != turn.StatusSuspended {
		return fmt.Errorf("the turn ended %s, want it parked on an approval", res.Status)
	}
	for _, ap := range res.Approvals {
		fmt.Printf("waiting on approval %s: %s %s (reviewer role %s)\n", ap.ID, ap.ToolID, ap.Arguments, ap.ReviewerRole)
	}
	fmt.Printf("parked run %s\n", res.RunID)
	fmt.Printf("approve and resume it with: go run ./examples/postgres approve %s\n", res.RunID)
	return nil
}

// approve approves every pending approval of the run and resumes it.
func approve(ctx context.Context, runID string) error {
	store, a, err := openMailer(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	approvals, err := store.ListApprovals(ctx, tenantID, runID)
	if err != nil {
		return err
	}
	if len(approvals) == 0 {
		return fmt.Errorf("run %s has no approvals", runID)
	}
	for _, ap := range approvals {
		if ap.Status != bindings.ApprovalPending {
			continue
		}
		if _, err := store.ResolveApproval(ctx, tenantID, ap.Request.ID, bindings.ApprovalDecision{
			Approved: true, Reviewer: "jane@acme.test", ReviewerRoles: []string{ap.Request.ReviewerRole}, Comment: "approved from the command line",
		}); err != nil {
			return err
		}
		fmt.Printf("approved %s\n", ap.Request.ID)
	}
	b, err := turnBindings(store, scripted.Say("I sent the NDA draft to legal@globex.test."))
	if err != nil {
		return err
	}
	res, err := turn.Resume(ctx, turn.ResumeInput{TenantID: tenantID, RunID: runID, Agent: a}, b)
	if err != nil {
		return err
	}
	var runs int
	if err := store.DB().QueryRow(ctx, `SELECT count(*) FROM example_outbox WHERE tenant_id = $1 AND run_id = $2`, tenantID, runID).Scan(&runs); err != nil {
		return err
	}
	fmt.Printf("run %s %s: %s\n", runID, res.Status, res.Response.Content)
	fmt.Printf("acme.send-email ran %d time(s) for the run\n", runs)
	return nil
}
