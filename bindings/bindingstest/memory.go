package bindingstest

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
)

// RunMemoryTests checks a MemoryStore: each mode (keyword relevance,
// semantic cosine order, both by reciprocal-rank fusion with k = 60, and
// the latest facts of each type), each scope, the limit, types, ties,
// replacing facts, and tenant isolation.
//
// The keyword corpus is built so that any sensible relevance ranking (BM25,
// PostgreSQL's ts_rank_cd) orders it the same way: facts of equal length
// that share three, two, one or none of the query's terms. The store must
// keep facts as given: a harness should not configure it to compute
// embeddings on write.
func RunMemoryTests(t *testing.T, newHarness NewHarness) {
	t.Helper()
	runSuite(t, newHarness, "MemoryStore", func(h Harness) bool { return h.Memory != nil }, memoryCases)
}

var memoryCases = []testCase{
	{name: "PutFactRoundTripsEveryField", run: testPutFactRoundTrip},
	{name: "PutFactGeneratesIDWhenEmpty", run: testPutFactGeneratesID},
	{name: "PutFactWithZeroCreatedAtUsesNow", clock: true, run: testPutFactNow},
	{name: "PutFactRequiresTenantAndType", run: testPutFactValidates},
	{name: "PutFactReplacesPerID", run: testPutFactReplaces},
	{name: "KeywordRanksByRelevance", run: testKeywordRanks},
	{name: "KeywordReturnsOnlyFactsSharingATerm", run: testKeywordOnlyMatches},
	{name: "KeywordIgnoresCaseAndPunctuation", run: testKeywordCase},
	{name: "TiesBreakByCreatedAtDescThenIDAsc", run: testMemoryTies},
	{name: "SemanticRanksByCosineSimilarity", run: testSemanticRanks},
	{name: "SemanticWithoutQueryEmbeddingMatchesNothing", run: testSemanticEmpty},
	{name: "BothFusesRanksWithRRF", run: testBothRRF},
	{name: "EmptyModeListsLatestFactsOfEachType", run: testLatestPerType},
	{name: "ScopeSelectsConversationProjectOrTenant", run: testMemoryScopes},
	{name: "LimitCapsResultsAndDefaultsTo10", run: testMemoryLimit},
	{name: "OnlyListedTypesMatch", run: testMemoryTypes},
	{name: "UnknownModeOrScopeIsInvalid", run: testMemoryInvalid},
	{name: "TenantIsolation", run: testMemoryTenantIsolation},
	{name: "ReturnedValuesAreCopies", run: testMemoryCopies},
	{name: "CancelledContextFails", run: testMemoryCancelled},
}

const clauseType = "acme.clause"

// fact is a fact of the clause type, tenant-wide, created at at(sec).
func fact(tenant, id, text string, sec int) bindings.Fact {
	return bindings.Fact{TenantID: tenant, ID: id, Type: clauseType, Text: text, CreatedAt: at(sec)}
}

func (f *fixture) put(t *testing.T, facts ...bindings.Fact) {
	t.Helper()
	for _, fa := range facts {
		_, err := f.Memory.PutFact(f.ctx, fa)
		must(t, "PutFact "+fa.ID, err)
	}
}

func (f *fixture) query(t *testing.T, q bindings.MemoryQuery) []bindings.ScoredFact {
	t.Helper()
	if q.Scope == "" {
		q.Scope = agent.ScopeTenant
	}
	if q.Types == nil {
		q.Types = []string{clauseType}
	}
	return mustReturn(f.Memory.QueryFacts(f.ctx, q))(t, "QueryFacts")
}

func factIDs(fs []bindings.ScoredFact) []string {
	return project(fs, func(s bindings.ScoredFact) string { return s.Fact.ID })
}

// wantScores checks scores within tol.
func wantScores(t *testing.T, got []bindings.ScoredFact, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d results, want %d", len(got), len(want))
	}
	for i := range want {
		if math.Abs(got[i].Score-want[i]) > tol {
			t.Fatalf("result %d (%s): score %v, want %v ± %g", i, got[i].Fact.ID, got[i].Score, want[i], tol)
		}
	}
}

