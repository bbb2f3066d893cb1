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
//
// # Values every storage binding holds
//
//   - Ids (tenant, project, conversation, run, message, approval,
//     participant, fact, tool call, lease owner, …) are at most
//     MaxIDLength bytes of UTF-8 without control characters (CheckID);
//     journal step keys at most MaxStepKeyLength (CheckStepKey). Anything
//     else is refused with *agents.InvalidMessageError before any side
//     effect, also on reads.
//   - JSON payloads may be any valid JSON in UTF-8 (CheckJSON), strings
//     with "\u0000" and lone surrogate escapes, numbers beyond float64
//     and deep nesting included, and read back with the same value;
//     embeddings hold finite numbers only (CheckEmbedding).
//   - Free text (a message's content, a title, a fact's text, an
//     approval's reason or comment) may be any Go string, NUL bytes and
//     bytes that are not UTF-8 included, and reads back byte for byte.
//     Strings inside JSON (a tool call's id and name, a step error) read
//     back as encoding/json writes them.
//   - A storage failure the store will repeat for the same input is
//     *agents.PersistenceError with Permanent set; agents.IsRetryable
//     tells a host whether driving a run again can help.
//
// bindingstest.RunValueTests pins these rules.
package bindings
