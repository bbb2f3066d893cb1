// Package agenttool says what the model is told about a sub-agent's or a
// handoff's tool: its input schema (a sub-agent's built from the agent's
// prompt parameters) and its description. turn's setup journals both with
// the resolved agent, so a later drive never builds them again.
package agenttool

import (
	"encoding/json"
	"fmt"

	"github.com/kindgi/agents/agent"
)

// MessageArg is the argument of a sub-agent or handoff call that carries
// the message the called agent is given as its user message.
const MessageArg = "message"

// SubAgentSchema is the input schema of a sub-agent's tool: an object with
// the required string "message" (the child's user message) and one
// property per prompt parameter of the child (required when the child
// requires it; typed as the parameter declares). A parameter named
// "message" is not offered: that name is the message.
func SubAgentSchema(a agent.Agent) json.RawMessage {
	type prop struct {
		Type        string `json:"type,omitempty"`
		Description string `json:"description,omitempty"`
	}
	props := map[string]prop{MessageArg: {Type: "string", Description: "The message for the agent: what to do, with the context it needs."}}
	required := []string{MessageArg}
	for _, p := range a.Parameters {
		if p.Name == MessageArg {
			continue
		}
		props[p.Name] = prop{Type: p.Type, Description: p.Description}
		if p.Required() {
			required = append(required, p.Name)
		}
	}
	return mustSchema(map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false})
}

// HandoffSchema is the input schema of a handoff's tool: an object with an
// optional string "message", a note for the agent taking the turn over
// (the turn's own user message stays the one it answers).
func HandoffSchema(agent.Agent) json.RawMessage {
	return mustSchema(map[string]any{
		"type": "object",
		"properties": map[string]any{
			MessageArg: map[string]any{"type": "string", "description": "Optional: a note for the agent taking over the conversation."},
		},
		"additionalProperties": false,
	})
}

// mustSchema encodes a schema built of maps, strings and lists, which
// cannot fail.
func mustSchema(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("turn: encode a tool schema: %v", err))
	}
	return b
}

// SubAgentDescription is what the model is told a sub-agent does: the
// ref's description, else the agent's, else its name.
func SubAgentDescription(ref agent.AgentRef, a agent.Agent) string {
	if ref.Description != "" {
		return ref.Description
	}
	if a.Description != "" {
		return a.Description
	}
	return "Ask the agent " + a.Name + " (" + a.ID + "); its final answer is the result."
}

// HandoffDescription is what the model is told a handoff does.
func HandoffDescription(ref agent.AgentRef, a agent.Agent) string {
	d := ref.Description
	if d == "" {
		d = a.Description
	}
	s := "Hand the conversation over to the agent " + a.Name + " (" + a.ID + "), which answers the rest of this turn."
	if d != "" {
		s += " " + d
	}
	return s
}
