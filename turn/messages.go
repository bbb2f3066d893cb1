package turn

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/prompt"
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
			m = bindings.ConversationMessage{
				TenantID: in.TenantID, ConversationID: in.ConversationID, Role: in.Role, Content: in.Content,
				ToolCalls: in.ToolCalls, ToolCallID: in.ToolCallID, TurnNumber: in.TurnNumber, RunID: in.RunID,
				ParticipantID: in.ParticipantID, Metadata: in.Metadata,
			}
		} else {
			deferred, err := r.deferMessage(ctx, key, node, after)
			if err != nil {
				return m, err
			}
			if deferred {
				// Stored with the next write; its events follow it.
				return bindings.ConversationMessage{
					TenantID: in.TenantID, ConversationID: in.ConversationID, ID: in.ID, Role: in.Role, Content: in.Content,
					ToolCalls: in.ToolCalls, ToolCallID: in.ToolCallID, TurnNumber: in.TurnNumber, RunID: in.RunID,
					ParticipantID: in.ParticipantID, Metadata: in.Metadata,
				}, nil
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
		if r.appended == nil {
			r.appended = make([]bindings.ConversationMessage, 0, 4) // a turn with one tool call stores 4
		}
		n := len(r.appended)
		if n == cap(r.appended) {
			r.appended = append(r.appended, bindings.ConversationMessage{})
		} else {
			r.appended = r.appended[:n+1]
		}
		copyMessage(&r.appended[n], &m)
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
	system := r.prompt
	if section := FormatRetrievedForPrompt(r.retrieved); section != "" {
		system += "\n\n" + section
	}
	out := make([]bindings.ChatMessage, 1, len(hist)+5) // room for a tool call's three messages
	out[0] = bindings.ChatMessage{Role: bindings.ChatSystem, Content: system}
	out = appendHistory(out, hist)
	return append(out, bindings.ChatMessage{Role: bindings.ChatUser, Content: r.in.UserMessage})
}

// appendHistory appends stored messages to out as model messages, made well
// formed (wellFormed): a tool result whose call fell outside the window,
// and a call of an earlier turn that never got its result (that turn
// failed, was cancelled or halted mid-way), are left out.
//
// The messages are appended to out itself, and fixed there when they are
// not well formed.
func appendHistory(out []bindings.ChatMessage, hist []bindings.ConversationMessage) []bindings.ChatMessage {
	n := len(out)
	out = appendChatMessages(out, hist)
	if isWellFormed(out[n:]) {
		return out
	}
	fixed := fixWellFormed(out[n:])
	return append(out[:n], fixed...) // fixed is no longer than what it replaces
}

// appendChatMessages appends the stored messages hist to out as model
// messages, as they are.
func appendChatMessages(out []bindings.ChatMessage, hist []bindings.ConversationMessage) []bindings.ChatMessage {
	for _, m := range hist {
		switch m.Role {
		case bindings.RoleUser:
			out = append(out, bindings.ChatMessage{Role: bindings.ChatUser, Content: m.Content})
		case bindings.RoleSystem:
			out = append(out, bindings.ChatMessage{Role: bindings.ChatSystem, Content: m.Content})
		case bindings.RoleAgent:
			out = append(out, bindings.ChatMessage{Role: bindings.ChatAssistant, Content: m.Content, ToolCalls: m.ToolCalls})
		case bindings.RoleTool:
			out = append(out, bindings.ChatMessage{Role: bindings.ChatTool, Content: m.Content, ToolCallID: m.ToolCallID})
		}
	}
	return out
}

// wellFormed returns msgs as model APIs (Chat Completions, Anthropic)
// accept them, which is msgs itself when it already is:
//
//   - every tool call of an assistant message is answered by a tool
//     message among those right after it (before the next message of
//     another role); a call with no answer there is left out, and so is
//     an assistant message left with neither calls nor text;
//   - every tool message answers a call of the assistant message it
//     follows; one that answers none (its call fell outside the history
//     window, or was answered already) is left out;
//   - tool call ids are unique within msgs: a call whose id an answered
//     call of a later assistant message also has (a provider that gives
//     no ids gets call-1-1 in every turn) is renamed, with its answer, to
//     "call-h<message>-<position>" ("x" appended while that is taken), so
//     the latest calls keep the ids the model gave them.
//
// Matching is per assistant message, so per turn and per loop iteration:
// an answer never pairs with a call of another turn.
func wellFormed(msgs []bindings.ChatMessage) []bindings.ChatMessage {
	if isWellFormed(msgs) {
		return msgs
	}
	return fixWellFormed(msgs)
}

// fixWellFormed is wellFormed of msgs that are not well formed: a new
// slice.
func fixWellFormed(msgs []bindings.ChatMessage) []bindings.ChatMessage {
	// A group is an assistant message with calls and its answers: out[at]
	// and out[answerAt[first+j]] answering its call j.
	type group struct{ at, first int }
	out := make([]bindings.ChatMessage, 0, len(msgs))
	var groups []group
	var answerAt []int
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		switch {
		case m.Role == bindings.ChatTool:
			continue // answers no call of the message it follows
		case m.Role != bindings.ChatAssistant || len(m.ToolCalls) == 0:
			out = append(out, m)
			continue
		}
		end := i + 1
		for end < len(msgs) && msgs[end].Role == bindings.ChatTool {
			end++
		}
		// A call is kept when it is the first of its id and an answer
		// follows; its answer is the first with its id.
		orig := m.ToolCalls
		answer := func(j int) int {
			c := orig[j]
			for _, k := range orig[:j] {
				if k.ID == c.ID {
					return -1 // a second call with the id: its answer is the first's
				}
			}
			for k := i + 1; k < end; k++ {
				if msgs[k].ToolCallID == c.ID {
					return k
				}
			}
			return -1
		}
		kept := 0
		for j := range orig {
			if answer(j) >= 0 {
				kept++
			}
		}
		if kept == 0 {
			if m.Content != "" {
				out = append(out, bindings.ChatMessage{Role: m.Role, Content: m.Content})
			}
			i = end - 1
			continue
		}
		if kept < len(m.ToolCalls) {
			calls := make([]bindings.ToolCall, 0, kept)
			for j, c := range orig {
				if answer(j) >= 0 {
					calls = append(calls, c)
				}
			}
			m.ToolCalls = calls
		} // else all are kept: the slice is shared, and cloned before a rename
		if groups == nil {
			groups, answerAt = make([]group, 0, len(msgs)/2), make([]int, 0, len(msgs)/2)
		}
		groups = append(groups, group{at: len(out), first: len(answerAt)})
		out = append(out, m)
		for j := range orig {
			if k := answer(j); k >= 0 {
				answerAt = append(answerAt, len(out))
				out = append(out, msgs[k])
			}
		}
		i = end - 1
	}
	// The ids of the kept calls, and those assigned, latest first.
	var taken, assigned idSet
	taken.init(len(answerAt))
	assigned.init(len(answerAt))
	for _, g := range groups {
		for _, c := range out[g.at].ToolCalls {
			taken.add(c.ID)
		}
	}
	for gi := len(groups) - 1; gi >= 0; gi-- {
		g := groups[gi]
		calls := out[g.at].ToolCalls
		renamed := false
		for j, c := range calls {
			if !assigned.has(c.ID) {
				assigned.add(c.ID)
				continue
			}
			id := "call-h" + strconv.Itoa(gi+1) + "-" + strconv.Itoa(j+1)
			for taken.has(id) || assigned.has(id) {
				id += "x"
			}
			assigned.add(id)
			if !renamed {
				calls = slices.Clone(calls)
				renamed = true
			}
			calls[j].ID = id
			// The answers follow the calls' order (see above).
			out[answerAt[g.first+j]].ToolCallID = id
		}
		out[g.at].ToolCalls = calls
	}
	return out
}

