package schemacheck

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
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

// AnswerJSON is the JSON of an answer: the text without surrounding white
// space or a Markdown code fence (which a server without native structured
// output may add).
func AnswerJSON(text string) string {
	s := strings.TrimSpace(text)
	if rest, ok := strings.CutPrefix(s, "```"); ok && strings.HasSuffix(rest, "```") {
		rest = strings.TrimSuffix(rest, "```")
		if nl := strings.IndexByte(rest, '\n'); nl >= 0 && !strings.ContainsAny(rest[:nl], "{[\"") {
			rest = rest[nl+1:] // the fence's language tag
		}
		s = strings.TrimSpace(rest)
	}
	return s
}

// OutputCorrection is the message that gives an invalid answer's issues
// back to the model.
func OutputCorrection(issues []agents.Issue) bindings.ChatMessage {
	var b strings.Builder
	b.WriteString("Your answer is not valid against the required JSON Schema:\n")
	for _, is := range issues {
		b.WriteString("- ")
		if is.Path == "" {
			b.WriteString("(root)")
		} else {
			b.WriteString(is.Path)
		}
		b.WriteString(": ")
		b.WriteString(is.Message)
		b.WriteByte('\n')
	}
	b.WriteString("Answer again with only the corrected JSON.")
	return bindings.ChatMessage{Role: bindings.ChatUser, Content: b.String()}
}
