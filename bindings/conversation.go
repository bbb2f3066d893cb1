package bindings

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	agents "github.com/kindgi/agents"
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
	// conversation (0 before the first turn). A turn takes TurnCount+1 as
	// its number; its user message claims it (see AppendMessageInput).
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
	// ParticipantID is who wrote the message: the turn records
	// Input.ParticipantID on its user message ("" when unknown).
	ParticipantID string `json:"participantId,omitempty"`
	// Metadata is open JSON the writer attaches (tool id and version, …).
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	CreatedAt time.Time       `json:"createdAt"`
}

// AppendMessageInput appends one message. ID is the idempotency key: an
// append whose (tenant, conversation, ID) is already stored returns the
// stored message and stores nothing; an empty ID gets a generated one.
//
// TurnNumber is the turn the message belongs to; 0 means the message is
// part of no turn. A user message with TurnNumber > 0 opens that turn, and
// a turn has one user message: appending a user message whose TurnNumber
// is at most the conversation's TurnCount, under an ID not stored yet, is
// *agents.ConversationBusyError and stores nothing (another turn holds the
// number). The check and the append are one atomic step, so of concurrent
// user messages with the same TurnNumber exactly one is stored. An ID
// already stored still returns the stored message: an idempotent replay of
// the user message that won is no conflict. Agent, tool and system messages
// open no turn and are not checked: those of a turn are appended with its
// number, which may by then be below TurnCount (a later turn started while
// this one was parked).
type AppendMessageInput struct {
	TenantID       string      `json:"tenantId"`
	ConversationID string      `json:"conversationId"`
	ID             string      `json:"id,omitempty"`
	Role           MessageRole `json:"role"`
	Content        string      `json:"content"`
	ToolCalls      []ToolCall  `json:"toolCalls,omitempty"`
	ToolCallID     string      `json:"toolCallId,omitempty"`
	TurnNumber     int         `json:"turnNumber"`
	RunID          string      `json:"runId,omitempty"`
	// ParticipantID is who wrote the message (optional; an id under the
	// rules of CheckID).
	ParticipantID string          `json:"participantId,omitempty"`
	Metadata      json.RawMessage `json:"metadata,omitempty"`
	// CreatedAt is the message time; zero means now.
	CreatedAt time.Time `json:"createdAt,omitzero"`
}

// OpensTurn reports whether the message opens turn TurnNumber: a user
// message with TurnNumber > 0. Only such a message is checked against the
// conversation's TurnCount (see TurnTaken).
func (in AppendMessageInput) OpensTurn() bool {
	return in.Role == RoleUser && in.TurnNumber > 0
}

// TurnTaken reports whether appending in to a conversation whose TurnCount
// is turnCount would claim a turn number another turn holds: in opens a
// turn whose number is not above turnCount. A binding refuses such an
// append with *agents.ConversationBusyError once it knows in.ID is not
// stored.
func (in AppendMessageInput) TurnTaken(turnCount int) bool {
	return in.OpensTurn() && in.TurnNumber <= turnCount
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
// Appending a user message under a turn number the conversation already
// has (TurnNumber > 0 and <= TurnCount) is *agents.ConversationBusyError,
// decided atomically with the append so that it holds across processes:
// two turns that picked the same number cannot both store their user
// message. An append whose ID is stored returns the stored message before
// any of these checks (idempotent replay wins, also once closed).
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

// CheckListConversationsPage returns an *agents.InvalidMessageError when
// a conversation listing has an empty tenant, or a tenant, project, agent
// or cursor id that breaks the id rules (CheckID), and nil otherwise.
func CheckListConversationsPage(in ListConversationsPageInput) error {
	if err := firstErr(CheckID("tenant id", in.TenantID), CheckOptionalID("project id", in.ProjectID),
		CheckOptionalID("agent id", in.AgentID)); err != nil {
		return err
	}
	if in.Cursor != nil {
		return CheckOptionalID("cursor id", in.Cursor.ID)
	}
	return nil
}

// CheckOpenConversation returns an *agents.InvalidMessageError when a
// conversation to open has an empty tenant, agent id or agent version, or
// an id that breaks the id rules (CheckID), and nil otherwise.
func CheckOpenConversation(in OpenConversationInput) error {
	switch {
	case in.TenantID == "":
		return &agents.InvalidMessageError{Reason: "tenant id is empty"}
	case in.AgentID == "" || in.AgentVersion == "":
		return &agents.InvalidMessageError{Reason: "agent id and version are required"}
	}
	return firstErr(CheckID("tenant id", in.TenantID), CheckOptionalID("conversation id", in.ID),
		CheckOptionalID("project id", in.ProjectID), CheckID("agent id", in.AgentID),
		CheckID("agent version", in.AgentVersion), CheckOptionalID("participant id", in.ParticipantID))
}

// CheckAppendMessage returns an *agents.InvalidMessageError when a
// message to append has an empty tenant or conversation id, an unknown
// role, or neither content nor tool calls; unless trusted (a
// journal.CommitInput.Trusted caller vouches for the rest), also when an
// id breaks the id rules (CheckID) or its metadata or a tool call's
// arguments are not JSON (CheckJSON). It returns nil otherwise.
func CheckAppendMessage(in AppendMessageInput, trusted bool) error {
	switch {
	case in.TenantID == "":
		return &agents.InvalidMessageError{Reason: "tenant id is empty"}
	case in.ConversationID == "":
		return &agents.InvalidMessageError{Reason: "conversation id is empty"}
	case !in.Role.Valid():
		return &agents.InvalidMessageError{Reason: "unknown role " + string(in.Role)}
	case in.Content == "" && len(in.ToolCalls) == 0:
		return &agents.InvalidMessageError{Reason: "message has neither content nor tool calls"}
	}
	if trusted {
		return nil
	}
	err := firstErr(CheckID("tenant id", in.TenantID), CheckID("conversation id", in.ConversationID),
		CheckOptionalID("message id", in.ID), CheckOptionalID("tool call id", in.ToolCallID),
		CheckOptionalID("run id", in.RunID), CheckOptionalID("participant id", in.ParticipantID),
		CheckJSON("message metadata", in.Metadata))
	if err != nil {
		return err
	}
	for i, tc := range in.ToolCalls {
		if CheckJSON("tool call arguments", tc.Arguments) != nil {
			// The field's name is formatted only for the refusal.
			return &agents.InvalidMessageError{Reason: fmt.Sprintf("tool call %d arguments are not valid JSON", i)}
		}
	}
	return nil
}
