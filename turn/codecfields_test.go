package turn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kindgi/agents/bindings"
)

// The every-field test of the journal codec (issue 22, point 3): a value
// of every type the turn journals, with every exported field filled by
// reflection (recursively, every kind), is journaled through the turn's
// encoder and decoded through the turn's decoder, and both must agree with
// encoding/json's round trip of the same value — the bytes exactly, the
// decoded value deeply. A field added to one of these types that the
// hand-written codec is not taught fails it: in the plain fill, which the
// fast paths read and write, the fast encoder must take the value and
// write json.Marshal's bytes, and the fast decoder must read them.

// fillMode says what the filler writes.
type fillMode int

const (
	// fillOdd is every kind at its awkward values: strings with quotes,
	// escapes, control characters, line separators, HTML characters and
	// astral runes; numbers at their extremes; non-compact raw JSON; a
	// time with a zone and nanoseconds.
	fillOdd fillMode = iota
	// fillPlain is values the fast paths handle themselves: plain ASCII
	// strings, small numbers, compact raw JSON, UTC times.
	fillPlain
)

// fill sets every exported field reachable from v (recursively); name is
// the path of v, written into its strings so that no two fields hold the
// same value.
func fill(v reflect.Value, mode fillMode, name string, depth int) {
	if depth > 8 {
		return
	}
	switch v.Type() {
	case reflect.TypeFor[time.Time]():
		t := time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)
		if mode == fillOdd {
			t = time.Date(1999, 12, 31, 23, 59, 59, 123456789, time.FixedZone("", 5*3600+1800))
		}
		v.Set(reflect.ValueOf(t))
		return
	case reflect.TypeFor[json.RawMessage]():
		raw := `{"k":[1,"` + name + `",true,null]}`
		if mode == fillOdd {
			raw = ` { "k" : [ 1.50 , "ü\u2028<&>" , {"n":null} ] } `
		}
		v.SetBytes([]byte(raw))
		return
	}
	switch v.Kind() {
	case reflect.String:
		s := "p-" + name
		if mode == fillOdd {
			s = "odd \"" + name + "\" \\ \t\n\r\x01\x7f <&> \u2028\u2029 naïve ☃ 🦫 \ufffd"
		}
		v.SetString(s)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := int64(7 + len(name)%5)
		if mode == fillOdd {
			n = -1 << (v.Type().Bits() - 1)
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n := uint64(3 + len(name)%5)
		if mode == fillOdd {
			n = 1<<v.Type().Bits() - 1
		}
		v.SetUint(n)
	case reflect.Float32, reflect.Float64:
		f := 0.25
		if mode == fillOdd {
			f = 1.0000000000000002e-7
		}
		v.SetFloat(f)
	case reflect.Slice:
		n := 2
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fill(s.Index(i), mode, fmt.Sprintf("%s[%d]", name, i), depth+1)
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), mode, fmt.Sprintf("%s[%d]", name, i), depth+1)
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for i := range 2 {
			k := reflect.New(v.Type().Key()).Elem()
			fill(k, mode, fmt.Sprintf("%s.k%d", name, i), depth+1)
			e := reflect.New(v.Type().Elem()).Elem()
			fill(e, mode, fmt.Sprintf("%s.v%d", name, i), depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), mode, name, depth+1)
		v.Set(p)
	case reflect.Interface:
		if v.NumMethod() == 0 {
			v.Set(reflect.ValueOf(map[string]any{"s": "any-" + name, "n": 1.5, "l": []any{true, nil}}))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				fill(v.Field(i), mode, name+"."+f.Name, depth+1)
			}
		}
	}
}

// codecCase is one journaled type: its name, a test of its round trip and
// of its fast paths.
type codecCase struct {
	name string
	run  func(t *testing.T, mode fillMode)
}

// caseOf is the codecCase of T. fast is T's hand-written encoder (nil
// when T has none: its encoding is json.Marshal's); fastDecode says T has
// a hand-written decoder; plain clears, in the plain fill, the fields its
// fast paths leave to encoding/json by design.
func caseOf[T any](fast func(*T) ([]byte, bool), fastDecode bool, plain func(*T)) codecCase {
	name := reflect.TypeFor[T]().String()
	return codecCase{name: name, run: func(t *testing.T, mode fillMode) {
		var v T
		fill(reflect.ValueOf(&v).Elem(), mode, "v", 0)
		if mode == fillPlain && plain != nil {
			plain(&v)
		}
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("json.Marshal: %v", err)
		}
		got, err := encodeOutput(&v)
		if err != nil {
			t.Fatalf("encodeOutput: %v", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("journaled bytes differ from json.Marshal's:\n got %s\nwant %s", got, want)
		}
		var ref, dec T
		if err := json.Unmarshal(want, &ref); err != nil {
			t.Fatalf("json.Unmarshal: %v", err)
		}
		if err := unmarshal(got, &dec); err != nil {
			t.Fatalf("unmarshal: %v", err)
		}
		if diff := cmp.Diff(ref, dec, cmp.Exporter(func(reflect.Type) bool { return true })); diff != "" {
			t.Errorf("decoded value differs from json.Unmarshal's (-json +turn):\n%s", diff)
		}
		if mode != fillPlain {
			return
		}
		// The fast paths must take the plain value whole: a field they
		// were not taught is either dropped (bytes differ) or sends the
		// value to encoding/json (ok is false).
		if fast != nil {
			b, ok := fast(&v)
			switch {
			case !ok:
				t.Errorf("the hand-written encoder of %s left a plain value to encoding/json: teach it every field (%s)", name, want)
			case !bytes.Equal(b, want):
				t.Errorf("the hand-written encoder of %s wrote\n %s\nwant (json.Marshal)\n %s", name, b, want)
			}
		}
		if fastDecode {
			var fd T
			if !decodeFast(want, &fd) {
				t.Errorf("the hand-written decoder of %s declined json.Marshal's bytes: teach it every field (%s)", name, want)
			} else if diff := cmp.Diff(ref, fd, cmp.Exporter(func(reflect.Type) bool { return true })); diff != "" {
				t.Errorf("the hand-written decoder of %s differs from json.Unmarshal (-json +turn):\n%s", name, diff)
			}
		}
	}}
}