// The keyword corpus: five-word texts sharing 3, 2, 1 and 0 of the terms
// of keywordQuery.
const (
	keywordQuery = "late payment penalty"
	text3        = "late payment penalty vendor invoice"
	text2        = "payment penalty vendor invoice schedule"
	text1        = "penalty vendor invoice schedule annex"
	text0        = "vendor invoice schedule annex delivery"
	text0b       = "buyer seller delivery annex schedule"
)

func testPutFactRoundTrip(t *testing.T, f *fixture) {
	a := f.tenant("a")
	in := bindings.Fact{TenantID: a, ID: "f1", Type: clauseType, ProjectID: "p1", ConversationID: "c1",
		Text: "net 30 payment terms", Data: json.RawMessage(`{"clause":"7.2","tags":["payment"]}`),
		Embedding: []float32{0.25, -0.5, 1}, CreatedAt: at(4)}
	got, err := f.Memory.PutFact(f.ctx, in)
	must(t, "PutFact", err)
	diff(t, "returned fact", got, in)
	res := f.query(t, bindings.MemoryQuery{TenantID: a, Limit: 10})
	diff(t, "queried fact", res, []bindings.ScoredFact{{Fact: in}})
}

func testPutFactGeneratesID(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f1, err := f.Memory.PutFact(f.ctx, bindings.Fact{TenantID: a, Type: clauseType, Text: "one", CreatedAt: at(1)})
	must(t, "PutFact", err)
	f2, err := f.Memory.PutFact(f.ctx, bindings.Fact{TenantID: a, Type: clauseType, Text: "two", CreatedAt: at(2)})
	must(t, "PutFact", err)
	if f1.ID == "" || f2.ID == "" || f1.ID == f2.ID {
		t.Fatalf("generated fact ids %q and %q: want two distinct non-empty ids", f1.ID, f2.ID)
	}
	diff(t, "stored", factIDs(f.query(t, bindings.MemoryQuery{TenantID: a})), []string{f2.ID, f1.ID})
}

func testPutFactNow(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.Clock.Advance(3 * time.Hour)
	got, err := f.Memory.PutFact(f.ctx, bindings.Fact{TenantID: a, ID: "f1", Type: clauseType, Text: "x"})
	must(t, "PutFact", err)
	if !got.CreatedAt.Equal(f.Clock.Now()) {
		t.Fatalf("CreatedAt = %v, want the clock's now %v", got.CreatedAt, f.Clock.Now())
	}
}

func testPutFactValidates(t *testing.T, f *fixture) {
	_, err := f.Memory.PutFact(f.ctx, bindings.Fact{ID: "f1", Type: clauseType, Text: "x"})
	wantCode(t, "no tenant", err, agents.CodeInvalidMessage)
	_, err = f.Memory.PutFact(f.ctx, bindings.Fact{TenantID: f.tenant("a"), ID: "f1", Text: "x"})
	wantCode(t, "no type", err, agents.CodeInvalidMessage)
}

func testPutFactReplaces(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.put(t, fact(a, "f1", "alpha clause", 1), fact(a, "f2", "gamma clause", 2))
	f.put(t, fact(a, "f1", "beta clause", 3))
	if got := f.query(t, bindings.MemoryQuery{TenantID: a, Mode: agent.ModeKeyword, Query: "alpha"}); len(got) != 0 {
		t.Fatalf("keyword query for replaced text found %v", factIDs(got))
	}
	got := f.query(t, bindings.MemoryQuery{TenantID: a, Mode: agent.ModeKeyword, Query: "beta"})
	if len(got) != 1 || got[0].Fact.ID != "f1" || got[0].Fact.Text != "beta clause" {
		t.Fatalf("keyword query for the new text: %+v", got)
	}
	diff(t, "latest", factIDs(f.query(t, bindings.MemoryQuery{TenantID: a})), []string{"f1", "f2"})
}

func testKeywordRanks(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.put(t,
		fact(a, "k1", text1, 1), fact(a, "k3", text3, 2), fact(a, "k0", text0, 3), fact(a, "k2", text2, 4),
	)
	other := fact(a, "note", text3, 5)
	other.Type = "acme.note"
	f.put(t, other)
	got := f.query(t, bindings.MemoryQuery{TenantID: a, Mode: agent.ModeKeyword, Query: keywordQuery})
	diff(t, "keyword order", factIDs(got), []string{"k3", "k2", "k1"})
	for i := 1; i < len(got); i++ {
		if !(got[i-1].Score > got[i].Score) || got[i].Score <= 0 {
			t.Fatalf("scores not strictly decreasing and positive: %v then %v", got[i-1].Score, got[i].Score)
		}
	}
}

