package pack

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// printer renders the library's messages for keywords Ajv has no message
// for.
var printer = message.NewPrinter(language.English)

// schemaURL is the URL a tool schema is compiled under; a schema's own $id
// takes precedence for its references.
const schemaURL = "urn:kindgi:pack:schema"

// Schema is a compiled JSON Schema whose failures are reported as Ajv-shaped
// issues. It is safe for concurrent use.
type Schema struct {
	sch  *jsonschema.Schema
	doc  any         // the decoded schema document, to read keyword values back
	fast *fastSchema // the validity-only check of a simple schema; nil when not simple
}

// CompileSchema compiles a JSON Schema (draft 2020-12 unless its $schema
// says otherwise) with format assertion on. A schema that references
// another document fails to compile: tool schemas must be self-contained.
func CompileSchema(raw json.RawMessage) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("pack: schema is not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("pack: schema: %w", err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("pack: schema does not compile: %w", err)
	}
	fast, simple := compileFast(doc)
	if !simple {
		fast = nil
	}
	return &Schema{sch: sch, doc: doc, fast: fast}, nil
}

// noLoader refuses to load any external document.
type noLoader struct{}

// Load fails: tool schemas must be self-contained.
func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema %q is not loaded", url)
}

// Validate validates v and returns one issue per failure, in Ajv's
// allErrors style; nil when v is valid. v is a decoded JSON value (what
// json.Unmarshal into an any gives, with or without UseNumber), or a
// json.RawMessage or []byte holding JSON; JSON that does not parse gives
// one issue without a keyword.
//
// A value (decoded or raw) that a simple schema certainly accepts is
// answered without the full validator (see fastSchema).
func (s *Schema) Validate(v any) []Issue {
	if s.fast != nil {
		switch x := v.(type) {
		case json.RawMessage:
			if s.fast.validJSON(x) {
				return nil
			}
		case []byte:
			if s.fast.validJSON(x) {
				return nil
			}
		default:
			if s.fast.valid(v) {
				return nil
			}
		}
	}
	inst, issue := instance(v)
	if issue != nil {
		return []Issue{*issue}
	}
	return validate(s.sch, s.doc, schemaURL, inst)
}

// instance decodes v when it is raw JSON.
func instance(v any) (any, *Issue) {
	var raw []byte
	switch x := v.(type) {
	case json.RawMessage:
		raw = x
	case []byte:
		raw = x
	default:
		return v, nil
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, &Issue{InstancePath: "", Message: "must be valid JSON: " + err.Error()}
	}
	return inst, nil
}

// validate runs sch on a decoded instance and maps the error tree.
// doc is the decoded schema document compiled under url.
func validate(sch *jsonschema.Schema, doc any, url string, inst any) []Issue {
	err := sch.Validate(inst)
	if err == nil {
		return nil
	}
	verr, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return []Issue{{Message: err.Error()}}
	}
	m := mapper{inst: inst, doc: doc, url: url}
	m.walk(verr, "")
	return m.out
}

// mapper turns a ValidationError tree into Ajv-shaped issues.
type mapper struct {
	inst any    // the instance
	doc  any    // the schema document
	url  string // the URL doc was compiled under
	out  []Issue
	seen map[string]bool // items issues already reported, by path
}

// walk emits the leaves of e in a stable order; a failed anyOf or oneOf is
// reported after the failures of its branches, and a failed then or else
// after the failures inside it, as Ajv does. parent is the schema URL of
// the error e is a cause of.
func (m *mapper) walk(e *jsonschema.ValidationError, parent string) {
	defer m.ifFailed(e, parent)
	switch e.ErrorKind.(type) {
	case *kind.PropertyNames, *kind.Contains, *kind.MinContains:
		m.leaf(e)
		return
	}
	if len(e.Causes) == 0 {
		m.leaf(e)
		return
	}
	causes := slices.Clone(e.Causes)
	slices.SortStableFunc(causes, func(a, b *jsonschema.ValidationError) int {
		return cmp.Or(
			compareLoc(a.InstanceLocation, b.InstanceLocation),
			cmp.Compare(schemaPath(a), schemaPath(b)),
		)
	})
	for _, c := range causes {
		m.walk(c, e.SchemaURL)
	}
	switch e.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
		m.leaf(e)
	}
}

// ifFailed emits Ajv's if issue when e is the failure of a then or else
// subschema (the topmost error located at it).
func (m *mapper) ifFailed(e *jsonschema.ValidationError, parent string) {
	if e.SchemaURL == parent {
		return
	}
	holder, branch, ok := strings.Cut(e.SchemaURL, "#")
	if !ok {
		return
	}
	i := strings.LastIndexByte(branch, '/')
	if i < 0 || (branch[i+1:] != "then" && branch[i+1:] != "else") {
		return
	}
	holder += "#" + branch[:i]
	if _, isIf := m.schemaAt(holder)["if"]; !isIf {
		return
	}
	kw := branch[i+1:]
	m.out = append(m.out, Issue{
		InstancePath: pointer(e.InstanceLocation),
		SchemaPath:   "#" + branch[:i] + "/if",
		Keyword:      "if",
		Params:       map[string]any{"failingKeyword": kw},
		Message:      `must match "` + kw + `" schema`,
	})
}

