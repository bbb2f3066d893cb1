package turn

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"
	"unsafe"

	"github.com/kindgi/agents/bindings"
)

// jsonw appends the JSON of a value field by field, as encoding/json
// writes it, for the journaled types a turn writes on every drive (setup
// state, dispatch plan, initial messages, compose record, tool metadata,
// the snapshot's input): no reflection. ok turns false at the first value
// it leaves to encoding/json (see appendJSONString, appendJSONFloat,
// rawAsIs, and each encoder for the fields it does not write); the caller
// then drops what was appended and calls json.Marshal. Tests pin every
// encoder to json.Marshal byte for byte.
type jsonw struct {
	b  []byte
	ok bool
	// quoted, when set, is a long string quoted already (see quotedString).
	quoted *quotedString
}

// quotedString is a string of a drive's journal and its JSON as a step's
// output journaled it: the rendered prompt, which the system message of
// the initial messages holds again. A string equal to s (the same string,
// compared in O(1) when it is the same memory) is written as json.
type quotedString struct {
	s    string
	json []byte
}

// newJSONW writes into room (see roomFor), or a buffer of size bytes.
func newJSONW(room []byte, size int) jsonw { return jsonw{b: roomFor(room, size), ok: true} }

// lit appends s as it is (punctuation and field names).
func (w *jsonw) lit(s string) { w.b = append(w.b, s...) }

// str appends s as a JSON string.
func (w *jsonw) str(s string) {
	if q := w.quoted; q != nil && len(s) == len(q.s) && s == q.s {
		w.setB(append(w.b, q.json...))
		return
	}
	if w.ok {
		b, ok := appendJSONString(w.b, s)
		w.setB(b)
		w.ok = ok
	}
}

// setB makes b, w.b with bytes appended, w.b, writing only its length
// when the bytes went into w.b's room (they usually do: see roomFor). A
// jsonw is its encoder's local, but a method not inlined writes through a
// pointer the compiler cannot see is to the stack, so a slice header
// written whole pays a write barrier while a GC mark runs.
func (w *jsonw) setB(b []byte) {
	if unsafe.SliceData(b) == unsafe.SliceData(w.b) && cap(b) == cap(w.b) {
		w.b = w.b[:len(b)]
	} else {
		w.b = b
	}
}

// field appends `,"name":` (or `"name":` first in an object), then s.
func (w *jsonw) strField(name, s string) {
	w.lit(name)
	w.str(s)
}

func (w *jsonw) int(n int64) { w.b = strconv.AppendInt(w.b, n, 10) }

func (w *jsonw) bool(v bool) { w.b = strconv.AppendBool(w.b, v) }

func (w *jsonw) float(f float64) {
	if w.ok {
		w.b, w.ok = appendJSONFloat(w.b, f)
	}
}

// raw appends a json.RawMessage as json.Marshal does: nil is null; one it
// would compact or reject is left to it.
func (w *jsonw) raw(r json.RawMessage) {
	switch {
	case r == nil:
		w.lit("null")
	case w.ok && rawAsIs(r):
		w.setB(append(w.b, r...))
	default:
		w.ok = false
	}
}

// strs appends a []string: nil is null.
func (w *jsonw) strs(ss []string) {
	if ss == nil {
		w.lit("null")
		return
	}
	w.b = append(w.b, '[')
	for i, s := range ss {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.str(s)
	}
	w.b = append(w.b, ']')
}

// time appends t as time.Time's MarshalJSON does, for a UTC time in years
// 0–9999 (anything else is left to it).
func (w *jsonw) time(t time.Time) {
	w.b = append(w.b, '"')
	b, ok := appendTimeJSON(w.b, t)
	if !ok {
		w.ok = false
		return
	}
	w.setB(b)
	w.b = append(w.b, '"')
}

// done returns the bytes and whether every value was written.
func (w *jsonw) done() ([]byte, bool) { return w.b, w.ok }

