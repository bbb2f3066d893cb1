package pgstore

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/kindgi/agents/bindings"
)

// decodeToolCalls reads what json.Unmarshal reads into []bindings.ToolCall
// whenever it reads a document itself, and reads the documents pgstore
// stores (the first group) itself.
func TestDecodeToolCallsAsUnmarshal(t *testing.T) {
	fast := []string{
		`[]`, `[{}]`, `[{"id":"a"}]`, `[{"id":"call_1","name":"acme.lookup","arguments":{"q":"answer"}}]`,
		`[{"id":"a","name":"b","arguments":null}]`, `[{"id":"a","name":"b","arguments":"s, } ] \" x"}]`,
		`[{"id":"a","name":"b","arguments":123}]`, `[{"id":"a","name":"b","arguments":[1,{"a":"]"},[]]}]`,
		`[{"arguments":{"x":"}\"{"},"id":"1"}]`, `[{"id":"a","arguments":true},{"name":"n","arguments":{}}]`,
		`[{"id":"é🙂","name":"日本"}]`, `[{"id":"","name":""}]`, `[{"arguments":{"a":[]},"arguments":2}]`,
		`[{"id":"a","arguments":1.5e3},{"id":"b","arguments":-0},{"id":"c","arguments":false}]`,
		`[{"id":"a","name":"b","arguments":{"arguments":{"arguments":1}}}]`,
	}
	others := []string{
		`null`, `{}`, `[1]`, `["a"]`, `[null]`, `[{"id":"a\"b"}]`, `[{"id":"\u00e9"}]`, `[{"ID":"a"}]`, `[{"Name":"a"}]`,
		`[{"id":null}]`, `[{"id":1}]`, `[{"id":"a","extra":1}]`, `[{"id":"a"}]x`, `[{"id":"a"},]`, `[{"id":"a"}`,
		`[{"id":"a",}]`, `[{"id":"a""name":"b"}]`, `[{"id":"a","arguments":}]`, `[{"arguments"}]`, `[{"id":"a"} ]`,
		`[ {"id":"a"}]`, `[{"id": "a"}]`, "[{\"id\":\"\xff\"}]", `[{"id":"a","name":"b","arguments":{"q":"x"}]`, `[`, `[]]`,
	}
	for i, doc := range append(append([]string(nil), fast...), others...) {
		got, ok := decodeToolCalls([]byte(doc))
		if i < len(fast) && !ok {
			t.Errorf("decodeToolCalls(%s) leaves the document to json.Unmarshal", doc)
		}
		if !ok {
			continue
		}
		var want []bindings.ToolCall
		if err := json.Unmarshal([]byte(doc), &want); err != nil {
			t.Errorf("decodeToolCalls(%s) reads a document json.Unmarshal refuses (%v): %+v", doc, err, got)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("decodeToolCalls(%s) = %#v, json.Unmarshal reads %#v", doc, got, want)
		}
	}
}

// The calls decodeToolCalls returns do not share the document's buffer
// (a history read reuses it for the next row's), and appending to one's
// arguments does not write into another's.
func TestDecodeToolCallsOwnTheirBytes(t *testing.T) {
	doc := []byte(`[{"id":"a","name":"b","arguments":{"q":1}},{"id":"c","name":"d","arguments":[2]}]`)
	calls, ok := decodeToolCalls(doc)
	if !ok || len(calls) != 2 {
		t.Fatalf("decodeToolCalls = %v, %v", calls, ok)
	}
	for i := range doc {
		doc[i] = 'x'
	}
	_ = append(calls[0].Arguments, "zzzzzzzz"...)
	want := []bindings.ToolCall{{ID: "a", Name: "b", Arguments: json.RawMessage(`{"q":1}`)}, {ID: "c", Name: "d", Arguments: json.RawMessage(`[2]`)}}
	if !reflect.DeepEqual(calls, want) {
		t.Fatalf("calls = %s, want %s", calls, want)
	}
}
