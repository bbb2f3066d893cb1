// Package turnrace runs many turns at once on one store, for the race
// detector: goroutines drive fresh turns with distinct messages and tool
// arguments, and gated turns that park, are approved and resume, all on
// one store. It then checks that every turn.Result a drive returned is
// still what it was when it was returned — nothing a drive hands out
// points into pooled or reused memory — and that every conversation holds
// exactly its own messages. memstore's and pgstore's tests run it.
package turnrace

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

// Store is every binding a race turn uses, from one store.
type Store interface {
	bindings.ConversationBinding
	bindings.RunSnapshotBinding
	bindings.RunBinding
	bindings.HitlBinding
}

// Config is one race.
type Config struct {
	// Store is the one store every turn runs on.
	Store Store
	// TenantID is the tenant of every turn.
	TenantID string
	// Goroutines and Turns are how many goroutines run turns at once and
	// how many turns each runs (a gated turn, parked and resumed, counts
	// as one).
	Goroutines, Turns int
	// GatedEvery makes every GatedEvery-th turn of a goroutine a gated one
	// (0 means 4).
	GatedEvery int
	// TurnsPerConversation is how many fresh turns of a goroutine share a
	// conversation, one after another (0 means 5). A gated turn has a
	// conversation of its own.
	TurnsPerConversation int
}

// The tools of the race agent: lookup runs at once, send asks first.
const (
	lookupTool = "race.lookup"
	sendTool   = "race.send"
)

