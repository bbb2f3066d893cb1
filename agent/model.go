package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	agents "github.com/kindgi/agents"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Limits Define applies to ModelSettings.
const (
	MaxTemperature = 2.0
	MaxStopEntries = 4
)

// ModelSettings are generation settings for the model calls of a turn: a
// kindgi extension of the TypeScript Agent (field modelSettings). Every
// field is optional; nil (or an empty Stop) leaves the provider's default.
// bindings.ModelSettings is this type: a GenerateRequest carries it to the
// provider, which maps what its API supports and documents what it
// ignores.
type ModelSettings struct {
	// Temperature is 0..2 (providers whose API accepts less say what they
	// do with more).
	Temperature *float64 `json:"temperature,omitempty"`
	// TopP is nucleus sampling, 0..1.
	TopP *float64 `json:"topP,omitempty"`
	// MaxOutputTokens bounds the tokens of one model answer (at least 1).
	MaxOutputTokens *int `json:"maxOutputTokens,omitempty"`
	// Stop holds up to MaxStopEntries non-empty stop sequences.
	Stop []string `json:"stop,omitempty"`
	// Seed asks for deterministic sampling where the provider supports it.
	Seed *int64 `json:"seed,omitempty"`
}

// IsZero reports whether no setting is set.
func (s ModelSettings) IsZero() bool {
	return s.Temperature == nil && s.TopP == nil && s.MaxOutputTokens == nil && len(s.Stop) == 0 && s.Seed == nil
}

// Merge returns s with every setting that o sets taken from o (o
// overrides s field by field; a non-empty Stop replaces s's).
func (s ModelSettings) Merge(o ModelSettings) ModelSettings {
	out := s.clone()
	if o.Temperature != nil {
		out.Temperature = float64Ptr(o.Temperature)
	}
	if o.TopP != nil {
		out.TopP = float64Ptr(o.TopP)
	}
	if o.MaxOutputTokens != nil {
		out.MaxOutputTokens = intPtr(o.MaxOutputTokens)
	}
	if len(o.Stop) > 0 {
		out.Stop = slices.Clone(o.Stop)
	}
	if o.Seed != nil {
		out.Seed = int64Ptr(o.Seed)
	}
	return out
}

func (s ModelSettings) clone() ModelSettings {
	return ModelSettings{
		Temperature:     float64Ptr(s.Temperature),
		TopP:            float64Ptr(s.TopP),
		MaxOutputTokens: intPtr(s.MaxOutputTokens),
		Stop:            slices.Clone(s.Stop),
		Seed:            int64Ptr(s.Seed),
	}
}

// CheckModelSettings returns the issues of s, with paths under base
// ("modelSettings.temperature"). turn.Input.ModelSettings is checked with
// it too.
func CheckModelSettings(base string, s ModelSettings) []agents.Issue {
	var c checker
	c.modelSettings(base, &s)
	return c.issues
}

// modelSettings checks the ranges of s and returns a copy that shares no
// memory with it (nil for nil or empty settings).
func (c *checker) modelSettings(base string, s *ModelSettings) *ModelSettings {
	if s == nil {
		return nil
	}
	if t := s.Temperature; t != nil && (math.IsNaN(*t) || *t < 0 || *t > MaxTemperature) {
		c.add(base+".temperature", fmt.Sprintf("temperature is %v; use a number from 0 to %v (0 is the most deterministic)", *t, MaxTemperature))
	}
	if p := s.TopP; p != nil && (math.IsNaN(*p) || *p < 0 || *p > 1) {
		c.add(base+".topP", fmt.Sprintf("topP is %v; use a number from 0 to 1", *p))
	}
	if m := s.MaxOutputTokens; m != nil && *m < 1 {
		c.add(base+".maxOutputTokens", fmt.Sprintf("maxOutputTokens is %d; use at least 1, or leave it out for the provider's default", *m))
	}
	if len(s.Stop) > MaxStopEntries {
		c.add(base+".stop", fmt.Sprintf("stop has %d sequences; at most %d are allowed", len(s.Stop), MaxStopEntries))
	}
	for i, seq := range s.Stop {
		if seq == "" {
			c.add(at(base+".stop", i, ""), "a stop sequence must not be empty")
		} else {
			c.utf8(at(base+".stop", i, ""), seq)
		}
	}
	if s.IsZero() {
		return nil
	}
	out := s.clone()
	return &out
}

// output checks that raw, when set, is a JSON Schema for an object that
// compiles (draft 2020-12 unless its $schema says otherwise, no external
// references). It returns the schema compacted, sharing no memory with
// raw.
func (c *checker) output(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		c.add("output", "output is not JSON: give a JSON Schema such as {\"type\": \"object\", \"properties\": {…}, \"required\": […]}")
		return nil
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		c.add("output", "output must be a JSON Schema object such as {\"type\": \"object\", \"properties\": {…}}")
		return nil
	}
	if obj["type"] != "object" {
		c.add("output", "output must describe a JSON object (\"type\": \"object\" at the root): providers' structured output answers with an object")
		return nil
	}
	comp := jsonschema.NewCompiler()
	comp.DefaultDraft(jsonschema.Draft2020)
	comp.UseLoader(noSchemaLoader{})
	const url = "urn:kindgi:agent-output"
	if err := comp.AddResource(url, doc); err != nil {
		c.add("output", "output is not a valid JSON Schema: "+err.Error())
		return nil
	}
	if _, err := comp.Compile(url); err != nil {
		c.add("output", "output does not compile as a JSON Schema: "+err.Error())
		return nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		c.add("output", "output is not JSON: "+err.Error())
		return nil
	}
	return b.Bytes()
}

// noSchemaLoader refuses external references: an output schema must be
// self-contained.
type noSchemaLoader struct{}

// Load fails for every url.
func (noSchemaLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema %q is not loaded: the output schema must be self-contained", url)
}
