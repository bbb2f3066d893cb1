package turn_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/turn"
)

// crashingRecorder stores records in a memstore and fails once, after the
// write numbered failAfter has been stored (a crash between the records
// and the journal entry that says they were written).
type crashingRecorder struct {
	*memstore.Store
	writes    atomic.Int64
	failAfter int64
}

func (c *crashingRecorder) RecordCompliance(ctx context.Context, rec bindings.ComplianceRecord) error {
	if err := c.Store.RecordCompliance(ctx, rec); err != nil {
		return err
	}
	if c.writes.Add(1) == c.failAfter {
		return &agents.PersistenceError{Op: "record compliance", Err: errors.New("connection lost")}
	}
	return nil
}

func twoGuardrails(s *agent.Spec) { s.Guardrails = []string{"acme.no-pii", "acme.polite"} }

func complianceBindings(f *fixture, rec bindings.ComplianceRecorder, piiAction string) turn.Bindings {
	asked := 0
	b := f.bindings()
	b.Guardrails = memstore.Guardrails{Shared: map[string]bindings.Guardrail{
		"acme.no-pii": {ID: "acme.no-pii", Kind: "pattern", CheckID: "no-pii", Action: piiAction},
		"acme.polite": {ID: "acme.polite", Kind: bindings.KindLLMJudge, CheckID: "polite", Action: bindings.ActionLog},
	}}
	b.Checks = memstore.Checks{"no-pii": bindings.CheckFunc(noPII), "polite": judgeCheck{asked: &asked}}
	b.Compliance = rec
	return b
}

func TestComplianceRecordsOneRecordPerEvaluationAcrossACrash(t *testing.T) {
	f := newFixture(t, []scripted.Response{scripted.Say("Write to jane@globex.test."), scripted.Say("yes")}, twoGuardrails)
	rec := &crashingRecorder{Store: memstore.New(&memstore.Options{Now: f.clock.Now}), failAfter: 1}
	b := complianceBindings(f, rec, bindings.ActionLog)
	in := f.input("Who do I write to?")
	res, err := turn.Invoke(t.Context(), in, b)
	if agents.CodeOf(err) != agents.CodePersistence || res.RunID == "" {
		t.Fatalf("first drive = %v (run %q), want the recorder's persistence error and the run id", err, res.RunID)
	}
	res, err = turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID, Agent: f.agent}, b)
	if err != nil || res.Status != turn.StatusCompleted {
		t.Fatalf("resume = %+v, %v", res, err)
	}
	// Replaying the finished run writes nothing new either.
	if _, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID, Agent: f.agent}, b); err != nil {
		t.Fatal(err)
	}
	page, err := rec.ListCompliance(t.Context(), bindings.ListComplianceInput{TenantID: tenant, RunID: res.RunID})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Key, Guardrail, Check, Kind, Action string
		Passed                              bool
		Reason, Judge                       string
		Turn                                int
	}
	var got []row
	for _, r := range page.Records {
		if r.AgentID != f.agent.ID || r.AgentVersion != f.agent.Version || r.ConversationID != f.conv.ID || r.EvaluatedAt.IsZero() {
			t.Errorf("record %+v lacks the run's identity or a time", r)
		}
		got = append(got, row{r.Key, r.GuardrailID, r.CheckID, r.Kind, r.Action, r.Passed, r.Reason, r.JudgeResponse, r.TurnNumber})
	}
	want := []row{
		{"evaluate-guardrails/0", "acme.no-pii", "no-pii", "pattern", bindings.ActionLog, false, "the response contains an email address", "", 1},
		{"evaluate-guardrails/1", "acme.polite", "polite", bindings.KindLLMJudge, bindings.ActionLog, true, "judge said yes", "yes", 1},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("compliance records (-want +got):\n%s", d)
	}
	if n := rec.writes.Load(); n < 3 {
		t.Errorf("%d writes: the resumed drive did not write the records again", n)
	}
}

func TestComplianceRecordsAHaltingEvaluation(t *testing.T) {
	f := newFixture(t, []scripted.Response{scripted.Say("Write to jane@globex.test."), scripted.Say("yes")}, twoGuardrails)
	rec := memstore.New(nil)
	_, err := turn.Invoke(t.Context(), f.input("Who?"), complianceBindings(f, rec, bindings.ActionHalt))
	var gv *agents.GuardrailViolationError
	if !errors.As(err, &gv) || gv.GuardrailID != "acme.no-pii" {
		t.Fatalf("Invoke = %v, want guardrail-violation of acme.no-pii", err)
	}
	page, err := rec.ListCompliance(t.Context(), bindings.ListComplianceInput{TenantID: tenant})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Records) != 2 || page.Records[0].Passed || page.Records[0].Action != bindings.ActionHalt || !page.Records[1].Passed {
		t.Fatalf("records %+v, want the failed halt and the passed judge", page.Records)
	}
	if len(f.messages()) != 1 {
		t.Errorf("the halted response was stored: %d messages", len(f.messages()))
	}
}
