package registry_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/registry"
)

type address struct {
	Street string `json:"street" jsonschema:"street and number"`
	City   string `json:"city"`
	Zip    string `json:"zip,omitempty"`
}

type party struct {
	Name    string   `json:"name" jsonschema:"the party's legal name"`
	Address address  `json:"address"`
	Aliases []string `json:"aliases,omitempty"`
}

type contractQuery struct {
	Query    string            `json:"query" jsonschema:"what to look for"`
	Parties  []party           `json:"parties"`
	Labels   map[string]int    `json:"labels,omitzero"`
	Notes    map[string]string `json:"notes,omitempty"`
	Since    time.Time         `json:"since"`
	Until    *time.Time        `json:"until,omitempty"`
	Owner    *party            `json:"owner"`
	Limit    int               `json:"limit,omitempty" jsonschema:"at most this many hits"`
	Internal string            `json:"-"`
	hidden   int
}

type contractHits struct {
	Hits  []string `json:"hits"`
	Total int      `json:"total"`
}

// TestAddFuncSchema: the schemas AddFunc infers for a struct with nested
// structs, slices, maps, pointers and time.Time are the expected ones, and
// they are what the descriptor carries.
func TestAddFuncSchema(t *testing.T) {
	tools := registry.NewTools()
	err := registry.AddFunc(tools, "acme", registry.FuncTool{ID: "acme.contracts", Version: "1.0.0", Description: "Finds contracts"},
		func(context.Context, contractQuery, bindings.CallContext) (contractHits, error) {
			return contractHits{}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	d, err := tools.ForTenant("acme").Resolve(t.Context(), agent.ToolRef{ID: "acme.contracts", Version: "^1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Description != "Finds contracts" || d.Version != "1.0.0" {
		t.Errorf("descriptor = %+v", d)
	}
	addressSchema := `{
		"type": "object",
		"properties": {
			"street": {"type": "string", "description": "street and number"},
			"city": {"type": "string"},
			"zip": {"type": "string"}
		},
		"required": ["street", "city"],
		"additionalProperties": false
	}`
	partyProps := `"properties": {
			"name": {"type": "string", "description": "the party's legal name"},
			"address": ` + addressSchema + `,
			"aliases": {"type": ["null", "array"], "items": {"type": "string"}}
		},
		"required": ["name", "address"],
		"additionalProperties": false`
	wantIn := `{
		"type": "object",
		"properties": {
			"query": {"type": "string", "description": "what to look for"},
			"parties": {"type": ["null", "array"], "items": {"type": "object", ` + partyProps + `}},
			"labels": {"type": "object", "additionalProperties": {"type": "integer"}},
			"notes": {"type": "object", "additionalProperties": {"type": "string"}},
			"since": {"type": "string"},
			"until": {"type": ["null", "string"]},
			"owner": {"type": ["null", "object"], ` + partyProps + `},
			"limit": {"type": "integer", "description": "at most this many hits"}
		},
		"required": ["query", "parties", "since", "owner"],
		"additionalProperties": false
	}`
	wantOut := `{
		"type": "object",
		"properties": {
			"hits": {"type": ["null", "array"], "items": {"type": "string"}},
			"total": {"type": "integer"}
		},
		"required": ["hits", "total"],
		"additionalProperties": false
	}`
	for _, c := range []struct {
		name      string
		got, want string
	}{{"input", string(d.InputSchema), wantIn}, {"output", string(d.OutputSchema), wantOut}} {
		if diff := cmp.Diff(decode(t, c.want), decode(t, c.got)); diff != "" {
			t.Errorf("%s schema (-want +got):\n%s", c.name, diff)
		}
	}
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return v
}

// TestAddFuncRejectsArguments: arguments that break the inferred schema
// are refused with an uncoded error (the model is told) and fn never runs.
func TestAddFuncRejectsArguments(t *testing.T) {
	tools := registry.NewTools()
	var calls atomic.Int32
	err := registry.AddFunc(tools, "acme", registry.FuncTool{ID: "acme.contracts", Version: "1.0.0"},
		func(context.Context, contractQuery, bindings.CallContext) (contractHits, error) {
			calls.Add(1)
			return contractHits{}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	tt := tools.ForTenant("acme")
	d := bindings.ToolDescriptor{ID: "acme.contracts", Version: "1.0.0"}
	const valid = `{"query":"q","parties":[{"name":"A","address":{"street":"s","city":"c"}}],"since":"2026-01-02T03:04:05Z","owner":null}`
	for _, c := range []struct {
		name, args, want string
	}{
		{"not JSON", `{"query":`, "not JSON"},
		{"not an object", `["q"]`, "type"},
		{"missing required", `{"query":"q","since":"2026-01-02T03:04:05Z","owner":null}`, "parties"},
		{"wrong type", strings.Replace(valid, `"query":"q"`, `"query":7`, 1), "query"},
		{"unknown property", strings.Replace(valid, `"query":"q"`, `"query":"q","extra":1`, 1), "extra"},
		{"nested missing required", strings.Replace(valid, `"city":"c"`, `"zip":"z"`, 1), "city"},
		{"nested wrong type", strings.Replace(valid, `"name":"A"`, `"name":["A"]`, 1), "name"},
		{"map value of the wrong type", strings.Replace(valid, `"query":"q"`, `"query":"q","labels":{"a":"x"}`, 1), "labels"},
		{"fraction for an integer", strings.Replace(valid, `"query":"q"`, `"query":"q","limit":1.5`, 1), "limit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := tt.Invoke(t.Context(), d, json.RawMessage(c.args), bindings.CallContext{TenantID: "acme", RequestID: "r"})
			if err == nil {
				t.Fatal("arguments accepted")
			}
			if code := agents.CodeOf(err); code != "" {
				t.Errorf("code %q: an argument error is told to the model, it carries no code", code)
			}
			if !strings.Contains(err.Error(), "invalid arguments") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say the arguments broke %q", err, c.want)
			}
		})
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("fn ran %d times on arguments its schema refuses", n)
	}
	if _, err := tt.Invoke(t.Context(), d, json.RawMessage(valid), bindings.CallContext{TenantID: "acme", RequestID: "r"}); err != nil {
		t.Fatalf("valid arguments: %v", err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("fn ran %d times on valid arguments, want 1", n)
	}
}

// TestAddFuncCall: fn receives the decoded arguments and the call context;
// its output is the encoded Out; its error is returned as is.
func TestAddFuncCall(t *testing.T) {
	tools := registry.NewTools()
	boom := errors.New("index offline")
	err := registry.AddFunc(tools, "acme", registry.FuncTool{ID: "acme.contracts", Version: "1.2.0"},
		func(_ context.Context, in contractQuery, call bindings.CallContext) (contractHits, error) {
			if in.Query == "fail" {
				return contractHits{}, boom
			}
			hits := []string{in.Query, call.RequestID, in.Since.Format(time.DateOnly), in.Parties[0].Address.City}
			if in.Owner != nil {
				hits = append(hits, in.Owner.Name)
			}
			return contractHits{Hits: hits, Total: in.Limit}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	tt := tools.ForTenant("acme")
	d := bindings.ToolDescriptor{ID: "acme.contracts", Version: "1.2.0"}
	out, err := tt.Invoke(t.Context(), d, json.RawMessage(`{"query":"indemnity","limit":3,"since":"2026-01-02T03:04:05Z",
		"parties":[{"name":"A","address":{"street":"s","city":"Lyon"}}],"owner":{"name":"B","address":{"street":"t","city":"u"}}}`),
		bindings.CallContext{TenantID: "acme", RequestID: "req-1"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"hits":["indemnity","req-1","2026-01-02","Lyon","B"],"total":3}`; string(out) != want {
		t.Errorf("output %s, want %s", out, want)
	}
	_, err = tt.Invoke(t.Context(), d, json.RawMessage(`{"query":"fail","since":"2026-01-02T03:04:05Z","parties":[],"owner":null}`),
		bindings.CallContext{TenantID: "acme", RequestID: "req-2"})
	if !errors.Is(err, boom) {
		t.Errorf("error %v, want fn's own", err)
	}
}

// TestAddFuncRefuses: what cannot be a typed tool is refused with a code.
func TestAddFuncRefuses(t *testing.T) {
	ok := func(context.Context, contractQuery, bindings.CallContext) (int, error) { return 0, nil }
	for _, c := range []struct {
		name string
		add  func(*registry.Tools) error
	}{
		{"input not an object", func(tools *registry.Tools) error {
			return registry.AddFunc(tools, "acme", registry.FuncTool{ID: "a", Version: "1.0.0"},
				func(context.Context, string, bindings.CallContext) (int, error) { return 0, nil })
		}},
		{"output a channel", func(tools *registry.Tools) error {
			return registry.AddFunc(tools, "acme", registry.FuncTool{ID: "a", Version: "1.0.0"},
				func(context.Context, contractQuery, bindings.CallContext) (chan int, error) { return nil, nil })
		}},
		{"nil fn", func(tools *registry.Tools) error {
			return registry.AddFunc[contractQuery, int](tools, "acme", registry.FuncTool{ID: "a", Version: "1.0.0"}, nil)
		}},
		{"bad version", func(tools *registry.Tools) error {
			return registry.AddFunc(tools, "acme", registry.FuncTool{ID: "a", Version: "1"}, ok)
		}},
		{"no tenant", func(tools *registry.Tools) error {
			return registry.AddFunc(tools, "", registry.FuncTool{ID: "a", Version: "1.0.0"}, ok)
		}},
		{"twice", func(tools *registry.Tools) error {
			if err := registry.AddFunc(tools, "acme", registry.FuncTool{ID: "a", Version: "1.0.0"}, ok); err != nil {
				return nil
			}
			return registry.AddFunc(tools, "acme", registry.FuncTool{ID: "a", Version: "1.0.0"}, ok)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.add(registry.NewTools())
			if code := agents.CodeOf(err); code != agents.CodeInvalidMessage {
				t.Errorf("err %v (code %q), want invalid-message", err, code)
			}
		})
	}
}

// TestAddFuncAnyOutput: an Out of any or json.RawMessage has an open
// output schema and encodes as given.
func TestAddFuncAnyOutput(t *testing.T) {
	tools := registry.NewTools()
	type in struct {
		N int `json:"n"`
	}
	if err := registry.AddFunc(tools, "acme", registry.FuncTool{ID: "raw", Version: "1.0.0"},
		func(_ context.Context, v in, _ bindings.CallContext) (json.RawMessage, error) {
			return json.RawMessage(`[1,"two"]`), nil
		}); err != nil {
		t.Fatal(err)
	}
	if err := registry.AddFunc(tools, "acme", registry.FuncTool{ID: "any", Version: "1.0.0"},
		func(_ context.Context, v in, _ bindings.CallContext) (any, error) {
			return map[string]int{"n": v.N}, nil
		}); err != nil {
		t.Fatal(err)
	}
	tt := tools.ForTenant("acme")
	for id, want := range map[string]string{"raw": `[1,"two"]`, "any": `{"n":2}`} {
		d, err := tt.Resolve(t.Context(), agent.ToolRef{ID: id, Version: "1.0.0"})
		if err != nil {
			t.Fatal(err)
		}
		if string(d.OutputSchema) != `{}` && string(d.OutputSchema) != `true` {
			t.Errorf("%s: output schema %s, want an open one", id, d.OutputSchema)
		}
		out, err := tt.Invoke(t.Context(), d, json.RawMessage(`{"n":2}`), bindings.CallContext{TenantID: "acme"})
		if err != nil || string(out) != want {
			t.Errorf("%s: output %s, %v; want %s", id, out, err, want)
		}
	}
}
