package journaltest

import (
	"bytes"
	"embed"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kindgi/agents/bindings"
)

//go:embed testdata/*.json
var golden embed.FS

// UpdateGoldenEnv names the environment variable that, set to 1, makes
// CheckGolden write the journal it got as the golden file instead of
// comparing (then review the diff and commit it).
const UpdateGoldenEnv = "KINDGI_UPDATE_GOLDEN"

// Line is one journal entry as a golden file holds it: its key, node,
// status, error code and output, the output without the fields a clock
// sets or the store scales (a retrieved fact's score) and with the tenant
// written as "<tenant>".
type Line struct {
	Key    string `json:"key"`
	Node   string `json:"node"`
	Status string `json:"status"`
	Code   string `json:"code,omitempty"`
	Output any    `json:"output,omitempty"`
}

// clockFields are the output members whose values depend on when a drive
// ran (a run resumed after a crash runs later) or on a key: a signature,
// and a child's record hash, which covers its times.
var clockFields = map[string]bool{
	"now": true, "createdAt": true, "expiresAt": true, "at": true, "elapsedMs": true,
	"signature": true, "resolvedAt": true, "recordHash": true,
}

// Lines is journal, of tenant's run, in the golden form.
func Lines(t testing.TB, tenant string, journal []bindings.JournalEntry) []Line {
	t.Helper()
	out := make([]Line, len(journal))
	for i, e := range journal {
		l := Line{Key: e.Key, Node: e.Node, Status: string(e.Status)}
		if e.Error != nil {
			l.Code = e.Error.Code
		}
		if len(e.Output) > 0 {
			var v any
			if err := json.Unmarshal(e.Output, &v); err != nil {
				t.Fatalf("entry %s: %v", e.Key, err)
			}
			if e.Node == "run-retrievals" {
				dropScores(v)
			}
			l.Output = normalize(v, tenant)
		}
		out[i] = l
	}
	return out
}

// dropScores removes the score of each retrieved fact: its scale is the
// store's own (bindings.ScoredFact: memstore ranks by BM25, pgstore by
// ts_rank), while which facts are retrieved, in which order, is not.
func dropScores(v any) {
	facts, _ := v.([]any)
	for _, f := range facts {
		if m, ok := f.(map[string]any); ok {
			delete(m, "score")
		}
	}
}

func normalize(v any, tenant string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if clockFields[k] {
				delete(x, k)
				continue
			}
			x[k] = normalize(val, tenant)
		}
	case []any:
		for i := range x {
			x[i] = normalize(x[i], tenant)
		}
	case string:
		if tenant != "" {
			return strings.ReplaceAll(x, tenant, "<tenant>")
		}
	}
	return v
}

// CheckGolden reports on t how lines differ from the golden journal name
// (testdata/name.json of this package): the journal every store, and the
// adapter over the basic bindings, must write for the same scripted turn.
// With UpdateGoldenEnv=1 it writes lines there instead.
func CheckGolden(t testing.TB, name string, lines []Line) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(lines); err != nil {
		t.Fatal(err)
	}
	got := buf.Bytes()
	if os.Getenv(UpdateGoldenEnv) == "1" {
		_, file, _, _ := runtime.Caller(0)
		path := filepath.Join(filepath.Dir(file), "testdata", name+".json")
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", path)
		return
	}
	want, err := golden.ReadFile("testdata/" + name + ".json")
	if err != nil {
		t.Fatalf("golden journal %s: %v (write it with %s=1)", name, err, UpdateGoldenEnv)
	}
	if bytes.Equal(want, got) {
		return
	}
	var wantLines []Line
	if err := json.Unmarshal(want, &wantLines); err != nil {
		t.Fatalf("golden journal %s: %v", name, err)
	}
	var gotLines []Line
	if err := json.Unmarshal(got, &gotLines); err != nil {
		t.Fatal(err)
	}
	t.Errorf("journal differs from the golden %s (-golden +got):\n%s", name, cmp.Diff(wantLines, gotLines))
}
