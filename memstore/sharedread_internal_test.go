package memstore

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/kindgi/agents/bindings"
)

// TestFillSetsEveryField: a shared read writes entries over a caller's
// slab, which holds the entries of an earlier read (a pooled one), so fill
// must set every field of bindings.JournalEntry — also one added to it
// later.
func TestFillSetsEveryField(t *testing.T) {
	var j journal
	j.recs, j.text = make([]entryRec, 0, 2), [][]byte{make([]byte, 0, 64)}
	for _, e := range []bindings.JournalEntry{
		{Key: "a", Status: bindings.StepStarted, At: time.Unix(1, 0).UTC()},
		{Key: "b", Node: "n", Status: bindings.StepFailed, Output: json.RawMessage(`1`), Error: &bindings.StepError{Code: "c"}, At: time.Unix(2, 0).UTC()},
	} {
		_, sl, _ := j.find(e.Key, e.Status)
		j.add(&e, sl)
	}
	for i := range j.recs {
		var stale bindings.JournalEntry
		v := reflect.ValueOf(&stale).Elem()
		for f := range v.NumField() {
			fv := v.Field(f)
			switch fv.Kind() {
			case reflect.Int64:
				fv.SetInt(99)
			case reflect.String:
				fv.SetString("stale")
			case reflect.Slice:
				fv.SetBytes([]byte(`"stale"`))
			case reflect.Pointer:
				fv.Set(reflect.New(fv.Type().Elem()))
			case reflect.Struct:
				fv.Set(reflect.ValueOf(time.Unix(7, 7)))
			default:
				t.Fatalf("JournalEntry.%s is a %s: give it a stale value here", v.Type().Field(f).Name, fv.Kind())
			}
		}
		j.fill(&stale, i, j.out(i))
		if want := j.entryWith(i, j.out(i)); !reflect.DeepEqual(stale, want) {
			t.Errorf("entry %d filled over a stale one: %+v, want %+v", i, stale, want)
		}
	}
}
