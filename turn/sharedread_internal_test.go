package turn

import (
	"encoding/json"
	"testing"
	"unsafe"

	"github.com/kindgi/agents/bindings"
)

// TestSharedOutputIsTheLoadedJournal: only an entry of the journal a
// shared read loaded is decoded in place (sharedOutput), never one the
// drive kept itself (its output in the drive's arena), and a string
// decoded in place shares the entry's bytes while one decoded otherwise
// is a copy.
func TestSharedOutputIsTheLoadedJournal(t *testing.T) {
	slab := new(loadedSlab)
	loaded := append(slab[:0], bindings.JournalEntry{Key: "render-prompt", Status: bindings.StepCompleted, Output: json.RawMessage(`"hello"`)},
		bindings.JournalEntry{Key: "b", Status: bindings.StepCompleted})
	r := &run{loaded: loaded, sharedLoaded: true}
	kept := r.at(r.keep(bindings.JournalEntry{Key: "c", Status: bindings.StepCompleted, Output: json.RawMessage(`"hello"`)}))
	copied := loaded[0]
	switch {
	case !r.sharedOutput(&loaded[0]) || !r.sharedOutput(&loaded[1]):
		t.Error("an entry of the loaded journal is not shared")
	case r.sharedOutput(kept) || r.sharedOutput(&copied) || r.sharedOutput(&slab[2]):
		t.Error("an entry outside the loaded journal is shared")
	case (&run{}).sharedOutput(&loaded[0]), (&run{loaded: loaded}).sharedOutput(&loaded[0]):
		t.Error("a run without a shared read shares an entry")
	}
	in, err := decodeOutcome[string](&loaded[0], r.sharedOutput(&loaded[0]))
	if err != nil || in != "hello" || unsafe.StringData(in) != &loaded[0].Output[1] {
		t.Errorf("decoded in place: %q, %v, sharing the output: %v", in, err, unsafe.StringData(in) == &loaded[0].Output[1])
	}
	out, err := decodeOutcome[string](kept, r.sharedOutput(kept))
	if err != nil || out != "hello" || unsafe.StringData(out) == &kept.Output[1] {
		t.Errorf("decoded from the arena: %q, %v, sharing the output: %v", out, err, unsafe.StringData(out) == &kept.Output[1])
	}
}
