package eval_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/eval"
	"github.com/kindgi/agents/providers/scripted"
)

// threeCases is the dataset of recordThree's runs.
func threeCases(t testing.TB, h host) eval.Dataset {
	t.Helper()
	ds, err := eval.DatasetFromRuns(t.Context(), h.bindings(scripted.New(nil, nil)), tenant, recordThree(t, h))
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// TestDatasetRoundTrip: a dataset from runs, with a hand-written case,
// writes as JSON Lines (one case a line) and reads back equal.
func TestDatasetRoundTrip(t *testing.T) {
	h := newHost(t)
	ds := threeCases(t, h)
	ds.Cases = append(ds.Cases, eval.Case{ID: "hand", UserMessage: "Is <b>&</b> fine?", Expect: &eval.Expect{
		Contains: []string{"yes"}, Matches: []string{`^Y`}, OutputSchema: json.RawMessage(`{"type":"object"}`)}})
	var buf bytes.Buffer
	if err := ds.Write(&buf); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 4 || !strings.Contains(lines[3], `"userMessage":"Is <b>&</b> fine?"`) {
		t.Fatalf("JSON Lines:\n%s", buf.String())
	}
	back, err := eval.ReadDataset(strings.NewReader(buf.String() + "\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ds, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestReadDatasetRefuses(t *testing.T) {
	for _, tc := range []struct{ name, in, reason string }{
		{"not JSON", "{\"id\":\"a\",\"userMessage\":\"hi\"}\nnope\n", "dataset line 2:"},
		{"unknown field", `{"id":"a","userMessage":"hi","usrMessage":"x"}`, `unknown field "usrMessage"`},
		{"no id", `{"userMessage":"hi"}`, "the case has no id"},
		{"no message", `{"id":"a"}`, `case "a" has no userMessage`},
		{"duplicate", "{\"id\":\"a\",\"userMessage\":\"hi\"}\n{\"id\":\"a\",\"userMessage\":\"ho\"}", `dataset line 2: case id "a" is used on line 1 too`},
		{"two values", `{"id":"a","userMessage":"hi"} {"id":"b","userMessage":"ho"}`, "more than one JSON value"},
	} {
		_, err := eval.ReadDataset(strings.NewReader(tc.in))
		if agents.CodeOf(err) != agents.CodeInvalidMessage || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("%s: err = %v, want invalid-message with %q", tc.name, err, tc.reason)
		}
	}
}

func TestDatasetFromRunsErrors(t *testing.T) {
	h := newHost(t)
	if _, err := eval.DatasetFromRuns(t.Context(), h.bindings(nil), tenant, []string{"nope"}); agents.CodeOf(err) != agents.CodeRunSnapshotMissing {
		t.Errorf("unknown run: err = %v", err)
	}
	b := h.bindings(nil)
	b.Runs = nil
	if _, err := eval.DatasetFromRuns(t.Context(), b, tenant, nil); agents.CodeOf(err) != agents.CodeInvalidBindings {
		t.Errorf("no run binding: err = %v", err)
	}
	runs := recordThree(t, h)
	if _, err := eval.DatasetFromRuns(t.Context(), h.bindings(nil), "other-tenant", runs[:1]); agents.CodeOf(err) != agents.CodeRunSnapshotMissing {
		t.Errorf("another tenant's run: err = %v", err)
	}
}
