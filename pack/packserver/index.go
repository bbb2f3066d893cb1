package packserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/Masterminds/semver/v3"
)

// Index describes what a pack service serves: the pack, its artifact, the
// modules whose code it runs, the tools with their schemas, the guardrail
// checks, and the environment the pack code needs. It is read from a JSON
// file (see the package documentation for the format) with LoadIndex or
// ParseIndex.
type Index struct {
	// PackID names the pack (info.packId).
	PackID string `json:"packId"`
	// PackVersion is the pack's semantic version (info.packVersion).
	PackVersion string `json:"packVersion"`
	// ArtifactVersion identifies the built artifact; it is sent back on
	// every invoke answer as kindgi-artifact-version.
	ArtifactVersion string `json:"artifactVersion"`
	// Modules names every module the service must initialise before it
	// listens. Each must be registered with a Module of that Name.
	Modules []string `json:"modules"`
	// Tools lists the tools the service runs.
	Tools []IndexTool `json:"tools"`
	// Guardrails lists the guardrail checks the service runs.
	Guardrails []IndexGuardrail `json:"guardrails,omitempty"`
	// RequiredEnv names the environment variables the pack code needs.
	// Unset or empty ones are reported in info.missingEnv.
	RequiredEnv []string `json:"requiredEnv,omitempty"`
	// StrictEnv makes the service not ready while a required env variable
	// is missing.
	StrictEnv bool `json:"strictEnv,omitempty"`
}

// IndexTool is one tool of the index. Its handler is Tools[ID] of the
// module named Module.
type IndexTool struct {
	// ID is the tool id the runtime invokes (tool.id).
	ID string `json:"id"`
	// Version is the tool's exact semantic version; an invoke naming
	// another version is refused with tool-version-mismatch.
	Version string `json:"version"`
	// Module names the module whose Tools map holds the handler.
	Module string `json:"module"`
	// Description is free text for people and models.
	Description string `json:"description,omitempty"`
	// InputSchema is the JSON Schema (draft 2020-12 unless it says
	// otherwise with $schema) the input must satisfy.
	InputSchema json.RawMessage `json:"inputSchema"`
	// OutputSchema is the JSON Schema the handler's return value must
	// satisfy.
	OutputSchema json.RawMessage `json:"outputSchema"`
}

// IndexGuardrail is one guardrail check of the index. The check is invoked
// by CheckID when set, else by ID, and its handler is the module's
// Checks entry under that same name.
type IndexGuardrail struct {
	// ID is the guardrail id.
	ID string `json:"id"`
	// CheckID is the id the check is invoked by, when it differs from ID.
	CheckID string `json:"checkId,omitempty"`
	// Module names the module whose Checks map holds the handler.
	Module string `json:"module"`
}

// Key returns the id the check is invoked by: CheckID, else ID.
func (g IndexGuardrail) Key() string {
	if g.CheckID != "" {
		return g.CheckID
	}
	return g.ID
}

// LoadIndex reads and checks the index file at path.
func LoadIndex(path string) (*Index, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, &BootError{Problems: []string{fmt.Sprintf("index: %v", err)}}
	}
	return ParseIndex(raw)
}

// ParseIndex decodes and checks an index document. Unknown fields are
// refused so that a misspelt key fails at boot instead of being ignored.
// Every problem found is listed in the returned *BootError.
func ParseIndex(raw []byte) (*Index, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var idx Index
	if err := dec.Decode(&idx); err != nil {
		return nil, &BootError{Problems: []string{fmt.Sprintf("index: %v", err)}}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &BootError{Problems: []string{"index: trailing data after the JSON document"}}
	}
	if problems := idx.check(); len(problems) > 0 {
		return nil, &BootError{Problems: problems}
	}
	return &idx, nil
}

// check returns every structural problem of the index, in document order.
func (idx *Index) check() []string {
	var p []string
	add := func(format string, args ...any) { p = append(p, "index: "+fmt.Sprintf(format, args...)) }
	if idx.PackID == "" {
		add("packId is required")
	}
	if idx.PackVersion == "" {
		add("packVersion is required")
	} else if _, err := semver.StrictNewVersion(idx.PackVersion); err != nil {
		add("packVersion %q is not a semantic version", idx.PackVersion)
	}
	if idx.ArtifactVersion == "" {
		add("artifactVersion is required")
	}
	modules := make(map[string]bool, len(idx.Modules))
	for i, m := range idx.Modules {
		switch {
		case m == "":
			add("modules[%d] is empty", i)
		case modules[m]:
			add("modules[%d] %q is listed twice", i, m)
		}
		modules[m] = true
	}
	tools := make(map[string]bool, len(idx.Tools))
	for i, t := range idx.Tools {
		if t.ID == "" {
			add("tools[%d].id is required", i)
		} else if tools[t.ID] {
			add("tools[%d].id %q is listed twice", i, t.ID)
		}
		tools[t.ID] = true
		if t.Version == "" {
			add("tools[%d].version is required", i)
		} else if _, err := semver.StrictNewVersion(t.Version); err != nil {
			add("tools[%d].version %q is not a semantic version", i, t.Version)
		}
		if !modules[t.Module] {
			add("tools[%d].module %q is not one of modules", i, t.Module)
		}
		if len(t.InputSchema) == 0 {
			add("tools[%d].inputSchema is required", i)
		}
		if len(t.OutputSchema) == 0 {
			add("tools[%d].outputSchema is required", i)
		}
	}
	checks := make(map[string]bool, len(idx.Guardrails))
	for i, g := range idx.Guardrails {
		if g.ID == "" {
			add("guardrails[%d].id is required", i)
			continue
		}
		if checks[g.Key()] {
			add("guardrails[%d] check id %q is listed twice", i, g.Key())
		}
		checks[g.Key()] = true
		if !modules[g.Module] {
			add("guardrails[%d].module %q is not one of modules", i, g.Module)
		}
	}
	for i, e := range idx.RequiredEnv {
		if e == "" {
			add("requiredEnv[%d] is empty", i)
		}
	}
	return p
}

// MissingEnv returns the index's required env names that lookup reports
// unset or empty, sorted and without duplicates. It never returns nil.
func (idx *Index) MissingEnv(lookup func(string) (string, bool)) []string {
	missing := []string{}
	for _, name := range idx.RequiredEnv {
		if v, ok := lookup(name); !ok || v == "" {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	return slices.Compact(missing)
}