// leaf emits the issues of one failed keyword.
func (m *mapper) leaf(e *jsonschema.ValidationError) {
	base := Issue{InstancePath: pointer(e.InstanceLocation), SchemaPath: schemaPath(e), Params: map[string]any{}}
	add := func(keyword, msg string, params map[string]any) {
		is := base
		is.Keyword = keyword
		is.Message = msg
		if params != nil {
			is.Params = params
		}
		m.out = append(m.out, is)
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Type:
		want := k.Want
		var t any = strings.Join(want, ",")
		switch v := m.keywordValue(e, "type").(type) {
		case string:
			t, want = v, []string{v}
		case []any:
			want = want[:0:0]
			for _, x := range v {
				if s, ok := x.(string); ok {
					want = append(want, s)
				}
			}
			t = toAny(want)
		default:
			if len(want) > 1 {
				t = toAny(want)
			}
		}
		add("type", "must be "+strings.Join(want, ","), map[string]any{"type": t})
	case *kind.Enum:
		add("enum", "must be equal to one of the allowed values", map[string]any{"allowedValues": normalize(k.Want)})
	case *kind.Const:
		add("const", "must be equal to constant", map[string]any{"allowedValue": normalize(k.Want)})
	case *kind.Format:
		add("format", fmt.Sprintf("must match format %q", k.Want), map[string]any{"format": k.Want})
	case *kind.Required:
		for _, p := range k.Missing {
			add("required", "must have required property '"+p+"'", map[string]any{"missingProperty": p})
		}
	case *kind.AdditionalProperties:
		props := slices.Sorted(slices.Values(k.Properties))
		for _, p := range props {
			add("additionalProperties", "must NOT have additional properties", map[string]any{"additionalProperty": p})
		}
	case *kind.Dependency:
		m.dependent("dependencies", base, k.Prop, k.Missing)
	case *kind.DependentRequired:
		m.dependent("dependentRequired", base, k.Prop, k.Missing)
	case *kind.PropertyNames:
		// The library locates this error at the propertyNames schema itself.
		base.SchemaPath = strings.TrimSuffix(base.SchemaPath, "/propertyNames")
		add("propertyNames", "property name must be valid", map[string]any{"propertyName": k.Property})
	case *kind.UniqueItems:
		i, j := k.Duplicates[0], k.Duplicates[1]
		add("uniqueItems", fmt.Sprintf("must NOT have duplicate items (items ## %d and %d are identical)", j, i),
			map[string]any{"i": float64(i), "j": float64(j)})
	case *kind.MinProperties:
		add("minProperties", fmt.Sprintf("must NOT have fewer than %d properties", k.Want), limit(k.Want))
	case *kind.MaxProperties:
		add("maxProperties", fmt.Sprintf("must NOT have more than %d properties", k.Want), limit(k.Want))
	case *kind.MinItems:
		add("minItems", fmt.Sprintf("must NOT have fewer than %d items", k.Want), limit(k.Want))
	case *kind.MaxItems:
		add("maxItems", fmt.Sprintf("must NOT have more than %d items", k.Want), limit(k.Want))
	case *kind.AdditionalItems:
		n := 0
		if arr, ok := lookup(m.inst, e.InstanceLocation).([]any); ok {
			n = len(arr) - k.Count
		}
		add("additionalItems", fmt.Sprintf("must NOT have more than %d items", n), limit(n))
	case *kind.MinLength:
		add("minLength", fmt.Sprintf("must NOT have fewer than %d characters", k.Want), limit(k.Want))
	case *kind.MaxLength:
		add("maxLength", fmt.Sprintf("must NOT have more than %d characters", k.Want), limit(k.Want))
	case *kind.Pattern:
		add("pattern", fmt.Sprintf("must match pattern %q", k.Want), map[string]any{"pattern": k.Want})
	case *kind.Minimum:
		add("minimum", "must be >= "+ratString(k.Want), map[string]any{"limit": ratFloat(k.Want)})
	case *kind.Maximum:
		add("maximum", "must be <= "+ratString(k.Want), map[string]any{"limit": ratFloat(k.Want)})
	case *kind.ExclusiveMinimum:
		add("exclusiveMinimum", "must be > "+ratString(k.Want), map[string]any{"limit": ratFloat(k.Want)})
	case *kind.ExclusiveMaximum:
		add("exclusiveMaximum", "must be < "+ratString(k.Want), map[string]any{"limit": ratFloat(k.Want)})
	case *kind.MultipleOf:
		add("multipleOf", "must be multiple of "+ratString(k.Want), map[string]any{"multipleOf": ratFloat(k.Want)})
	case *kind.Contains:
		add("contains", "must contain at least 1 valid item(s)", map[string]any{"minContains": float64(1)})
	case *kind.MinContains:
		add("contains", fmt.Sprintf("must contain at least %d valid item(s)", k.Want), map[string]any{"minContains": float64(k.Want)})
	case *kind.MaxContains:
		add("contains", fmt.Sprintf("must contain at most %d valid item(s)", k.Want), map[string]any{"maxContains": float64(k.Want)})
	case *kind.Not:
		// The library locates this error at the schema holding not.
		base.SchemaPath += "/not"
		add("not", "must NOT be valid", nil)
	case *kind.AnyOf:
		add("anyOf", "must match a schema in anyOf", nil)
	case *kind.OneOf:
		var passing any
		if len(k.Subschemas) > 0 {
			passing = toAny(k.Subschemas)
		}
		add("oneOf", "must match exactly one schema in oneOf", map[string]any{"passingSchemas": passing})
	case *kind.FalseSchema:
		m.falseSchema(base)
	default:
		kw := ""
		if p := e.ErrorKind.KeywordPath(); len(p) > 0 {
			kw = p[0]
		}
		add(kw, e.ErrorKind.LocalizedString(printer), nil)
	}
}

