package turn

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
	"github.com/kindgi/agents/internal/alias"
	"github.com/kindgi/agents/internal/junk"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/registry"
)

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
	mem := r.mem
	jv := reflect.ValueOf(&r.Journal).Elem()
	encode := reflect.New(jv.FieldByName("encodeMsg").Type()).Elem()
	encode.Set(alias.Settable(jv.FieldByName("encodeMsg")))
	junk.Fill(t, reflect.ValueOf(r).Elem(), ifaces)
	v := reflect.ValueOf(r).Elem()
	for _, s := range []reflect.Value{v, jv} {
		for i := range s.NumField() {
			if s.Field(i).IsZero() {
				t.Fatalf("run.%s was not filled", s.Type().Field(i).Name)
			}
		}
	}
	r.mem = mem                                             // a pooled run's own: kept by initRun
	alias.Settable(jv.FieldByName("encodeMsg")).Set(encode) // likewise
	in2 := Input{TenantID: "t2", ConversationID: "c2", UserMessage: "again"}
	b2 := Bindings{Runs: store, Conversations: store}
	initRun(r, &b2, store, true, in2, "run-2", "o2", bindings.RunSuspended, nil)

	set := map[string]bool{ // what initRun sets, checked below
		"mem": true, "b": true, "in": true, "tenantID": true, "id": true, "owner": true, "resumed": true, "status": true,
		"Journal": true, // field by field below
	}
	journalSet := map[string]bool{ // what drive.Journal.Init sets
		"tenantID": true, "runID": true, "owner": true, "leaseTTL": true, "runs": true, "flow": true, "steps": true, "maxAttempts": true,
		"mem": true, "entries": true, "entrySlab": true, "jd": true, "native": true, "encodeMsg": true,
	}
	for _, c := range []struct {
		v   reflect.Value
		set map[string]bool
	}{{v, set}, {jv, journalSet}} {
		for i := range c.v.NumField() {
			name := c.v.Type().Field(i).Name
			if !c.set[name] && !c.v.Field(i).IsZero() {
				t.Errorf("run.%s is not zero after initRun of a used run", name)
			}
		}
	}
	if !reflect.DeepEqual(r.in, in2) {
		t.Errorf("run.in = %+v, want %+v", r.in, in2)
	}
	if r.mem != mem || r.b != &b2 || r.tenantID != "t2" || r.id != "run-2" || r.owner != "o2" || r.resumed || r.status != bindings.RunSuspended {
		t.Errorf("the run's identity is %p %p %q %q %q %v %q", r.mem, r.b, r.tenantID, r.id, r.owner, r.resumed, r.status)
	}
	if r.Keys() != 0 || alias.Settable(jv.FieldByName("jd")).Interface() != journal.Driver(store) || !jv.FieldByName("native").Bool() || jv.FieldByName("encodeMsg").IsNil() {
		t.Errorf("the drive's journal is not the new run's: %d keys, native %v", r.Keys(), jv.FieldByName("native").Bool())
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
	junk.Fill(t, reflect.ValueOf(&src).Elem(), nil)
	src.CreatedAt = time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	copyMessage(&dst, &src)
	if !reflect.DeepEqual(dst, src) {
		t.Errorf("copyMessage gave %+v, want %+v", dst, src)
	}
}