// appendSetupJSON writes json.Marshal(*s). It leaves to encoding/json a
// tool with config, env, annotations or a gate, a policy with a HITL spec,
// and an effective HITL policy with tool gates or floors (none of them in
// the common turn).
func appendSetupJSON(room []byte, s *setupState) ([]byte, bool) {
	if !encSetup {
		return room, false
	}
	size := 768
	for i := range s.Tools {
		d := &s.Tools[i]
		size += 96 + len(d.ID) + len(d.Version) + len(d.Description) + len(d.InputSchema) + len(d.OutputSchema)
		for _, x := range d.Secrets {
			size += 3 + len(x)
		}
	}
	for i := range s.Guardrails {
		g := &s.Guardrails[i]
		size += 64 + len(g.ID) + len(g.Kind) + len(g.CheckID) + len(g.Action) + len(g.Config)
	}
	w := newJSONW(room, size)
	w.lit(`{"now":`)
	w.time(s.Now)
	w.lit(`,"turnNumber":`)
	w.int(int64(s.TurnNumber))
	w.lit(`,"tools":`)
	w.tools(s.Tools)
	w.lit(`,"guardrails":`)
	w.guardrails(s.Guardrails)
	w.lit(`,"policy":`)
	w.policy(&s.Policy)
	w.strField(`,"route":{"provider":`, s.Route.Provider)
	w.strField(`,"model":`, s.Route.Model)
	w.lit(`},"model":`)
	w.modelInfo(&s.Model)
	w.lit(`,"hitl":`)
	w.hitl(&s.Hitl)
	g := &s.SessionGate
	w.lit(`,"sessionGate":{"required":`)
	w.bool(g.Required)
	if g.AfterTurns != 0 {
		w.lit(`,"afterTurns":`)
		w.int(int64(g.AfterTurns))
	}
	w.lit(`,"turnNumber":`)
	w.int(int64(g.TurnNumber))
	if g.Reason != "" {
		w.strField(`,"reason":`, g.Reason)
	}
	c := &s.Budget
	w.lit(`},"budget":{"maxSteps":`)
	w.int(int64(c.MaxSteps))
	if c.MaxCostUsd != nil {
		w.lit(`,"maxCostUsd":`)
		w.float(*c.MaxCostUsd)
	}
	w.lit(`,"maxWallMs":`)
	w.int(c.MaxWallMs)
	if c.MaxToolCalls != 0 {
		w.lit(`,"maxToolCalls":`)
		w.int(int64(c.MaxToolCalls))
	}
	w.lit(`},"historyLimit":`)
	w.int(int64(s.HistoryLimit))
	w.lit(`}`)
	return w.done()
}

func (w *jsonw) tools(ts []bindings.ToolDescriptor) {
	if ts == nil {
		w.lit("null")
		return
	}
	w.lit("[")
	for i := range ts {
		d := &ts[i]
		if len(d.Env) > 0 || len(d.Config) > 0 || d.Annotations != nil || d.Gate != nil {
			w.ok = false
			return
		}
		if i > 0 {
			w.lit(",")
		}
		w.strField(`{"id":`, d.ID)
		w.strField(`,"version":`, d.Version)
		if d.Description != "" {
			w.strField(`,"description":`, d.Description)
		}
		if len(d.InputSchema) > 0 {
			w.lit(`,"inputSchema":`)
			w.raw(d.InputSchema)
		}
		if len(d.OutputSchema) > 0 {
			w.lit(`,"outputSchema":`)
			w.raw(d.OutputSchema)
		}
		if len(d.Secrets) > 0 {
			w.lit(`,"secrets":`)
			w.strs(d.Secrets)
		}
		w.lit("}")
	}
	w.lit("]")
}

