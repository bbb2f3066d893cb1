package chatlog

import "github.com/kindgi/agents/bindings"

// Stored is the message in stores under id as the turn sees it before
// the store answers (a dry run's, which stores nothing and has no id, or
// one deferred to the next write).
func Stored(in *bindings.AppendMessageInput, id string) bindings.ConversationMessage {
	return bindings.ConversationMessage{
		TenantID: in.TenantID, ConversationID: in.ConversationID, ID: id, Role: in.Role, Content: in.Content,
		ToolCalls: in.ToolCalls, ToolCallID: in.ToolCallID, TurnNumber: in.TurnNumber, RunID: in.RunID,
		ParticipantID: in.ParticipantID, Metadata: in.Metadata,
	}
}
