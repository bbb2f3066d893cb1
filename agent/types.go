// Package agent defines agents as versioned data: a Spec is what an author
// writes, Define validates it (collecting every issue) into an Agent with
// defaults applied. Agents marshal to JSON with the TypeScript package's camelCase names
// and define again to an equal Agent.
package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Defaults applied by Define.
const (
	DefaultMaxSteps       = 8
	DefaultMaxWallMs      = 120000
	DefaultRetrievalLimit = 10
	MaxMaxSteps           = 32
	MaxRetrievalLimit     = 1000
	MaxIDLength           = 128
)

// Parameter types a PromptParameter may declare.
const (
	TypeString  = "string"
	TypeNumber  = "number"
	TypeInteger = "integer"
	TypeBoolean = "boolean"
	TypeObject  = "object"
	TypeArray   = "array"
)

// Retrieval scopes.
const (
	ScopeSameConversation = "same-conversation"
	ScopeSameProject      = "same-project"
	ScopeTenant           = "tenant"
)

// Retrieval modes. An empty mode lists the latest facts of each type.
const (
	ModeKeyword  = "keyword"
	ModeSemantic = "semantic"
	ModeBoth     = "both"
)

// GateMode is a per-tool HITL gate mode.
type GateMode string

// Gate modes, from least to most strict.
const (
	GateNeverAsk      GateMode = "never_ask"
	GateAskOnFirstUse GateMode = "ask_on_first_use"
	GateAlwaysAsk     GateMode = "always_ask"
)

// Strictness orders gate modes: never_ask < ask_on_first_use < always_ask.
// An unknown mode is -1.
func (m GateMode) Strictness() int {
	switch m {
	case GateNeverAsk:
		return 0
	case GateAskOnFirstUse:
		return 1
	case GateAlwaysAsk:
		return 2
	}
	return -1
}

// Spec is the author's definition of an agent (the TypeScript package's DefineAgentSpec):
// the fields of Agent except PreferredModel. Load an agent file with
// json.Unmarshal into a Spec, then Define.
type Spec struct {
	ID                 string              `json:"id"`
	Version            string              `json:"version"`
	Name               string              `json:"name"`
	Description        string              `json:"description,omitempty"`
	Instructions       string              `json:"instructions"`
	Parameters         []PromptParameter   `json:"parameters,omitempty"`
	Capabilities       []Capability        `json:"capabilities"`
	Tools              []ToolRef           `json:"tools"`
	Retrieval          []RetrievalIntent   `json:"retrieval"`
	Guardrails         []string            `json:"guardrails"`
	PreferredProvider  string              `json:"preferredProvider,omitempty"`
	ConversationPolicy *ConversationPolicy `json:"conversationPolicy,omitempty"`
	Budget             *TurnBudget         `json:"budget,omitempty"`
	Tags               []string            `json:"tags,omitempty"`
	// ModelSettings (modelSettings) are the generation settings of the
	// agent's model calls; a turn's Input.ModelSettings overrides them
	// field by field. A kindgi extension of the TypeScript Agent.
	ModelSettings *ModelSettings `json:"modelSettings,omitempty"`
	// Output (output) is a JSON Schema for an object: when set, the final
	// answer of every turn must be JSON valid against it (the provider is
	// asked natively, the turn validates, and gives the model one chance
	// to fix an invalid answer before failing with invalid-output). A
	// kindgi extension of the TypeScript Agent.
	Output json.RawMessage `json:"output,omitempty"`
	// SubAgents (subAgents) are the agents this agent may call, each as a
	// tool the model sees; a call runs the agent as a journaled child run
	// whose final answer is the tool's result. A kindgi extension.
	SubAgents []AgentRef `json:"subAgents,omitempty"`
	// Handoffs (handoffs) are the agents this agent may hand the turn to:
	// the model sees each as a tool, and calling it runs the rest of the
	// turn as that agent. A kindgi extension.
	Handoffs []AgentRef `json:"handoffs,omitempty"`
}