func testKeywordOnlyMatches(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.put(t, fact(a, "k0", text0, 1), fact(a, "k0b", text0b, 2), fact(a, "k1", text1, 3))
	diff(t, "matches", factIDs(f.query(t, bindings.MemoryQuery{TenantID: a, Mode: agent.ModeKeyword, Query: keywordQuery})), []string{"k1"})
	if got := f.query(t, bindings.MemoryQuery{TenantID: a, Mode: agent.ModeKeyword, Query: "zebra quantum"}); len(got) != 0 {
		t.Fatalf("query sharing no term found %v", factIDs(got))
	}
	if got := f.query(t, bindings.MemoryQuery{TenantID: a, Mode: agent.ModeKeyword, Query: ""}); len(got) != 0 {
		t.Fatalf("empty keyword query found %v", factIDs(got))
	}
}

func testKeywordCase(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.put(t, fact(a, "f1", "Payment-Terms: NET30, Governing LAW.", 1), fact(a, "f2", "vendor delivery annex", 2))
	diff(t, "mixed case and punctuation", factIDs(f.query(t, bindings.MemoryQuery{TenantID: a, Mode: agent.ModeKeyword, Query: "PAYMENT net30?"})), []string{"f1"})
	diff(t, "governing", factIDs(f.query(t, bindings.MemoryQuery{TenantID: a, Mode: agent.ModeKeyword, Query: "governing"})), []string{"f1"})
}

func testMemoryTies(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.put(t,
		fact(a, "f-c", "indemnity cap", 1), fact(a, "f-b", "indemnity cap", 2), fact(a, "f-a", "indemnity cap", 1),
	)
	diff(t, "keyword ties", factIDs(f.query(t, bindings.MemoryQuery{TenantID: a, Mode: agent.ModeKeyword, Query: "indemnity"})), []string{"f-b", "f-a", "f-c"})
	diff(t, "latest ties", factIDs(f.query(t, bindings.MemoryQuery{TenantID: a})), []string{"f-b", "f-a", "f-c"})
}

func withEmbedding(fa bindings.Fact, v ...float32) bindings.Fact {
	fa.Embedding = v
	return fa
}

func testSemanticRanks(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.put(t,
		withEmbedding(fact(a, "s3", "c", 1), 0, 0, 1),
		withEmbedding(fact(a, "s1", "a", 2), 2, 0, 0), // same direction, larger norm
		withEmbedding(fact(a, "s4", "d", 3), -1, 0.1, 0),
		fact(a, "s5", "no embedding", 4),
		withEmbedding(fact(a, "s2", "b", 5), 1, 1, 0),
	)
	got := f.query(t, bindings.MemoryQuery{TenantID: a, Mode: agent.ModeSemantic, QueryEmbedding: []float32{1, 0, 0}})
	diff(t, "semantic order", factIDs(got), []string{"s1", "s2", "s3", "s4"})
	wantScores(t, got, []float64{1, 1 / math.Sqrt2, 0, -1 / math.Sqrt(1.01)}, 1e-4)
}

func testSemanticEmpty(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.put(t, withEmbedding(fact(a, "s1", "payment", 1), 1, 0, 0))
	if got := f.query(t, bindings.MemoryQuery{TenantID: a, Mode: agent.ModeSemantic, Query: "payment"}); len(got) != 0 {
		t.Fatalf("semantic query without an embedding found %v", factIDs(got))
	}
}

