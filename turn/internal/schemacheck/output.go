package schemacheck

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/kindgi/agents/pack"
)

// outputSchemas caches compiled output schemas by their text (an agent's
// schema is immutable); bounded like the tool schema cache.
var (
	outputSchemas   sync.Map
	outputSchemaMax = 1024
	outputSchemaN   int
	outputSchemaMu  sync.Mutex
)

// OutputSchema is the compiled agent output schema raw (pack's
// compilation, whose Validate lists the issues of an answer).
func OutputSchema(raw json.RawMessage) (*pack.Schema, error) {
	key := string(bytes.TrimSpace(raw))
	if v, ok := outputSchemas.Load(key); ok {
		return v.(*pack.Schema), nil
	}
	sch, err := pack.CompileSchema(raw)
	if err != nil {
		return nil, err
	}
	outputSchemaMu.Lock()
	if outputSchemaN < outputSchemaMax {
		if _, loaded := outputSchemas.LoadOrStore(key, sch); !loaded {
			outputSchemaN++
		}
	}
	outputSchemaMu.Unlock()
	return sch, nil
}
