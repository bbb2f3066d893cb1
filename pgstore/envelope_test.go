package pgstore

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

func TestWrapUnwrapRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		doc  any
		want string
	}{
		{"object", map[string]any{"b": 1, "a": "x"}, `{"a":"x","b":1}`},
		{"raw message", json.RawMessage(`{ "k" : [1, 2] }`), `{"k":[1,2]}`},
		{"string", "hello", `"hello"`},
		{"null", nil, `null`},
		{"empty raw message", json.RawMessage(nil), `null`},
		{"struct", bindings.StepError{Code: "x", Message: "y"}, `{"code":"x","message":"y"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := Wrap(tt.doc)
			if err != nil {
				t.Fatal(err)
			}
			var env map[string]json.RawMessage
			if err := json.Unmarshal(raw, &env); err != nil || string(env["v"]) != "1" {
				t.Fatalf("Wrap = %s, want an envelope with v 1", raw)
			}
			got, err := Unwrap(raw)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(Envelope{V: CurrentPayloadVersion, Doc: json.RawMessage(tt.want)}, got); diff != "" {
				t.Fatalf("Unwrap(Wrap) (-want +got):\n%s", diff)
			}
			if got := MustUnwrap(raw); string(got) != tt.want {
				t.Fatalf("MustUnwrap = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestWrapRejectsInvalidRawJSON(t *testing.T) {
	_, err := Wrap(json.RawMessage(`{"a":`))
	if agents.CodeOf(err) != agents.CodePersistence {
		t.Fatalf("Wrap of invalid JSON: %v (code %q), want persistence-error", err, agents.CodeOf(err))
	}
}

func TestUnwrapErrors(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		code string
	}{
		{"not JSON", `{"v":1,`, agents.CodeMalformedEnvelope},
		{"array", `[1,2]`, agents.CodeMalformedEnvelope},
		{"null", `null`, agents.CodeMalformedEnvelope},
		{"missing v", `{"doc":{}}`, agents.CodeMalformedEnvelope},
		{"missing doc", `{"v":1}`, agents.CodeMalformedEnvelope},
		{"v not a number", `{"v":"1","doc":{}}`, agents.CodeMalformedEnvelope},
		{"v fractional", `{"v":1.5,"doc":{}}`, agents.CodeMalformedEnvelope},
		{"newer version", `{"v":2,"doc":{}}`, agents.CodeUnsupportedPayloadVersion},
		{"version zero", `{"v":0,"doc":{}}`, agents.CodeUnsupportedPayloadVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Unwrap([]byte(tt.raw))
			if got := agents.CodeOf(err); got != tt.code {
				t.Fatalf("Unwrap(%s) = %v (code %q), want code %q", tt.raw, err, got, tt.code)
			}
			var envErr EnvelopeError
			if !errors.As(err, &envErr) {
				t.Fatalf("Unwrap(%s) error %T is not an EnvelopeError", tt.raw, err)
			}
			var dst any
			if got := agents.CodeOf(UnwrapInto([]byte(tt.raw), &dst)); got != tt.code {
				t.Fatalf("UnwrapInto code %q, want %q", got, tt.code)
			}
			func() {
				defer func() {
					r := recover()
					if e, ok := r.(error); !ok || agents.CodeOf(e) != tt.code {
						t.Fatalf("MustUnwrap panicked with %v, want an error with code %q", r, tt.code)
					}
				}()
				MustUnwrap([]byte(tt.raw))
			}()
		})
	}
	var unsupported *UnsupportedPayloadVersionError
	_, err := Unwrap([]byte(`{"v":7,"doc":1}`))
	if !errors.As(err, &unsupported) || unsupported.Version != 7 || unsupported.Supported != CurrentPayloadVersion {
		t.Fatalf("Unwrap of v 7: %#v", err)
	}
}

func TestUnwrapIntoDecodesDocument(t *testing.T) {
	raw, err := Wrap([]bindings.ToolCall{{ID: "c1", Name: "acme.tool", Arguments: json.RawMessage(`{"q":1}`)}})
	if err != nil {
		t.Fatal(err)
	}
	var got []bindings.ToolCall
	if err := UnwrapInto(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := []bindings.ToolCall{{ID: "c1", Name: "acme.tool", Arguments: json.RawMessage(`{"q":1}`)}}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	var wrongShape int
	if code := agents.CodeOf(UnwrapInto(raw, &wrongShape)); code != agents.CodeMalformedEnvelope {
		t.Fatalf("decoding an array into an int: code %q, want malformed-envelope", code)
	}
}

// TestStoredMalformedEnvelopeIsReported stores a journal output that is not
// an envelope behind pgstore's back: reading the journal reports the
// envelope error's code through the binding's error.
func TestStoredMalformedEnvelopeIsReported(t *testing.T) {
	pool := testPool(t)
	ctx := t.Context()
	s := New(pool, nil)
	tenant := "env-" + randomID()
	if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: tenant, RunID: "r1", FlowID: "f", FlowVersion: "1", Owner: "o", LeaseTTL: 60e9}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.AppendStep(ctx, bindings.AppendStepInput{TenantID: tenant, RunID: "r1", Entry: bindings.JournalEntry{Key: "k", Status: bindings.StepCompleted, Output: json.RawMessage(`{"x":1}`)}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		stored string
		code   string
	}{
		{`{"x":1}`, agents.CodeMalformedEnvelope},
		{`{"v":9,"doc":{"x":1}}`, agents.CodeUnsupportedPayloadVersion},
	} {
		if _, err := pool.Exec(ctx, `UPDATE agent_run_journal SET output = $2 WHERE tenant_id = $1`, tenant, tc.stored); err != nil {
			t.Fatal(err)
		}
		_, err := s.ReadJournal(ctx, tenant, "r1")
		var envErr EnvelopeError
		if !errors.As(err, &envErr) || envErr.Code() != tc.code {
			t.Fatalf("ReadJournal of stored %s: %v, want an envelope error with code %q", tc.stored, err, tc.code)
		}
	}
}
