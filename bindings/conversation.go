package bindings

import (
	"context"
	"encoding/json"
	"time"
)

// ConversationStatus is the state of a conversation.
type ConversationStatus string

// Conversation states. A closed conversation cannot be reopened.
const (
	ConversationOpen   ConversationStatus = "open"
	ConversationClosed ConversationStatus = "closed"
)

// MessageRole is the author of a stored message.
type MessageRole string

// Message roles.
const (
	RoleUser   MessageRole = "user"
	RoleAgent  MessageRole = "agent"
	RoleTool   MessageRole = "tool"
	RoleSystem MessageRole = "system"
)

// Valid reports whether r is one of the four roles.
func (r MessageRole) Valid() bool {
	switch r {
	case RoleUser, RoleAgent, RoleTool, RoleSystem:
		return true
	}
	return false
}

// Conversation is a conversation pinned to one agent version.
type Conversation struct {
	TenantID      string             `json:"tenantId"`
	ID            string             `json:"id"`
	ProjectID     string             `json:"projectId"`
	AgentID       string             `json:"agentId"`
	AgentVersion  string             `json:"agentVersion"`
	Title         string             `json:"title,omitempty"`
	ParticipantID string             `json:"participantId,omitempty"`
	Status        ConversationStatus `json:"status"`
	// TurnCount is the highest turn number of a message stored in the
	// conversation (0 before the first turn).
	TurnCount      int        `json:"turnCount"`
	MessageCount   int        `json:"messageCount"`
	OpenedAt       time.Time  `json:"openedAt"`
	LastActivityAt time.Time  `json:"lastActivityAt"`
	ClosedAt       *time.Time `json:"closedAt,omitempty"`
}

// OpenConversationInput opens a conversation. ID is optional: the binding
// generates a unique one when empty; opening an existing (tenant, ID) again
// returns the stored conversation unchanged when its agent id and version
// match, and *agents.AgentVersionMismatchError otherwise.
type OpenConversationInput struct {
	TenantID      string `json:"tenantId"`
	ProjectID     string `json:"projectId"`
	ID            string `json:"id,omitempty"`
	AgentID       string `json:"agentId"`
	AgentVersion  string `json:"agentVersion"`
	Title         string `json:"title,omitempty"`
	ParticipantID string `json:"participantId,omitempty"`
	// OpenedAt is the opening time; zero means now.
	OpenedAt time.Time `json:"openedAt,omitzero"`
}

// ListConversationsInput filters a tenant's conversations, returned newest
// first (OpenedAt DESC, ID DESC). Empty filters match everything; Limit 0
// means the binding's default of 100.
type ListConversationsInput struct {
	TenantID  string             `json:"tenantId"`
	ProjectID string             `json:"projectId,omitempty"`
	AgentID   string             `json:"agentId,omitempty"`
	Status    ConversationStatus `json:"status,omitempty"`
	Limit     int                `json:"limit,omitempty"`
}

// ConversationPageCursor is the position after the last conversation of a
// page: keyset pagination by (OpenedAt DESC, ID DESC).
type ConversationPageCursor struct {
	OpenedAt time.Time `json:"openedAt"`
	ID       string    `json:"id"`
}

// ListConversationsPageInput asks for one page of conversations ordered by
// OpenedAt descending, then ID descending. Cursor nil starts at the newest.
type ListConversationsPageInput struct {
	ListConversationsInput
	Cursor *ConversationPageCursor `json:"cursor,omitempty"`
}

// ConversationPage is one page of conversations; Next is nil on the last
// page.
type ConversationPage struct {
	Conversations []Conversation          `json:"conversations"`
	Next          *ConversationPageCursor `json:"next,omitempty"`
}

// ConversationMessage is a stored message.
type ConversationMessage struct {
	TenantID       string `json:"tenantId"`
	ConversationID string `json:"conversationId"`
	ID             string `json:"id"`
	// Seq orders the messages of a conversation: strictly increasing in
	// append order.
	Seq        int64       `json:"seq"`
	Role       MessageRole `json:"role"`
	Content    string      `json:"content"`
	ToolCalls  []ToolCall  `json:"toolCalls,omitempty"`
	ToolCallID string      `json:"toolCallId,omitempty"`
	TurnNumber int         `json:"turnNumber"`
	RunID      string      `json:"runId,omitempty"`
	// Metadata is open JSON the writer attaches (tool id and version, …).
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	CreatedAt time.Time       `json:"createdAt"`
}

// AppendMessageInput appends one message. ID is the idempotency key: an
// append whose (tenant, conversation, ID) is already stored returns the
// stored message and stores nothing; an empty ID gets a generated one.
type AppendMessageInput struct {
	TenantID       string          `json:"tenantId"`
	ConversationID string          `json:"conversationId"`
	ID             string          `json:"id,omitempty"`
	Role           MessageRole     `json:"role"`
	Content        string          `json:"content"`
	ToolCalls      []ToolCall      `json:"toolCalls,omitempty"`
	ToolCallID     string          `json:"toolCallId,omitempty"`
	TurnNumber     int             `json:"turnNumber"`
	RunID          string          `json:"runId,omitempty"`
	Metadata       json.RawMessage `json:"metadata,omitempty"`
	// CreatedAt is the message time; zero means now.
	CreatedAt time.Time `json:"createdAt,omitzero"`
}

// ReadMessagesInput reads the latest Limit messages of a conversation
// (Limit 0 reads none; a negative Limit reads all). Messages come back in
// append order (Seq ascending). BeforeSeq > 0 reads only messages with a
// smaller Seq, for paging backwards.
type ReadMessagesInput struct {
	TenantID       string `json:"tenantId"`
	ConversationID string `json:"conversationId"`
	Limit          int    `json:"limit"`
	BeforeSeq      int64  `json:"beforeSeq,omitempty"`
}

// ConversationBinding stores conversations and their messages.
//
// Not found is *agents.ConversationNotFoundError (also for a conversation of
// another tenant). Appending to a closed conversation is
// *agents.ConversationClosedError; an unknown role or an empty tenant,
// conversation or content-and-tool-calls is *agents.InvalidMessageError.
// Closing is idempotent; deleting removes the conversation and its messages
// and is idempotent too (deleting a missing conversation is not an error).
// ReadMessages must cost O(Limit), not O(conversation length).
type ConversationBinding interface {
	OpenConversation(ctx context.Context, in OpenConversationInput) (Conversation, error)
	GetConversation(ctx context.Context, tenantID, conversationID string) (Conversation, error)
	ListConversations(ctx context.Context, in ListConversationsInput) ([]Conversation, error)
	ListConversationsPage(ctx context.Context, in ListConversationsPageInput) (ConversationPage, error)
	CloseConversation(ctx context.Context, tenantID, conversationID string) error
	DeleteConversation(ctx context.Context, tenantID, conversationID string) error
	AppendMessage(ctx context.Context, in AppendMessageInput) (ConversationMessage, error)
	ReadMessages(ctx context.Context, in ReadMessagesInput) ([]ConversationMessage, error)
}
