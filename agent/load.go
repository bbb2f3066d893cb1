package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	agents "github.com/kindgi/agents"
	"sigs.k8s.io/yaml"
)

// Load reads an agent file (JSON or YAML, with the same field names) and
// defines it. See Parse. A file that cannot be read is an
// *agents.PersistenceError wrapping the fs error (errors.Is(err,
// fs.ErrNotExist) works).
func Load(path string) (Agent, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Agent{}, &agents.PersistenceError{Op: "read agent file " + path, Err: err}
	}
	return Parse(data)
}

// Parse decodes an agent definition from JSON or YAML (YAML is read through
// its JSON form, so the field names are the JSON names) and defines it.
//
// Parse is strict: a field the Spec does not have (a typo such as
// "instrutions") and a value of the wrong JSON type are issues, reported
// with their paths, together with every issue Define finds. The error is
// an *agents.InvalidAgentError.
func Parse(data []byte) (Agent, error) {
	spec, err := ParseSpec(data)
	if err != nil {
		return Agent{}, err
	}
	return Define(spec)
}

// ParseSpec decodes a Spec from JSON or YAML without defining it. Unknown
// fields and type errors are an *agents.InvalidAgentError.
func ParseSpec(data []byte) (Spec, error) {
	js := bytes.TrimSpace(data)
	format := "JSON"
	if len(js) == 0 || js[0] != '{' {
		// YAML (JSON is YAML too, but a file not starting with '{' is
		// reported as YAML): its messages speak of YAML, not of the JSON it
		// is converted to.
		format = "YAML"
		var err error
		js, err = yaml.YAMLToJSON(data)
		if err != nil {
			msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
			return Spec{}, &agents.InvalidAgentError{Issues: []agents.Issue{{Message: "not valid YAML: " + msg}}}
		}
	}
	var raw any
	if err := json.Unmarshal(js, &raw); err != nil {
		return Spec{}, &agents.InvalidAgentError{Issues: []agents.Issue{{Message: "not valid " + format + ": " + err.Error()}}}
	}
	if _, ok := raw.(map[string]any); !ok {
		return Spec{}, &agents.InvalidAgentError{Issues: []agents.Issue{{Message: "an agent definition must be an object"}}}
	}
	var issues []agents.Issue
	unknownFields(reflect.TypeOf(Spec{}), raw, "", &issues)
	var spec Spec
	if err := json.Unmarshal(js, &spec); err != nil {
		issues = append(issues, decodeIssue(err, format))
	}
	if len(issues) > 0 {
		// Report what Define finds in the parts that did decode too, so one
		// run shows every problem of the file.
		var inv *agents.InvalidAgentError
		if _, derr := Define(spec); errors.As(derr, &inv) {
			issues = append(issues, filterDuplicatePaths(inv.Issues, issues)...)
		}
		return Spec{}, &agents.InvalidAgentError{Issues: issues}
	}
	return spec, nil
}

// filterDuplicatePaths drops issues of Define at a path a decode issue
// already reports (a field that failed to decode also reads as empty).
func filterDuplicatePaths(defined, decoded []agents.Issue) []agents.Issue {
	seen := make(map[string]bool, len(decoded))
	for _, is := range decoded {
		seen[is.Path] = true
	}
	var out []agents.Issue
	for _, is := range defined {
		if !seen[is.Path] {
			out = append(out, is)
		}
	}
	return out
}

// decodeIssue turns a decode error of a file in format (JSON or YAML)
// into an issue. A YAML value is named by its kind alone ("not a
// number"): the file never was JSON.
func decodeIssue(err error, format string) agents.Issue {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		path := te.Field
		kind := "a JSON " + te.Value
		if format != "JSON" {
			kind = "a " + te.Value
			if strings.ContainsRune("aeiou", rune(te.Value[0])) {
				kind = "an " + te.Value
			}
		}
		return agents.Issue{Path: path, Message: fmt.Sprintf("must be %s, not %s", jsonKind(te.Type), kind)}
	}
	return agents.Issue{Message: err.Error()}
}

func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Slice:
		return "an array"
	case reflect.Map, reflect.Struct:
		if t == reflect.TypeOf(ToolGate{}) {
			return "a gate mode string or {mode, requiredRole}"
		}
		return "an object"
	}
	return t.String()
}

// unknownFields reports the keys of raw that the JSON form of t does not
// have, with their paths.
func unknownFields(t reflect.Type, raw any, path string, issues *[]agents.Issue) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := raw.(map[string]any)
		if !ok {
			return
		}
		fields := jsonFields(t)
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ft, ok := fields[k]
			p := joinPath(path, k)
			if !ok {
				*issues = append(*issues, agents.Issue{Path: p, Message: fmt.Sprintf("unknown field %q (known: %s)", k, knownList(fields))})
				continue
			}
			unknownFields(ft, obj[k], p, issues)
		}
	case reflect.Slice:
		arr, ok := raw.([]any)
		if !ok {
			return
		}
		for i, v := range arr {
			unknownFields(t.Elem(), v, fmt.Sprintf("%s[%d]", path, i), issues)
		}
	case reflect.Map:
		obj, ok := raw.(map[string]any)
		if !ok {
			return
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			unknownFields(t.Elem(), obj[k], joinPath(path, k), issues)
		}
	}
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := make(map[string]reflect.Type, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func knownList(fields map[string]reflect.Type) string {
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
