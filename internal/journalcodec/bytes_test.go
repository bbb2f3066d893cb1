package journalcodec_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/journalcodec"
)

// TestBytesAsEncodingJSON: a []byte is written by the codec itself (Append
// reports true) as json.Marshal writes it — null for nil, standard padded
// base64 otherwise, with omitempty dropping an empty one — at every length
// modulo the base64 block, and in the provenance record, whose signature
// is one.
func TestBytesAsEncodingJSON(t *testing.T) {
	type holder struct {
		B  []byte `json:"b"`
		BO []byte `json:"bo,omitempty"`
		S  string `json:"s"`
	}
	check := func(v *holder) {
		t.Helper()
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := journalcodec.Append(nil, v, nil)
		if !ok || !bytes.Equal(got, want) {
			t.Fatalf("Append = %s, %v; json.Marshal = %s", got, ok, want)
		}
	}
	check(&holder{})
	check(&holder{B: []byte{}, BO: []byte{}})
	for n := range 70 {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*97 + n*13) // every byte value over the lengths, 0xff and 0xfb among them
		}
		check(&holder{B: b, BO: b, S: "x"})
	}
	rec := &bindings.ProvenanceRecord{TenantID: "t", RunID: "r", KeyID: "t:k", Signature: bytes.Repeat([]byte{0xfb, 0xff, 0x00}, 22)[:64]}
	want, _ := json.Marshal(rec)
	if got, ok := journalcodec.Append(nil, &rec, nil); !ok || !bytes.Equal(got, want) {
		t.Fatalf("record: Append = %s, %v; json.Marshal = %s", got, ok, want)
	}
}
