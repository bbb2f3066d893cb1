package pgstore

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/storeio"
)

// sqlMessageStep is one call of kindgi_message_step (the baseline migration, its
// body written out by 0009): the entries before the message, the message,
// and the message step's entry with the entries after it, in one
// statement.
const sqlMessageStep = `SELECT o_part, o_ord, o_seq, o_appended, o_node, o_status, o_output, o_error, o_at,
	m_status, m_turn_count, m_id, m_seq, m_role, m_content, m_tool_calls, m_tool_call_id, m_turn_number, m_run_id,
	m_metadata, m_created_at, m_participant_id, m_appended
	FROM kindgi_message_step($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
	$21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32)`

// seqField is where a message's encoding, with Seq 0, holds its seq: the
// first `"seq":0` of it is the field itself (a string cannot hold an
// unescaped quote, and the fields before it are strings).
var seqField = []byte(`"seq":0`)

// seqFieldText is seqField as a text envelope holds it (a document jsonb
// refuses, such as a message holding NUL, is stored as its JSON text:
// see Wrap): the digits of a seq need no escaping in a JSON string, so
// the store splices them in there alike.
var seqFieldText = []byte(`\"seq\":0`)

// splitSeq cuts a wrapped message step's output around the 0 of its seq
// field, in a document envelope or in a text envelope: the first `"seq":0`
// of the document, or the first `\"seq\":0` of its text, is the field
// itself (a string of the document holds a quote only escaped, and in a
// text envelope escaped again), and the field is followed by ',' or '}'
// (escaped or not, a field's end is one of them). ok is false when there
// is no such field.
func splitSeq(wrapped string) (prefix, suffix string, ok bool) {
	for _, field := range [...][]byte{seqField, seqFieldText} {
		cut := strings.Index(wrapped, string(field)) // no copy of wrapped
		if cut < 0 {
			continue
		}
		end := cut + len(field)
		if end >= len(wrapped) || (wrapped[end] != ',' && wrapped[end] != '}') {
			return "", "", false
		}
		return wrapped[:end-1], wrapped[end:], true
	}
	return "", "", false
}

