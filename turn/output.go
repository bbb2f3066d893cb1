package turn

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/pack"
	"github.com/kindgi/agents/turn/internal/drive"
)

// NodeValidateOutput is the node of the step that checks a final answer
// against the agent's output schema (key agent-loop/<i>/validate-output).
// Only an agent with an output schema has it.
const NodeValidateOutput = "validate-output"

// outputCheck is what a validate-output step journals: the validated JSON,
// or the issues of an invalid answer that goes back to the model.
type outputCheck struct {
	Output json.RawMessage `json:"output,omitempty"`
	Issues []agents.Issue  `json:"issues,omitempty"`
}

// validateOutput is the validate-output step of iteration i: the answer
// text must be JSON valid against the agent's output schema. A valid
// answer's JSON becomes Response.Output. The first invalid answer of the
// turn is given back to the model with its issues (retry is true: the loop
// makes another model call, which counts towards maxSteps); a second one
// fails the turn with *agents.InvalidOutputError. The step only decides,
// from the journaled answer, so a replay decides the same.
func (r *run) validateOutput(ctx context.Context, i int, text string) (retry bool, err error) {
	key := loopKey(i) + "/" + NodeValidateOutput
	chk, err := decide(ctx, r, key, NodeValidateOutput, func(context.Context, string) (outputCheck, error) {
		sch, err := outputSchema(r.in.Agent.Output)
		if err != nil {
			return outputCheck{}, &agents.InvalidAgentError{Issues: []agents.Issue{{Path: "output", Message: err.Error()}}}
		}
		raw := json.RawMessage(answerJSON(text))
		issues := sch.Validate(raw)
		if len(issues) == 0 {
			return outputCheck{Output: drive.Journaled(raw)}, nil
		}
		out := outputCheck{Issues: make([]agents.Issue, len(issues))}
		for j, is := range issues {
			out.Issues[j] = agents.Issue{Path: is.InstancePath, Message: is.Message}
		}
		if r.outputRetried {
			return outputCheck{}, &agents.InvalidOutputError{Issues: out.Issues}
		}
		return out, nil
	})
	if err != nil {
		return false, err
	}
	if len(chk.Issues) > 0 {
		r.outputRetried = true
		r.messages = append(r.messages, outputCorrection(chk.Issues))
		return true, nil
	}
	r.output = chk.Output
	return false, nil
}

// answerJSON is the JSON of an answer: the text without surrounding white
// space or a Markdown code fence (which a server without native structured
// output may add).
func answerJSON(text string) string {
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

// outputCorrection is the message that gives an invalid answer's issues
// back to the model.
func outputCorrection(issues []agents.Issue) bindings.ChatMessage {
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

// outputSchemas caches compiled output schemas by their text (an agent's
// schema is immutable); bounded like the tool schema cache.
var (
	outputSchemas   sync.Map
	outputSchemaMax = 1024
	outputSchemaN   int
	outputSchemaMu  sync.Mutex
)

func outputSchema(raw json.RawMessage) (*pack.Schema, error) {
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
