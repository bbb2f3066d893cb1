package turn

import (
	"context"
	"encoding/json"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/prompt"
)

// renderPrompt is the render-prompt node: the agent's instructions,
// rendered strictly with the journaled time and turn number.
func (r *run) renderPrompt(ctx context.Context) error {
	text, err := decide(ctx, r, NodeRenderPrompt, NodeRenderPrompt, func(ctx context.Context, _ string) (string, error) {
		res, err := prompt.RenderContext(ctx, r.agent, prompt.Context{
			Parameters:     r.in.Parameters,
			Now:            r.s.Now,
			ConversationID: r.in.ConversationID,
			Turn:           r.s.TurnNumber,
		})
		if err != nil {
			if agents.CodeOf(err) == "" {
				return "", &agents.RenderFailureError{Reason: err.Error(), Err: err}
			}
			return "", err
		}
		return res.Text, nil
	})
	r.prompt = text
	return err
}

// messageID is the deterministic id of the message a step stores, so a
// retried append stores nothing twice.
func (r *run) messageID(key string) string { return r.id + "/" + key }

// persist stores one message of the turn as step key (nothing in a dry
// run) and folds it into Result.Appended.
//
// after, when set, runs only when the step itself runs (not on replay): it
// emits the events of the message.
func (r *run) persist(ctx context.Context, key, node string, in bindings.AppendMessageInput, after func(context.Context, bindings.ConversationMessage)) (bindings.ConversationMessage, error) {
	// The append is idempotent by the message's deterministic id, so the
	// step needs no started entry: a retry stores nothing twice.
	m, err := runStep(ctx, r, key, node, kindMessage, func(ctx context.Context, requestID string) (bindings.ConversationMessage, error) {
		in.TenantID = r.tenantID
		in.ConversationID = r.in.ConversationID
		in.ID = requestID // runStep passes r.messageID(key)
		in.TurnNumber = r.s.TurnNumber
		in.RunID = r.id
		var m bindings.ConversationMessage
		if r.in.DryRun {
			m = bindings.ConversationMessage{
				TenantID: in.TenantID, ConversationID: in.ConversationID, Role: in.Role, Content: in.Content,
				ToolCalls: in.ToolCalls, ToolCallID: in.ToolCallID, TurnNumber: in.TurnNumber, RunID: in.RunID,
				Metadata: in.Metadata,
			}
		} else {
			// The message may depend on results still buffered: they are
			// stored first (in the same call when the store can).
			var err error
			if m, err = r.appendMessage(ctx, in); err != nil {
				return m, err
			}
		}
		if after != nil {
			after(ctx, m)
		}
		return m, nil
	})
	if err == nil && !r.in.DryRun {
		r.appended = append(r.appended, m)
	}
	return m, err
}

// persistUserMessage is the persist-user-message node.
func (r *run) persistUserMessage(ctx context.Context) error {
	m, err := r.persist(ctx, NodePersistUserMessage, NodePersistUserMessage, bindings.AppendMessageInput{
		Role: bindings.RoleUser, Content: r.in.UserMessage,
	}, nil)
	r.userMsg = m
	return err
}

// buildInitialMessages is the build-initial-messages node: the system
// prompt with the retrieved facts, the last historyLimit messages before
// this turn (read with that limit: never the whole conversation), and the
// user message.
func (r *run) buildInitialMessages(ctx context.Context) error {
	msgs, err := decide(ctx, r, NodeBuildInitialMessages, NodeBuildInitialMessages, func(ctx context.Context, _ string) ([]bindings.ChatMessage, error) {
		system := r.prompt
		if section := FormatRetrievedForPrompt(r.retrieved); section != "" {
			system += "\n\n" + section
		}
		var hist []bindings.ConversationMessage
		if r.s.HistoryLimit > 0 {
			var err error
			hist, err = r.b.Conversations.ReadMessages(ctx, bindings.ReadMessagesInput{
				TenantID: r.tenantID, ConversationID: r.in.ConversationID,
				Limit: r.s.HistoryLimit, BeforeSeq: r.userMsg.Seq,
			})
			if err != nil {
				return nil, coded(err, "read messages")
			}
		}
		out := make([]bindings.ChatMessage, 1, len(hist)+2)
		out[0] = bindings.ChatMessage{Role: bindings.ChatSystem, Content: system}
		out = append(out, historyMessages(hist)...)
		return append(out, bindings.ChatMessage{Role: bindings.ChatUser, Content: r.in.UserMessage}), nil
	})
	r.messages = msgs
	return err
}

// historyMessages turns stored messages into model messages. A model API
// rejects a tool message that answers no call, and a call no tool message
// answers, so both are dropped: a tool result whose call fell outside the
// window, and a call of an earlier turn that never got its result (that
// turn failed mid-way).
func historyMessages(hist []bindings.ConversationMessage) []bindings.ChatMessage {
	answered := map[string]bool{}
	for _, m := range hist {
		if m.Role == bindings.RoleTool {
			answered[m.ToolCallID] = true
		}
	}
	out := make([]bindings.ChatMessage, 0, len(hist))
	calls := map[string]bool{}
	for _, m := range hist {
		switch m.Role {
		case bindings.RoleUser:
			out = append(out, bindings.ChatMessage{Role: bindings.ChatUser, Content: m.Content})
		case bindings.RoleSystem:
			out = append(out, bindings.ChatMessage{Role: bindings.ChatSystem, Content: m.Content})
		case bindings.RoleAgent:
			var tcs []bindings.ToolCall
			for _, c := range m.ToolCalls {
				if answered[c.ID] {
					calls[c.ID] = true
					tcs = append(tcs, c)
				}
			}
			if len(tcs) == 0 && m.Content == "" {
				continue
			}
			out = append(out, bindings.ChatMessage{Role: bindings.ChatAssistant, Content: m.Content, ToolCalls: tcs})
		case bindings.RoleTool:
			if calls[m.ToolCallID] {
				out = append(out, bindings.ChatMessage{Role: bindings.ChatTool, Content: m.Content, ToolCallID: m.ToolCallID})
			}
		}
	}
	return out
}

// persistFinalMessage is the persist-final-message node: the response,
// stored after the guardrails passed.
func (r *run) persistFinalMessage(ctx context.Context) (string, error) {
	m, err := r.persist(ctx, NodePersistFinalMessage, NodePersistFinalMessage, bindings.AppendMessageInput{
		Role: bindings.RoleAgent, Content: r.final,
	}, func(ctx context.Context, m bindings.ConversationMessage) {
		r.emit(ctx, AgentMessageEvent{RunID: r.id, MessageID: m.ID, Content: m.Content})
	})
	if err != nil {
		return "", err
	}
	return m.ID, nil
}

// toolMeta is the metadata of a stored tool message: which tool build
// answered and how. The turn reads it back to tell whether a tool was used
// before in the conversation (ask_on_first_use).
type toolMeta struct {
	ToolID      string `json:"toolId"`
	ToolVersion string `json:"toolVersion,omitempty"`
	Status      string `json:"status"`
}

func (m toolMeta) raw() json.RawMessage {
	b, _ := json.Marshal(m)
	return b
}