// appendMessageStep is AppendMessageStep, with the statements of pre (when
// set) before its own in the same round trip and transaction (kindgi_expect_messages for CheckCount); trusted skips the checks a Trusted Commit
// caller vouches for.
func (s *Store) appendMessageStep(ctx context.Context, in storeio.MessageStepInput, pre *batchExtra, trusted bool) (storeio.MessageStepResult, error) {
	steps := in.Steps
	if in.Message.TenantID != steps.TenantID {
		return storeio.MessageStepResult{}, invalid("the entries and the message are of different tenants")
	}
	switch in.Finish {
	case "", bindings.RunRunning, bindings.RunSuspended, bindings.RunCompleted, bindings.RunFailed:
	default:
		return storeio.MessageStepResult{}, invalid("unknown run status " + string(in.Finish))
	}
	switch {
	case steps.TenantID == "":
		return storeio.MessageStepResult{}, invalid("tenant id is empty")
	case steps.RunID == "":
		return storeio.MessageStepResult{}, invalid("run id is empty")
	}
	if !trusted {
		if err := firstErr(bindings.CheckID("tenant id", steps.TenantID), bindings.CheckID("run id", steps.RunID),
			bindings.CheckOptionalID("lease owner", steps.Owner)); err != nil {
			return storeio.MessageStepResult{}, err
		}
	}
	row, err := s.prepareMessage(in.Message, trusted)
	if err != nil {
		return storeio.MessageStepResult{}, err
	}
	if in.StepIndex < 0 || in.StepIndex >= len(steps.Entries) {
		return storeio.MessageStepResult{}, invalid("message step index " + strconv.Itoa(in.StepIndex) + " of " + strconv.Itoa(len(steps.Entries)) + " entries")
	}
	head := steps.Entries[:in.StepIndex]
	stepKey := steps.Entries[in.StepIndex].Key
	encode := in.Encode
	if encode == nil {
		encode = bindings.EncodeMessageStep
	}
	ma := &messageAppend{in: row.in, at: row.at}
	provisional := ma.appended(row.id, 0)
	enc, err := encode(provisional)
	if err != nil {
		return storeio.MessageStepResult{}, invalid("encode message step " + stepKey + ": " + err.Error())
	}
	// The entries from the step's on, with its output: a copy, or for a
	// a Trusted Commit caller its own entries, updated in place.
	tail := steps.Entries[in.StepIndex:]
	if !trusted {
		tail = append([]bindings.JournalEntry(nil), tail...)
	}
	tail[0].Output = enc
	beforeArgs, err := s.prepareSteps(head, trusted)
	if err != nil {
		return storeio.MessageStepResult{}, err
	}
	tailArgs, err := s.prepareSteps(tail, trusted)
	if err != nil {
		return storeio.MessageStepResult{}, err
	}
	prefix, suffix, ok := splitSeq(tailArgs.outputs[0])
	if !ok {
		return storeio.MessageStepResult{}, invalid("encode message step " + stepKey + ": no seq field")
	}
	now := s.stamp(time.Time{})
	var finish *string
	if in.Finish != "" {
		f := string(in.Finish)
		finish = &f
	}
	before := newStepRows(head, beforeArgs, trusted)
	after := newStepRows(tail, tailArgs, trusted)
	in0 := row.in
	ba, ta := &beforeArgs, &tailArgs
	err = s.send(ctx, "append message step", func(b *pgx.Batch) {
		pre.queue(b)
		b.Queue(sqlMessageStep, steps.TenantID, steps.RunID, steps.Owner, now,
			ba.keysArg(), ba.phasesArg(), ba.nodesArg(), ba.statusesArg(), ba.outputsArg(), ba.errorsArg(), ba.atsArg(),
			in0.ConversationID, row.id, string(in0.Role), encodeText(in0.Content), textArg(row.toolCalls), in0.ToolCallID,
			in0.TurnNumber, in0.RunID, textArg(row.metadata), row.at, in0.ParticipantID,
			prefix, suffix,
			ta.keysArg(), ta.phasesArg(), ta.nodesArg(), ta.statusesArg(), ta.outputsArg(), ta.errorsArg(), ta.atsArg(), finish)
	}, func(br pgx.BatchResults) error {
		if err := pre.read(br); err != nil {
			return err
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		defer rows.Close()
		// One row's destinations for all rows: scan and decode set every
		// field on every row, so nothing carries over from the row before.
		r := new(messageStepRow)
		fast := rawColumns(rows.FieldDescriptions(), messageStepKinds[:])
		for rows.Next() {
			if !fast || !r.decode(rows.RawValues()) {
				if err := r.scan(rows); err != nil {
					return err
				}
			}
			var ord int32
			if r.ord != nil {
				ord = *r.ord
			}
			part, seq, app, node, stepStatus, output, stepErr, at := r.part, r.seq, r.app, r.node, r.stepStatus, r.output, r.stepErr, r.at
			switch part {
			case 1:
				err = before.row(ord, seq, app, node, stepStatus, output, stepErr, at)
			case 2:
				err = ma.fill(r.mStatus, r.mTurnCount, r.mID, r.mSeq, r.mRole, r.mContent, r.mToolCalls, r.mMeta, r.mToolCallID, r.mRun, r.mCreated, r.mPart, r.mTurn, r.mAppended)
			case 3:
				err = after.row(ord, seq, app, node, stepStatus, output, stepErr, at)
			default:
				err = fmt.Errorf("kindgi_message_step returned part %d", part)
			}
			if err != nil {
				return err
			}
		}
		return rows.Err()
	})
	if err != nil {
		return storeio.MessageStepResult{}, err
	}
	if err := before.check("append message step", steps.RunID, steps.Owner, now); err != nil {
		return storeio.MessageStepResult{}, err
	}
	m, err := ma.result()
	if err != nil {
		return storeio.MessageStepResult{Entries: before.out, Appended: before.appended}, err
	}
	var out []bindings.JournalEntry
	var appended []bool
	if after.exists {
		// The message is this call's: the step's entry holds it with its seq.
		if err := after.check("append message step", steps.RunID, steps.Owner, now); err != nil {
			return storeio.MessageStepResult{Entries: before.out, Appended: before.appended, Message: m}, err
		}
		out, appended = after.out, after.appended
		if appended[0] {
			seq := strconv.FormatInt(m.Seq, 10)
			doc := make([]byte, 0, len(enc)+len(seq))
			at := bytes.Index(enc, seqField) + len(seqField) - 1
			doc = append(append(append(doc, enc[:at]...), seq...), enc[at+1:]...)
			out[0].Output = tailArgs.output(0, doc) // doc is enc with digits in place of the 0
		}
	} else {
		// The message was stored before: its step is written from it.
		if enc, err = encode(m); err != nil {
			return storeio.MessageStepResult{Entries: before.out, Appended: before.appended, Message: m}, invalid("encode message step " + stepKey + ": " + err.Error())
		}
		tail[0].Output = enc
		out, appended, err = s.appendSteps(ctx, "append message step", storeio.AppendStepsInput{
			TenantID: steps.TenantID, RunID: steps.RunID, Owner: steps.Owner, Entries: tail}, in.Finish, nil, trusted)
		if err != nil {
			return storeio.MessageStepResult{Entries: before.out, Appended: before.appended, Message: m}, err
		}
	}
	res := storeio.MessageStepResult{Message: m, Entries: steps.Entries, // trusted: updated in place
		Appended: append(append(make([]bool, 0, len(before.out)+len(out)), before.appended...), appended...)}
	if !trusted {
		res.Entries = append(append(make([]bindings.JournalEntry, 0, len(before.out)+len(out)), before.out...), out...)
	}
	return res, nil
}
