// Package agents is the root of kindgi/agents: agents defined as versioned
// data, and conversation turns run as durable, journaled runs.
//
// The root package holds the error types and their stable codes; the work
// is done in the subpackages agent, prompt, registry, bindings, turn,
// memstore, pgstore and pack.
package agents
