package drive

import (
	"encoding/json"
	"testing"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/alias"
)

// TestInPlaceIsTheLoadedJournal: only an entry of the journal read for
// the drive is decoded in place (InPlace) — never one the drive kept
// itself, a copy of a loaded one, or a loaded one whose output is in the
// pooled output arena, which later drives write over — and a string
// decoded in place shares the entry's bytes while one decoded otherwise
// is a copy.
func TestInPlaceIsTheLoadedJournal(t *testing.T) {
	m := &Mem{arena: make([]byte, 0, 64)}
	inArena := append(m.arena, `"arena"`...)
	slab := new([24]bindings.JournalEntry)
	loaded := append(slab[:0],
		bindings.JournalEntry{Key: "render-prompt", Status: bindings.StepCompleted, Output: json.RawMessage(`"hello"`)},
		bindings.JournalEntry{Key: "b", Status: bindings.StepCompleted},
		bindings.JournalEntry{Key: "c", Status: bindings.StepCompleted, Output: inArena})
	r := &Journal{}
	r.mem, r.loaded = m, loaded
	kept := r.At(r.keep(bindings.JournalEntry{Key: "d", Status: bindings.StepCompleted, Output: json.RawMessage(`"hello"`)}))
	copied := loaded[0]
	switch {
	case !r.InPlace(&loaded[0]) || !r.InPlace(&loaded[1]):
		t.Error("an entry of the loaded journal is not decoded in place")
	case r.InPlace(&loaded[2]):
		t.Error("a loaded entry whose output is in the pooled arena is decoded in place")
	case r.InPlace(kept) || r.InPlace(&copied) || r.InPlace(&slab[3]):
		t.Error("an entry outside the loaded journal is decoded in place")
	case (&Journal{}).InPlace(&loaded[0]):
		t.Error("a drive without a loaded journal decodes in place")
	}
	in, err := DecodeOutcome[string](&loaded[0], r.InPlace(&loaded[0]))
	if err != nil || in != "hello" || !alias.StringAt(in, &loaded[0].Output[1]) {
		t.Errorf("decoded in place: %q, %v, sharing the output: %v", in, err, alias.StringAt(in, &loaded[0].Output[1]))
	}
	out, err := DecodeOutcome[string](kept, r.InPlace(kept))
	if err != nil || out != "hello" || alias.StringAt(out, &kept.Output[1]) {
		t.Errorf("decoded from the arena: %q, %v, sharing the output: %v", out, err, alias.StringAt(out, &kept.Output[1]))
	}
}