func (w *jsonw) guardrails(gs []bindings.Guardrail) {
	if gs == nil {
		w.lit("null")
		return
	}
	w.lit("[")
	for i := range gs {
		g := &gs[i]
		if i > 0 {
			w.lit(",")
		}
		w.strField(`{"id":`, g.ID)
		w.strField(`,"kind":`, g.Kind)
		w.strField(`,"checkId":`, g.CheckID)
		w.strField(`,"action":`, g.Action)
		if len(g.Config) > 0 {
			w.lit(`,"config":`)
			w.raw(g.Config)
		}
		w.lit("}")
	}
	w.lit("]")
}

func (w *jsonw) policy(p *Policy) {
	if p.Hitl != nil {
		w.ok = false
		return
	}
	n := len(w.b)
	sep := func(name string) {
		if len(w.b) > n+1 {
			w.lit(",")
		}
		w.lit(name)
	}
	w.lit("{")
	if p.AllowProviders != nil {
		sep(`"allowProviders":`)
		w.strs(*p.AllowProviders)
	}
	if len(p.DenyProviders) > 0 {
		sep(`"denyProviders":`)
		w.strs(p.DenyProviders)
	}
	if p.AllowModels != nil {
		sep(`"allowModels":`)
		w.strs(*p.AllowModels)
	}
	if len(p.DenyModels) > 0 {
		sep(`"denyModels":`)
		w.strs(p.DenyModels)
	}
	if p.MaxCostUsd != nil {
		sep(`"maxCostUsd":`)
		w.float(*p.MaxCostUsd)
	}
	if p.MaxSteps != nil {
		sep(`"maxSteps":`)
		w.int(int64(*p.MaxSteps))
	}
	if p.MaxWallMs != nil {
		sep(`"maxWallMs":`)
		w.int(*p.MaxWallMs)
	}
	w.lit("}")
}

func (w *jsonw) modelInfo(m *bindings.ModelInfo) {
	w.strField(`{"id":`, m.ID)
	w.lit(`,"features":`)
	w.strs(m.Features)
	if m.ContextWindow != 0 {
		w.lit(`,"contextWindow":`)
		w.int(int64(m.ContextWindow))
	}
	if m.InputPricePerMTok != 0 {
		w.lit(`,"inputPricePerMTok":`)
		w.float(m.InputPricePerMTok)
	}
	if m.OutputPricePerMTok != 0 {
		w.lit(`,"outputPricePerMTok":`)
		w.float(m.OutputPricePerMTok)
	}
	w.lit("}")
}

func (w *jsonw) hitl(h *EffectiveHitlPolicy) {
	if h.ToolGates != nil || len(h.ToolFloors) > 0 {
		w.ok = false
		return
	}
	w.lit(`{"timeoutMs":`)
	w.int(h.TimeoutMs)
	w.strField(`,"reviewerRole":`, h.ReviewerRole)
	w.strField(`,"onTimeout":`, h.OnTimeout)
	if h.AfterTurns != nil {
		w.lit(`,"afterTurns":`)
		w.int(int64(*h.AfterTurns))
	}
	w.lit("}")
}

// appendPlansJSON writes json.Marshal(plans).
func appendPlansJSON(room []byte, plans []callPlan) ([]byte, bool) {
	if !encPlans {
		return room, false
	}
	if plans == nil {
		return append(roomFor(room, 4), "null"...), true
	}
	size := 2
	for i := range plans {
		p := &plans[i]
		size += 128 + len(p.ID) + len(p.Key) + len(p.ToolID) + len(p.ToolVersion) + len(p.Arguments) +
			len(p.Status) + len(p.Message) + len(p.ReviewerRole) + len(p.Reason)
	}
	w := newJSONW(room, size)
	w.lit("[")
	for i := range plans {
		p := &plans[i]
		if i > 0 {
			w.lit(",")
		}
		w.strField(`{"id":`, p.ID)
		w.strField(`,"key":`, p.Key)
		w.strField(`,"toolId":`, p.ToolID)
		if p.ToolVersion != "" {
			w.strField(`,"toolVersion":`, p.ToolVersion)
		}
		w.lit(`,"arguments":`)
		switch {
		case p.Arguments == nil:
			w.lit("null")
		case w.ok && rawAsIs(p.Arguments):
			w.setB(append(w.b, p.Arguments...))
		default:
			w.ok = false
		}
		w.strField(`,"action":`, p.Action)
		for _, f := range [...]struct{ name, v string }{
			{`,"status":`, p.Status}, {`,"message":`, p.Message}, {`,"reviewerRole":`, p.ReviewerRole}, {`,"reason":`, p.Reason},
		} {
			if f.v != "" {
				w.strField(f.name, f.v)
			}
		}
		w.lit("}")
	}
	w.lit("]")
	return w.done()
}

