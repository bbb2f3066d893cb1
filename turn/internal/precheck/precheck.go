// Package precheck holds the checks Invoke and Resume make before any side
// effect: a turn's input and ids (bindings.CheckID, so that nothing a store
// would refuse reaches one), the bindings a turn needs, and how a
// cancellation that lands before the drive is reported. It imports nothing
// of turn: the input comes as plain values (Turn), the bindings as whether
// each is bound (Bound). It also checks a run's snapshot against the drive
// that reads it: the agent version passed and the flow this build replays
// (SnapshotAgent, SnapshotFlow), and that a retried Invoke's input encodes
// as the one the snapshot stored (SameInput, SameJSON).
package precheck

import (
	"context"
	"errors"
	"strings"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// Turn is what Input checks of a turn's input (turn.Input's fields).
type Turn struct {
	TenantID, ConversationID, UserMessage string
	AgentID, AgentVersion                 string
	ProjectID, RunID, ParticipantID       string
	Principal                             *bindings.Principal
}

// Input reports an input the turn cannot run (invalid-message): the
// tenant, conversation, user message and agent are required, and every id
// must pass bindings.CheckID (at most bindings.MaxIDLength bytes of UTF-8
// without control characters).
func Input(in Turn) error {
	switch {
	case strings.TrimSpace(in.TenantID) == "":
		return &agents.InvalidMessageError{Reason: "tenant id is required"}
	case strings.TrimSpace(in.ConversationID) == "":
		return &agents.InvalidMessageError{Reason: "conversation id is required"}
	case strings.TrimSpace(in.UserMessage) == "":
		return &agents.InvalidMessageError{Reason: "user message is empty"}
	case in.AgentID == "" || in.AgentVersion == "":
		return &agents.InvalidMessageError{Reason: "agent is required (define it with agent.Define)"}
	}
	ids := [...]struct{ field, id string }{
		{"tenant id", in.TenantID}, {"conversation id", in.ConversationID},
		{"project id", in.ProjectID}, {"run id", in.RunID}, {"participant id", in.ParticipantID},
	}
	for _, f := range ids {
		if err := bindings.CheckOptionalID(f.field, f.id); err != nil {
			return err
		}
	}
	if in.Principal != nil {
		if err := bindings.CheckID("principal id", in.Principal.ID); err != nil {
			return err
		}
	}
	return nil
}

// Resume reports a resume input without a valid tenant id and run id
// (invalid-message), or a ctx already done (turn-aborted, external).
func Resume(ctx context.Context, tenantID, runID string) error {
	if strings.TrimSpace(tenantID) == "" || strings.TrimSpace(runID) == "" {
		return &agents.InvalidMessageError{Reason: "resume needs a tenant id and a run id"}
	}
	if err := bindings.CheckID("tenant id", tenantID); err != nil {
		return err
	}
	if err := bindings.CheckID("run id", runID); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return &agents.TurnAbortedError{Reason: agents.AbortExternal, Err: err}
	}
	return nil
}

// Bound says which of turn.Bindings' required bindings are set, and
// whether the turn needs Memory (its agent has retrieval intents).
type Bound struct {
	Providers, Tools, Conversations, Snapshots, Runs, Memory bool
	NeedMemory                                               bool
}

// Bindings reports the required bindings b lacks (invalid-bindings).
func Bindings(b Bound) error {
	var missing []string
	for _, f := range [...]struct {
		name  string
		bound bool
	}{
		{"Providers", b.Providers}, {"Tools", b.Tools}, {"Conversations", b.Conversations},
		{"Snapshots", b.Snapshots}, {"Runs", b.Runs},
		{"Memory (the agent has retrieval intents)", b.Memory || !b.NeedMemory},
	} {
		if !f.bound {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return &agents.InvalidBindingsError{Reason: "turn.Bindings lacks required bindings: " + strings.Join(missing, ", ")}
	}
	return nil
}

// AbortedBy reports err, when it is the done ctx's own error coming back
// from a call made before the drive began (a store's read, a snapshot
// write), as the turn-aborted (external) error that a cancellation during
// the drive gives: the caller sees one outcome for cancelling, whenever it
// lands.
func AbortedBy(ctx context.Context, err error) error {
	if ctx.Err() == nil || !(errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return err
	}
	if ta := (*agents.TurnAbortedError)(nil); errors.As(err, &ta) {
		return err
	}
	return &agents.TurnAbortedError{Reason: agents.AbortExternal, Err: err}
}
