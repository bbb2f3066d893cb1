package turn_test

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

const (
	tenant  = "acme"
	project = "globex-nda"
)

// clock is a settable clock shared by the store and the turn.
type clock struct {
	mu   sync.Mutex
	t    time.Time
	wall bool // read the wall clock instead (worker tests)
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wall {
		return time.Now()
	}
	return c.t
}

// useWall has the clock read the wall clock from now on (worker tests).
func (c *clock) useWall() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall = true
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// toolLog counts the calls each tool got, with their request ids.
type toolLog struct {
	mu    sync.Mutex
	calls map[string][]string // tool id → request ids, in call order
}

func (l *toolLog) record(tool, requestID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.calls == nil {
		l.calls = map[string][]string{}
	}
	l.calls[tool] = append(l.calls[tool], requestID)
}

func (l *toolLog) count(tool string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.calls[tool])
}

func (l *toolLog) total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.calls {
		n += len(c)
	}
	return n
}

// runs is how often each request id was called, over every tool: what
// the crash tests hold to once per completed call.
func (l *toolLog) runs() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := map[string]int{}
	for _, ids := range l.calls {
		for _, id := range ids {
			n[id]++
		}
	}
	return n
}

func (l *toolLog) requestIDs(tool string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls[tool]...)
}

// fixture is a contract-drafter turn on memstore with the scripted
// provider and counting tools.
type fixture struct {
	t        testing.TB
	clock    *clock
	store    *memstore.Store
	tools    *registry.Tools
	log      *toolLog
	provider *scripted.Provider
	agent    agent.Agent
	conv     bindings.Conversation
	keys     *memstore.Keys
	events   *eventLog
}

// eventLog records events.
type eventLog struct {
	mu     sync.Mutex
	events []turn.Event
}

func (l *eventLog) on(_ context.Context, e turn.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

// kinds returns the kinds recorded, without node events.
func (l *eventLog) kinds() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.events {
		if k := e.Kind(); k != turn.KindNodeStarted && k != turn.KindNodeCompleted {
			out = append(out, k)
		}
	}
	return out
}

func (l *eventLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = nil
}

var clauseSchema = json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","minLength":1}},"required":["query"],"additionalProperties":false}`)
var emailSchema = json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"},"subject":{"type":"string"},"body":{"type":"string"}},"required":["to","subject","body"]}`)

// drafterFile is the contract drafter of the TypeScript package's
// example, as the repository's example agent file holds it.
const drafterFile = "../examples/agents/contract-drafter.yaml"

// drafterSpec returns the spec of drafterFile, decoded afresh on every
// call so a test may change it.
func drafterSpec(t testing.TB) agent.Spec {
	t.Helper()
	data, err := os.ReadFile(drafterFile)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := agent.ParseSpec(data)
	if err != nil {
		t.Fatalf("%s: %v", drafterFile, err)
	}
	return spec
}

var piiPattern = regexp.MustCompile(`[\w.+-]+@[\w-]+\.[\w.]+`)

func noPII(_ context.Context, _ json.RawMessage, trace bindings.RunTrace) (bindings.CheckResult, error) {
	if piiPattern.MatchString(trace.Response.Content) {
		return bindings.CheckResult{Passed: false, Reason: "the response contains an email address"}, nil
	}
	return bindings.CheckResult{Passed: true}, nil
}

// newFixture builds a fixture; edit changes the agent spec before Define.
func newFixture(t testing.TB, script []scripted.Response, edit func(*agent.Spec)) *fixture {
	t.Helper()
	f := &fixture{t: t, clock: newClock(), log: &toolLog{}, events: &eventLog{}, keys: memstore.NewKeys([]byte("fixture-seed"))}
	f.store = memstore.New(&memstore.Options{Now: f.clock.Now, CheckTrusted: true})
	f.provider = scripted.New(script, nil)
	f.tools = registry.NewTools()
	f.addTool("acme.clause-search", "1.2.0", clauseSchema, func(_ context.Context, in json.RawMessage, _ bindings.CallContext) (json.RawMessage, error) {
		return json.RawMessage(`{"clauses":[{"id":"C-7","title":"Mutual confidentiality"}]}`), nil
	})
	f.addTool("acme.send-email", "2.1.3", emailSchema, func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
		return json.RawMessage(`{"sent":true}`), nil
	})
	spec := drafterSpec(t)
	if edit != nil {
		edit(&spec)
	}
	a, err := agent.Define(spec)
	if err != nil {
		t.Fatalf("Define: %v", err)
	}
	f.agent = a
	ctx := context.Background()
	for _, fact := range []bindings.Fact{
		{ID: "C-7", Text: "Mutual confidentiality clause: three years after disclosure."},
		{ID: "C-12", Text: "Non-solicitation of employees for twelve months."},
	} {
		fact.TenantID, fact.ProjectID, fact.Type = tenant, project, "acme.clause"
		if _, err := f.store.PutFact(ctx, fact); err != nil {
			t.Fatalf("PutFact: %v", err)
		}
	}
	f.conv, err = f.store.OpenConversation(ctx, bindings.OpenConversationInput{
		TenantID: tenant, ProjectID: project, ID: "conv-1", AgentID: a.ID, AgentVersion: a.Version, Title: "NDA",
	})
	if err != nil {
		t.Fatalf("OpenConversation: %v", err)
	}
	return f
}

