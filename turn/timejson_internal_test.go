package turn

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kindgi/agents/bindings"
)

// TestAppendTimeJSONAsAppendFormat: appendTimeJSON writes what
// AppendFormat(time.RFC3339Nano) writes for every time at offset 0 in the
// years 0–9999 (UTC or another zone at offset 0; nanoseconds with and
// without trailing zeros; the edges of days, months, leap years and
// centuries), and refuses the rest without appending.
func TestAppendTimeJSONAsAppendFormat(t *testing.T) {
	zero := time.FixedZone("ZERO", 0)
	var times []time.Time
	for _, y := range []int{0, 1, 4, 99, 100, 400, 1600, 1899, 1900, 1969, 1970, 1971, 2000, 2024, 2026, 2100, 2400, 9999} {
		for _, md := range [][2]int{{1, 1}, {2, 28}, {2, 29}, {3, 1}, {6, 30}, {12, 31}} {
			for _, ns := range []int{0, 1, 10, 100000, 120000000, 999999999, 500} {
				times = append(times, time.Date(y, time.Month(md[0]), md[1], 0, 0, 0, ns, time.UTC))
				times = append(times, time.Date(y, time.Month(md[0]), md[1], 23, 59, 59, ns, time.UTC))
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	lo := time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	hi := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Unix()
	for range 200000 {
		sec := lo + rng.Int64N(hi-lo+1)
		ns := rng.Int64N(1e9)
		if rng.IntN(4) == 0 {
			ns = ns / 1000 * 1000 // microseconds, as PostgreSQL keeps them
		}
		times = append(times, time.Unix(sec, ns).UTC())
	}
	times = append(times, time.Now().UTC(), time.Now().In(zero), time.Unix(0, 0).In(zero), time.Time{})
	for _, tm := range times {
		got, ok := appendTimeJSON([]byte("x"), tm)
		want := tm.AppendFormat([]byte("x"), time.RFC3339Nano)
		if !ok || string(got) != string(want) {
			t.Fatalf("appendTimeJSON(%v) = %q, %v; want %q", tm, got, ok, want)
		}
	}
	east := time.FixedZone("E", 3600)
	for _, tm := range []time.Time{
		time.Now().In(east), time.Date(2026, 1, 1, 0, 0, 0, 0, east),
		time.Date(-1, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-400, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(-100000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(100000, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		if got, ok := appendTimeJSON([]byte("x"), tm); ok || string(got) != "x" {
			t.Errorf("appendTimeJSON(%v) = %q, %v; want it refused", tm, got, ok)
		}
	}
}

// TestAppendMessageJSONKnownAsMarshal: with known ids (plain ones as
// knownIDs keeps them, matching the message's or not), a message encodes
// as json.Marshal encodes it, and as appendMessageJSON does, with its
// metadata checked through a rawMemo or not.
func TestAppendMessageJSONKnownAsMarshal(t *testing.T) {
	ids := []string{"", "t1", "0123456789abcdef0123456789abcdef", `a"b`, "a<b>&c", "ünï", "a\\b", "tab\there", "long-0123456789012345678901234567890123456789"}
	at := time.Date(2026, 12, 1, 18, 0, 0, 123456000, time.UTC)
	for _, tenant := range ids {
		for _, conv := range ids {
			for _, run := range ids {
				m := bindings.ConversationMessage{
					TenantID: tenant, ConversationID: conv, ID: "r/loop/0/message", Seq: 7, Role: bindings.RoleTool,
					Content: `{"clauses":[]}`, ToolCallID: "call-1", TurnNumber: 3, RunID: run,
					Metadata: json.RawMessage(`{"toolId":"x","status":"ok"}`), CreatedAt: at,
				}
				want, err := json.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				var known [3]string
				for k, s := range [3]string{tenant, conv, run} {
					if isPlainJSON(s) {
						known[k] = s
					}
				}
				var memo rawMemo
				for i, kn := range []*[3]string{nil, &known, {"t1", "t1", "t1"}, &known} {
					mm := &memo // the last time from the memo, which holds the metadata then
					if i == 0 {
						mm = nil
					}
					got, ok := appendMessageJSONKnown(nil, &m, kn, mm, nil)
					plain, pok := appendMessageJSON(nil, &m)
					if ok != pok || (ok && (string(got) != string(want) || string(plain) != string(want))) {
						t.Fatalf("ids %q %q %q, known %v: got %s (%v), appendMessageJSON %s (%v), want %s", tenant, conv, run, kn, got, ok, plain, pok, want)
					}
				}
			}
		}
	}
	// Metadata the memo must not take as is, before and after one it does.
	var memo rawMemo
	for _, meta := range []string{`{"toolId":"x","status":"ok"}`, `{"a": 1}`, `{"a":"<"}`, `{"a":1`, "{\"a\":\"\xff\"}", `{"toolId":"x","status":"ok"}`} {
		m := bindings.ConversationMessage{TenantID: "t1", ID: "m", Role: bindings.RoleTool, Metadata: json.RawMessage(meta), CreatedAt: at}
		got, ok := appendMessageJSONKnown(nil, &m, nil, &memo, nil)
		plain, pok := appendMessageJSON(nil, &m)
		if ok != pok || (ok && string(got) != string(plain)) {
			t.Errorf("metadata %q: through the memo %s (%v), without %s (%v)", meta, got, ok, plain, pok)
		}
		if want, err := json.Marshal(m); ok && (err != nil || string(got) != string(want)) {
			t.Errorf("metadata %q: %s, json.Marshal %s (%v)", meta, got, want, err)
		}
	}
}

// TestRecentAsIsIsRawAsIs: recentAsIs answers rawAsIs for every document,
// remembered or not, after its copies have rolled over, and when the
// caller's bytes it copied from are written over afterwards.
func TestRecentAsIsIsRawAsIs(t *testing.T) {
	docs := []string{`{"query":"nda"}`, `{"query":"nda"}`, `{"a": 1}`, `{"a":"<"}`, `{"a":1`, "{\"a\":\"\xff\"}", `[1,2]`, `"x"`, `{}`, `{"q":""}`, `null`, ``, ` `, `{"query":"nda"}`, `{"b":2}`, `{"c":3}`, `{"d":4}`, `{"query":"nda"}`}
	var m recentAsIs
	var nilM *recentAsIs
	for round := range 3 {
		for _, d := range docs {
			raw := []byte(d)
			if got, want := m.asIs(raw), rawAsIs(raw); got != want {
				t.Fatalf("round %d: asIs(%q) = %v, rawAsIs %v", round, d, got, want)
			}
			if got, want := nilM.asIs(raw), rawAsIs(raw); got != want {
				t.Fatalf("nil: asIs(%q) = %v, rawAsIs %v", d, got, want)
			}
			for i := range raw { // the caller's bytes change: the copy does not
				raw[i] = ' '
			}
			if len(raw) > 0 && m.asIs(raw) {
				t.Fatalf("round %d: asIs of %q written over with spaces = true", round, d)
			}
		}
	}
}
