// Package codectest holds the every-field test of the journal codec
// (package journalcodec) to encoding/json: a value of a type, every
// exported field filled by reflection (recursively, every kind), must be
// written as json.Marshal writes it and read back as json.Unmarshal reads
// it. A package that journals a type runs Check on it.
package codectest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kindgi/agents/internal/journalcodec"
)

// FillMode says what Fill writes.
type FillMode int

const (
	// FillOdd is every kind at its awkward values: strings with quotes,
	// escapes, control characters, line separators, HTML characters and
	// astral runes; numbers at their extremes; non-compact raw JSON; a
	// time with a zone and nanoseconds.
	FillOdd FillMode = iota
	// FillPlain is values the codec writes and reads itself: plain ASCII
	// strings, small numbers, compact raw JSON, UTC times; no map, no
	// interface value, no value with its own MarshalJSON.
	FillPlain
)

// Fill sets every exported field reachable from v (recursively); name is
// the path of v, written into its strings so that no two fields hold the
// same value.
func Fill(v reflect.Value, mode FillMode, name string, depth int) {
	if depth > 8 {
		return
	}
	switch v.Type() {
	case reflect.TypeFor[time.Time]():
		t := time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)
		if mode == FillOdd {
			t = time.Date(1999, 12, 31, 23, 59, 59, 123456789, time.FixedZone("", 5*3600+1800))
		}
		v.Set(reflect.ValueOf(t))
		return
	case reflect.TypeFor[json.RawMessage]():
		raw := `{"k":[1,"` + name + `",true,null]}`
		if mode == FillOdd {
			raw = ` { "k" : [ 1.50 , "ü\u2028<&>" , {"n":null} ] } `
		}
		v.SetBytes([]byte(raw))
		return
	}
	switch v.Kind() {
	case reflect.String:
		s := "p-" + name
		if mode == FillOdd {
			s = "odd \"" + name + "\" \\ \t\n\r\x01\x7f <&> \u2028\u2029 naïve ☃ 🦫 \ufffd"
		}
		v.SetString(s)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := int64(7 + len(name)%5)
		if mode == FillOdd {
			n = -1 << (v.Type().Bits() - 1)
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n := uint64(3 + len(name)%5)
		if mode == FillOdd {
			n = 1<<v.Type().Bits() - 1
		}
		v.SetUint(n)
	case reflect.Float32, reflect.Float64:
		f := 0.25
		if mode == FillOdd {
			f = 1.0000000000000002e-7
		}
		v.SetFloat(f)
	case reflect.Slice:
		if mode == FillPlain && v.Type().Elem().Kind() == reflect.Uint8 {
			return // base64: encoding/json's to write
		}
		n := 2
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			Fill(s.Index(i), mode, fmt.Sprintf("%s[%d]", name, i), depth+1)
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			Fill(v.Index(i), mode, fmt.Sprintf("%s[%d]", name, i), depth+1)
		}
	case reflect.Map:
		if mode == FillPlain {
			return // a non-empty map is encoding/json's to write (it sorts the keys)
		}
		m := reflect.MakeMap(v.Type())
		for i := range 2 {
			k := reflect.New(v.Type().Key()).Elem()
			Fill(k, mode, fmt.Sprintf("%s.k%d", name, i), depth+1)
			e := reflect.New(v.Type().Elem()).Elem()
			Fill(e, mode, fmt.Sprintf("%s.v%d", name, i), depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Pointer:
		if mode == FillPlain && writesItself(v.Type().Elem()) {
			return // encoding/json calls its MarshalJSON
		}
		p := reflect.New(v.Type().Elem())
		Fill(p.Elem(), mode, name, depth+1)
		v.Set(p)
	case reflect.Interface:
		if v.NumMethod() == 0 && mode == FillOdd {
			v.Set(reflect.ValueOf(map[string]any{"s": "any-" + name, "n": 1.5, "l": []any{true, nil}}))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				Fill(v.Field(i), mode, name+"."+f.Name, depth+1)
			}
		}
	}
}

// writesItself reports whether encoding/json calls t's own MarshalJSON.
func writesItself(t reflect.Type) bool {
	m := reflect.TypeFor[json.Marshaler]()
	return t != reflect.TypeFor[time.Time]() && t != reflect.TypeFor[json.RawMessage]() && (t.Implements(m) || reflect.PointerTo(t).Implements(m))
}

// Check fills a T (Fill, in mode) and holds the codec to encoding/json on
// it: journalcodec.Marshal writes json.Marshal's bytes, and
// journalcodec.Unmarshal of them gives json.Unmarshal's value. In
// FillPlain it also holds that the codec takes the value itself (Append
// and Decode do not leave it to encoding/json): a field of a kind the
// codec does not follow fails there.
func Check[T any](t *testing.T, mode FillMode) { CheckAdjusted[T](t, mode, nil) }

// CheckAdjusted is Check with plain, when set, applied to the value in
// FillPlain: it clears what the codec leaves to encoding/json by design.
func CheckAdjusted[T any](t *testing.T, mode FillMode, plain func(*T)) {
	t.Helper()
	var v T
	Fill(reflect.ValueOf(&v).Elem(), mode, "v", 0)
	if mode == FillPlain && plain != nil {
		plain(&v)
	}
	want, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	got, err := journalcodec.Marshal(nil, &v, nil)
	if err != nil {
		t.Fatalf("journalcodec.Marshal: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the codec's bytes differ from json.Marshal's:\n got %s\nwant %s", got, want)
	}
	var ref, dec T
	if err := json.Unmarshal(want, &ref); err != nil {
		t.Fatalf("json.Unmarshal: %v", err)
	}
	if err := journalcodec.Unmarshal(got, &dec, false); err != nil {
		t.Fatalf("journalcodec.Unmarshal: %v", err)
	}
	if diff := Diff(ref, dec); diff != "" {
		t.Errorf("the decoded value differs from json.Unmarshal's (-json +codec):\n%s", diff)
	}
	if mode != FillPlain {
		return
	}
	if b, ok := journalcodec.Append(nil, &v, nil); !ok {
		t.Errorf("the codec left a plain %T to encoding/json (%s)", v, want)
	} else if !bytes.Equal(b, want) {
		t.Errorf("Append wrote\n %s\nwant (json.Marshal)\n %s", b, want)
	}
	var fd T
	if !journalcodec.Decode(want, &fd, false) {
		t.Errorf("the codec's decoder declined a plain %T (%s)", fd, want)
	} else if diff := Diff(ref, fd); diff != "" {
		t.Errorf("Decode differs from json.Unmarshal (-json +codec):\n%s", diff)
	}
}

// Diff is cmp.Diff over every field, unexported ones too.
func Diff(a, b any) string {
	return cmp.Diff(a, b, cmp.Exporter(func(reflect.Type) bool { return true }))
}

// Name is how a test names T's case.
func Name[T any]() string { return fmt.Sprint(reflect.TypeFor[T]()) }
