package journalcodec_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/journalcodec"
	"github.com/kindgi/agents/internal/journalcodec/codectest"
)

// kinds holds a field of every kind the codec follows, and of some it
// leaves to encoding/json, with the options that change how they are
// written.
type kinds struct {
	S        string            `json:"s"`
	SO       string            `json:"so,omitempty"`
	Named    bindings.ChatRole `json:"named"`
	B        bool              `json:"b,omitempty"`
	I        int               `json:"i"`
	I64      int64             `json:"i64,omitempty"`
	I32      int32             `json:"i32"`
	F        float64           `json:"f,omitempty"`
	F32      float32           `json:"f32"`
	Raw      json.RawMessage   `json:"raw,omitempty"`
	T        time.Time         `json:"t"`
	TZ       time.Time         `json:"tz,omitzero"`
	Strs     []string          `json:"strs"`
	Ptr      *int              `json:"ptr,omitempty"`
	PtrS     *[]string         `json:"ptrS"`
	Nested   inner             `json:"nested"`
	NestedP  *inner            `json:"nestedP,omitempty"`
	List     []inner           `json:"list,omitempty"`
	Map      map[string]string `json:"map,omitempty"`
	AnyMap   map[string]any    `json:"anyMap"`
	Any      any               `json:"any"`
	Gate     *agent.ToolGate   `json:"gate,omitempty"`
	Gates    map[string]agent.ToolGate
	Bytes    []byte                 `json:"bytes,omitempty"`
	Settings bindings.ModelSettings `json:"settings,omitzero"`
	NoTag    string
	Skip     string `json:"-"`
	hidden   string
	U        uint8 `json:"u,omitempty"`
}

type inner struct {
	A string `json:"a"`
	N int    `json:"n,omitempty"`
}

// TestCodecRoundTripsEveryField holds the codec to encoding/json on
// values with every field filled (codectest.Check), for the kinds above
// and the bindings types a journal holds.
func TestCodecRoundTripsEveryField(t *testing.T) {
	run := func(name string, check func(*testing.T, codectest.FillMode)) {
		for _, mode := range []codectest.FillMode{codectest.FillOdd, codectest.FillPlain} {
			t.Run(strings.ReplaceAll(name, "/", "_")+"/"+[...]string{"odd", "plain"}[mode], func(t *testing.T) { check(t, mode) })
		}
	}
	plainKinds := func(k *kinds) { k.Settings = bindings.ModelSettings{} } // a set omitzero struct is encoding/json's
	run("kinds", func(t *testing.T, m codectest.FillMode) { codectest.CheckAdjusted(t, m, plainKinds) })
	run(codectest.Name[bindings.ConversationMessage](), codectest.Check[bindings.ConversationMessage])
	run(codectest.Name[bindings.GenerateResponse](), codectest.Check[bindings.GenerateResponse])
	run(codectest.Name[[]bindings.ChatMessage](), codectest.Check[[]bindings.ChatMessage])
	run(codectest.Name[[]bindings.ToolDescriptor](), codectest.Check[[]bindings.ToolDescriptor])
	run(codectest.Name[bindings.ApprovalRequest](), codectest.Check[bindings.ApprovalRequest])
	run(codectest.Name[*bindings.ProvenanceRecord](), codectest.Check[*bindings.ProvenanceRecord])
	run(codectest.Name[bindings.HitlSpec](), codectest.Check[bindings.HitlSpec])
}

