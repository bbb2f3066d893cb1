package toolcall

import (
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/alias"
)

// Defs returns the definitions of tools followed by extra slots the caller
// fills (sub-agents' and handoffs' tools). With pool set they are
// (*pool)[:n], grown when short, written field by field and only what
// changed: the pooled slot usually holds the drive before's same strings
// (the same bytes at the same address: alias.SameString, since a string
// may alias bytes a later drive writes over, such as a derived id's).
// A provider reads them only until Generate returns (bindings.Provider).
func Defs(pool *[]bindings.ToolDefinition, tools []bindings.ToolDescriptor, extra int) []bindings.ToolDefinition {
	n := len(tools) + extra
	var defs []bindings.ToolDefinition
	if pool != nil {
		if cap(*pool) < n {
			*pool = make([]bindings.ToolDefinition, n)
		}
		defs = (*pool)[:n]
	} else {
		defs = make([]bindings.ToolDefinition, n)
	}
	for i := range tools {
		d, t := &tools[i], &defs[i]
		if !alias.SameString(t.Name, d.ID) {
			t.Name = d.ID
		}
		if !alias.SameString(t.Description, d.Description) {
			t.Description = d.Description
		}
		t.InputSchema = d.InputSchema
	}
	return defs
}