func testBothRRF(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.put(t,
		withEmbedding(fact(a, "x", text3, 1), 1, 2, 0), // keyword 1, semantic 3
		withEmbedding(fact(a, "y", text2, 2), 1, 0, 0), // keyword 2, semantic 1
		withEmbedding(fact(a, "z", text0, 3), 1, 1, 0), // semantic 2 only
		fact(a, "w", text1, 4),                         // keyword 3 only
		fact(a, "v", text0b, 5),                        // neither
	)
	got := f.query(t, bindings.MemoryQuery{TenantID: a, Mode: agent.ModeBoth, Query: keywordQuery, QueryEmbedding: []float32{1, 0, 0}})
	diff(t, "fused order", factIDs(got), []string{"y", "x", "z", "w"})
	wantScores(t, got, []float64{1.0/62 + 1.0/61, 1.0/61 + 1.0/63, 1.0 / 62, 1.0 / 63}, 1e-9)
}

func testLatestPerType(t *testing.T, f *fixture) {
	a := f.tenant("a")
	typed := func(id, typ string, sec int) bindings.Fact {
		fa := fact(a, id, "text of "+id, sec)
		fa.Type = typ
		return fa
	}
	f.put(t,
		typed("a1", "t.a", 1), typed("a2", "t.a", 2), typed("a3", "t.a", 3),
		typed("b1", "t.b", 1), typed("b2", "t.b", 5),
		typed("c1", "t.c", 9),
	)
	got := f.query(t, bindings.MemoryQuery{TenantID: a, Types: []string{"t.a", "t.b"}, Limit: 2, Query: "ignored in this mode"})
	diff(t, "latest two of each type", factIDs(got), []string{"b2", "a3", "a2", "b1"})
	for _, s := range got {
		if s.Score != 0 {
			t.Fatalf("score %v in the latest-facts mode, want 0", s.Score)
		}
	}
}

func testMemoryScopes(t *testing.T, f *fixture) {
	a := f.tenant("a")
	scoped := func(id, project, conv string, sec int) bindings.Fact {
		fa := fact(a, id, "nda clause "+id, sec)
		fa.ProjectID, fa.ConversationID = project, conv
		return fa
	}
	f.put(t, scoped("f1", "p1", "c1", 4), scoped("f2", "p1", "c2", 3), scoped("f3", "p2", "", 2), scoped("f4", "", "", 1))
	for _, mode := range []string{"", agent.ModeKeyword} {
		for _, tc := range []struct {
			scope, project, conv string
			want                 []string
		}{
			{agent.ScopeSameConversation, "p1", "c1", []string{"f1"}},
			{agent.ScopeSameProject, "p1", "c1", []string{"f1", "f2"}},
			{agent.ScopeSameProject, "p2", "", []string{"f3"}},
			{agent.ScopeTenant, "p1", "c1", []string{"f1", "f2", "f3", "f4"}},
		} {
			got := f.query(t, bindings.MemoryQuery{TenantID: a, Scope: tc.scope, ProjectID: tc.project, ConversationID: tc.conv, Mode: mode, Query: "nda"})
			diff(t, fmt.Sprintf("mode %q scope %s", mode, tc.scope), factIDs(got), tc.want)
		}
	}
}

func testMemoryLimit(t *testing.T, f *fixture) {
	a := f.tenant("a")
	var want []string
	for i := range 12 {
		f.put(t, withEmbedding(fact(a, fmt.Sprintf("f%02d", i), "payment clause", i), 1, 0, 0))
		want = append([]string{fmt.Sprintf("f%02d", i)}, want...)
	}
	for _, mode := range []string{"", agent.ModeKeyword, agent.ModeSemantic, agent.ModeBoth} {
		q := bindings.MemoryQuery{TenantID: a, Mode: mode, Query: "payment", QueryEmbedding: []float32{1, 0, 0}, Limit: 3}
		diff(t, fmt.Sprintf("mode %q limit 3", mode), factIDs(f.query(t, q)), want[:3])
		q.Limit = 0
		diff(t, fmt.Sprintf("mode %q default limit", mode), factIDs(f.query(t, q)), want[:10])
	}
}

func testMemoryTypes(t *testing.T, f *fixture) {
	a := f.tenant("a")
	note := fact(a, "n1", "payment note", 2)
	note.Type = "acme.note"
	f.put(t, fact(a, "c1", "payment clause", 1), note)
	diff(t, "clause only", factIDs(f.query(t, bindings.MemoryQuery{TenantID: a, Mode: agent.ModeKeyword, Query: "payment"})), []string{"c1"})
	diff(t, "both types", factIDs(f.query(t, bindings.MemoryQuery{TenantID: a, Types: []string{clauseType, "acme.note"}, Mode: agent.ModeKeyword, Query: "payment"})), []string{"n1", "c1"})
	if got := f.query(t, bindings.MemoryQuery{TenantID: a, Types: []string{}, Mode: agent.ModeKeyword, Query: "payment"}); len(got) != 0 {
		t.Fatalf("no types matched %v", factIDs(got))
	}
}