// seeds are documents of every kind for the fuzz target: the encodings of
// filled values, and forms the decoder declines.
func seeds(t testing.TB) [][]byte {
	var out [][]byte
	add := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	at := time.Date(2026, 3, 14, 9, 0, 0, 123456789, time.UTC)
	n := 3
	add(kinds{S: "a\"b\\c <d> & é \u2028", Named: bindings.ChatUser, I: -7, I32: 1 << 30, F: 0.25, F32: 1.5, Raw: json.RawMessage(`{"a":[1,2.5e3,"x",null,true]}`),
		T: at, Strs: []string{}, Ptr: &n, Nested: inner{A: "x", N: 2}, List: []inner{{A: "y"}}, Map: map[string]string{"k": "v"},
		AnyMap: map[string]any{"n": 1.5, "l": []any{"a", false, nil}}, Any: "s", Gate: &agent.ToolGate{Mode: agent.GateAlwaysAsk},
		Gates: map[string]agent.ToolGate{"t": {Mode: agent.GateNeverAsk}}, Bytes: []byte{1, 2}, NoTag: "nt"})
	add(kinds{})
	add(bindings.ConversationMessage{TenantID: "t", ConversationID: "c", ID: "m", Seq: 2, Role: bindings.RoleTool, Content: "{\"k\":1}\n",
		ToolCalls: []bindings.ToolCall{{ID: "c1", Name: "n", Arguments: json.RawMessage(`{"q":"nda"}`)}}, ToolCallID: "c0", TurnNumber: 1, RunID: "r",
		Metadata: json.RawMessage(`{"toolId":"x"}`), CreatedAt: at})
	add(bindings.GenerateResponse{Text: "hi", FinishReason: "stop", Usage: bindings.Usage{InputTokens: 1, OutputTokens: 2, CostUsd: 1e-7}})
	for _, s := range []string{
		`{}`, `[]`, `null`, `{"s":null}`, `{"s":"x","s":"y"}`, `{"S":"x"}`, `{"unknown":1}`, `{"i":1.0}`, `{"i":99999999999999999999}`,
		`{"i32":2147483648}`, `{"s":"\ud83d\ude00"}`, "{\"s\":\"\xff\"}", `{"s":"a"} x`, `{"s":"a",}`, `{"raw":{"a":01}}`,
		`{"strs":null,"list":[],"map":{},"anyMap":null}`, `{"gate":"alwaysAsk"}`, `{"gate":null}`, `{"t":"2026-02-30T00:00:00Z"}`,
		`{"t":"2026-03-14T09:00:00+01:00"}`, `{"a":"\u2028"}`, "\"\u2028\"", `{"a":"<"}`, `[1, 2]`, `-0.5e+3`, `"\ud800"`, ` {"s" : "x" } `, `{"nested":{"a":"x","n":-0}}`, `{"f32":3.4028236e38}`,
		strings.Repeat(`{"nestedP":`, 70) + `{}` + strings.Repeat(`}`, 70), `{"any":[[[{"a":[1,{"b":null}]}]]]}`,
	} {
		out = append(out, []byte(s))
	}
	return out
}

// matches holds the codec to encoding/json on one document and type:
// Unmarshal gives json.Unmarshal's value (or both fail), Decode accepts
// nothing json.Unmarshal refuses, and Marshal of the value gives
// json.Marshal's bytes.
func matches[T any](t *testing.T, raw []byte) {
	var want, got T
	werr := json.Unmarshal(raw, &want)
	gerr := journalcodec.Unmarshal(raw, &got, false)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%T of %q: Unmarshal error %v, json.Unmarshal %v", want, raw, gerr, werr)
	}
	var fast T
	if journalcodec.Decode(raw, &fast, false) {
		if werr != nil {
			t.Fatalf("%T: Decode read %q, which json.Unmarshal refuses: %v", want, raw, werr)
		}
		if d := codectest.Diff(want, fast); d != "" {
			t.Fatalf("%T of %q: Decode differs from json.Unmarshal (-json +codec):\n%s", want, raw, d)
		}
	}
	if werr != nil {
		return
	}
	if d := codectest.Diff(want, got); d != "" {
		t.Fatalf("%T of %q: Unmarshal differs from json.Unmarshal (-json +codec):\n%s", want, raw, d)
	}
	wb, werr := json.Marshal(want)
	gb, gerr := journalcodec.Marshal(nil, &want, nil)
	if (werr == nil) != (gerr == nil) || !bytes.Equal(wb, gb) {
		t.Fatalf("%T of %q: Marshal = %s, %v; json.Marshal = %s, %v", want, raw, gb, gerr, wb, werr)
	}
}

// FuzzCodecMatchesEncodingJSON is the differential test: for any
// document, decoded as each type and encoded again, the codec gives
// encoding/json's values and bytes. Run as a test it covers its seeds.
func FuzzCodecMatchesEncodingJSON(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if journalcodec.RawAsIs(raw) {
			if b, err := json.Marshal(json.RawMessage(raw)); err != nil || !bytes.Equal(b, raw) || !utf8.Valid(raw) {
				t.Fatalf("RawAsIs(%q), but json.Marshal writes %q, %v (or it is not UTF-8)", raw, b, err)
			}
		}
		if json.Valid(raw) && !journalcodec.NeedsCompact(raw) {
			if b, err := json.Marshal(json.RawMessage(raw)); err != nil || !bytes.Equal(b, raw) {
				t.Fatalf("NeedsCompact(%q) is false, but json.Marshal writes %q, %v", raw, b, err)
			}
		}
		matches[kinds](t, raw)
		matches[bindings.ConversationMessage](t, raw)
		matches[bindings.GenerateResponse](t, raw)
		matches[[]bindings.ToolDescriptor](t, raw)
		matches[string](t, raw)
		matches[map[string]any](t, raw)
	})
}

// longNames has member names that fit the codec's words (commaRoom) and
// names that do not.
type longNames struct {
	A string `json:"a"`
	B string `json:"abcdefghijklmnopqrstu,omitempty"`
	C string `json:"abcdefghijklmnopqrstuvwxyz"`
	D int    `json:"abcdefghijklmnopqrstuvwxyz0123"`
}

