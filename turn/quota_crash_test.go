package turn_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/agents/bindings"
)

// quotaCrashQuotas count every scope the scenario uses, none near its
// limit.
var quotaCrashQuotas = []bindings.Quota{
	{Name: "turns", Scope: bindings.QuotaTurns, Limit: 100, WindowSeconds: 86400},
	{Name: "calls", Scope: bindings.QuotaModelCalls, Limit: 100, WindowSeconds: 86400},
	{Name: "tokens", Scope: bindings.QuotaTokens, Limit: 1e6, WindowSeconds: 86400},
	{Name: "searches", Scope: bindings.QuotaToolCalls, ToolID: "acme.clause-search", Limit: 100, WindowSeconds: 86400},
}

// quotaCrashOutcome is what the counter and the provider saw.
type quotaCrashOutcome struct {
	usage      map[string]float64
	modelSteps int // model-call steps that called the provider (distinct request ids)
	toolSteps  int // tool steps that ran the tool
	tokens     float64
	writes     int
}

// runQuotaCrash runs a turn with quotas (a search, then an answer),
// crashing at write number allowed (never when negative) and resuming
// from fresh bindings until it completes.
func runQuotaCrash(t *testing.T, allowed int, panics, oneStore bool) quotaCrashOutcome {
	t.Helper()
	f := newFixture(t, nil, nil)
	kp := &keyedProvider{Calls: map[string]int{}, Answers: map[string]bindings.GenerateResponse{
		"agent-loop/1/model-call": {ToolCalls: []bindings.ToolCall{{ID: "call_1", Name: "acme.clause-search", Arguments: json.RawMessage(`{"query":"confidentiality"}`)}},
			Usage: bindings.Usage{InputTokens: 100, OutputTokens: 10}},
		"agent-loop/2/model-call": {Text: "Clause C-7 fits.", Usage: bindings.Usage{InputTokens: 200, OutputTokens: 20}},
	}}
	const runID = "run-quota-crash"
	drive := crashDrive{
		f: f, b: quotaBindings(f, quotaCrashQuotas...), provider: kp, msg: "Find a confidentiality clause.", runID: runID, agent: f.agent,
	}.run(t, allowed, panics, oneStore)
	out := quotaCrashOutcome{usage: map[string]float64{}, toolSteps: len(f.log.requestIDs("acme.clause-search")), writes: drive.writes}
	for id := range kp.Calls {
		out.modelSteps++
		out.tokens += float64(kp.Answers[strings.TrimPrefix(id, runID+"/")].Usage.InputTokens + kp.Answers[strings.TrimPrefix(id, runID+"/")].Usage.OutputTokens)
	}
	seen := map[string]bool{}
	for _, id := range f.log.requestIDs("acme.clause-search") {
		seen[id] = true
	}
	out.toolSteps = len(seen)
	us, qerr := f.store.QuotaUsage(t.Context(), tenant, time.Time{})
	if qerr != nil {
		t.Fatal(qerr)
	}
	for _, u := range us {
		out.usage[u.Quota.Name] = u.Used
	}
	return out
}

// TestQuotaCountsWhatRanAfterACrashAtEveryWrite crashes a turn with quotas
// at every journal write in turn, in both failure modes, and checks that
// the counter holds exactly the units that ran: one turn, one unit per
// model-call step that called the model and per tool step that ran the
// tool (a step re-run after a crash reuses its unit), and the tokens of
// those steps.
func TestQuotaCountsWhatRanAfterACrashAtEveryWrite(t *testing.T) {
	eachCrashStore(t, func(t *testing.T, oneStore bool) {
		base := runQuotaCrash(t, -1, false, oneStore)
		want := map[string]float64{"turns": 1, "calls": 2, "tokens": 330, "searches": 1}
		check := func(mode string, n int, got quotaCrashOutcome) {
			t.Helper()
			ran := map[string]float64{"turns": 1, "calls": float64(got.modelSteps), "tokens": got.tokens, "searches": float64(got.toolSteps)}
			for name, w := range want {
				if got.usage[name] != w || ran[name] != w {
					t.Errorf("%s at write %d: quota %s counted %v, %v ran; want %v", mode, n, name, got.usage[name], ran[name], w)
				}
			}
		}
		check("baseline", -1, base)
		t.Logf("baseline: %d writes", base.writes)
		crashAtEveryWrite(base.writes, func(mode string, n int, panics bool) {
			check(mode, n, runQuotaCrash(t, n, panics, oneStore))
		})
	})
}
