package turn

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/alias"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/registry"
)

// fillJunk sets every field of v (addressable), exported or not, to a
// value that is not zero: strings, numbers, pointers, slices, maps,
// functions, and interfaces for which one of ifaces fits.
func fillJunk(t *testing.T, v reflect.Value, ifaces []any) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("junk")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(7)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
	case reflect.Chan:
		v.Set(reflect.MakeChan(v.Type(), 0))
	case reflect.Func:
		v.Set(reflect.MakeFunc(v.Type(), func(args []reflect.Value) []reflect.Value {
			out := make([]reflect.Value, v.Type().NumOut())
			for i := range out {
				out[i] = reflect.Zero(v.Type().Out(i))
			}
			return out
		}))
	case reflect.Interface:
		for _, c := range ifaces {
			if reflect.TypeOf(c).Implements(v.Type()) {
				v.Set(reflect.ValueOf(c))
				return
			}
		}
	case reflect.Array:
		for i := range v.Len() {
			fillJunk(t, v.Index(i), ifaces)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Field(i)
			fillJunk(t, alias.Settable(f), ifaces)
		}
	}
}

// TestResetClearsEveryField holds that a pooled run set up again
// (initRun, reset) is a new run: every field of a run filled with junk is
// zero afterwards, but those initRun sets, which hold what it was given.
// A field added to run and not to reset fails here.
func TestResetClearsEveryField(t *testing.T) {
	store := memstore.New(nil)
	ifaces := []any{store, context.Background(), errors.New("junk"), "junk", junkProvider{}, registry.NewTools().ForTenant("t1")}
	b := Bindings{Runs: store, Conversations: store}
	in := Input{TenantID: "t1", ConversationID: "c1", UserMessage: "hello", RunID: "run-1"}
	r := newPooledRun(&b, store, true, in, "run-1", "o1", bindings.RunRunning, nil)
	defer r.release()
	mem, encode := r.mem, r.encodeMsg
	fillJunk(t, reflect.ValueOf(r).Elem(), ifaces)
	v := reflect.ValueOf(r).Elem()
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("run.%s was not filled", v.Type().Field(i).Name)
		}
	}
	r.mem, r.encodeMsg = mem, encode // a pooled run's own: kept by initRun
	in2 := Input{TenantID: "t2", ConversationID: "c2", UserMessage: "again"}
	b2 := Bindings{Runs: store, Conversations: store}
	initRun(r, &b2, store, true, in2, "run-2", "o2", bindings.RunSuspended, nil)

	set := map[string]bool{ // what initRun sets, checked below
		"mem": true, "b": true, "in": true, "tenantID": true, "id": true, "owner": true, "resumed": true, "status": true,
		"entries": true, "entrySlab": true, "jd": true, "native": true, "encodeMsg": true,
	}
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if !set[name] && !v.Field(i).IsZero() {
			t.Errorf("run.%s is not zero after initRun of a used run", name)
		}
	}
	if !reflect.DeepEqual(r.in, in2) {
		t.Errorf("run.in = %+v, want %+v", r.in, in2)
	}
	if r.mem != mem || r.b != &b2 || r.tenantID != "t2" || r.id != "run-2" || r.owner != "o2" || r.resumed || r.status != bindings.RunSuspended {
		t.Errorf("the run's identity is %p %p %q %q %q %v %q", r.mem, r.b, r.tenantID, r.id, r.owner, r.resumed, r.status)
	}
	if r.entries.len() != 0 || r.entries.byKey != nil || r.entries.full != nil || len(r.entrySlab) != 0 || &r.entrySlab[:1][0] != &mem.entries[0] {
		t.Errorf("the journal index is not empty in the pooled slabs: %+v", r.entries)
	}
	if r.jd != store || !r.native || r.encodeMsg == nil {
		t.Errorf("the drive's journal is %T (native %v)", r.jd, r.native)
	}
}

// plainRuns is a run binding with none of the optional capabilities.
type plainRuns struct{ bindings.RunBinding }

// junkProvider is a model provider that is never called.
type junkProvider struct{}

func (junkProvider) ID() string                   { return "junk" }
func (junkProvider) Models() []bindings.ModelInfo { return nil }
func (junkProvider) Generate(context.Context, bindings.GenerateRequest) (bindings.GenerateResponse, error) {
	return bindings.GenerateResponse{}, nil
}

// TestCopyMessageCopiesEveryField holds that copyMessage copies every field
// of a message (a field added to bindings.ConversationMessage and not to
// copyMessage fails here).
func TestCopyMessageCopiesEveryField(t *testing.T) {
	var src, dst bindings.ConversationMessage
	fillJunk(t, reflect.ValueOf(&src).Elem(), nil)
	src.CreatedAt = time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	copyMessage(&dst, &src)
	if !reflect.DeepEqual(dst, src) {
		t.Errorf("copyMessage gave %+v, want %+v", dst, src)
	}
}
