package bindingstest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// RunComplianceTests checks a bindings.ComplianceRecorder (Harness.Compliance):
// a record reads back unchanged, a record is stored once per (tenant, run,
// key) keeping the first, also under concurrency, a tenant lists only its
// own records, in (EvaluatedAt, RunID, Key) order, by keyset pages, and
// malformed records are refused.
func RunComplianceTests(t *testing.T, newHarness NewHarness) {
	t.Helper()
	runSuite(t, newHarness, "ComplianceRecorder", func(h Harness) bool { return h.Compliance != nil }, complianceCases)
}

var complianceCases = []testCase{
	{name: "RecordThenListRoundTripsEveryField", run: testComplianceRoundTrip},
	{name: "RecordIsIdempotentPerRunAndKeyKeepingTheFirst", run: testComplianceIdempotent},
	{name: "ConcurrentRecordsOfOneKeyStoreOne", run: testComplianceConcurrent},
	{name: "RecordWithZeroEvaluatedAtUsesNow", clock: true, run: testComplianceNow},
	{name: "ListOrdersByTimeRunAndKeyInPages", run: testCompliancePages},
	{name: "ListFiltersByRun", run: testComplianceByRun},
	{name: "RecordRequiresTenantRunKeyAndGuardrail", run: testComplianceValidates},
	{name: "ListLimitOutOfRangeIsInvalid", run: testComplianceLimit},
	{name: "TenantIsolation", run: testComplianceTenants},
	{name: "CancelledContextFails", run: testComplianceCancelled},
}

func complianceRecord(tenant, run, key string, seconds int) bindings.ComplianceRecord {
	return bindings.ComplianceRecord{
		TenantID: tenant, RunID: run, Key: key, ConversationID: "conv-1", TurnNumber: 3,
		AgentID: "acme.drafter", AgentVersion: "1.0.0", GuardrailID: "acme.no-pii", CheckID: "pii-check",
		Kind: bindings.KindLLMJudge, Action: bindings.ActionHalt, Passed: false,
		Reason: "names a person", JudgeResponse: `{"verdict":"fail"}`, EvaluatedAt: at(seconds),
	}
}

// records lists every record of tenant (RunID filter run) in pages of
// limit, checking page sizes and the order.
func (f *fixture) records(t *testing.T, tenant, run string, limit int) []bindings.ComplianceRecord {
	t.Helper()
	var out []bindings.ComplianceRecord
	in := bindings.ListComplianceInput{TenantID: tenant, RunID: run, Limit: limit}
	for range 10000 {
		page, err := f.Compliance.ListCompliance(f.ctx, in)
		must(t, "ListCompliance", err)
		if len(page.Records) > limit {
			t.Fatalf("page of %d records, limit %d", len(page.Records), limit)
		}
		out = append(out, page.Records...)
		if page.Next == nil {
			break
		}
		if len(page.Records) == 0 || *page.Next != page.Records[len(page.Records)-1].Cursor() {
			t.Fatalf("Next %+v is not the last record's cursor", page.Next)
		}
		in.After = page.Next
	}
	wantOrdered(t, "records", project(out, func(r bindings.ComplianceRecord) bindings.ComplianceCursor { return r.Cursor() }), bindings.ComplianceCursorLess)
	return out
}

func keysOf(recs []bindings.ComplianceRecord) []string {
	return project(recs, func(r bindings.ComplianceRecord) string { return r.RunID + "/" + r.Key })
}

func testComplianceRoundTrip(t *testing.T, f *fixture) {
	a := f.tenant("a")
	want := complianceRecord(a, "run-1", "evaluate-guardrails/0", 7)
	must(t, "RecordCompliance", f.Compliance.RecordCompliance(f.ctx, want))
	passed := complianceRecord(a, "run-1", "evaluate-guardrails/1", 7)
	passed.Passed, passed.Reason, passed.JudgeResponse, passed.Kind, passed.Action = true, "", "", "regex", bindings.ActionLog
	passed.ConversationID, passed.TurnNumber = "", 0
	must(t, "RecordCompliance", f.Compliance.RecordCompliance(f.ctx, passed))
	diff(t, "records", f.records(t, a, "", 100), []bindings.ComplianceRecord{want, passed})
}

func testComplianceIdempotent(t *testing.T, f *fixture) {
	a := f.tenant("a")
	first := complianceRecord(a, "run-1", "evaluate-guardrails/0", 1)
	must(t, "first RecordCompliance", f.Compliance.RecordCompliance(f.ctx, first))
	second := first
	second.Passed, second.Reason, second.EvaluatedAt = true, "changed its mind", at(99)
	must(t, "second RecordCompliance", f.Compliance.RecordCompliance(f.ctx, second))
	diff(t, "records after a second record of the same key", f.records(t, a, "", 100), []bindings.ComplianceRecord{first})
}

func testComplianceConcurrent(t *testing.T, f *fixture) {
	a := f.tenant("a")
	const n = 16
	errs := make([]error, n)
	concurrently(n, func(i int) {
		rec := complianceRecord(a, "run-1", "evaluate-guardrails/0", i)
		rec.Reason = fmt.Sprintf("writer %d", i)
		errs[i] = f.Compliance.RecordCompliance(f.ctx, rec)
	})
	for i, err := range errs {
		must(t, fmt.Sprintf("writer %d", i), err)
	}
	if got := f.records(t, a, "", 100); len(got) != 1 {
		t.Fatalf("%d records after %d concurrent writes of one key, want 1", len(got), n)
	}
}