// appendChatMessagesJSON writes json.Marshal(msgs).
func appendChatMessagesJSON(room []byte, msgs []bindings.ChatMessage) ([]byte, bool) {
	return appendChatMessagesQuoted(room, msgs, nil)
}

// appendChatMessagesQuoted is appendChatMessagesJSON writing a content
// equal to quoted.s as quoted.json (quoted may be nil).
func appendChatMessagesQuoted(room []byte, msgs []bindings.ChatMessage, quoted *quotedString) ([]byte, bool) {
	if !encChat {
		return room, false
	}
	if msgs == nil {
		return append(roomFor(room, 4), "null"...), true
	}
	size := 2
	for i := range msgs {
		m := &msgs[i]
		size += 64 + len(m.Role) + len(m.Content) + len(m.ToolCallID)
		for j := range m.ToolCalls {
			size += 48 + len(m.ToolCalls[j].ID) + len(m.ToolCalls[j].Name) + len(m.ToolCalls[j].Arguments)
		}
	}
	w := newJSONW(room, size)
	w.quoted = quoted
	w.lit("[")
	for i := range msgs {
		m := &msgs[i]
		if i > 0 {
			w.lit(",")
		}
		w.strField(`{"role":`, string(m.Role))
		w.strField(`,"content":`, m.Content)
		if len(m.ToolCalls) > 0 && w.ok {
			w.lit(`,"toolCalls":`)
			w.b, w.ok = appendToolCallsJSON(w.b, m.ToolCalls)
		}
		if m.ToolCallID != "" {
			w.strField(`,"toolCallId":`, m.ToolCallID)
		}
		w.lit("}")
	}
	w.lit("]")
	return w.done()
}

// appendComposeJSON writes json.Marshal(*c).
func appendComposeJSON(room []byte, c *composeRecord) ([]byte, bool) {
	if !encCompose {
		return room, false
	}
	w := newJSONW(room, 40+len(c.Status)+len(c.MessageID))
	w.strField(`{"status":`, string(c.Status))
	if c.MessageID != "" {
		w.strField(`,"messageId":`, c.MessageID)
	}
	w.lit("}")
	return w.done()
}

// appendToolMetaJSON writes json.Marshal(m).
func appendToolMetaJSON(m *toolMeta) ([]byte, bool) {
	if !encToolMeta {
		return nil, false
	}
	w := newJSONW(nil, 48+len(m.ToolID)+len(m.ToolVersion)+len(m.Status))
	w.strField(`{"toolId":`, m.ToolID)
	if m.ToolVersion != "" {
		w.strField(`,"toolVersion":`, m.ToolVersion)
	}
	w.strField(`,"status":`, m.Status)
	w.lit("}")
	return w.done()
}

// appendStringJSON writes json.Marshal(s).
func appendStringJSON(room []byte, s string) ([]byte, bool) {
	return appendJSONString(roomFor(room, len(s)+2), s)
}

