// Package turn runs one turn of a conversation with an agent: Invoke (the
// TypeScript package's invokeAgent) and Resume (resumeAgentTurn). A turn is a journaled
// run of the flow agent.turn 1.1.0 over the binding interfaces of package
// bindings; memstore provides all of them in memory, pgstore in
// PostgreSQL.
//
// # The flow
//
// The nodes run in this order, each named by a Node constant as it appears
// in run journals:
//
//	setup → render-prompt → persist-user-message → run-retrievals →
//	build-initial-messages → agent-loop (model-call → dispatch-tools →
//	budget-check, at most LoopMaxIterations times) → evaluate-guardrails →
//	persist-final-message → persist-provenance → compose-result
//
// setup decides everything a later drive must see identically and
// journals it: the time, the turn number, the merged tenant policy and
// budget, the resolved tool versions and guardrails, the routed provider
// and model, and the effective HITL policy. All the checks that can fail a
// turn before it costs anything happen there, before any model call.
//
// # The journal
//
// Before its first side effect a turn writes its run snapshot and starts
// its run with a lease. Every side effect is then a journal step with a
// deterministic key — "setup", "agent-loop/2/model-call",
// "agent-loop/2/dispatch-tools/call_1", "…/call_1/approval", "…/call_1/message"
// — whose result is stored before the next step starts. A step whose result
// is in the journal is never run again: its stored result is returned. A
// model or tool call that started but has no stored result (its driver
// died) is sent again with the same request id, derived from the run id and
// the step key. Messages are stored under ids derived the same way, so a
// retried write stores nothing twice. Only each step's own output is
// journaled; the turn's state is rebuilt by replaying the steps in order.
// (This package holds the flow and its nodes; the journal machinery — the
// step, the index, the buffered writes, the Commit, the lease — is in
// turn/internal/drive, which ARCHITECTURE.md maps.)
//
// # Fewer writes
//
// A step that only decides (setup, render-prompt, retrieval, the dispatch
// plan, budget-check, compose-result) or whose effect is idempotent under
// its key (a message, the provenance record) is written with the next
// write that must happen anyway — a model, tool or approval step's started
// entry, a message append, the provenance emit, the end of the drive — in
// one Commit of the drive's journal (Bindings.Journal, a journal.Driver:
// the store's own, which StoreBindings sets, or journal.Adapt of the
// basic bindings when it is nil). Nothing outside the run sees such a
// result before it is stored, so a crash that loses it only makes the step
// decide again. On pgstore a turn with one tool call takes 5 round trips
// (BENCHMARKS.md lists what each carries).
//
// # Logging
//
// Bindings.Logger receives the lifecycle at debug level (see Bindings);
// message content, tool inputs and outputs are logged only with
// Bindings.LogContent.
//
// # Tools and idempotency
//
// Every tool call carries its request id (bindings.CallContext.RequestID):
// a call interrupted by a crash is sent again with the same id, so a tool
// with side effects must perform them at most once per request id. Tool
// arguments are checked against the tool's input schema before the call;
// arguments that do not fit, an unknown tool, and a call the Authorizer
// denies are reported to the model as a tool error and never run. An error
// the tool itself returns is reported to the model too; a coded error (the
// binding failed) or an output that breaks the output schema fails the
// turn with tool-invocation-failed.
//
// # Streaming, settings and structured output
//
// When the routed provider is a bindings.StreamingProvider the model call
// streams: each piece of the answer is a ModelCallDeltaEvent
// (model.call.delta) between model.call.started and model.call.completed.
// Deltas are never journaled — the journal stores the assembled response,
// the same as without streaming — so a replayed call emits none, and a call
// cut by a crash is streamed again by Resume under the same request id. A
// stream that fails after delivering deltas is sent once more (a second
// model.call.started, Attempt 2). Events yields a turn's events to a range
// loop.
//
// Each request carries the agent's modelSettings, overridden field by field
// by Input.ModelSettings, and the agent's output schema. With a schema, the
// final answer is checked by a validate-output step
// ("agent-loop/3/validate-output"): valid JSON becomes Response.Output; the
// first invalid answer goes back to the model with its issues (another
// model call, counted by maxSteps); a second one fails the turn with
// invalid-output. An agent without these fields runs as it always did.
//
// # Human approval
//
// Gates are decided in code before any call of a model response runs. A
// call whose gate asks (always_ask, or ask_on_first_use when the
// conversation has no earlier successful call of that tool) gets its own
// approval, with an id derived from the run id and the call's step key;
// every gated call of a response is asked for at once and the turn parks:
// the run is suspended and Invoke returns StatusSuspended with the approval
// requests. The calls of that response that need no approval are held too,
// so that a response's calls run together, in the model's order, once
// every approval is decided. Resume then runs an approved call once, tells
// the model about a denied one, fails fast with hitl-required while one is
// pending (nothing runs), and applies the policy's on-timeout action to an
// expired one. The session gate (hitl.afterTurns, hitlAfterTurns) parks a
// turn before it runs anything. A dry run asks nobody.
//
// # Sub-agents
//
// An agent's SubAgents are tools the model sees (agent.AgentRef.ToolName;
// input: a required "message" plus the child agent's prompt parameters)
// and its Handoffs tools taking an optional "message". Setup resolves each
// ref's semver range through Bindings.AgentVersions and fetches the agent
// through Bindings.Agents (agent-not-found naming the ref; invalid-bindings
// without them), and journals the resolved id@version, so every drive of
// the run calls the same agents.
//
// A call of a sub-agent runs the child agent as a run of its own: its run
// id and conversation id derive from the parent's run id and the call's
// step key, its run records ParentRunID and ParentStepKey, and the parent
// drives it inline through Invoke, under the child's own lease, so a
// later drive of the parent continues the child from the child's own
// journal and nothing it did runs twice. The child's answer (with its
// structured output, {"answer", "output"}) is the call's result; a failed
// child is the call's tool error, with its code. The child applies its own
// policy and budget, each of cost, steps and wall time capped by what the
// parent has left (nothing left: budget-exceeded before its first model
// call); its usage is added to the parent's, and Result.SubRuns lists it. A
// call that would nest past Bindings.MaxAgentDepth is told
// agent-depth-exceeded and creates no run. The child's events reach
// Bindings.OnEvent (and Events) with the child's run id.
//
// A child that parks on approvals parks the parent: the parent is
// suspended with the child's approval requests (their RunID is the
// child's). Resume of the parent drives the child on, then the parent; a
// Worker finishes the child once its approvals are decided, after which
// the store makes the parent claimable (no child of it queued, running or
// suspended) and a Worker finishes it. A parent drive that finds its child
// held by another driver parks again (run-busy naming the child) instead
// of waiting on it.
//
// # Handoffs
//
// An agent's Handoffs are agents it may hand the rest of a turn to; the
// model sees each as a tool with an optional message. The handoff call is
// a journaled step holding everything the target runs with, decided as
// setup decides it for the turn's own agent: its instructions rendered
// with the turn's parameters (its own defaults for those the turn lacks),
// its tools resolved with the tenant's pins, its guardrails, sub-agents
// and handoffs, its policy merged stricter-wins with the tenant's, its
// route, and the stricter of the two budgets. Once the response's calls
// have run, the turn goes on as the target — its system prompt, its tools,
// its gates — with the conversation so far, the handoff call's result
// telling the model; a resume continues as the target without resolving
// anything again. A target the turn cannot run as (a required parameter
// missing, a tool it cannot resolve) is the call's error, journaled, and
// nothing switches; a handoff past Bindings.MaxAgentDepth (each handoff
// is one level, like a sub-agent call) is agent-depth-exceeded, told to
// the model. The final message of a turn that handed over carries
// AnswererMeta as its Metadata; Result.AgentID and AgentVersion name the
// agent that answered, and the provenance record lists the handoffs
// (bindings.ProvenanceRecord.Handoffs, AnsweredBy).
//
// # One driver per run
//
// A driver holds a lease on its run (Bindings.LeaseTTL, renewed every third
// of it while the run goes on) and every journal write names the lease
// owner, so a driver that lost its lease cannot write. A second Resume of a
// run another driver holds fails with run-busy and calls nothing. A run
// whose driver died (status running, lease expired) is continued by Resume
// — or by Invoke with the same Input.RunID; a model or tool call the death
// interrupted is sent again, with the same request id, only by the driver
// that holds the lease, so of many racing resumers one calls and the rest
// fail run-busy having called nothing. A driver that stalled past its own
// lease, which nobody took, is refused with run-busy too, its
// *agents.RunBusyError saying LeaseExpired (not "another process").
//
// # Outcomes
//
// A failure that is the turn's own outcome — a step failure with its code,
// a guardrail halt, a cancelled context (turn-aborted, external), the wall
// budget (turn-aborted, timeout), a deterministic storage refusal
// (persistence-error with Permanent set) — is journaled and final: the
// run's status is failed and every later drive returns the same error. A
// transient storage failure or a lost lease (persistence-error, run-busy)
// is not journaled: the run stays as it was, to be resumed.
// agents.IsRetryable tells the two apart. A finished run re-driven returns
// its result, folded again from its journal, without calling anything or
// emitting events; a resumed drive emits only its own events.
//
// # Failures that recur
//
// No run loops on a failure that comes back on every drive:
//
//   - A model or tool step whose drive ends without its result stored,
//     after a retryable error, journals the failed attempt
//     ("agent-loop/1/model-call/attempt/2", failed, with the error's code).
//     A provider, tool or check that panics has its panic counted the same
//     way (the panic still ends the drive).
//     Once a step has Bindings.MaxStepAttempts (DefaultMaxStepAttempts)
//     failed attempts, the next drive fails the run with
//     step-attempts-exhausted instead of calling again. The count is in
//     the journal, so it holds across processes. A driver killed mid-step
//     cannot write its attempt (the crash tests hold the journal of a run
//     resumed after a crash equal to an uninterrupted run's), so a crash is
//     not counted: its resumed drive calls again with the same request id.
//   - A usage that is not a finite cost of 0 or more, or a negative token
//     count, is model-invocation-failed, journaled.
//   - A step output that does not encode as JSON is a permanent
//     persistence-error: the run ends.
//
// # Limits
//
// What no store should hold is refused or replaced before any side effect:
//
//   - every id of Input (tenant, project, conversation, run, participant,
//     principal) and of ResumeInput must pass bindings.CheckID
//     (bindings.MaxIDLength bytes of UTF-8, no control characters):
//     invalid-message otherwise;
//   - ids the turn derives from the run id and a step key (message,
//     approval and request ids: RUN/agent-loop/1/model-call/message) are
//     that string when it fits bindings.MaxIDLength, and otherwise the
//     run id's longest fitting prefix, "/~" and 40 hex digits of the
//     SHA-256 of the whole;
//   - a model's tool call id that is empty, longer than
//     MaxToolCallIDLength, not UTF-8, holds a control character or repeats
//     an earlier id of the response becomes call-<iteration>-<position>; a
//     tool name that breaks MaxToolNameLength's rules becomes
//     InvalidToolName, and the call is answered to the model as an error;
//   - a response's tool calls past Bindings.MaxToolCallsPerResponse
//     (DefaultMaxToolCallsPerResponse) never run and are not stored; the
//     next request answers each with an error (the cap is journaled by
//     setup);
//   - durations saturate: a maxWallMs or approval timeout of
//     math.MaxInt64 is no practical limit, not an overflow.
//
// # Tenant quotas
//
// Bindings.Quotas counts a tenant's quotas (bindings.Quota: model calls,
// tokens, cost, tool calls, turns over a sliding window) in the store,
// across turns, workers and processes. Each take is part of the journal
// step it meters, keyed by the run id and the step key, so a resumed step
// never counts twice. A refused call either ends the turn with
// *agents.QuotaExceededError (onExceeded "fail"; a tool's refusal is
// told to the model instead) or queues the run until the window frees
// (onExceeded "wait": Run.NotBefore, continued by a Worker). The field's
// doc has the details.
//
// # Run ids
//
// An Invoke with the run id of an existing run replays that run only when
// its input is the same (tenant, project, conversation, agent id@version,
// user message, parameters, participant, principal, dry run); otherwise it
// fails with run-input-mismatch before anything is stored or called.
//
// # The history sent to a model
//
// Every request is well formed for Chat Completions and Anthropic alike:
// the tool calls of an assistant message are followed by their results
// right after it; a call without its result (its turn failed, was
// cancelled or halted mid-way, or its result fell outside historyLimit's
// window) is left out together with anything answering it, and a result
// without its call is left out; tool call ids are unique within the
// request (an earlier call whose id a later one reuses is renamed with its
// result, call-h<n>-<position>). Calls and results are matched per
// assistant message, so never across turns.
//
// Wall time (maxWallMs) counts only time spent running: a parked run
// journals its running time, and a resumed drive gets what is left. Usage
// and the cost budget count across parks. A conversation policy without a
// historyLimit loads DefaultHistoryLimit prior messages.
package turn
