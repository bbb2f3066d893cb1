package turn

import (
	"context"
	"encoding/json"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/prompt"
	"github.com/kindgi/agents/turn/internal/chatlog"
	"github.com/kindgi/agents/turn/internal/drive"
)

// renderPrompt is the render-prompt node: the agent's instructions,
// rendered strictly with the journaled time and turn number.
func (r *run) renderPrompt(ctx context.Context) error {
	if st := r.Key(NodeRenderPrompt); st != nil && st.Result != 0 && r.At(st.Result).Status == bindings.StepCompleted {
		// Replayed: decoded when it is read (loadPrompt).
		r.lazyPrompt = r.At(st.Result)
		if r.logger != nil {
			r.logReplayed(ctx, NodeRenderPrompt, NodeRenderPrompt, string(r.At(st.Result).Status))
		}
		return nil
	}
	text, err := decide(ctx, r, NodeRenderPrompt, NodeRenderPrompt, func(ctx context.Context, _ string) (string, error) {
		return r.renderInstructions(ctx, &r.in.Agent)
	})
	r.prompt = text
	return err
}

// renderInstructions renders agent a's instructions strictly with the
// turn's parameters (a's defaults for those it lacks; missing-parameter
// for a required one without), the journaled time and turn number.
func (r *run) renderInstructions(ctx context.Context, a *agent.Agent) (string, error) {
	text, err := prompt.RenderText(ctx, *a, prompt.Context{
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
	return text, nil
}

// messageID is the deterministic id of the message a step stores, so a
// retried append stores nothing twice (see derivedID).
func (r *run) messageID(key string) string { return r.DerivedID(key) }

// persist stores one message of the turn as step key (nothing in a dry
// run) and folds it into Result.Appended.
//
// after, when set, runs only when the step itself runs (not on replay): it
// emits the events of the message.
func (r *run) persist(ctx context.Context, key, node string, in bindings.AppendMessageInput, after func(context.Context, bindings.ConversationMessage)) (bindings.ConversationMessage, error) {
	// The append is idempotent by the message's deterministic id, so the
	// step needs no started entry: a retry stores nothing twice.
	m, err := drive.Step(ctx, &r.Journal, key, node, drive.Message, func(ctx context.Context, requestID string) (bindings.ConversationMessage, error) {
		in.TenantID = r.tenantID
		in.ConversationID = r.in.ConversationID
		in.ID = requestID // drive.Step passes r.messageID(key)
		in.TurnNumber = r.s.TurnNumber
		in.RunID = r.id
		var m bindings.ConversationMessage
		if r.in.DryRun {
			m = chatlog.Stored(&in, "")
		} else {
			deferred, err := r.deferMessage(ctx, key, node, after)
			if err != nil {
				return m, err
			}
			if deferred {
				// Stored with the next write; its events follow it.
				return chatlog.Stored(&in, in.ID), nil
			}
			// The message may depend on results still buffered: they are
			// stored first (in the same call when the store can).
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
		drive.AppendMessage(&r.appended, &m)
	}
	return m, err
}

// persistUserMessage is the persist-user-message node.
func (r *run) persistUserMessage(ctx context.Context) error {
	r.wantHistory = true // the history read after it may ride with its append (see history)
	m, err := r.persist(ctx, NodePersistUserMessage, NodePersistUserMessage, bindings.AppendMessageInput{
		Role: bindings.RoleUser, Content: r.in.UserMessage, ParticipantID: r.in.ParticipantID,
	}, nil)
	r.wantHistory = false
	copyMessage(&r.userMsg, &m) // deferred: as it will be stored (writeDeferred sets it then)
	return err
}

// buildInitialMessages is the build-initial-messages node: the system
// prompt with the retrieved facts, the last historyLimit messages before
// this turn (read with that limit: never the whole conversation), and the
// user message.
func (r *run) buildInitialMessages(ctx context.Context) error {
	if st := r.Key(NodeBuildInitialMessages); st != nil && st.Result != 0 && r.At(st.Result).Status == bindings.StepCompleted {
		// Replayed: decoded when a step first runs (loadMessages).
		r.lazyMessages = r.At(st.Result)
		if r.logger != nil {
			r.logReplayed(ctx, NodeBuildInitialMessages, NodeBuildInitialMessages, string(r.At(st.Result).Status))
		}
		return nil
	}
	msgs, err := decide(ctx, r, NodeBuildInitialMessages, NodeBuildInitialMessages, func(ctx context.Context, _ string) ([]bindings.ChatMessage, error) {
		if err := r.loadPrompt(); err != nil {
			return nil, err
		}
		var hist []bindings.ConversationMessage
		if r.s.HistoryLimit > 0 {
			var err error
			if hist, err = r.history(ctx); err != nil {
				return nil, err
			}
		}
		return r.initialMessages(hist), nil
	})
	r.messages = msgs
	return err
}

// initialMessages is build-initial-messages' result from the history
// before the user message: the system prompt (loaded) with the retrieved
// facts, the history, the user message.
func (r *run) initialMessages(hist []bindings.ConversationMessage) []bindings.ChatMessage {
	out := make([]bindings.ChatMessage, 1, len(hist)+5) // room for a tool call's three messages
	out[0] = bindings.ChatMessage{Role: bindings.ChatSystem, Content: r.systemMessage(r.prompt)}
	out = chatlog.AppendHistory(out, hist)
	return append(out, bindings.ChatMessage{Role: bindings.ChatUser, Content: r.in.UserMessage})
}

// systemMessage is the system message of prompt: the prompt, then the
// turn's retrieved facts, if any (the agent's and a handoff target's alike).
func (r *run) systemMessage(prompt string) string {
	if section := FormatRetrievedForPrompt(r.retrieved); section != "" {
		return prompt + "\n\n" + section
	}
	return prompt
}

// persistFinalMessage is the persist-final-message node: the response,
// stored after the guardrails passed.
func (r *run) persistFinalMessage(ctx context.Context) (string, error) {
	m, err := r.persist(ctx, NodePersistFinalMessage, NodePersistFinalMessage, bindings.AppendMessageInput{
		Role: bindings.RoleAgent, Content: r.final, Metadata: r.answererMeta(),
	}, func(ctx context.Context, m bindings.ConversationMessage) {
		emit(r, ctx, AgentMessageEvent{RunID: r.id, MessageID: m.ID, Content: m.Content})
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
	if b, ok := appendToolMetaJSON(&m); ok {
		return b
	}
	b, _ := json.Marshal(m)
	return b
}

// copyMessage makes *dst a copy of *src field by field: a message copied
// whole into the run's memory pays the runtime's bulk write barrier for its
// eleven pointer words while a GC mark runs, several times dearer a word
// than the compiler's inline barrier of a field. TestCopyMessageCopiesEveryField
// fails when a field of bindings.ConversationMessage is left out here.
func copyMessage(dst, src *bindings.ConversationMessage) { drive.CopyMessage(dst, src) }
