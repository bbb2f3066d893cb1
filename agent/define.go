package agent

// Define validates spec and returns the Agent with defaults applied.
// TEMPORARY: replaced by the full validator.
func Define(spec Spec) (Agent, error) {
	a := Agent{
		ID: spec.ID, Version: spec.Version, Name: spec.Name, Description: spec.Description,
		Instructions: spec.Instructions, Parameters: spec.Parameters, Capabilities: spec.Capabilities,
		Tools: spec.Tools, Retrieval: spec.Retrieval, Guardrails: spec.Guardrails,
		PreferredProvider: spec.PreferredProvider, ConversationPolicy: spec.ConversationPolicy,
		Budget: spec.Budget, Tags: spec.Tags,
	}
	return a, nil
}
