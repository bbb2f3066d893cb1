package events

import "encoding/json"

// WithKind is json.Marshal of v (a struct whose JSON has at least one
// field, and no MarshalJSON of its own) with "kind" first:
// {"kind":KIND,…v's fields}, byte for byte what encoding/json writes of
// a struct embedding v after a Kind field.
func WithKind(kind string, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	k, err := json.Marshal(kind)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(`{"kind":,`)+len(k)+len(b))
	out = append(out, `{"kind":`...)
	out = append(out, k...)
	if len(b) > 2 {
		out = append(out, ',')
	}
	return append(out, b[1:]...), nil
}

// Node is the text of a node event: "KIND NODE (step KEY) run RUNID",
// with " failed: CODE" when code is set.
func Node(kind, node, key, runID, code string) string {
	s := kind + " " + node + " (step " + key + ") run " + runID
	if code != "" {
		s += " failed: " + code
	}
	return s
}