// dependent emits one issue per property missing for a present property.
func (m *mapper) dependent(keyword string, base Issue, prop string, missing []string) {
	base.SchemaPath = strings.TrimSuffix(base.SchemaPath, "/"+escape(prop))
	for _, p := range missing {
		is := base
		is.Keyword = keyword
		is.Message = fmt.Sprintf("must have property %s when property %s is present", p, prop)
		is.Params = map[string]any{"property": prop, "missingProperty": p, "depsCount": float64(len(missing)), "deps": strings.Join(missing, ", ")}
		m.out = append(m.out, is)
	}
}

// falseSchema reports a value a false schema rejected under the keyword
// that holds the false schema, as Ajv does for additionalProperties: false
// and its kin.
func (m *mapper) falseSchema(base Issue) {
	last := lastToken(base.SchemaPath)
	prop := ""
	if i := strings.LastIndexByte(base.InstancePath, '/'); i >= 0 {
		prop = unescape(base.InstancePath[i+1:])
	}
	objPath := base.InstancePath[:max(strings.LastIndexByte(base.InstancePath, '/'), 0)]
	is := base
	switch last {
	case "additionalProperties":
		is.InstancePath, is.Keyword = objPath, last
		is.Message, is.Params = "must NOT have additional properties", map[string]any{"additionalProperty": prop}
	case "unevaluatedProperties":
		is.InstancePath, is.Keyword = objPath, last
		is.Message, is.Params = "must NOT have unevaluated properties", map[string]any{"unevaluatedProperty": prop}
	case "items", "additionalItems", "unevaluatedItems":
		// One issue per array, at its first extra item (causes arrive in
		// index order).
		key := objPath + " " + base.SchemaPath
		if m.seen[key] {
			return
		}
		if m.seen == nil {
			m.seen = make(map[string]bool)
		}
		m.seen[key] = true
		n := 0
		if i, err := strconv.Atoi(prop); err == nil {
			n = i
		}
		is.InstancePath, is.Keyword = objPath, last
		is.Message, is.Params = fmt.Sprintf("must NOT have more than %d items", n), limit(n)
	default:
		is.Keyword = "false schema"
		is.Message = "boolean schema is false"
	}
	m.out = append(m.out, is)
}

// keywordValue returns the value of keyword in the schema object that failed
// in e, read back from the schema document; nil when it cannot be found
// (e.g. the schema lives in another resource).
func (m *mapper) keywordValue(e *jsonschema.ValidationError, keyword string) any {
	return m.schemaAt(e.SchemaURL)[keyword]
}

// schemaAt returns the schema object at url in the schema document; nil
// when url is not in it or is not an object.
func (m *mapper) schemaAt(url string) map[string]any {
	base, frag, _ := strings.Cut(url, "#")
	if base != m.url || m.doc == nil {
		return nil
	}
	v := m.doc
	if frag != "" {
		for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
			v = lookup(v, []string{unescape(tok)})
		}
	}
	obj, _ := v.(map[string]any)
	return obj
}

// compareLoc orders instance locations token by token, array indexes
// numerically.
func compareLoc(a, b []string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		x, errX := strconv.Atoi(a[i])
		y, errY := strconv.Atoi(b[i])
		if errX == nil && errY == nil {
			return cmp.Compare(x, y)
		}
		return cmp.Compare(a[i], b[i])
	}
	return cmp.Compare(len(a), len(b))
}

// lastToken returns the last token of a pointer-like path ("b" of "#/a/b").
func lastToken(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return ""
	}
	return unescape(p[i+1:])
}