// idSet is a set of call ids: a list while it is short (a history
// window's calls mostly are), a map past idSetScan.
type idSet struct {
	list []string
	m    map[string]bool
}

// idSetScan is the most ids an idSet scans.
const idSetScan = 32

// init makes room for n ids.
func (s *idSet) init(n int) {
	if n > idSetScan {
		s.m = make(map[string]bool, n)
	} else {
		s.list = make([]string, 0, n)
	}
}

func (s *idSet) add(id string) {
	switch {
	case s.m != nil:
		s.m[id] = true
	case len(s.list) == idSetScan:
		s.m = make(map[string]bool, 2*idSetScan)
		for _, k := range s.list {
			s.m[k] = true
		}
		s.m[id] = true
	default:
		s.list = append(s.list, id)
	}
}

func (s *idSet) has(id string) bool {
	if s.m != nil {
		return s.m[id]
	}
	return slices.Contains(s.list, id)
}

// isWellFormed reports whether msgs already meets wellFormed's rules.
func isWellFormed(msgs []bindings.ChatMessage) bool {
	const scan = 16 // ids checked by scanning up to this many
	var idBuf [scan]string
	ids := idBuf[:0] // every call id so far, until seen holds them
	var seen map[string]bool
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role == bindings.ChatTool {
			return false // not right after its call's message
		}
		if m.Role != bindings.ChatAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		end := i + 1
		for end < len(msgs) && msgs[end].Role == bindings.ChatTool {
			end++
		}
		if end-(i+1) != len(m.ToolCalls) {
			return false
		}
		for j, c := range m.ToolCalls {
			if msgs[i+1+j].ToolCallID != c.ID {
				return false // answers in the calls' order, one each
			}
			if seen == nil && len(ids) == scan {
				seen = make(map[string]bool, 2*scan)
				for _, id := range ids {
					seen[id] = true
				}
			}
			if seen != nil {
				if seen[c.ID] {
					return false
				}
				seen[c.ID] = true
				continue
			}
			if slices.Contains(ids, c.ID) {
				return false
			}
			ids = append(ids, c.ID)
		}
		i = end - 1
	}
	return true
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
