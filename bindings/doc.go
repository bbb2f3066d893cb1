// Package bindings holds the interfaces a host implements to run turns, and
// their data types: storage (conversations, run snapshots, the run journal,
// memory, approvals), model providers, tools, guardrails, policy, provenance,
// authorization and secrets. It holds no implementation: memstore is the
// embedded in-memory one, pgstore the PostgreSQL one, and
// bindings/bindingstest is the conformance suite every implementation of a
// storage binding must pass.
//
// # Contracts common to every binding
//
//   - Every method takes a context first and honours its cancellation.
//   - Tenancy: every call names a tenant id, and an implementation never
//     reads, lists, changes or reveals another tenant's data. A record that
//     exists only for another tenant is "not found".
//   - Errors carry stable codes (agents.CodeOf): not found is the specific
//     coded error the method's doc names, a storage failure is
//     *agents.PersistenceError, an invalid input is
//     *agents.InvalidMessageError.
//   - Returned values are copies: mutating them never changes stored state.
//   - Implementations are safe for concurrent use.
package bindings
