// Package eval replays recorded runs, and cases written by hand, against a
// new version of an agent before it ships, grades every answer, and
// reports what changed.
//
// # Datasets
//
// A Dataset is a list of Cases, kept as JSON Lines (one case a line) so
// that it lives in a repository and diffs well: ReadDataset and
// Dataset.Write. DatasetFromRuns builds one from stored runs: each run's
// snapshot gives the case's user message and parameters, its journal the
// baseline — the answer the run gave and every tool call it made, with
// the output the tool really returned — and, for a later turn of a
// conversation, the earlier turns' messages (History). A case may carry
// expectations (Expect) written by hand.
//
// # Running
//
// Run plays every case as a real turn (turn.Invoke) of Options.Agent, each
// on its own in-memory store with a fixed clock and counted ids: it never
// writes to the stores of Options.Bindings (it takes their providers,
// tools, memory, policy, guardrails and checks, and nothing stored). A
// case's history is stored in its conversation first, so the turn has the
// recorded turn's number and prompt. Under ReplayTools, the default
// for cases from runs, a tool call whose tool id and arguments (compared
// as canonical JSON) match a call the run recorded gets the recorded
// output and no handler runs; any other call fails the case, naming the
// tool and its arguments, and reaches nothing. Under LiveTools the
// handlers of Options.Bindings.Tools are called. A turn that parks on
// approvals has them approved (by the reviewer "eval") and is resumed, so
// a gated tool is graded like any other.
//
// # Grading
//
// Each case's answer is graded by Options.Graders and by the case's own
// Expect; a grader's error is a failed grade with its reason, never the
// end of the run. The baseline answer is graded the same way, so a case
// that passed on the baseline and fails now is marked Regressed.
//
// # Reports
//
// A Report holds per case the new answer beside the baseline, each grade,
// the usage and whether the case regressed; WriteJUnit writes it as JUnit
// XML (one testcase per case) for CI, WriteHTML as one self-contained page.
// With a provider that answers by the order of its calls (the scripted
// provider), cases run one at a time, so two runs give byte-equal reports.
package eval
