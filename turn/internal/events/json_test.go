package events

import (
	"encoding/json"
	"testing"
)

// TestWithKindIsEmbedding holds WithKind to what encoding/json writes of a
// struct embedding the value after a Kind field.
func TestWithKindIsEmbedding(t *testing.T) {
	type ev struct {
		RunID string `json:"runId"`
		Code  string `json:"code,omitempty"`
	}
	for _, e := range []ev{{}, {RunID: "r<&>\u2028\"", Code: "c"}} {
		got, err := WithKind("node.started", e)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(struct {
			Kind string `json:"kind"`
			ev
		}{"node.started", e})
		if string(got) != string(want) {
			t.Fatalf("WithKind = %s, want %s", got, want)
		}
	}
}
