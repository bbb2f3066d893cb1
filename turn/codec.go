package turn

import (
	"slices"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/journalcodec"
	"github.com/kindgi/agents/turn/internal/drive"
)

// The journal's codec is internal/journalcodec, which writes and reads
// every step output, message and snapshot input as encoding/json does,
// byte for byte and value for value, without reflection on the hot path.
// The drive's output arena the bytes go into is turn/internal/drive's
// (drive.EncodeStep); what follows is the turn's side of it: what the
// turn knows of a value that the codec cannot (a tool's output it checked
// already, its inputs).

// encodeOutput is json.Marshal(out), the bytes a step's output is
// journaled as.
func encodeOutput[T any](out *T) ([]byte, error) {
	return journalcodec.Marshal(nil, out, encodeOptions(out))
}

// encodeOptions is what the turn knows of out that the codec cannot: a
// tool's output invokeTool checked already (toolResult.outputAsIs) is
// copied without checking it again (rawChecked). A concrete type
// assertion, which leaves out where it is (on the caller's stack).
func encodeOptions[T any](out *T) *journalcodec.Options {
	if v, ok := any(out).(*toolResult); ok && v.outputAsIs {
		return &rawChecked
	}
	return nil
}

// rawChecked is the codec's options for a tool output checked already.
var rawChecked = journalcodec.Options{RawChecked: true}

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

// encodeStep is encodeOutput for a step of r's drive, written into the
// drive's output arena (drive.EncodeStep), with what the turn knows of
// out (encodeOptions).
func encodeStep[T any](r *run, out *T) ([]byte, error) {
	return drive.EncodeStep(&r.Journal, out, encodeOptions(out))
}
