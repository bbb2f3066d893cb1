package pgstore

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/kindgi/agents/bindings"
)

// unwrapToolCalls is UnwrapInto of the text of a tool_calls column
// (see unwrapStored) into a []bindings.ToolCall, with buf as scratch (returned, grown). A document
// as pgstore stores one, an array of objects whose keys are "id", "name"
// and "arguments" and whose id and name hold no escape, is read by
// decodeToolCalls; anything else by json.Unmarshal, as before. A history
// read decodes the tool calls of every message that has them, and
// json.Unmarshal of them was about a tenth of a pgstore turn's client
// instructions.
func unwrapToolCalls(buf, raw []byte) ([]byte, []bindings.ToolCall, error) {
	doc, err := unwrapStored(buf, raw)
	if err != nil {
		return buf, nil, err
	}
	if calls, ok := decodeToolCalls(doc); ok {
		return doc, calls, nil
	}
	var calls []bindings.ToolCall
	if err := json.Unmarshal(doc, &calls); err != nil {
		return doc, nil, &MalformedEnvelopeError{Reason: "document does not decode: " + err.Error()}
	}
	return doc, calls, nil
}

// decodeToolCalls reads the compact JSON document doc (unwrapStored's) as
// json.Unmarshal reads it into a []bindings.ToolCall, when it is an array
// of objects whose members are "id" and "name" (strings without escapes)
// and "arguments" (any value, kept as its text); ok is false for any
// other document. The calls' strings and arguments share one copy of
// doc (the arguments' slices capped at their length).
func decodeToolCalls(doc []byte) ([]bindings.ToolCall, bool) {
	if len(doc) < 2 || doc[0] != '[' {
		return nil, false
	}
	if len(doc) == 2 && doc[1] == ']' {
		return []bindings.ToolCall{}, true
	}
	var first [4]bindings.ToolCall // the calls read, then copied into a slice of their number
	read := first[:0]
	cp := bytes.Clone(doc) // not written after this: the strings share its bytes
	i := 1
	for {
		if i >= len(cp) || cp[i] != '{' {
			return nil, false
		}
		i++
		var c bindings.ToolCall
		for first := true; ; first = false {
			if i < len(cp) && cp[i] == '}' && first {
				break
			}
			var key string
			switch {
			case bytes.HasPrefix(cp[i:], []byte(`"id":`)):
				key = "id"
			case bytes.HasPrefix(cp[i:], []byte(`"name":`)):
				key = "name"
			case bytes.HasPrefix(cp[i:], []byte(`"arguments":`)):
				key = "arguments"
			default:
				return nil, false
			}
			i += len(key) + 3
			switch key {
			case "id", "name":
				s, end, ok := plainString(cp, i)
				if !ok {
					return nil, false
				}
				if key == "id" {
					c.ID = s
				} else {
					c.Name = s
				}
				i = end
			case "arguments":
				end := skipValue(cp, i)
				if end < 0 {
					return nil, false
				}
				c.Arguments = json.RawMessage(cp[i:end:end])
				i = end
			default:
				return nil, false
			}
			if i < len(cp) && cp[i] == ',' {
				i++
				continue
			}
			break
		}
		if i >= len(cp) || cp[i] != '}' {
			return nil, false
		}
		i++
		read = append(read, c)
		switch {
		case i < len(cp) && cp[i] == ',':
			i++
		case i == len(cp)-1 && cp[i] == ']':
			return append(make([]bindings.ToolCall, 0, len(read)), read...), true
		default:
			return nil, false
		}
	}
}

// plainString reads the JSON string at doc[i] when it holds no escape and
// is valid UTF-8: its text and the index after its closing quote.
func plainString(doc []byte, i int) (s string, end int, ok bool) {
	if i >= len(doc) || doc[i] != '"' {
		return "", 0, false
	}
	j := bytes.IndexByte(doc[i+1:], '"')
	if j < 0 {
		return "", 0, false
	}
	v := doc[i+1 : i+1+j]
	for _, c := range v {
		if c == '\\' {
			return "", 0, false
		}
		if c >= utf8.RuneSelf {
			if bytes.IndexByte(v, '\\') >= 0 || !utf8.Valid(v) {
				return "", 0, false
			}
			break
		}
	}
	return string(v), i + j + 2, true
}

// skipValue returns the index after the JSON value that starts at doc[i]
// in the compact, valid document doc, or -1 when there is none there.
func skipValue(doc []byte, i int) int {
	start, depth := i, 0
	for ; i < len(doc); i++ {
		switch doc[i] {
		case '"':
			for i++; i < len(doc) && doc[i] != '"'; i++ {
				if doc[i] == '\\' {
					i++
				}
			}
			if i >= len(doc) {
				return -1
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 { // the end of a number or a literal
				if i == start {
					return -1
				}
				return i
			}
			if depth--; depth == 0 {
				return i + 1
			}
		case ',':
			if depth == 0 {
				if i == start {
					return -1
				}
				return i
			}
		}
	}
	if depth == 0 && i > start {
		return i
	}
	return -1
}
