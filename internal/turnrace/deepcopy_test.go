package turnrace

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

type copied struct {
	S   string
	B   json.RawMessage
	M   map[string][]int
	P   *copied
	I   any
	A   [2][]byte
	T   time.Time
	Nil []int
}

// TestDeepCopySharesNothing: writing through the original after the copy
// changes nothing the copy holds, at every kind DeepCopy follows.
func TestDeepCopySharesNothing(t *testing.T) {
	v := copied{
		S: "text", B: json.RawMessage(`{"a":1}`), M: map[string][]int{"k": {1, 2}},
		P: &copied{S: "inner"}, I: []string{"x"}, A: [2][]byte{[]byte("ab"), nil},
		T: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
	}
	c := DeepCopy(v)
	if !reflect.DeepEqual(c, v) {
		t.Fatalf("copy %+v, want %+v", c, v)
	}
	v.B[0] = 'X'
	v.M["k"][0] = 9
	v.P.S = "changed"
	v.I.([]string)[0] = "y"
	v.A[0][0] = 'z'
	if string(c.B) != `{"a":1}` || c.M["k"][0] != 1 || c.P.S != "inner" || c.I.([]string)[0] != "x" || string(c.A[0]) != "ab" {
		t.Errorf("the copy shares memory with the original: %+v", c)
	}
	if c.Nil != nil {
		t.Errorf("a nil slice was copied as %#v", c.Nil)
	}
}
