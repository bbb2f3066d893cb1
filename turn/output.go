package turn

import (
	"context"
	"encoding/json"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/turn/internal/drive"
	"github.com/kindgi/agents/turn/internal/schemacheck"
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
		sch, err := schemacheck.OutputSchema(r.in.Agent.Output)
		if err != nil {
			return outputCheck{}, &agents.InvalidAgentError{Issues: []agents.Issue{{Path: "output", Message: err.Error()}}}
		}
		raw := json.RawMessage(schemacheck.AnswerJSON(text))
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
		r.messages = append(r.messages, schemacheck.OutputCorrection(chk.Issues))
		return true, nil
	}
	r.output = chk.Output
	return false, nil
}