func testComplianceNow(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.Clock.Advance(42 * time.Minute)
	rec := complianceRecord(a, "run-1", "evaluate-guardrails/0", 0)
	rec.EvaluatedAt = time.Time{}
	must(t, "RecordCompliance", f.Compliance.RecordCompliance(f.ctx, rec))
	got := f.records(t, a, "", 100)
	if len(got) != 1 || !got[0].EvaluatedAt.Equal(f.Clock.Now()) {
		t.Fatalf("records %+v, want one evaluated at the clock's now %v", got, f.Clock.Now())
	}
}

func testCompliancePages(t *testing.T, f *fixture) {
	a := f.tenant("a")
	// Written out of order; equal times fall back on run, then key.
	for _, w := range []struct {
		run, key string
		at       int
	}{
		{"run-b", "evaluate-guardrails/1", 5}, {"run-a", "evaluate-guardrails/0", 9},
		{"run-b", "evaluate-guardrails/0", 5}, {"run-a", "evaluate-guardrails/1", 5},
		{"run-c", "evaluate-guardrails/0", 1},
	} {
		must(t, "RecordCompliance", f.Compliance.RecordCompliance(f.ctx, complianceRecord(a, w.run, w.key, w.at)))
	}
	want := []string{"run-c/evaluate-guardrails/0", "run-a/evaluate-guardrails/1", "run-b/evaluate-guardrails/0", "run-b/evaluate-guardrails/1", "run-a/evaluate-guardrails/0"}
	for _, limit := range []int{1, 2, 3, 1000} {
		if got := keysOf(f.records(t, a, "", limit)); !slices.Equal(got, want) {
			t.Fatalf("limit %d: %v, want %v", limit, got, want)
		}
	}
	page, err := f.Compliance.ListCompliance(f.ctx, bindings.ListComplianceInput{TenantID: a, Limit: 5})
	must(t, "ListCompliance", err)
	if len(page.Records) != 5 || page.Next != nil {
		t.Fatalf("a page holding the last record: %d records, next %+v; want 5 and no next", len(page.Records), page.Next)
	}
}

func testComplianceByRun(t *testing.T, f *fixture) {
	a := f.tenant("a")
	for i, run := range []string{"run-1", "run-2", "run-1", "run-2", "run-1"} {
		must(t, "RecordCompliance", f.Compliance.RecordCompliance(f.ctx, complianceRecord(a, run, fmt.Sprintf("evaluate-guardrails/%d", i), i)))
	}
	want := []string{"run-1/evaluate-guardrails/0", "run-1/evaluate-guardrails/2", "run-1/evaluate-guardrails/4"}
	for _, limit := range []int{1, 2, 100} {
		if got := keysOf(f.records(t, a, "run-1", limit)); !slices.Equal(got, want) {
			t.Fatalf("limit %d: %v, want %v", limit, got, want)
		}
	}
}

func testComplianceValidates(t *testing.T, f *fixture) {
	a := f.tenant("a")
	for name, mutate := range map[string]func(*bindings.ComplianceRecord){
		"no tenant":    func(r *bindings.ComplianceRecord) { r.TenantID = "" },
		"no run":       func(r *bindings.ComplianceRecord) { r.RunID = "" },
		"no key":       func(r *bindings.ComplianceRecord) { r.Key = "" },
		"no guardrail": func(r *bindings.ComplianceRecord) { r.GuardrailID = "" },
		"control char": func(r *bindings.ComplianceRecord) { r.RunID = "run\n1" },
	} {
		rec := complianceRecord(a, "run-1", "evaluate-guardrails/0", 1)
		mutate(&rec)
		wantCode(t, name, f.Compliance.RecordCompliance(f.ctx, rec), agents.CodeInvalidMessage)
	}
	if got := f.records(t, a, "", 100); len(got) != 0 {
		t.Fatalf("refused records were stored: %v", keysOf(got))
	}
	_, err := f.Compliance.ListCompliance(f.ctx, bindings.ListComplianceInput{})
	wantCode(t, "ListCompliance without a tenant", err, agents.CodeInvalidMessage)
}

func testComplianceLimit(t *testing.T, f *fixture) {
	for _, limit := range []int{-1, bindings.MaxCompliancePage + 1} {
		_, err := f.Compliance.ListCompliance(f.ctx, bindings.ListComplianceInput{TenantID: f.tenant("a"), Limit: limit})
		wantCode(t, fmt.Sprintf("limit %d", limit), err, agents.CodeInvalidMessage)
	}
}

func testComplianceTenants(t *testing.T, f *fixture) {
	a, b := f.tenant("a"), f.tenant("b")
	ra := complianceRecord(a, "run-1", "evaluate-guardrails/0", 1)
	must(t, "RecordCompliance a", f.Compliance.RecordCompliance(f.ctx, ra))
	if got := f.records(t, b, "", 100); len(got) != 0 {
		t.Fatalf("b lists a's records: %v", keysOf(got))
	}
	rb := ra
	rb.TenantID, rb.Passed = b, true
	must(t, "RecordCompliance b (same run and key)", f.Compliance.RecordCompliance(f.ctx, rb))
	diff(t, "a's records", f.records(t, a, "", 100), []bindings.ComplianceRecord{ra})
	diff(t, "b's records", f.records(t, b, "", 100), []bindings.ComplianceRecord{rb})
}

func testComplianceCancelled(t *testing.T, f *fixture) {
	ctx := canceled(t)
	a := f.tenant("a")
	if err := f.Compliance.RecordCompliance(ctx, complianceRecord(a, "run-1", "evaluate-guardrails/0", 1)); err == nil {
		t.Fatal("RecordCompliance with a cancelled context succeeded")
	}
	if _, err := f.Compliance.ListCompliance(ctx, bindings.ListComplianceInput{TenantID: a}); err == nil {
		t.Fatal("ListCompliance with a cancelled context succeeded")
	}
}
