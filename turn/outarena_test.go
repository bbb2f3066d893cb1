package turn_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/turn"
)

// TestReusedOutputArena holds that a drive which writes its outputs over
// the previous drive's arena (memstore's Driver copies what it keeps)
// changes nothing the previous turn handed out or
// stored: its Result and its journal read the same after later turns.
func TestReusedOutputArena(t *testing.T) {
	a, store, b := anchorFixture(t, true)
	invoke := func() (turn.Result, []byte) {
		res, err := invokeAnchor(t.Context(), a, store, b)
		if err != nil {
			t.Fatal(err)
		}
		js, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		return res, js
	}
	journal := func(runID string) []byte {
		es, err := store.ReadJournal(t.Context(), "t1", runID)
		if err != nil {
			t.Fatal(err)
		}
		js, err := json.Marshal(es)
		if err != nil {
			t.Fatal(err)
		}
		return js
	}
	first, firstJSON := invoke()
	firstJournal := journal(first.RunID)
	for range 3 {
		invoke()
	}
	if js, _ := json.Marshal(first); string(js) != string(firstJSON) {
		t.Errorf("the first turn's result changed after later turns:\n%s\nwant\n%s", js, firstJSON)
	}
	if js := journal(first.RunID); string(js) != string(firstJournal) {
		t.Errorf("the first turn's journal changed after later turns:\n%s\nwant\n%s", js, firstJournal)
	}
}

// TestReusedOutputArenaAfterResume is TestReusedOutputArena for resumed
// drives, which are pooled as Invoke's are: a resumed turn's Result and
// journal stay as they were after later turns and Resumes reuse the pooled
// run and its output arena.
func TestReusedOutputArenaAfterResume(t *testing.T) {
	_, store, b := anchorFixture(t, true)
	a := anchorGatedAgent(t)
	b.Hitl = store
	park := func() string { return parkAnchor(t, a, store, b) }
	resume := func(runID string) turn.Result {
		res, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: "t1", RunID: runID, Agent: a}, b)
		if err != nil || res.Status != turn.StatusCompleted || res.Response.Content != "Here is the clause." {
			t.Fatalf("Resume = %+v, %v", res, err)
		}
		return res
	}
	marshal := func(v any) string {
		js, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(js)
	}
	journal := func(runID string) string {
		es, err := store.ReadJournal(t.Context(), "t1", runID)
		if err != nil {
			t.Fatal(err)
		}
		return marshal(es)
	}
	first := resume(park())
	firstJSON, firstJournal := marshal(first), journal(first.RunID)
	for range 3 {
		resume(park())
	}
	if js := marshal(first); js != firstJSON {
		t.Errorf("the first resumed turn's result changed after later turns:\n%s\nwant\n%s", js, firstJSON)
	}
	if js := journal(first.RunID); js != firstJournal {
		t.Errorf("the first resumed turn's journal changed after later turns:\n%s\nwant\n%s", js, firstJournal)
	}
}

// TestPromptQuotedAfterChange holds that a pooled run which quoted its
// drive before's prompt (encodeStep keeps the JSON of the last long step
// output) journals each turn's own prompt: agents with different long
// instructions of one length, alternated on one store, each get theirs,
// as json.Marshal writes it (the second with characters it escapes).
func TestPromptQuotedAfterChange(t *testing.T) {
	_, store, b := anchorFixture(t, true)
	specs := []agent.Spec{anchorSpec(), anchorSpec()}
	specs[1].ID = "bench.anchor-2"
	specs[1].Instructions = strings.Repeat("Quote <clauses> & \"cite\" them. ", 20)[:len(anchorInstruction)] // as long
	for i := range 6 {
		a, err := agent.Define(specs[i%2])
		if err != nil {
			t.Fatal(err)
		}
		res, err := invokeAnchor(t.Context(), a, store, b)
		if err != nil {
			t.Fatal(err)
		}
		es, err := store.ReadJournal(t.Context(), "t1", res.RunID)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(a.Instructions)
		found := false
		for _, e := range es {
			if e.Key == turn.NodeRenderPrompt {
				found = true
				if string(e.Output) != string(want) {
					t.Errorf("turn %d: render-prompt journaled %s, want %s", i, e.Output, want)
				}
			}
		}
		if !found {
			t.Fatalf("turn %d: no render-prompt entry", i)
		}
	}
}
