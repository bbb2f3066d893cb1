package pgstore

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/journaltest"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

// holdLookup replaces f's tools with an acme.lookup (any input) that
// counts its calls, tells inTool it is in one and waits there until gate
// closes: a drive that holds its run's lease inside its tool call.
func (f *turnFixture) holdLookup(t testing.TB, inTool chan<- struct{}, gate <-chan struct{}) {
	t.Helper()
	f.tools = registry.NewTools()
	err := f.tools.Add(turnTenant, bindings.ToolDescriptor{
		ID: "acme.lookup", Version: "1.0.0", Description: "Look a term up.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}, func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
		f.executed.Add(1)
		inTool <- struct{}{}
		<-gate
		return json.RawMessage(`{"answer":"42"}`), nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// interleaveAtStart makes b run other in a goroutine at its drive's first
// TurnStartedEvent (after the drive's read, before its first write) and
// wait there until other returns or, with a non-nil inTool, until other's
// drive is in its tool call. The function it returns waits for other and
// reports whether b's drive started it.
func interleaveAtStart(b *turn.Bindings, other func(), inTool <-chan struct{}) (wait func() bool) {
	var (
		once atomic.Bool
		wg   sync.WaitGroup
		done = make(chan struct{})
	)
	b.OnEvent = func(ctx context.Context, e turn.Event) {
		if _, ok := e.(turn.TurnStartedEvent); !ok || !once.CompareAndSwap(false, true) {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done)
			other()
		}()
		if inTool != nil {
			<-inTool
		} else {
			<-done
		}
	}
	return func() bool {
		wg.Wait()
		return once.Load()
	}
}

// crashedBindings is b with s behind crasher: its runs, snapshots,
// conversations, approvals and Driver.
func crashedBindings(b turn.Bindings, crasher *journaltest.Crasher, s *Store) turn.Bindings {
	b.Runs, b.Snapshots, b.Conversations, b.Hitl = crasher.Runs(s), crasher.Snapshots(s), crasher.Conversations(s), crasher.Hitl(s)
	b.Journal = crasher.Driver(s)
	return b
}

// failsAtTheCrash runs drive, which must fail at its crasher's crash: with
// an error, or with the crasher's journaltest.Crash panic when panics is
// set.
func failsAtTheCrash(t *testing.T, panics bool, what string, drive func() (turn.Result, error)) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(journaltest.Crash); !ok || !panics {
				panic(p)
			}
		}
	}()
	if _, err := drive(); err == nil {
		t.Fatal(what + " did not fail at the crash")
	}
}
