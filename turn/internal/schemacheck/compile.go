// Package schemacheck checks JSON values against the JSON Schemas a turn
// meets: a tool call's arguments against the tool's input schema
// (ValidateArguments), a tool's output against its output schema
// (CheckOutput), and an answer against the agent's output schema
// (OutputSchema of AnswerJSON, its issues given back to the model with
// OutputCorrection). Each schema is compiled once per distinct text, in
// caches of bounded size.
package schemacheck

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/kindgi/agents/pack"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// compiled is a cached schema compilation. fast, when set, is the same
// schema compiled by pack, whose FastAccepts vouches for values straight
// from their bytes (nil when pack refuses the schema).
type compiled struct {
	sch  *jsonschema.Schema
	fast *pack.Schema
	err  error
}

// schemaCache memoizes schema compilation by schema text: a pure function
// of its key, bounded to schemaCacheMax entries (past that, schemas are
// compiled per use). A map under a read lock, not a sync.Map: looking up
// m[string(raw)] copies nothing, where a sync.Map key is an interface the
// text is copied into on every lookup.
var schemaCache = struct {
	sync.RWMutex
	m map[string]*compiled
}{m: map[string]*compiled{}}

const schemaCacheMax = 4096

// compileSchema compiles a JSON Schema (draft 2020-12 unless it says
// otherwise, formats asserted), once per distinct schema text.
func compileSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	c := compileCached(raw)
	return c.sch, c.err
}

// compileCached is compileSchema's cache entry for raw.
func compileCached(raw json.RawMessage) *compiled {
	schemaCache.RLock()
	c, ok := schemaCache.m[string(raw)]
	schemaCache.RUnlock()
	if ok {
		return c
	}
	key := string(raw)
	c = &compiled{}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		c.err = err
	} else {
		comp := jsonschema.NewCompiler()
		comp.DefaultDraft(jsonschema.Draft2020)
		comp.AssertFormat()
		if c.err = comp.AddResource("urn:kindgi:tool-schema", doc); c.err == nil {
			c.sch, c.err = comp.Compile("urn:kindgi:tool-schema")
		}
	}
	if c.err == nil {
		if fast, err := pack.CompileSchema(raw); err == nil {
			c.fast = fast
		}
	}
	schemaCache.Lock()
	if prior, ok := schemaCache.m[key]; ok {
		c = prior // compiled meanwhile by another call: one value per text
	} else if len(schemaCache.m) < schemaCacheMax {
		schemaCache.m[key] = c
	}
	schemaCache.Unlock()
	return c
}
