package drive

import (
	"encoding/json"
	"fmt"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/journalcodec"
)

// The journal's codec is internal/journalcodec, which writes and reads
// every step output, message and snapshot input as encoding/json does,
// byte for byte and value for value, without reflection on the hot path.
// What follows is the drive's side of it: the output arena the bytes go
// into, and the decoding of a step's outcome, in place when the bytes are
// the journal read for the drive (Journal.InPlace).

// quotedString is a string of a drive's journal and its JSON as a step's
// output journaled it: the rendered prompt, which the system message of
// the initial messages holds again. A string equal to s (the same string,
// compared in O(1) when it is the same memory) is written as json.
type quotedString struct {
	s    string
	json []byte
}

// EncodeStep is json.Marshal(out) (journalcodec.Marshal with o) for a
// step of j's drive, written into the drive's output arena: one buffer for
// the outputs of a drive instead of one (sized by a guess) for each. Each
// output is capped at its length and never written again during the
// drive, so the journal, and a store trusting the turn, may keep it as it
// is; the next drive writes over the arena only when the store keeps
// copies (newOutArena). The initial messages, with o nil, quote the
// prompt as render-prompt journaled it.
func EncodeStep[T any](j *Journal, out *T, o *journalcodec.Options) ([]byte, error) {
	if cap(j.outArena)-len(j.outArena) < 512 {
		j.outArena = j.newOutArena()
	}
	start := len(j.outArena)
	room := j.outArena[start:start]
	if _, ok := any(out).(*[]bindings.ChatMessage); ok && j.quoted.json != nil && o == nil {
		// The initial messages: the system message quotes the prompt
		// render-prompt journaled.
		o = &journalcodec.Options{Quoted: j.quoted.s, QuotedJSON: j.quoted.json}
	}
	b, err := journalcodec.Marshal(room, out, o)
	if err != nil {
		return nil, err
	}
	switch {
	case len(b) > 0 && &b[0] == &j.outArena[:start+1][start]:
		// Written in place: the arena only grows over it.
		j.outArena = j.outArena[:start+len(b)]
		b = j.outArena[start:len(j.outArena):len(j.outArena)]
	case len(b) <= cap(j.outArena)-start:
		// The encoder left it to encoding/json: copied in.
		j.outArena = append(j.outArena, b...)
		b = j.outArena[start:len(j.outArena):len(j.outArena)]
	} // else it outgrew the arena: a buffer of its own
	if s, ok := any(out).(*string); ok && len(*s) >= 64 && len(b) > 0 && b[0] == '"' {
		j.quoted = quotedString{s: *s, json: b}
	}
	return b, nil
}

// Journaled returns raw as the journal stores it: encoding/json compacts
// (and HTML-escapes) a json.RawMessage it encodes. A step's output is used
// in this form on the drive that produced it too, so a replay sees the very
// same bytes.
func Journaled(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || !journalcodec.NeedsCompact(raw) {
		// Nothing to remove or escape: the encoder would copy raw as it
		// is (or, were it not JSON, fail and leave raw as it is).
		return raw
	}
	out, err := json.Marshal(raw)
	if err != nil {
		return raw
	}
	return out
}

// UnmarshalIn is json.Unmarshal(raw, out) for a zero *out, through the
// journal codec; shared says no one ever writes raw's bytes
// (Journal.InPlace): the codec reads them in place, and the strings it
// returns share them.
func UnmarshalIn[T any](raw []byte, out *T, shared bool) error {
	return journalcodec.Unmarshal(raw, out, shared)
}

// DecodeResult returns the outcome a result entry recorded.
func DecodeResult[T any](e *bindings.JournalEntry) (T, error) { return DecodeOutcome[T](e, false) }

// DecodeOutcome is DecodeResult; shared says no one ever writes e's output
// (Journal.InPlace), which is then decoded in place (UnmarshalIn).
func DecodeOutcome[T any](e *bindings.JournalEntry, shared bool) (T, error) {
	var out T
	err := DecodeOutcomeInto(e, shared, &out)
	return out, err
}

// DecodeOutcomeInto is DecodeOutcome into *out, which is zero: the
// decoders write its fields in place.
func DecodeOutcomeInto[T any](e *bindings.JournalEntry, shared bool, out *T) error {
	if e.Status == bindings.StepFailed {
		return DecodeFailure(e)
	}
	if len(e.Output) > 0 {
		if err := UnmarshalIn(e.Output, out, shared); err != nil {
			return &agents.RunJournalUnavailableError{Err: fmt.Errorf("decode step %s: %w", e.Key, err)}
		}
	}
	return nil
}

// PredecodeResult decodes the completed result of key into out, in place
// when the bytes are the journal read for the drive, and hands that
// decode to key's replay (Predecode), which then takes it instead of
// decoding the output again: ok is false when key has no completed
// result. A result that does not decode is run-journal-unavailable.
func PredecodeResult[T any](j *Journal, key string, out *T) (ok bool, err error) {
	st := j.Key(key)
	if st == nil || st.Result == 0 || j.At(st.Result).Status != bindings.StepCompleted {
		return false, nil
	}
	e := j.At(st.Result)
	if err := DecodeOutcomeInto(e, j.InPlace(e), out); err != nil {
		return false, &agents.RunJournalUnavailableError{RunID: j.runID, Err: err}
	}
	j.Predecode(key, out)
	return true, nil
}