// addTool registers a tool whose calls are counted before h runs.
func (f *fixture) addTool(id, version string, schema json.RawMessage, h bindings.ToolHandler) {
	f.t.Helper()
	err := f.tools.Add(tenant, bindings.ToolDescriptor{ID: id, Version: version, InputSchema: schema},
		func(ctx context.Context, in json.RawMessage, call bindings.CallContext) (json.RawMessage, error) {
			f.log.record(id, call.RequestID)
			return h(ctx, in, call)
		})
	if err != nil {
		f.t.Fatalf("add tool %s: %v", id, err)
	}
}

// bindings returns a fresh set of bindings over the fixture's store.
func (f *fixture) bindings() turn.Bindings {
	return turn.Bindings{
		Providers:     bindings.Providers{f.provider},
		Tools:         f.tools,
		Memory:        f.store,
		Conversations: f.store,
		Snapshots:     f.store,
		Runs:          f.store,
		Journal:       f.store,
		Hitl:          f.store,
		Provenance:    bindings.ProvenanceBindings{Emitter: f.store, Keys: f.keys},
		Guardrails: memstore.Guardrails{Shared: map[string]bindings.Guardrail{
			"acme.no-pii": {ID: "acme.no-pii", Kind: "pattern", CheckID: "no-pii", Action: bindings.ActionHalt},
		}},
		Checks:  memstore.Checks{"no-pii": bindings.CheckFunc(noPII)},
		OnEvent: f.events.on,
		Now:     f.clock.Now,
	}
}

// input is the turn input of the fixture's conversation.
func (f *fixture) input(msg string) turn.Input {
	return turn.Input{
		TenantID: tenant, ProjectID: project, Agent: f.agent, ConversationID: f.conv.ID,
		UserMessage: msg, Parameters: map[string]any{"firmName": "Acme LLP"},
	}
}

// mustInvoke runs msg as a turn of the fixture's conversation with b and
// fails t on an error.
func (f *fixture) mustInvoke(t testing.TB, b turn.Bindings, msg string) turn.Result {
	t.Helper()
	res, err := turn.Invoke(t.Context(), f.input(msg), b)
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	return res
}

// park runs msg as a turn of the fixture's conversation with b and fails t
// unless it parked (suspended, on an approval).
func (f *fixture) park(t testing.TB, b turn.Bindings, msg string) turn.Result {
	t.Helper()
	res, err := turn.Invoke(t.Context(), f.input(msg), b)
	if err != nil || res.Status != turn.StatusSuspended {
		t.Fatalf("Invoke = %+v, %v; want suspended", res, err)
	}
	return res
}

// messages returns every stored message of the conversation.
func (f *fixture) messages() []bindings.ConversationMessage {
	f.t.Helper()
	ms, err := f.store.ReadMessages(context.Background(), bindings.ReadMessagesInput{TenantID: tenant, ConversationID: f.conv.ID, Limit: -1})
	if err != nil {
		f.t.Fatalf("ReadMessages: %v", err)
	}
	return ms
}

// journal returns the run's journal.
func (f *fixture) journal(runID string) []bindings.JournalEntry {
	f.t.Helper()
	j, err := f.store.ReadJournal(context.Background(), tenant, runID)
	if err != nil {
		f.t.Fatalf("ReadJournal: %v", err)
	}
	return j
}

// approve decides every approval of res.
func (f *fixture) decide(approvals []bindings.ApprovalRequest, approved bool) {
	f.t.Helper()
	for _, a := range approvals {
		if _, err := f.store.ResolveApproval(context.Background(), tenant, a.ID, bindings.ApprovalDecision{Approved: approved, Reviewer: "rita"}); err != nil {
			f.t.Fatalf("ResolveApproval %s: %v", a.ID, err)
		}
	}
}

// Common scripts.
func searchThenAnswer() []scripted.Response {
	return []scripted.Response{
		scripted.Call("call_1", "acme.clause-search", map[string]any{"query": "confidentiality"}).WithUsage(100, 10, 0.001),
		scripted.Say("Clause C-7 fits: three years of confidentiality.").WithUsage(200, 20, 0.002),
	}
}

func emailThenAnswer() []scripted.Response {
	return []scripted.Response{
		scripted.Call("call_1", "acme.send-email", map[string]any{"to": "legal@globex.test", "subject": "NDA", "body": "Draft attached."}).WithUsage(100, 10, 0.001),
		scripted.Say("I sent the draft to Globex's legal team.").WithUsage(200, 20, 0.002),
	}
}
