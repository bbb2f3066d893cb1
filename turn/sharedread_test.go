package turn_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

// scribble writes 'X' over every byte of every byte slice reachable from
// v (through pointers, structs, slices, arrays, maps and interfaces): what
// a caller, a tool or a model may do with the bytes a turn hands it.
func scribble(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			scribble(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			scribble(v.Field(i))
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			for i := range v.Len() {
				v.Index(i).SetUint('X')
			}
			return
		}
		fallthrough
	case reflect.Array:
		for i := range v.Len() {
			scribble(v.Index(i))
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			scribble(it.Value())
		}
	}
}

// scribblingModel is anchorModel writing over what its requests hand it
// once it has answered, when *on is set.
type scribblingModel struct {
	anchorModel
	on *bool
}

func (m scribblingModel) Generate(ctx context.Context, req bindings.GenerateRequest) (bindings.GenerateResponse, error) {
	res, err := m.anchorModel.Generate(ctx, req)
	res.ToolCalls = append([]bindings.ToolCall(nil), res.ToolCalls...)
	for i := range res.ToolCalls {
		res.ToolCalls[i].Arguments = append(json.RawMessage(nil), res.ToolCalls[i].Arguments...)
	}
	if *m.on {
		scribble(reflect.ValueOf(&req))
	}
	return res, err
}

// TestResumeHandsOutNoStoredBytes holds the turn to what it vouches for
// when it resumes through memstore's Driver (trusted commits, checked with
// memstore.Options.CheckTrusted): a model that writes over its requests, a
// tool over its arguments and a caller over everything in the Result of a
// Resume, and of a second Resume that folds the finished journal, change
// none of the stored entries.
func TestResumeHandsOutNoStoredBytes(t *testing.T) {
	a := anchorGatedAgent(t)
	var on bool // not while the Invoke runs: its request holds the turn's own schemas
	tools := registry.NewTools()
	if err := tools.Add("t1", bindings.ToolDescriptor{
		ID: "clause_search", Version: "1.0.0", Description: "Search the clause library.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
	}, func(_ context.Context, in json.RawMessage, _ bindings.CallContext) (json.RawMessage, error) {
		var q anchorQuery
		err := json.Unmarshal(in, &q)
		if on {
			scribble(reflect.ValueOf(in))
		}
		if err != nil {
			return nil, err
		}
		return json.Marshal(anchorClauses{Clauses: []anchorClause{{ID: "C-7", Title: q.Query}}})
	}); err != nil {
		t.Fatal(err)
	}
	store := memstore.New(&memstore.Options{CheckTrusted: true})
	bb := turn.Bindings{Providers: bindings.Providers{scribblingModel{on: &on}}, Tools: tools, Conversations: store, Snapshots: store, Runs: store, Hitl: store, Journal: store}
	ctx := t.Context()
	res, err := invokeAnchor(ctx, a, store, bb)
	if err != nil || res.Status != turn.StatusSuspended || len(res.Approvals) != 1 {
		t.Fatalf("Invoke = %+v, %v", res, err)
	}
	scribble(reflect.ValueOf(&res))
	if _, err := store.ResolveApproval(ctx, "t1", res.Approvals[0].ID, bindings.ApprovalDecision{Approved: true, Reviewer: "rita"}); err != nil {
		t.Fatal(err)
	}
	parked, err := store.ReadJournal(ctx, "t1", res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	on = true
	for i := range 2 { // the live Resume, then the fold of the finished run
		got, err := turn.Resume(ctx, turn.ResumeInput{TenantID: "t1", RunID: res.RunID, Agent: a}, bb)
		if err != nil || got.Status != turn.StatusCompleted || got.Response.Content != "Here is the clause." || len(got.Appended) != 4 {
			t.Fatalf("Resume %d = %+v, %v", i, got, err)
		}
		scribble(reflect.ValueOf(&got))
	}
	now, err := store.ReadJournal(ctx, "t1", res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if len(now) <= len(parked) || !reflect.DeepEqual(now[:len(parked)], parked) {
		t.Errorf("the parked journal changed:\n%+v\nwas\n%+v", now, parked)
	}
	for _, e := range now[len(parked):] {
		if json.Valid(e.Output) == (len(e.Output) == 0) {
			t.Errorf("entry %s written by the Resume reads %q", e.Key, e.Output)
		}
	}
}