// TestAppendWithEveryRoom holds the encoder's room-dependent paths (the
// word stores of putComma and putPlain need commaRoom bytes past a
// member, else the general path writes it) to encoding/json: a value is
// appended after a prefix into a buffer with every spare capacity from
// none to more than the value needs, and must come out as json.Marshal
// writes it, the prefix untouched.
func TestAppendWithEveryRoom(t *testing.T) {
	plain := true // a value Append must write itself, given room
	check := func(t *testing.T, v any, appendTo func(b []byte) ([]byte, bool)) {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		for room := 0; room <= len(want)+64; room++ {
			b := append(make([]byte, 0, 5+room), "pre:"...)
			out, ok := appendTo(b)
			if !ok {
				if plain && room == len(want)+64 {
					t.Fatalf("%T: Append declined a plain value", v)
				}
				continue
			}
			if string(out) != "pre:"+string(want) {
				t.Fatalf("%T with room %d:\n got %s\nwant pre:%s", v, room, out, want)
			}
		}
	}
	for _, mode := range []codectest.FillMode{codectest.FillPlain, codectest.FillOdd} {
		plain = mode == codectest.FillPlain
		var m bindings.ConversationMessage
		codectest.Fill(reflect.ValueOf(&m).Elem(), mode, "m", 0)
		check(t, m, func(b []byte) ([]byte, bool) { return journalcodec.Append(b, &m, nil) })
		var g bindings.GenerateResponse
		codectest.Fill(reflect.ValueOf(&g).Elem(), mode, "g", 0)
		check(t, g, func(b []byte) ([]byte, bool) { return journalcodec.Append(b, &g, nil) })
		var k kinds
		codectest.Fill(reflect.ValueOf(&k).Elem(), mode, "k", 0)
		k.Settings = bindings.ModelSettings{}
		check(t, k, func(b []byte) ([]byte, bool) { return journalcodec.Append(b, &k, nil) })
	}
	// Strings of every length, plain and with a byte to escape at either
	// end, in members whose commas are short, long and past commaRoom.
	plain = false
	for n := range 40 {
		s := strings.Repeat("x", n)
		for _, v := range []longNames{{A: s, B: s, C: s, D: n}, {A: "<" + s, B: s + "\"", C: s + "é", D: -n}} {
			check(t, v, func(b []byte) ([]byte, bool) { return journalcodec.Append(b, &v, nil) })
			raw, _ := json.Marshal(v)
			matches[longNames](t, raw)              // keys compared as words and, past them, as strings
			matches[longNames](t, raw[:len(raw)-1]) // a document cut short
		}
	}
}

// zeroStr and zeroNum have IsZero methods that do not say what their
// kind's zero says: omitzero asks them.
type zeroStr string

func (z zeroStr) IsZero() bool { return z == "zero" }

type zeroNum float64

func (z zeroNum) IsZero() bool { return z == 1 }

// TestOmitZeroAsksIsZero: a field with omitzero whose type has an IsZero
// method is omitted as that method says, as encoding/json omits it.
func TestOmitZeroAsksIsZero(t *testing.T) {
	type v struct {
		S  zeroStr `json:"s,omitzero"`
		SE zeroStr `json:"se,omitempty,omitzero"`
		N  zeroNum `json:"n,omitzero"`
	}
	for _, x := range []v{{}, {S: "zero", SE: "zero", N: 1}, {S: "x", SE: "y", N: 2}} {
		want, err := json.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		got, err := journalcodec.Marshal(nil, &x, nil)
		if err != nil || string(got) != string(want) {
			t.Errorf("Marshal(%+v) = %s, %v; json.Marshal %s", x, got, err, want)
		}
	}
}

// TestAppendStringAsMarshal: AppendString writes what json.Marshal writes
// for a string, or declines, for strings of every length with bytes to
// escape anywhere (one, or runs of them: the growth of its buffer), into
// buffers with every spare capacity.
func TestAppendStringAsMarshal(t *testing.T) {
	special := []string{`"`, `\`, "\n", "\r", "\t", "<", ">", "&", "\x01", "é", "\u2028"}
	for n := range 30 {
		for p := range n {
			for _, c := range special {
				for _, s := range []string{
					strings.Repeat("a", p) + c + strings.Repeat("b", n-p),
					strings.Repeat(c, p) + strings.Repeat("b", n-p),
					strings.Repeat("<", n) + c,
				} {
					want, _ := json.Marshal(s)
					for _, room := range []int{0, 1, len(s), len(s) + 2, len(s) + 9, 6*len(s) + 20} {
						b := append(make([]byte, 0, 3+room), "pre"...)
						got, ok := journalcodec.AppendString(b, s)
						if ok && string(got) != "pre"+string(want) {
							t.Fatalf("AppendString(%q) with room %d = %s, want pre%s", s, room, got, want)
						}
						if !ok && !strings.ContainsAny(s, "\x01é\u2028") {
							t.Fatalf("AppendString(%q) declined", s)
						}
					}
				}
			}
		}
	}
}
