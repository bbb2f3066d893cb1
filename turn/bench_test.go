package turn_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/turn"
)

// countingConversations records the limits ReadMessages was asked for and
// how many messages it returned.
type countingConversations struct {
	bindings.ConversationBinding
	mu       sync.Mutex
	limits   []int
	returned []int
}

func (c *countingConversations) ReadMessages(ctx context.Context, in bindings.ReadMessagesInput) ([]bindings.ConversationMessage, error) {
	ms, err := c.ConversationBinding.ReadMessages(ctx, in)
	c.mu.Lock()
	c.limits = append(c.limits, in.Limit)
	c.returned = append(c.returned, len(ms))
	c.mu.Unlock()
	return ms, err
}

// historyFixture is a conversation with stored prior messages and an agent
// that answers without tools (historyLimit 20).
func historyFixture(tb testing.TB, stored int, loop bool) (*fixture, turn.Bindings) {
	tb.Helper()
	f := newFixture(tb, nil, func(s *agent.Spec) {
		s.Retrieval, s.Guardrails = nil, nil
	})
	f.provider = scripted.New([]scripted.Response{scripted.Say("Noted.")}, &scripted.Options{Loop: loop, DiscardRequests: loop})
	ctx := context.Background()
	for i := range stored {
		role := bindings.RoleUser
		if i%2 == 1 {
			role = bindings.RoleAgent
		}
		if _, err := f.store.AppendMessage(ctx, bindings.AppendMessageInput{
			TenantID: tenant, ConversationID: f.conv.ID, Role: role, Content: fmt.Sprintf("message %d", i), TurnNumber: i/2 + 1,
		}); err != nil {
			tb.Fatal(err)
		}
	}
	b := f.bindings()
	b.OnEvent = nil
	b.Provenance = bindings.ProvenanceBindings{}
	return f, b
}

// TestHistoryLimitReadsOnlyTheLimit: with 10 and with 100,000 stored
// messages and historyLimit 20, the turn asks the binding for 20 messages,
// once, and sends the model at most those 20.
func TestHistoryLimitReadsOnlyTheLimit(t *testing.T) {
	for _, stored := range []int{10, 100_000} {
		t.Run(fmt.Sprint(stored), func(t *testing.T) {
			f, b := historyFixture(t, stored, false)
			cc := &countingConversations{ConversationBinding: f.store}
			b.Conversations, b.Journal = cc, nil
			if _, err := turn.Invoke(t.Context(), f.input("Next."), b); err != nil {
				t.Fatal(err)
			}
			if len(cc.limits) != 1 || cc.limits[0] != 20 {
				t.Errorf("ReadMessages limits = %v, want [20]", cc.limits)
			}
			want := min(stored, 20)
			if cc.returned[0] != want {
				t.Errorf("read %d messages, want %d", cc.returned[0], want)
			}
			msgs := f.provider.Requests()[0].Messages
			if got := len(msgs) - 2; got != want { // system + history + user
				t.Errorf("model got %d history messages, want %d", got, want)
			}
		})
	}
}