// Run runs the race of cfg and reports on t every Result that changed
// after it was returned and every conversation whose messages are not
// exactly those of its own turns.
func Run(t *testing.T, cfg Config) {
	t.Helper()
	if cfg.GatedEvery == 0 {
		cfg.GatedEvery = 4
	}
	if cfg.TurnsPerConversation == 0 {
		cfg.TurnsPerConversation = 5
	}
	a := raceAgent(t)
	b := turn.Bindings{
		Providers:     bindings.Providers{model{}},
		Tools:         raceTools(t, cfg.TenantID),
		Conversations: cfg.Store,
		Snapshots:     cfg.Store,
		Runs:          cfg.Store,
		Hitl:          cfg.Store,
	}
	b.Journal, _ = cfg.Store.(journal.Driver) // the store's own, when it has one
	ctx := t.Context()
	drivers := make([]*driver, cfg.Goroutines)
	var wg sync.WaitGroup
	for g := range drivers {
		d := &driver{cfg: cfg, g: g, agent: a, bindings: b}
		drivers[g] = d
		wg.Go(func() { d.run(ctx) })
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for _, d := range drivers {
		if d.err != nil {
			t.Errorf("goroutine %d: %v", d.g, d.err)
		}
	}
	if t.Failed() {
		return
	}
	changed := 0
	for _, d := range drivers {
		for _, r := range d.results {
			if !reflect.DeepEqual(r.copy, *r.got) {
				changed++
				if changed <= 3 {
					t.Errorf("%s: the result changed after it was returned:\nthen %s\nnow  %s", r.what, jsonOf(r.copy), jsonOf(*r.got))
				}
			}
		}
	}
	if changed > 0 {
		t.Errorf("%d results changed after they were returned", changed)
	}
	for _, d := range drivers {
		for _, c := range d.convs {
			checkConversation(t, cfg, c)
		}
	}
}

// driver is one goroutine of the race.
type driver struct {
	cfg      Config
	g        int
	agent    agent.Agent
	bindings turn.Bindings

	results []returned
	convs   []*conversation
	err     error
}

// returned is a Result as a drive returned it, with the deep copy taken
// right then.
type returned struct {
	what string
	got  *turn.Result
	copy turn.Result
}

// conversation is what a conversation must hold: the messages of its
// turns, in order.
type conversation struct {
	id   string
	want []wantMessage
}

// wantMessage is one message a turn must have stored.
type wantMessage struct {
	role       bindings.MessageRole
	content    string
	toolCallID string
	call       *bindings.ToolCall
}

func (d *driver) run(ctx context.Context) {
	var parked *parkedTurn
	var conv *conversation
	fresh := 0
	for i := range d.cfg.Turns {
		if d.err != nil || ctx.Err() != nil {
			return
		}
		tag := fmt.Sprintf("g%d-t%d", d.g, i)
		if i%d.cfg.GatedEvery == d.cfg.GatedEvery-1 {
			if parked != nil {
				d.err = d.resume(ctx, parked)
			}
			if d.err == nil {
				parked, d.err = d.park(ctx, tag)
			}
			continue
		}
		if conv == nil || fresh%d.cfg.TurnsPerConversation == 0 {
			if conv, d.err = d.open(ctx); d.err != nil {
				return
			}
		}
		fresh++
		d.err = d.fresh(ctx, conv, tag)
		if parked != nil && d.err == nil && fresh%2 == 0 {
			// Resume the parked turn after another turn ran meanwhile.
			d.err, parked = d.resume(ctx, parked), nil
		}
	}
	if parked != nil && d.err == nil {
		d.err = d.resume(ctx, parked)
	}
}

// open opens a fresh conversation.
func (d *driver) open(ctx context.Context) (*conversation, error) {
	c, err := d.cfg.Store.OpenConversation(ctx, bindings.OpenConversationInput{
		TenantID: d.cfg.TenantID, AgentID: d.agent.ID, AgentVersion: d.agent.Version,
	})
	if err != nil {
		return nil, fmt.Errorf("open conversation: %w", err)
	}
	conv := &conversation{id: c.ID}
	d.convs = append(d.convs, conv)
	return conv, nil
}

// keep records res with a deep copy taken now.
func (d *driver) keep(what string, res turn.Result) *turn.Result {
	got := &res
	d.results = append(d.results, returned{what: what, got: got, copy: DeepCopy(res)})
	return got
}

// fresh runs one ungated turn on conv and checks what it returned.
func (d *driver) fresh(ctx context.Context, conv *conversation, tag string) error {
	msg := userMessage(tag, lookupTool)
	res, err := turn.Invoke(ctx, d.input(conv.id, msg), d.bindings)
	if err != nil {
		return fmt.Errorf("turn %s: %w", tag, err)
	}
	got := d.keep("turn "+tag, res)
	want := turnMessages(tag, msg, lookupTool)
	conv.want = append(conv.want, want...)
	return checkResult(tag, got, turn.StatusCompleted, want, len(conv.want)/len(want))
}

// parkedTurn is a gated turn waiting for its approval.
type parkedTurn struct {
	tag  string
	msg  string
	conv *conversation
	res  *turn.Result
}

// park starts a gated turn on a conversation of its own; it parks on the
// approval of its send call.
func (d *driver) park(ctx context.Context, tag string) (*parkedTurn, error) {
	conv, err := d.open(ctx)
	if err != nil {
		return nil, err
	}
	msg := userMessage(tag, sendTool)
	res, err := turn.Invoke(ctx, d.input(conv.id, msg), d.bindings)
	if err != nil {
		return nil, fmt.Errorf("gated turn %s: %w", tag, err)
	}
	got := d.keep("parked turn "+tag, res)
	switch {
	case got.Status != turn.StatusSuspended || len(got.Approvals) != 1:
		return nil, fmt.Errorf("gated turn %s: status %s with %d approvals, want suspended with one", tag, got.Status, len(got.Approvals))
	case got.Approvals[0].ToolID != sendTool || string(got.Approvals[0].Arguments) != string(toolArguments(msg)):
		return nil, fmt.Errorf("gated turn %s: approval of %s %s, want %s %s", tag, got.Approvals[0].ToolID, got.Approvals[0].Arguments, sendTool, toolArguments(msg))
	}
	return &parkedTurn{tag: tag, msg: msg, conv: conv, res: got}, nil
}

// resume approves a parked turn's call and resumes its run.
func (d *driver) resume(ctx context.Context, p *parkedTurn) error {
	ap := p.res.Approvals[0]
	if _, err := d.cfg.Store.ResolveApproval(ctx, d.cfg.TenantID, ap.ID, bindings.ApprovalDecision{Approved: true, Reviewer: "rita"}); err != nil {
		return fmt.Errorf("approve %s: %w", p.tag, err)
	}
	res, err := turn.Resume(ctx, turn.ResumeInput{TenantID: d.cfg.TenantID, RunID: p.res.RunID, Agent: d.agent}, d.bindings)
	if err != nil {
		return fmt.Errorf("resume %s: %w", p.tag, err)
	}
	got := d.keep("resumed turn "+p.tag, res)
	want := turnMessages(p.tag, p.msg, sendTool)
	p.conv.want = append(p.conv.want, want...)
	if got.RunID != p.res.RunID {
		return fmt.Errorf("resumed turn %s: run %s, want %s", p.tag, got.RunID, p.res.RunID)
	}
	return checkResult(p.tag, got, turn.StatusCompleted, want, 1)
}

func (d *driver) input(conv, msg string) turn.Input {
	return turn.Input{TenantID: d.cfg.TenantID, Agent: d.agent, ConversationID: conv, UserMessage: msg}
}

// checkResult checks a finished turn's result against the messages it
// must have stored.
func checkResult(tag string, res *turn.Result, status turn.Status, want []wantMessage, turnNumber int) error {
	if res.Status != status {
		return fmt.Errorf("turn %s: status %s, want %s", tag, res.Status, status)
	}
	if res.TurnNumber != turnNumber {
		return fmt.Errorf("turn %s: turn number %d, want %d", tag, res.TurnNumber, turnNumber)
	}
	if got := want[len(want)-1].content; res.Response.Content != got {
		return fmt.Errorf("turn %s: response %q, want %q", tag, res.Response.Content, got)
	}
	if res.Usage.ModelCalls != 2 || res.Usage.ToolCalls != 1 {
		return fmt.Errorf("turn %s: usage %+v, want 2 model calls and 1 tool call", tag, res.Usage)
	}
	if err := sameMessages(res.Appended, want); err != nil {
		return fmt.Errorf("turn %s: appended: %w", tag, err)
	}
	return nil
}

// checkConversation reports on t a conversation whose stored messages are
// not exactly those its turns stored.
func checkConversation(t *testing.T, cfg Config, c *conversation) {
	t.Helper()
	ms, err := cfg.Store.ReadMessages(t.Context(), bindings.ReadMessagesInput{TenantID: cfg.TenantID, ConversationID: c.id, Limit: -1})
	if err != nil {
		t.Errorf("read conversation %s: %v", c.id, err)
		return
	}
	if err := sameMessages(ms, c.want); err != nil {
		t.Errorf("conversation %s: %v", c.id, err)
	}
	for _, m := range ms {
		if m.ConversationID != c.id || m.TenantID != cfg.TenantID {
			t.Errorf("conversation %s holds message %s of %s/%s", c.id, m.ID, m.TenantID, m.ConversationID)
		}
	}
}

// sameMessages says how ms differs from want.
func sameMessages(ms []bindings.ConversationMessage, want []wantMessage) error {
	if len(ms) != len(want) {
		return fmt.Errorf("%d messages, want %d", len(ms), len(want))
	}
	for i, m := range ms {
		w := want[i]
		if m.Role != w.role || m.Content != w.content || m.ToolCallID != w.toolCallID {
			return fmt.Errorf("message %d is %s %q (tool call %q), want %s %q (tool call %q)", i, m.Role, m.Content, m.ToolCallID, w.role, w.content, w.toolCallID)
		}
		switch {
		case w.call == nil && len(m.ToolCalls) != 0:
			return fmt.Errorf("message %d has %d tool calls, want none", i, len(m.ToolCalls))
		case w.call != nil && (len(m.ToolCalls) != 1 || m.ToolCalls[0].ID != w.call.ID || m.ToolCalls[0].Name != w.call.Name ||
			!sameJSON(m.ToolCalls[0].Arguments, w.call.Arguments)):
			return fmt.Errorf("message %d has tool calls %s, want [%s]", i, jsonOf(m.ToolCalls), jsonOf(w.call))
		}
	}
	return nil
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}

// oddText is text that a hand-written codec must escape or pass through
// with care: quotes, backslashes, control characters, line and paragraph
// separators, HTML characters, multi-byte and astral runes.
const oddText = "\"quoted\" \\ back\tslash\n<b>&amp;</b> \u2028\u2029 naïve ☃ 🦫 \x01"

// userMessage is the distinct user message of turn tag, naming the tool
// the model is to call.
func userMessage(tag, tool string) string {
	return tag + " " + tool + " " + strings.Repeat(tag, len(tag)%3+1) + " " + oddText
}

// toolArguments are the arguments the model gives the tool for msg.
func toolArguments(msg string) json.RawMessage {
	b, err := json.Marshal(map[string]string{"query": msg})
	if err != nil {
		panic(err)
	}
	return b
}

// toolOutput is what either tool returns for arguments args.
func toolOutput(query string) json.RawMessage {
	b, err := json.Marshal(map[string]string{"echo": query, "by": "turnrace"})
	if err != nil {
		panic(err)
	}
	return b
}

// answer is the model's final answer to a tool's output.
func answer(output string) string { return "answered ⟨" + output + "⟩" }

// callID is the tool call id of turn tag (the first word of its message).
func callID(msg string) string {
	tag, _, _ := strings.Cut(msg, " ")
	return "call-" + tag
}

// turnMessages are the four messages turn tag stores: the user's, the
// model's call, the tool's result and the model's answer.
func turnMessages(tag, msg, tool string) []wantMessage {
	out := string(toolOutput(msg))
	call := &bindings.ToolCall{ID: callID(msg), Name: tool, Arguments: toolArguments(msg)}
	return []wantMessage{
		{role: bindings.RoleUser, content: msg},
		{role: bindings.RoleAgent, call: call},
		{role: bindings.RoleTool, content: out, toolCallID: call.ID},
		{role: bindings.RoleAgent, content: answer(out)},
	}
}

// model decides from the request's last message: a tool result gets the
// answer; the user's message gets a call of the tool it names, with the
// message as the query.
type model struct{}

func (model) ID() string { return "race" }

func (model) Models() []bindings.ModelInfo {
	return []bindings.ModelInfo{{ID: "race-1", Features: []string{"tool-use"}}}
}

func (model) Generate(_ context.Context, req bindings.GenerateRequest) (bindings.GenerateResponse, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == bindings.ChatTool {
		return bindings.GenerateResponse{Text: answer(last.Content), FinishReason: "stop", Usage: bindings.Usage{InputTokens: 20, OutputTokens: 4}}, nil
	}
	tool := lookupTool
	if strings.Contains(last.Content, " "+sendTool+" ") {
		tool = sendTool
	}
	name := ""
	for _, td := range req.Tools {
		if td.Name == tool || strings.HasSuffix(td.Name, tool[strings.IndexByte(tool, '.')+1:]) {
			name = td.Name
		}
	}
	if name == "" {
		return bindings.GenerateResponse{}, fmt.Errorf("the request offers no tool %s", tool)
	}
	return bindings.GenerateResponse{
		ToolCalls:    []bindings.ToolCall{{ID: callID(last.Content), Name: name, Arguments: toolArguments(last.Content)}},
		FinishReason: "tool_calls",
		Usage:        bindings.Usage{InputTokens: 10, OutputTokens: 2},
	}, nil
}

// raceTools registers the two tools: each echoes its query.
func raceTools(t *testing.T, tenant string) *registry.Tools {
	t.Helper()
	tools := registry.NewTools()
	schema := json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"],"additionalProperties":false}`)
	for _, id := range []string{lookupTool, sendTool} {
		err := tools.Add(tenant, bindings.ToolDescriptor{ID: id, Version: "1.0.0", Description: "Echo the query.", InputSchema: schema},
			func(_ context.Context, in json.RawMessage, _ bindings.CallContext) (json.RawMessage, error) {
				var q struct{ Query string }
				if err := json.Unmarshal(in, &q); err != nil {
					return nil, err
				}
				return toolOutput(q.Query), nil
			})
		if err != nil {
			t.Fatal(err)
		}
	}
	return tools
}

// raceAgent has both tools, send gated (always ask).
func raceAgent(t *testing.T) agent.Agent {
	t.Helper()
	a, err := agent.Define(agent.Spec{
		ID: "race.agent", Version: "1.0.0", Name: "Race",
		Instructions: "You look things up and send them.",
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
		Tools:        []agent.ToolRef{{ID: lookupTool, Version: "^1.0.0"}, {ID: sendTool, Version: "^1.0.0"}},
		ConversationPolicy: &agent.ConversationPolicy{Hitl: &agent.HitlPolicy{Tools: &agent.ToolGates{
			Overrides: map[string]agent.ToolGate{sendTool: {Mode: agent.GateAlwaysAsk}},
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}