// appendInputJSON writes json.Marshal(in) for an input without parameters
// or model settings (and leaves those to encoding/json).
func appendInputJSON(in *Input) ([]byte, bool) {
	if !encInput || len(in.Parameters) > 0 || !in.ModelSettings.IsZero() {
		return nil, false
	}
	size := 128 + len(in.TenantID) + len(in.ProjectID) + len(in.ConversationID) + len(in.UserMessage) + len(in.ParticipantID) + len(in.RunID)
	if in.Principal != nil {
		size += 32 + len(in.Principal.ID)
		for _, r := range in.Principal.Roles {
			size += 3 + len(r)
		}
	}
	w := newJSONW(nil, size)
	w.strField(`{"tenantId":`, in.TenantID)
	if in.ProjectID != "" {
		w.strField(`,"projectId":`, in.ProjectID)
	}
	w.strField(`,"conversationId":`, in.ConversationID)
	w.strField(`,"userMessage":`, in.UserMessage)
	if in.ParticipantID != "" {
		w.strField(`,"participantId":`, in.ParticipantID)
	}
	if in.DryRun {
		w.lit(`,"dryRun":true`)
	}
	if p := in.Principal; p != nil {
		w.strField(`,"principal":{"id":`, p.ID)
		if len(p.Roles) > 0 {
			w.lit(`,"roles":`)
			w.strs(p.Roles)
		}
		w.lit("}")
	}
	if in.RunID != "" {
		w.strField(`,"runId":`, in.RunID)
	}
	w.lit("}")
	return w.done()
}

// storedInput is what json.Unmarshal decodes from appendInputJSON(in)'s
// bytes, when it wrote them: the same strings (appendJSONString writes
// only strings that read back as they are), no parameters or model
// settings, a principal of its own without empty roles, and no agent
// (which the JSON does not hold).
func storedInput(in *Input) Input {
	out := Input{
		TenantID: in.TenantID, ProjectID: in.ProjectID, ConversationID: in.ConversationID, UserMessage: in.UserMessage,
		ParticipantID: in.ParticipantID, DryRun: in.DryRun, RunID: in.RunID,
	}
	if p := in.Principal; p != nil {
		out.Principal = &bindings.Principal{ID: p.ID}
		if len(p.Roles) > 0 {
			out.Principal.Roles = slices.Clone(p.Roles)
		}
	}
	return out
}

// outArenaSize is the size of a drive's output arena: a turn with one
// tool call journals about 3.4 KB of outputs.
const outArenaSize = 4096

// encodeStep is encodeOutput for a step of r's drive, written into the
// drive's output arena: one buffer for the outputs of a drive instead of
// one (sized by a guess) for each. Each output is capped at its length
// and never written again during the drive, so the journal, and a store
// trusting the turn (trustedJournal), may keep it as it is; the next drive
// writes over the arena only when the store keeps copies (newOutArena).
func encodeStep[T any](r *run, out *T) ([]byte, error) {
	if cap(r.outArena)-len(r.outArena) < 512 {
		r.outArena = r.newOutArena()
	}
	start := len(r.outArena)
	room := r.outArena[start:start]
	var b []byte
	var err error
	if msgs, ok := any(out).(*[]bindings.ChatMessage); ok && r.quoted.json != nil {
		// The initial messages: the system message quotes the prompt
		// render-prompt journaled.
		var fast bool
		if b, fast = appendChatMessagesQuoted(room, *msgs, &r.quoted); !fast {
			b, err = appendOutput(room, out)
		}
	} else {
		b, err = appendOutput(room, out)
	}
	if err != nil {
		return nil, err
	}
	if len(b) <= cap(r.outArena)-start {
		r.outArena = append(r.outArena, b...) // in place, unless the encoder left it to encoding/json
		b = r.outArena[start:len(r.outArena):len(r.outArena)]
	} // else it outgrew the arena: a buffer of its own
	if s, ok := any(out).(*string); ok && len(*s) >= 64 && len(b) > 0 && b[0] == '"' {
		r.quoted = quotedString{s: *s, json: b}
	}
	return b, nil
}
