package turn

import (
	"slices"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/journalcodec"
)

// The journal's codec is internal/journalcodec, which writes and reads
// every step output, message and snapshot input as encoding/json does,
// byte for byte and value for value, without reflection on the hot path.
// What follows is the turn's side of it: what the turn knows of a value
// that the codec cannot (a tool's output it checked already, the prompt
// it quoted already), and the drive's output arena the bytes go into.

// encodeOutput is json.Marshal(out), the bytes a step's output is
// journaled as.
func encodeOutput[T any](out *T) ([]byte, error) { return appendOutput(nil, out) }

// appendOutput is encodeOutput writing into room when it is not nil (from
// its start, growing it as append does; see encodeStep), and into a buffer
// of its own otherwise.
func appendOutput[T any](room []byte, out *T) ([]byte, error) {
	return appendOutputWith(room, out, nil)
}

// appendOutputWith is appendOutput with what the turn knows of out: a
// tool's output invokeTool checked already (toolResult.outputAsIs) is
// copied without checking it again.
func appendOutputWith[T any](room []byte, out *T, o *journalcodec.Options) ([]byte, error) {
	if v, ok := any(out).(*toolResult); ok && v.outputAsIs && o == nil {
		return journalcodec.Marshal(room, out, &journalcodec.Options{RawChecked: true})
	}
	return journalcodec.Marshal(room, out, o)
}

// appendToolMetaJSON writes json.Marshal(m).
func appendToolMetaJSON(m *toolMeta) ([]byte, bool) {
	return journalcodec.Append(make([]byte, 0, 48+len(m.ToolID)+len(m.ToolVersion)+len(m.Status)), m, nil)
}

// appendInputJSON writes json.Marshal(in) for an input without parameters
// or model settings (and leaves those to encoding/json), so that
// storedInput is what decoding it gives.
func appendInputJSON(in *Input) ([]byte, bool) {
	if len(in.Parameters) > 0 || !in.ModelSettings.IsZero() {
		return nil, false
	}
	size := 128 + len(in.TenantID) + len(in.ProjectID) + len(in.ConversationID) + len(in.UserMessage) + len(in.ParticipantID) + len(in.RunID)
	if in.Principal != nil {
		size += 32 + len(in.Principal.ID)
		for _, r := range in.Principal.Roles {
			size += 3 + len(r)
		}
	}
	return journalcodec.Append(make([]byte, 0, size), in, nil)
}

// quotedString is a string of a drive's journal and its JSON as a step's
// output journaled it: the rendered prompt, which the system message of
// the initial messages holds again. A string equal to s (the same string,
// compared in O(1) when it is the same memory) is written as json.
type quotedString struct {
	s    string
	json []byte
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
	if _, ok := any(out).(*[]bindings.ChatMessage); ok && r.quoted.json != nil {
		// The initial messages: the system message quotes the prompt
		// render-prompt journaled.
		b, err = appendOutputWith(room, out, &journalcodec.Options{Quoted: r.quoted.s, QuotedJSON: r.quoted.json})
	} else {
		b, err = appendOutput(room, out)
	}
	if err != nil {
		return nil, err
	}
	switch {
	case len(b) > 0 && &b[0] == &r.outArena[:start+1][start]:
		// Written in place: the arena only grows over it.
		r.outArena = r.outArena[:start+len(b)]
		b = r.outArena[start:len(r.outArena):len(r.outArena)]
	case len(b) <= cap(r.outArena)-start:
		// The encoder left it to encoding/json: copied in.
		r.outArena = append(r.outArena, b...)
		b = r.outArena[start:len(r.outArena):len(r.outArena)]
	} // else it outgrew the arena: a buffer of its own
	if s, ok := any(out).(*string); ok && len(*s) >= 64 && len(b) > 0 && b[0] == '"' {
		r.quoted = quotedString{s: *s, json: b}
	}
	return b, nil
}
