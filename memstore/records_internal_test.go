package memstore

import (
	"reflect"
	"strings"
	"testing"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/alias"
)

// TestRecordsFillTheirSizeClass holds that a runRec and a convRec fill
// their allocation to the byte (its size class less the runtime's 8-byte
// type header): the GC reads a larger allocation's tail as another record
// and counts it as scan work, which more than doubled the scan work of the
// records kept (see runText). A change to bindings.Run, bindings.Conversation
// or the records fails it: adjust runText or convText.
func TestRecordsFillTheirSizeClass(t *testing.T) {
	if n := reflect.TypeFor[runRec]().Size(); n != 6144-8 {
		t.Errorf("runRec is %d bytes, want %d: adjust runText", n, 6144-8)
	}
	if n := reflect.TypeFor[convRec]().Size(); n != 1408-8 {
		t.Errorf("convRec is %d bytes, want %d: adjust convText", n, 1408-8)
	}
}

// TestRecordsOwnTheirIDs holds that a new run's and conversation's ids
// are copies inside the record (so that the GC, scanning the record, finds
// pointers into it, and the caller's strings are not kept), equal to the
// caller's, and that what is left of the first text chunk is the room
// after them: a message or entry written after them does not overwrite
// them.
func TestRecordsOwnTheirIDs(t *testing.T) {
	inside := alias.StringWithin
	long := strings.Repeat("x", bindings.MaxIDLength)
	run := newRunRec(bindings.Run{TenantID: "t" + "1", ID: strings.Repeat("r", 26), FlowID: long})
	for _, s := range []string{run.run.TenantID, run.run.ID, run.run.FlowID} {
		if !inside(s, run.text0[:]) {
			t.Errorf("run id %.10q… is not inside the record", s)
		}
	}
	if run.run.ID != strings.Repeat("r", 26) || run.run.FlowID != long || run.run.FlowVersion != "" {
		t.Errorf("run = %+v", run.run)
	}
	if got, want := cap(run.journal.text[0]), runText-2-26-len(long); got != want {
		t.Errorf("journal room = %d, want %d", got, want)
	}
	e := bindings.JournalEntry{Key: "k", Status: bindings.StepCompleted, Output: []byte(`"` + strings.Repeat("o", 300) + `"`)}
	_, sl, _ := run.journal.find(e.Key, e.Status)
	if got := run.journal.entry(run.journal.add(&e, sl)); got.Key != "k" || string(got.Output) != string(e.Output) || run.run.ID != strings.Repeat("r", 26) {
		t.Errorf("after an entry: %+v, run %+v", got, run.run)
	}
	conv := newConvRec(bindings.Conversation{TenantID: "t1", ID: "c1", AgentID: "a", AgentVersion: "1", Title: "title"})
	for _, s := range []string{conv.c.TenantID, conv.c.ID, conv.c.AgentID, conv.c.AgentVersion} {
		if !inside(s, conv.text0[:]) {
			t.Errorf("conversation id %q is not inside the record", s)
		}
	}
	if inside(conv.c.Title, conv.text0[:]) {
		t.Error("the title was copied: only ids are")
	}
	// An id longer than half of the room left is the caller's string.
	big := newConvRec(bindings.Conversation{TenantID: "t1", ID: long, AgentID: long})
	if !inside(big.c.ID, big.text0[:]) || inside(big.c.AgentID, big.text0[:]) || big.c.AgentID != long {
		t.Errorf("long ids: id inside %v, agent id inside %v", inside(big.c.ID, big.text0[:]), inside(big.c.AgentID, big.text0[:]))
	}
}
