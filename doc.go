// Package agents is the root of kindgi/agents, a library for defining AI
// agents as versioned data and running their conversation turns as durable,
// journaled runs. It is the Go implementation of the @kindgi/agents package
// and of pack protocol v2.
//
// The root package is a leaf: it holds the error types and their stable
// codes (this file's package) and imports no subpackage. The work is done in
// the subpackages below.
//
// # Defining agents
//
// An agent is plain data, pinned by id and exact semver version. Package
// agent validates an author's Spec into an Agent, collecting every issue
// with a path in JSON names:
//
//	a, err := agent.Define(agent.Spec{
//		ID:           "acme.contract-drafter",
//		Version:      "1.0.0",
//		Name:         "Contract Drafter",
//		Instructions: "You draft contract clauses for {{ firmName }}. Today is {{ today }}.",
//		Parameters:   []agent.PromptParameter{{Name: "firmName", Type: "string"}},
//		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
//		Tools:        []agent.ToolRef{{ID: "acme.clause-search", Version: "^1.0.0"}},
//	})
//	var inv *agents.InvalidAgentError
//	if errors.As(err, &inv) {
//		for _, is := range inv.Issues {
//			fmt.Println(is.Path, is.Message) // tools[0].version: …
//		}
//	}
//
// Agent files in JSON or YAML load with agent.Load and agent.Parse; the
// kindgi command (cmd/kindgi) validates them in CI.
//
// # Rendering prompts
//
// Package prompt renders instructions as LiquidJS does, strictly: a missing
// required parameter or any unresolved variable is a
// *MissingParameterError naming it, never an empty string. today, now,
// agent and conversation are injected. Rendering is bounded in output size
// and work, and parsed templates are cached.
//
// # Registries and tool versions
//
// Package registry holds an in-memory agent registry ordered by semver, and
// a per-tenant tool catalog. Tools are pinned with npm-style ranges
// (^1.2.3, ~2.1.0, >=1.0.0 <2.0.0) and resolved with npm's rules, including
// its prerelease rule, by registry.ResolveVersion.
//
// # Running turns
//
// turn.Invoke runs one turn of a conversation as a run of the flow
// agent.turn 1.1.0: setup, render-prompt, persist-user-message,
// run-retrievals, build-initial-messages, agent-loop (model-call,
// dispatch-tools, budget-check), evaluate-guardrails,
// persist-final-message, persist-provenance, compose-result. Everything it
// touches goes through package bindings: conversations, run snapshots, the
// run journal, memory, providers, tools, guardrails, policy, approvals,
// provenance, authorization and secrets.
//
// # Durability
//
// Every side effect of a turn (a model call, a tool call, a message write,
// an approval request) is a journal step with a deterministic key, and its
// result is stored before the next step starts. Driving a run again replays
// the journal instead of calling again. That is how a turn parks on a human
// approval (turn.StatusSuspended) and continues later with turn.Resume, in
// another process, and how a run whose process died mid-turn is finished
// without repeating what it already did. One driver holds a run at a time
// (a lease; a second driver gets run-busy). A tool call interrupted by a
// crash is sent again with the same request id: tools must treat
// bindings.CallContext.RequestID as an idempotency key.
//
// # Storage
//
// memstore is the embedded in-memory implementation of every binding, the
// default for one process and for tests. pgstore implements the storage
// bindings on PostgreSQL with embedded migrations and row-level security,
// so that any number of turn workers can share one database and any of them
// can resume any parked or crashed run. bindings/bindingstest is the
// conformance suite both pass; a host writing its own binding runs it too.
//
// # Pack services
//
// Package pack speaks pack protocol v2 to pack services that host tool
// handlers and guardrail checks over HTTP, and adapts a service into the
// tool and check bindings. pack/packserver is a Go pack service and
// pack/packtest a black-box conformance suite for any pack service.
//
// # Errors
//
// Every error the module returns carries a stable kebab-case code, read
// with CodeOf through any wrapping. Error kinds that carry data are struct
// types matched with errors.As (*InvalidAgentError, *MissingParameterError,
// *BudgetExceededError, *TurnAbortedError, *TenantPolicyUnavailableError,
// …). A cancelled context ends a turn with turn-aborted, reason external; the
// agent's maxWallMs budget ends it with turn-aborted, reason timeout.
package agents