func BenchmarkHistory(b *testing.B) {
	for _, stored := range []int{10, 100_000} {
		b.Run(fmt.Sprintf("stored=%d", stored), func(b *testing.B) {
			f, bb := historyFixture(b, stored, true)
			in := f.input("Next.")
			ctx := context.Background()
			timeLoop(b, func(int) {
				if _, err := turn.Invoke(ctx, in, bb); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkTurn is one full turn: two model calls and one tool call on the
// scripted provider and memstore, each turn the first of its own
// conversation (opened before the timer starts). "full" is the contract
// drafter with its retrieval, guardrail and signed provenance; "core"
// leaves those out.
func BenchmarkTurn(b *testing.B) {
	for _, full := range []bool{false, true} {
		name := "core"
		if full {
			name = "full"
		}
		b.Run(name, func(b *testing.B) {
			f := newFixture(b, nil, func(s *agent.Spec) {
				if !full {
					s.Retrieval, s.Guardrails = nil, nil
				}
			})
			f.provider = scripted.New(searchThenAnswer(), &scripted.Options{Loop: true, DiscardRequests: true})
			bb := f.bindings()
			bb.OnEvent = nil
			if !full {
				bb.Provenance = bindings.ProvenanceBindings{}
			}
			ctx := context.Background()
			inputs := make([]turn.Input, b.N)
			for i := range inputs {
				conv, err := f.store.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: tenant, ProjectID: project, AgentID: f.agent.ID, AgentVersion: f.agent.Version})
				if err != nil {
					b.Fatal(err)
				}
				inputs[i] = f.input("Draft a confidentiality clause.")
				inputs[i].ConversationID = conv.ID
			}
			timeLoop(b, func(i int) {
				res, err := turn.Invoke(ctx, inputs[i], bb)
				if err != nil || res.Usage.ModelCalls != 2 || res.Usage.ToolCalls != 1 {
					b.Fatalf("turn = %+v, %v", res.Usage, err)
				}
			})
		})
	}
}

// BenchmarkResume resumes a turn parked on one approved send-email call
// (the runs are parked and approved before the timer starts): the replay
// of the parked journal, the approved tool call and the final model call.
func BenchmarkResume(b *testing.B) {
	f, bb := emailBench(b, true, nil)
	ctx := context.Background()
	runs := parkEmailRuns(b, f, bb, true)
	timeLoop(b, func(i int) {
		final, err := turn.Resume(ctx, turn.ResumeInput{TenantID: tenant, RunID: runs[i], Agent: f.agent}, bb)
		if err != nil || final.Status != turn.StatusCompleted {
			b.Fatalf("Resume = %+v, %v", final, err)
		}
	})
}

// BenchmarkResumeFresh is BenchmarkResume's workload without the gate:
// the same agent, tools, provider and conversation (turns one after the
// other, history read up to its limit), the send-email call run at once
// and the final model call — one fresh Invoke per iteration. It is the
// like-for-like figure a Resume is compared with (both counted inside the
// function, callgrind --toggle-collect=turn.Invoke / turn.Resume).
func BenchmarkResumeFresh(b *testing.B) {
	f, bb := emailBench(b, true, func(s *agent.Spec) { s.ConversationPolicy.Hitl = nil })
	ctx := context.Background()
	in := f.input("Send the draft.")
	timeLoop(b, func(int) {
		res, err := turn.Invoke(ctx, in, bb)
		if err != nil || res.Status != turn.StatusCompleted || res.Usage.ToolCalls != 1 {
			b.Fatalf("Invoke = %+v, %v", res, err)
		}
	})
}

// BenchmarkResumePending is BenchmarkResume with the approval still
// pending: Resume replays the parked journal, finds the approval
// undecided and returns *agents.HitlRequiredError, running nothing — the
// replay's own cost, without the steps a Resume then runs.
func BenchmarkResumePending(b *testing.B) {
	f, bb := emailBench(b, false, nil)
	ctx := context.Background()
	runs := parkEmailRuns(b, f, bb, false)
	timeLoop(b, func(i int) {
		if _, err := turn.Resume(ctx, turn.ResumeInput{TenantID: tenant, RunID: runs[i], Agent: f.agent}, bb); agents.CodeOf(err) != agents.CodeHitlRequired {
			b.Fatalf("Resume = %v, want hitl-required", err)
		}
	})
}

// timeLoop runs body b.N times (i from 0) on a reset timer, reporting
// allocations and the process CPU time per iteration.
func timeLoop(b *testing.B, body func(i int)) {
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		body(i)
	}
	reportCPU(b, cpu, b.N)
}

// emailBench is the fixture of the Resume benchmarks (retrieval and
// guardrails off, benchStore, no events or provenance), its bindings with
// a provider scripted per model-call key: send-email first, then, when
// answer is set, the final text.
func emailBench(b *testing.B, answer bool, spec func(*agent.Spec)) (*fixture, turn.Bindings) {
	f := newFixture(b, nil, func(s *agent.Spec) {
		s.Retrieval, s.Guardrails = nil, nil
		if spec != nil {
			spec(s)
		}
	})
	benchStore(b, f)
	script := emailThenAnswer()
	kp := &keyedProvider{Calls: map[string]int{}, Answers: map[string]bindings.GenerateResponse{
		"agent-loop/1/model-call": {ToolCalls: script[0].ToolCalls, Usage: script[0].Usage},
	}}
	if answer {
		kp.Answers["agent-loop/2/model-call"] = bindings.GenerateResponse{Text: script[1].Text, Usage: script[1].Usage}
	}
	bb := f.bindings()
	bb.Providers = bindings.Providers{kp}
	bb.OnEvent = nil
	bb.Provenance = bindings.ProvenanceBindings{}
	return f, bb
}

// parkEmailRuns invokes b.N turns of emailBench's fixture, each parked on
// its send-email approval, deciding it (approved) when decide is set, and
// returns their run ids.
func parkEmailRuns(b *testing.B, f *fixture, bb turn.Bindings, decide bool) []string {
	b.Helper()
	runs := make([]string, b.N)
	for i := range runs {
		res, err := turn.Invoke(context.Background(), f.input("Send the draft."), bb)
		if err != nil || res.Status != turn.StatusSuspended {
			b.Fatalf("Invoke = %+v, %v", res, err)
		}
		if decide {
			f.decide(res.Approvals, true)
		}
		runs[i] = res.RunID
	}
	return runs
}

// benchStore gives a fixture without retrieval a store that, as
// BenchmarkAnchorTurn's, does not check what the turn vouches for
// (memstore.Options.CheckTrusted is for tests), with the fixture's
// conversation opened in it.
func benchStore(b *testing.B, f *fixture) {
	b.Helper()
	f.store = memstore.New(&memstore.Options{Now: f.clock.Now})
	conv, err := f.store.OpenConversation(context.Background(), bindings.OpenConversationInput{
		TenantID: tenant, ProjectID: project, ID: f.conv.ID, AgentID: f.agent.ID, AgentVersion: f.agent.Version, Title: f.conv.Title,
	})
	if err != nil {
		b.Fatal(err)
	}
	f.conv = conv
}

// BenchmarkAnchorResume is the anchor workload (BenchmarkAnchorTurn) with
// its tool gated always_ask: each turn, on a fresh conversation, parks on
// the clause_search call and is approved before the timer starts; the
// iteration is the Resume — the replay of the parked journal, the tool
// call, the final model call — to set beside a fresh anchor turn.
func BenchmarkAnchorResume(b *testing.B) {
	_, store, bb := anchorFixture(b, false)
	a := anchorGatedAgent(b)
	bb.Hitl = store
	ctx := context.Background()
	runs := make([]string, b.N)
	for i := range runs {
		runs[i] = parkAnchor(b, a, store, bb)
	}
	// The set-up's garbage (b.N parked turns) is collected before the
	// timer: else a GC mark it started runs on into the timed Resumes,
	// which then pay its write barriers and assists — a cost of the
	// set-up, which the fresh anchor turn it is set beside does not have.
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := turn.Resume(ctx, turn.ResumeInput{TenantID: "t1", RunID: runs[i], Agent: a}, bb)
		if err != nil || res.Status != turn.StatusCompleted || res.Usage.ToolCalls != 1 || res.Response.Content != "Here is the clause." {
			b.Fatalf("Resume = %+v, %v", res, err)
		}
	}
}
