package agent

import (
	"slices"
	"strconv"

	agents "github.com/kindgi/agents"
)

// Define validates spec and returns the Agent it defines, with defaults
// applied: Budget is non-nil with MaxSteps (8) and MaxWallMs (120000) set,
// and every RetrievalIntent has a Limit (10 when omitted).
//
// Define checks every rule and reports every problem, not only the first:
// the error is an *agents.InvalidAgentError (code invalid-agent) whose Issues
// locate each problem with a path in JSON names (id, tools[1].version,
// conversationPolicy.hitl.tools.overrides.acme.send-email, budget.maxSteps)
// and say what to change. Issues come in the order of the Spec's fields.
//
// The Agent shares no memory with spec: later changes to the spec's slices,
// maps or pointers do not reach it. Parameter defaults are stored in their
// JSON form (string, float64, bool, []any, map[string]any), so an Agent
// marshalled to JSON and unmarshalled into a Spec defines again to an equal
// Agent. Empty lists are normalised the same way: tools, retrieval and
// guardrails are non-nil (they marshal as []), parameters, tags and tool
// gate overrides are nil when empty (they are omitted from JSON).
//
// Besides the rules of the TypeScript package, Define requires tags to be
// non-blank and unique (like guardrails), and every free-text field to be valid UTF-8
// (JSON could not carry it unchanged).
//
// The kindgi extensions are checked too: modelSettings (temperature 0..2,
// topP 0..1, maxOutputTokens at least 1, at most 4 non-empty stop
// sequences; empty settings become nil) and output (a self-contained JSON
// Schema for an object that compiles; stored compacted).
func Define(spec Spec) (Agent, error) {
	var c checker
	c.id("id", spec.ID)
	c.version(spec.Version)
	c.nonBlank("name", spec.Name, "name is required: give the agent a human-readable name such as \"Contract Drafter\"")
	c.utf8("description", spec.Description)
	c.instructions(spec.Instructions)
	params := c.parameters(spec.Parameters)
	caps := c.capabilities(spec.Capabilities)
	tools := c.tools(spec.Tools)
	retrieval := c.retrieval(spec.Retrieval)
	guardrails := c.uniqueStrings("guardrails", spec.Guardrails, "guardrail id")
	c.utf8("preferredProvider", spec.PreferredProvider)
	policy := c.conversationPolicy(spec.ConversationPolicy, spec.Tools)
	budget := c.budget(spec.Budget)
	tags := c.uniqueStrings("tags", spec.Tags, "tag")
	settings := c.modelSettings("modelSettings", spec.ModelSettings)
	output := c.output(spec.Output)

	if len(c.issues) > 0 {
		return Agent{}, &agents.InvalidAgentError{Issues: c.issues}
	}
	if guardrails == nil {
		guardrails = []string{}
	}
	if len(tags) == 0 {
		tags = nil
	}
	return Agent{
		ID:                 spec.ID,
		Version:            spec.Version,
		Name:               spec.Name,
		Description:        spec.Description,
		Instructions:       spec.Instructions,
		Parameters:         params,
		Capabilities:       caps,
		Tools:              tools,
		Retrieval:          retrieval,
		Guardrails:         guardrails,
		PreferredProvider:  spec.PreferredProvider,
		ConversationPolicy: policy,
		Budget:             budget,
		Tags:               tags,
		ModelSettings:      settings,
		Output:             output,
		SubAgents:          slices.Clone(spec.SubAgents),
		Handoffs:           slices.Clone(spec.Handoffs),
	}, nil
}

// checker collects the issues of one Define call.
//
// The rules are plain code rather than go-playground/validator struct tags:
// nearly every rule needs a path with JSON names, indices and map keys, a
// message naming the allowed values, or a look at another field (unique
// names, overrides of referenced tools, defaults that fit a declared type).
// Tags would cover only the simplest bounds (limit 1..1000, maxSteps 1..32)
// and would need a translation from validator's Go field names and tag
// names to our paths and messages, which is longer than the checks.
type checker struct {
	issues []agents.Issue
}

func (c *checker) add(path, message string) {
	c.issues = append(c.issues, agents.Issue{Path: path, Message: message})
}

// at builds "base[i]" or "base[i].field". Callers build paths only when
// they report an issue, so a valid spec allocates no path strings.
func at(base string, i int, field string) string {
	p := base + "[" + strconv.Itoa(i) + "]"
	if field != "" {
		p += "." + field
	}
	return p
}

// intPtr and friends copy a pointer's value into fresh memory, so the
// Agent never aliases the Spec.
func intPtr(p *int) *int {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func int64Ptr(p *int64) *int64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func float64Ptr(p *float64) *float64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