func testMemoryInvalid(t *testing.T, f *fixture) {
	a := f.tenant("a")
	_, err := f.Memory.QueryFacts(f.ctx, bindings.MemoryQuery{TenantID: a, Types: []string{clauseType}, Scope: agent.ScopeTenant, Mode: "fuzzy", Query: "x"})
	wantCode(t, "unknown mode", err, agents.CodeInvalidMessage)
	_, err = f.Memory.QueryFacts(f.ctx, bindings.MemoryQuery{TenantID: a, Types: []string{clauseType}, Scope: "galaxy"})
	wantCode(t, "unknown scope", err, agents.CodeInvalidMessage)
	_, err = f.Memory.QueryFacts(f.ctx, bindings.MemoryQuery{Types: []string{clauseType}, Scope: agent.ScopeTenant})
	wantCode(t, "no tenant", err, agents.CodeInvalidMessage)
}

func testMemoryTenantIsolation(t *testing.T, f *fixture) {
	a, b := f.tenant("a"), f.tenant("b")
	f.put(t, withEmbedding(fact(a, "f1", text3, 1), 1, 0, 0))
	for _, mode := range []string{"", agent.ModeKeyword, agent.ModeSemantic, agent.ModeBoth} {
		got := f.query(t, bindings.MemoryQuery{TenantID: b, Mode: mode, Query: keywordQuery, QueryEmbedding: []float32{1, 0, 0}})
		if len(got) != 0 {
			t.Fatalf("mode %q: b sees %v", mode, factIDs(got))
		}
	}
	f.put(t, fact(b, "f1", "b's own fact", 2))
	got := f.query(t, bindings.MemoryQuery{TenantID: a, Mode: agent.ModeKeyword, Query: keywordQuery})
	if len(got) != 1 || got[0].Fact.Text != text3 || got[0].Fact.TenantID != a {
		t.Fatalf("b's put of the same id changed a's fact: %+v", got)
	}
	got = f.query(t, bindings.MemoryQuery{TenantID: b})
	if len(got) != 1 || got[0].Fact.Text != "b's own fact" {
		t.Fatalf("b's facts: %+v", got)
	}
}

func testMemoryCopies(t *testing.T, f *fixture) {
	a := f.tenant("a")
	in := bindings.Fact{TenantID: a, ID: "f1", Type: clauseType, Text: "payment", Data: json.RawMessage(`{"a":1}`), Embedding: []float32{1, 0, 0}, CreatedAt: at(1)}
	want := []bindings.ScoredFact{{Fact: bindings.Fact{TenantID: a, ID: "f1", Type: clauseType, Text: "payment", Data: json.RawMessage(`{"a":1}`), Embedding: []float32{1, 0, 0}, CreatedAt: at(1)}}}
	got, err := f.Memory.PutFact(f.ctx, in)
	must(t, "PutFact", err)
	in.Data[1] = 'X'
	in.Embedding[0] = 9
	got.Data[2] = 'Y'
	got.Embedding[1] = 9
	res := f.query(t, bindings.MemoryQuery{TenantID: a})
	res[0].Fact.Data[1] = 'Z'
	res[0].Fact.Embedding[2] = 9
	diff(t, "after mutating returned facts", f.query(t, bindings.MemoryQuery{TenantID: a}), want)
}

func testMemoryCancelled(t *testing.T, f *fixture) {
	a := f.tenant("a")
	if _, err := f.Memory.PutFact(canceled(t), fact(a, "f1", "x", 1)); err == nil {
		t.Fatal("PutFact with a cancelled context succeeded")
	}
	if _, err := f.Memory.QueryFacts(canceled(t), bindings.MemoryQuery{TenantID: a, Types: []string{clauseType}, Scope: agent.ScopeTenant}); err == nil {
		t.Fatal("QueryFacts with a cancelled context succeeded")
	}
}