// Agent is a validated agent definition with defaults applied: Budget is
// never nil and has MaxSteps and MaxWallMs set; every RetrievalIntent has a
// Limit. Agents are plain data: pin them by (ID, Version), store them, and
// pass them to turns. Treat an Agent as immutable once defined.
type Agent struct {
	ID                 string              `json:"id"`
	Version            string              `json:"version"`
	Name               string              `json:"name"`
	Description        string              `json:"description,omitempty"`
	Instructions       string              `json:"instructions"`
	Parameters         []PromptParameter   `json:"parameters,omitempty"`
	Capabilities       []Capability        `json:"capabilities"`
	Tools              []ToolRef           `json:"tools"`
	Retrieval          []RetrievalIntent   `json:"retrieval"`
	Guardrails         []string            `json:"guardrails"`
	PreferredProvider  string              `json:"preferredProvider,omitempty"`
	PreferredModel     string              `json:"preferredModel,omitempty"`
	ConversationPolicy *ConversationPolicy `json:"conversationPolicy,omitempty"`
	Budget             *TurnBudget         `json:"budget,omitempty"`
	Tags               []string            `json:"tags,omitempty"`
	// ModelSettings (modelSettings) are the generation settings of the
	// agent's model calls; a turn's Input.ModelSettings overrides them
	// field by field. A kindgi extension of the TypeScript Agent.
	ModelSettings *ModelSettings `json:"modelSettings,omitempty"`
	// Output (output) is a JSON Schema for an object: when set, the final
	// answer of every turn must be JSON valid against it (the provider is
	// asked natively, the turn validates, and gives the model one chance
	// to fix an invalid answer before failing with invalid-output). A
	// kindgi extension of the TypeScript Agent.
	Output json.RawMessage `json:"output,omitempty"`
	// SubAgents (subAgents) are the agents this agent may call, each as a
	// tool the model sees; a call runs the agent as a journaled child run
	// whose final answer is the tool's result. A kindgi extension.
	SubAgents []AgentRef `json:"subAgents,omitempty"`
	// Handoffs (handoffs) are the agents this agent may hand the turn to:
	// the model sees each as a tool, and calling it runs the rest of the
	// turn as that agent. A kindgi extension.
	Handoffs []AgentRef `json:"handoffs,omitempty"`
}

// Ref returns "id@version".
func (a Agent) Ref() string { return a.ID + "@" + a.Version }

// PromptParameter declares a template parameter. A parameter is required
// unless it is Optional or has a Default.
type PromptParameter struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Optional    bool   `json:"optional,omitempty"`
	Default     any    `json:"default,omitempty"`
	Description string `json:"description,omitempty"`
}

// Required reports whether a value must be supplied at render time.
func (p PromptParameter) Required() bool { return !p.Optional && p.Default == nil }

// Capability is a set of model features a turn needs; a turn routes on the
// agent's first capability.
type Capability struct {
	Needs []Need `json:"needs"`
}

// Need names one model feature ("tool-use", "json-mode", "vision", …).
type Need struct {
	Feature string `json:"feature"`
}

// ToolRef pins a tool by id and an npm-style semver range ("1.2.3",
// "^1.2.3", "~1.2.3", ">=1.0.0 <2.0.0"), resolved at run start against the
// tenant's tool registry.
type ToolRef struct {
	ID      string `json:"id"`
	Version string `json:"version"`
}