// known is T's encoding through the hand-written encoders of the
// journal's outputs (appendKnown, as a drive's steps are encoded).
func known[T any](v *T) ([]byte, bool) { return appendKnown(nil, v) }

// codecCases are the types the turn journals: every step output, the
// stored messages and the run's input.
func codecCases() []codecCase {
	return []codecCase{
		caseOf(known[bindings.GenerateResponse], true, nil),
		caseOf(known[bindings.ConversationMessage], true, nil),
		caseOf(known[[]bindings.ChatMessage], true, nil),
		caseOf(known[toolResult], true, nil),
		caseOf(known[approvalOutcome], true, nil),
		caseOf(known[budgetState], true, nil),
		caseOf(known[setupState], true, plainSetup),
		caseOf(known[[]callPlan], true, nil),
		caseOf(known[composeRecord], true, nil),
		caseOf(known[string], true, nil),
		caseOf(appendToolMetaJSON, false, nil),
		caseOf(appendInputJSON, true, plainInput),
		caseOf[parkRecord](nil, true, nil),
		caseOf[outputCheck](nil, false, nil),
		caseOf[bindings.ApprovalRequest](nil, false, nil),
		caseOf[[]RetrievedFact](nil, false, nil),
		caseOf[[]GuardrailOutcome](nil, false, nil),
		caseOf[*bindings.ProvenanceRecord](nil, false, nil),
		caseOf[Result](nil, false, nil),
	}
}

// plainSetup clears what appendSetupJSON leaves to encoding/json (see its
// doc): a tool's config, env, annotations and gate, a policy's HITL spec,
// the effective HITL policy's tool gates and floors.
func plainSetup(s *setupState) {
	for i := range s.Tools {
		d := &s.Tools[i]
		d.Config, d.Env, d.Annotations, d.Gate = nil, nil, nil, nil
	}
	s.Policy.Hitl = nil
	s.Hitl.ToolGates, s.Hitl.ToolFloors = nil, nil
}

// plainInput clears what appendInputJSON leaves to encoding/json: the
// parameters and model settings (and the agent, which is not journaled).
func plainInput(in *Input) {
	in.Parameters = nil
	in.ModelSettings = bindings.ModelSettings{}
}

// TestCodecRoundTripsEveryField is the every-field test: see above.
func TestCodecRoundTripsEveryField(t *testing.T) {
	for _, c := range codecCases() {
		for _, mode := range []fillMode{fillOdd, fillPlain} {
			t.Run(fmt.Sprintf("%s/%s", strings.ReplaceAll(c.name, "/", "_"), [...]string{"odd", "plain"}[mode]), func(t *testing.T) {
				c.run(t, mode)
			})
		}
	}
}

// TestCodecKnowsEveryField fails when a type a hand-written encoder
// writes has a field it was not taught (codecFields): the encoder then
// leaves every value of the type to encoding/json, which keeps the field
// but costs the fast path; teach the encoder, its decoder and codecFields
// the field.
func TestCodecKnowsEveryField(t *testing.T) {
	for _, typ := range []reflect.Type{
		reflect.TypeFor[bindings.GenerateResponse](), reflect.TypeFor[bindings.ConversationMessage](),
		reflect.TypeFor[[]bindings.ChatMessage](), reflect.TypeFor[toolResult](), reflect.TypeFor[approvalOutcome](),
		reflect.TypeFor[budgetState](), reflect.TypeFor[setupState](), reflect.TypeFor[[]callPlan](),
		reflect.TypeFor[composeRecord](), reflect.TypeFor[toolMeta](), reflect.TypeFor[Input](),
	} {
		if u := untaught(typ); len(u) > 0 {
			t.Errorf("the journal encoder of %s was not taught %s", typ, strings.Join(u, ", "))
		}
	}
	for _, ok := range []bool{encResponse, encMessage, encChat, encResult, encApproval, encBudget, encSetup, encPlans, encCompose, encToolMeta, encInput} {
		if !ok {
			t.Fatal("an encoder is switched off")
		}
	}
}

// TestUntaughtFieldIsFound: untaught names a field codecFields does not
// list, a listed name that is not a field, and a struct type it does not
// know at all.
func TestUntaughtFieldIsFound(t *testing.T) {
	type inner struct{ A, B string }
	type outer struct {
		Known string
		New   int
		In    []inner
		Skip  string `json:"-"`
	}
	fields := maps.Clone(codecFields)
	fields[reflect.TypeFor[outer]()] = "Known In Gone"
	want := []string{"turn.outer.New", "turn.inner", "turn.outer.Gone (listed, not a field)"}
	if diff := cmp.Diff(want, untaughtIn(fields, reflect.TypeFor[outer]())); diff != "" {
		t.Errorf("untaught (-want +got):\n%s", diff)
	}
	fields[reflect.TypeFor[inner]()] = leftToJSON
	fields[reflect.TypeFor[outer]()] = "Known New In"
	if u := untaughtIn(fields, reflect.TypeFor[outer]()); len(u) != 0 {
		t.Errorf("untaught = %v, want none", u)
	}
}
