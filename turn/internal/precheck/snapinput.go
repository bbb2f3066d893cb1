package precheck

import (
	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// SnapInput is what SameInput compares of a turn's input (turn.Input's
// fields a run snapshot stores).
type SnapInput struct {
	ProjectID, ConversationID, UserMessage, ParticipantID string
	Parameters                                            map[string]any
	Principal                                             *bindings.Principal
	DryRun                                                bool
}

// SameInput reports a run snapshot written for another input than in (in
// as the snapshot would store it, of tenant tenantID and agent
// agentID@agentVersion): *agents.RunInputMismatchError naming the first
// field that differs, or nil when the input is the same and the run may be
// replayed. prior is the input snap.Input decoded as, and decodeErr the
// error of that decode (run-snapshot-missing).
func SameInput(snap bindings.RunSnapshotRecord, prior SnapInput, decodeErr error, tenantID, agentID, agentVersion string, in SnapInput) error {
	mismatch := func(field string) error { return &agents.RunInputMismatchError{RunID: snap.RunID, Field: field} }
	if snap.TenantID != tenantID {
		return mismatch("tenantId")
	}
	if snap.AgentID != agentID || snap.AgentVersion != agentVersion {
		return mismatch("agent")
	}
	if decodeErr != nil {
		return &agents.RunSnapshotMissingError{RunID: snap.RunID}
	}
	switch {
	case prior.ProjectID != in.ProjectID || snap.ProjectID != in.ProjectID:
		return mismatch("projectId")
	case prior.ConversationID != in.ConversationID || snap.ConversationID != in.ConversationID:
		return mismatch("conversationId")
	case prior.UserMessage != in.UserMessage:
		return mismatch("userMessage")
	case !SameJSON(prior.Parameters, in.Parameters):
		return mismatch("parameters")
	case prior.ParticipantID != in.ParticipantID:
		return mismatch("participantId")
	case prior.DryRun != in.DryRun:
		return mismatch("dryRun")
	case !SameJSON(prior.Principal, in.Principal):
		return mismatch("principal")
	}
	return nil
}