// AgentRef names another agent an agent may call (Spec.SubAgents) or hand
// the turn to (Spec.Handoffs). Version is a semver range, as for ToolRef,
// resolved per tenant when a turn starts. Name is the tool name the model
// sees (the ID when empty) and Description what it is told the agent does
// (the agent's own description when empty).
type AgentRef struct {
	ID          string `json:"id"`
	Version     string `json:"version"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
}

// ToolName is the name the model sees for the referenced agent: Name, or
// the ID when Name is empty.
func (r AgentRef) ToolName() string {
	if r.Name != "" {
		return r.Name
	}
	return r.ID
}

// RetrievalIntent asks a turn to fetch memory facts before the model call.
type RetrievalIntent struct {
	Types []string `json:"types"`
	Scope string   `json:"scope"`
	// Limit is 1..1000; Define sets 10 when omitted.
	Limit *int `json:"limit,omitempty"`
	// Mode is keyword, semantic, both, or "" for the latest facts of each
	// type.
	Mode string `json:"mode,omitempty"`
}

// ConversationPolicy governs history loading and human approval.
type ConversationPolicy struct {
	// HistoryLimit is how many prior messages are loaded into the prompt
	// (nil: all the binding's default returns; 0: none), at most
	// MaxHistoryLimit.
	HistoryLimit *int `json:"historyLimit,omitempty"`
	// AutoCloseAfterInactiveSeconds (1..MaxAutoCloseSeconds) closes a
	// conversation idle (no message since the last one's time) for longer
	// than this: a turn on it closes it and fails with conversation-closed,
	// and turn.CloseInactive sweeps the rest.
	AutoCloseAfterInactiveSeconds *int `json:"autoCloseAfterInactiveSeconds,omitempty"`
	// HitlAfterTurns is a session gate like Hitl.AfterTurns (the earlier
	// of the two applies).
	HitlAfterTurns *int        `json:"hitlAfterTurns,omitempty"`
	Hitl           *HitlPolicy `json:"hitl,omitempty"`
}

// HitlPolicy is the agent's human-in-the-loop policy.
type HitlPolicy struct {
	// AfterTurns is the session gate: once the conversation has run this
	// many turns, every later turn asks for approval before it runs (each
	// turn past it asks again; see turn.EvaluateSessionGate for why).
	AfterTurns *int `json:"afterTurns,omitempty"`
	// Tools holds the per-tool gates; they apply only when it is set.
	Tools               *ToolGates `json:"tools,omitempty"`
	DefaultReviewerRole string     `json:"defaultReviewerRole,omitempty"`
	TimeoutMs           *int64     `json:"timeoutMs,omitempty"`
}

// ToolGates are per-tool gates: Default for every tool, Overrides by tool id.
type ToolGates struct {
	Default   *ToolGate           `json:"default,omitempty"`
	Overrides map[string]ToolGate `json:"overrides,omitempty"`
}

// ToolGate is a gate mode with an optional reviewer role. In JSON it is
// either the mode string ("always_ask") or {"mode": …, "requiredRole": …}.
type ToolGate struct {
	Mode         GateMode `json:"mode"`
	RequiredRole string   `json:"requiredRole,omitempty"`
}

// MarshalJSON writes the bare mode string when there is no required role.
func (g ToolGate) MarshalJSON() ([]byte, error) {
	if g.RequiredRole == "" {
		return json.Marshal(string(g.Mode))
	}
	type plain ToolGate
	return json.Marshal(plain(g))
}

// UnmarshalJSON reads a mode string or a {mode, requiredRole} object. The
// mode is not checked here; Define reports an unknown mode as an issue. A
// JSON null reads as the zero gate, which Define reports as a missing mode.
func (g *ToolGate) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if string(data) == "null" {
		*g = ToolGate{}
		return nil
	}
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*g = ToolGate{Mode: GateMode(s)}
		return nil
	}
	if len(data) > 0 && data[0] == '{' {
		type plain ToolGate
		var p plain
		if err := json.Unmarshal(data, &p); err != nil {
			return err
		}
		*g = ToolGate(p)
		return nil
	}
	return fmt.Errorf("tool gate: want a mode string or {mode, requiredRole}, got %s", truncate(data, 40))
}

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}

// TurnBudget bounds one turn. Define sets MaxSteps (8) and MaxWallMs
// (120000) when omitted; MaxCostUsd nil means no cost cap.
type TurnBudget struct {
	MaxSteps   *int     `json:"maxSteps,omitempty"`
	MaxCostUsd *float64 `json:"maxCostUsd,omitempty"`
	MaxWallMs  *int64   `json:"maxWallMs,omitempty"`
}

// Steps returns MaxSteps, or the default when unset.
func (b *TurnBudget) Steps() int {
	if b == nil || b.MaxSteps == nil {
		return DefaultMaxSteps
	}
	return *b.MaxSteps
}

// WallMs returns MaxWallMs, or the default when unset.
func (b *TurnBudget) WallMs() int64 {
	if b == nil || b.MaxWallMs == nil {
		return DefaultMaxWallMs
	}
	return *b.MaxWallMs
}

// CostUsd returns MaxCostUsd and whether a cost cap is set.
func (b *TurnBudget) CostUsd() (float64, bool) {
	if b == nil || b.MaxCostUsd == nil {
		return 0, false
	}
	return *b.MaxCostUsd, true
}
