package pgstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/storeio"
)

// appendStepsAndMessage is AppendStepsAndMessage; trusted skips the checks
// a Trusted Commit caller vouches for.
func (s *Store) appendStepsAndMessage(ctx context.Context, steps storeio.AppendStepsInput, msg bindings.AppendMessageInput, trusted bool) ([]bindings.JournalEntry, []bool, bindings.ConversationMessage, error) {
	if msg.TenantID != steps.TenantID {
		return nil, nil, bindings.ConversationMessage{}, invalid("the entries and the message are of different tenants")
	}
	row, err := s.prepareMessage(msg, trusted)
	if err != nil {
		return nil, nil, bindings.ConversationMessage{}, err
	}
	tail := &messageTail{row: row}
	entries, appended, err := s.appendSteps(ctx, "append steps and message", steps, "", tail, trusted)
	if err != nil {
		return nil, nil, bindings.ConversationMessage{}, err
	}
	m, err := tail.ma.result()
	return entries, appended, m, err
}

// messageTail is a message appended after the entries of appendSteps.
type messageTail struct {
	row   messageRow
	ma    messageAppend
	extra *batchExtra // statements after the message's (see AppendUserMessage)
}

// AppendStep implements bindings.RunBinding: AppendSteps with one entry.
func (s *Store) AppendStep(ctx context.Context, in bindings.AppendStepInput) (bindings.JournalEntry, bool, error) {
	if in.TenantID == "" {
		return bindings.JournalEntry{}, false, invalid("tenant id is empty")
	}
	entries, appended, err := s.appendSteps(ctx, "append step", storeio.AppendStepsInput{
		TenantID: in.TenantID, RunID: in.RunID, Owner: in.Owner, Entries: []bindings.JournalEntry{in.Entry},
	}, "", nil, false)
	if err != nil {
		return bindings.JournalEntry{}, false, err
	}
	return entries[0], appended[0], nil
}

// sqlAppendSteps is one call of kindgi_append_steps (the baseline migration, its
// body made cheaper by 0009): the lease check, the appends and the finish
// in one statement.
const sqlAppendSteps = `SELECT o_ord, o_seq, o_appended, o_node, o_status, o_output, o_error, o_at
	FROM kindgi_append_steps($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`

// stepArgs is a batch of entries to append as the column arrays
// kindgi_append_steps takes.
type stepArgs struct {
	keys, phases, nodes, statuses []string
	outputs, errors               []string // wrapped payloads, "" for NULL (an envelope is never empty)
	ats                           []time.Time
	// Bit i of compact is set when entry i's output is compact as given,
	// so that it is returned as it is (see jsonbScan) instead of
	// compacted; entries past the 64th are compacted.
	compact uint64
}

// prepareSteps validates entries and encodes them as column arrays;
// trusted skips the checks of each entry's key, node, status and output,
// which a Trusted Commit caller vouches for.
func (s *Store) prepareSteps(entries []bindings.JournalEntry, trusted bool) (stepArgs, error) {
	n := len(entries)
	// The columns share one backing array per element type (full slice
	// expressions: none grows into the next).
	strs := make([]string, 6*n)
	a := stepArgs{
		keys: strs[:n:n], phases: strs[n : 2*n : 2*n], nodes: strs[2*n : 3*n : 3*n], statuses: strs[3*n : 4*n : 4*n],
		outputs: strs[4*n : 5*n : 5*n], errors: strs[5*n:], ats: make([]time.Time, n),
	}
	// The wrapped payloads are gathered into one buffer, made one string
	// whose parts the arguments point to: ends[2i] and ends[2i+1] are
	// where entry i's output and error end in it (-1: NULL).
	size := 0
	for _, e := range entries {
		size += len(envelopePrefix) + len(e.Output) + len(envelopeSuffix)
	}
	buf := make([]byte, 0, size) // an error or a text envelope grows it
	var endsOnStack [32]int
	ends := endsOnStack[:0]
	if 2*n > len(endsOnStack) {
		ends = make([]int, 0, 2*n)
	}
	ends = ends[:2*n]
	for i, e := range entries {
		if !trusted {
			if err := firstErr(bindings.CheckStepKey(e.Key), bindings.CheckOptionalID("step node", e.Node)); err != nil {
				return stepArgs{}, err
			}
			switch e.Status {
			case bindings.StepStarted, bindings.StepCompleted, bindings.StepFailed, bindings.StepParked:
			default:
				return stepArgs{}, invalid("unknown step status " + string(e.Status))
			}
		}
		var null, compact bool
		var err error
		if buf, null, compact, err = appendWrapOpt(buf, "step output", e.Output, trusted); err != nil {
			return stepArgs{}, err
		}
		if compact && i < 64 {
			a.compact |= 1 << i
		}
		ends[2*i] = len(buf)
		if null {
			ends[2*i] = -1
		}
		ends[2*i+1] = -1
		if e.Error != nil {
			stepErr, err := Wrap(e.Error)
			if err != nil {
				return stepArgs{}, err
			}
			buf = append(buf, stepErr...)
			ends[2*i+1] = len(buf)
		}
		a.keys[i], a.phases[i], a.nodes[i], a.statuses[i] = e.Key, e.Status.Phase(), e.Node, string(e.Status)
		a.ats[i] = s.stamp(e.At)
	}
	// One string holds every output and error; each argument is a slice
	// of it.
	all, start := string(buf), 0
	for k, end := range ends {
		if end < 0 {
			continue
		}
		if k%2 == 0 {
			a.outputs[k/2] = all[start:end]
		} else {
			a.errors[k/2] = all[start:end]
		}
		start = end
	}
	return a, nil
}

// The columns as the arguments of a statement (see textArray): a
// pointer into a, which must not change until the statement is sent.
func (a *stepArgs) keysArg() any     { return (*textArray)(&a.keys) }
func (a *stepArgs) phasesArg() any   { return (*textArray)(&a.phases) }
func (a *stepArgs) nodesArg() any    { return (*textArray)(&a.nodes) }
func (a *stepArgs) statusesArg() any { return (*textArray)(&a.statuses) }
func (a *stepArgs) outputsArg() any  { return (*nullTextArray)(&a.outputs) }
func (a *stepArgs) errorsArg() any   { return (*nullTextArray)(&a.errors) }
func (a *stepArgs) atsArg() any      { return (*timeArray)(&a.ats) }

// output is entry i's output doc as a read returns it: compacted, which
// a compact doc is already.
func (a stepArgs) output(i int, doc []byte) json.RawMessage {
	if i < 64 && a.compact&(1<<i) != 0 {
		return doc
	}
	return compacted(doc)
}

// textArg is a wrapped payload as an element of a text[] argument: nil
// is NULL.
func textArg(raw []byte) *string {
	if raw == nil {
		return nil
	}
	t := string(raw)
	return &t
}

// appendSteps appends in.Entries and, when status is set, then sets the
// run's status and releases in.Owner's lease, in one statement
// (kindgi_append_steps), followed by the message of tail when it is set:
// one round trip, one transaction. The lease is checked once, under the
// run's row lock: when in.Owner does not hold it, nothing changes and the
// error is *agents.RunBusyError. An appended entry is returned as given,
// with the Seq the store gave it and At in the store's precision; it is
// not read back.
func (s *Store) appendSteps(ctx context.Context, op string, in storeio.AppendStepsInput, status bindings.RunStatus, tail *messageTail, trusted bool) ([]bindings.JournalEntry, []bool, error) {
	return s.appendStepsAfter(ctx, op, nil, in, status, tail, trusted)
}

// appendStepsAfter is appendSteps, with the statements of pre (when set)
// before its own in the same round trip and transaction (a pending
// lease's kindgi_lease_as_read, a pending open's kindgi_open_new_run).
func (s *Store) appendStepsAfter(ctx context.Context, op string, pre *batchExtra, in storeio.AppendStepsInput, status bindings.RunStatus, tail *messageTail, trusted bool) ([]bindings.JournalEntry, []bool, error) {
	switch {
	case in.TenantID == "":
		return nil, nil, invalid("tenant id is empty")
	case in.RunID == "":
		return nil, nil, invalid("run id is empty")
	}
	if !trusted {
		if err := firstErr(bindings.CheckID("tenant id", in.TenantID), bindings.CheckID("run id", in.RunID),
			bindings.CheckOptionalID("lease owner", in.Owner)); err != nil {
			return nil, nil, err
		}
	}
	args, err := s.prepareSteps(in.Entries, trusted)
	if err != nil {
		return nil, nil, err
	}
	if len(in.Entries) == 0 && status == "" && tail == nil && pre == nil {
		return []bindings.JournalEntry{}, []bool{}, nil
	}
	now := s.stamp(time.Time{})
	var finish *string
	if status != "" {
		st := string(status)
		finish = &st
	}
	sr := newStepRows(in.Entries, args, trusted)
	err = s.send(ctx, op, func(b *pgx.Batch) {
		pre.queue(b)
		a := &args
		b.Queue(sqlAppendSteps, in.TenantID, in.RunID, in.Owner, now, a.keysArg(), a.phasesArg(), a.nodesArg(), a.statusesArg(),
			a.outputsArg(), a.errorsArg(), a.atsArg(), finish)
		if tail != nil {
			tail.ma.queue(b, tail.row, &in.RunID, in.Owner, now)
			tail.extra.queue(b)
		}
	}, func(br pgx.BatchResults) error {
		if err := pre.read(br); err != nil {
			return err
		}
		if err := sr.read(br); err != nil {
			return err
		}
		if tail != nil {
			if err := tail.ma.read(br); err != nil {
				return err
			}
			return tail.extra.read(br)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if err := sr.check(op, in.RunID, in.Owner, now); err != nil {
		return nil, nil, err
	}
	return sr.out, sr.appended, nil
}

// stepRows reads the rows of one kindgi_append_steps call (or of
// kindgi_append_message_step, which returns the same rows).
type stepRows struct {
	entries  []bindings.JournalEntry
	args     stepArgs
	out      []bindings.JournalEntry
	appended []bool

	leaseOwner   string
	expires      *time.Time
	exists, done bool
	got          int
	inPlace      bool // out is entries (see newStepRows)
}

// newStepRows is a reader of the rows of appending entries, encoded as
// args. inPlace makes its results entries themselves, each updated to
// the entry stored (what a Trusted Commit caller allows).
func newStepRows(entries []bindings.JournalEntry, args stepArgs, inPlace bool) *stepRows {
	n := len(entries)
	sr := &stepRows{entries: entries, args: args, out: entries, appended: make([]bool, n), inPlace: inPlace}
	if !inPlace {
		sr.out = make([]bindings.JournalEntry, n)
	}
	return sr
}

// read reads the next result of br: the lease row, then one row per entry.
func (sr *stepRows) read(br pgx.BatchResults) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	// Declared once, not per row (see appendMessageStep): Scan sets each
	// on every row.
	var (
		ord              int32
		seq              *int64
		app              *bool
		node, stepStatus *string
		output, stepErr  []byte
		at               *time.Time
	)
	for rows.Next() {
		if err := rows.Scan(&ord, &seq, &app, &node, &stepStatus, &output, &stepErr, &at); err != nil {
			rows.Close()
			return err
		}
		if err := sr.row(ord, seq, app, node, stepStatus, output, stepErr, at); err != nil {
			rows.Close()
			return err
		}
	}
	return rows.Err()
}

// row takes one row: the lease row (ord 0) or an entry's.
func (sr *stepRows) row(ord int32, seq *int64, app *bool, node, stepStatus *string, output, stepErr []byte, at *time.Time) error {
	n := len(sr.entries)
	if ord == 0 {
		sr.exists = true
		if node != nil {
			sr.leaseOwner = *node
		}
		sr.expires = at
		return nil
	}
	i := int(ord) - 1
	if i < 0 || i >= n || seq == nil || app == nil {
		return fmt.Errorf("kindgi_append_steps returned entry %d of %d", ord, n)
	}
	sr.done = true
	sr.got++
	if sr.appended[i] = *app; sr.appended[i] {
		if sr.inPlace { // the caller's entry, its error shared
			e := &sr.out[i]
			e.Seq, e.Output, e.At = *seq, sr.args.output(i, e.Output), sr.args.ats[i]
			return nil
		}
		e := sr.entries[i]
		sr.out[i] = bindings.JournalEntry{Seq: *seq, Key: e.Key, Node: e.Node, Status: e.Status,
			Output: sr.args.output(i, e.Output), Error: copyStepError(e.Error), At: sr.args.ats[i]}
		return nil
	}
	var err error
	sr.out[i], err = storedEntry(*seq, sr.entries[i].Key, node, stepStatus, output, stepErr, at)
	return err
}

// check is the outcome of the rows read: a missing run, a refused lease,
// or entries missing from the rows.
func (sr *stepRows) check(op, runID, owner string, now time.Time) error {
	n := len(sr.entries)
	switch {
	case !sr.exists:
		return &agents.RunJournalUnavailableError{RunID: runID}
	case owner != "" && (sr.leaseOwner != owner || sr.expires == nil || !sr.expires.After(now)):
		if sr.leaseOwner != "" && sr.leaseOwner != owner && sr.expires != nil && sr.expires.After(now) {
			return &agents.RunBusyError{RunID: runID, Owner: sr.leaseOwner}
		}
		// The writer's lease expired (or was freed) and nobody holds it.
		return &agents.RunBusyError{RunID: runID, LeaseExpired: true}
	case sr.got != n || (n > 0 && !sr.done):
		return &agents.PersistenceError{Op: op, Err: fmt.Errorf("%d of %d entries returned", sr.got, n)}
	}
	return nil
}

// storedEntry is the stored entry an append collided with.
func storedEntry(seq int64, key string, node, status *string, output, stepErr []byte, at *time.Time) (bindings.JournalEntry, error) {
	e := bindings.JournalEntry{Seq: seq, Key: key}
	if node != nil {
		e.Node = *node
	}
	if status != nil {
		e.Status = bindings.StepStatus(*status)
	}
	if at != nil {
		e.At = utc(*at)
	}
	return e, unwrapPayloads(&e, output, stepErr)
}

// unwrapPayloads sets e's Output and Error from their stored envelopes
// (stepErr nil: no error).
func unwrapPayloads(e *bindings.JournalEntry, output, stepErr []byte) error {
	var err error
	if e.Output, err = unwrapOpt(output); err != nil {
		return err
	}
	if stepErr != nil {
		var se bindings.StepError
		if err := UnwrapInto(stepErr, &se); err != nil {
			return err
		}
		e.Error = &se
	}
	return nil
}

// compacted returns doc as a read would: compacted (encoding/json's form),
// nil when empty. A doc that is compact already is returned as is.
func compacted(doc []byte) json.RawMessage {
	if len(bytes.TrimSpace(doc)) == 0 {
		return nil
	}
	// Only white space outside strings is compacted away: text with
	// spaces in its strings only is compact already.
	inString := false
	for i := 0; i < len(doc); i++ {
		switch c := doc[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case !inString && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			var buf bytes.Buffer
			if json.Compact(&buf, doc) != nil {
				return doc
			}
			return buf.Bytes()
		}
	}
	return doc
}

// copyStepError returns a copy of se (nil for nil).
func copyStepError(se *bindings.StepError) *bindings.StepError {
	if se == nil {
		return nil
	}
	c := *se
	return &c
}

// sqlOpenRunFn is one call of kindgi_open_run (the baseline migration): the
// snapshot write, the run start and the reads a retry needs, in one
// statement.
const sqlOpenRunFn = `SELECT o_taken, o_created, o_flow_id, o_flow_version, o_status, o_lease_owner, o_lease_expires_at,
	o_created_at, o_updated_at, o_snap_written, s_flow_id, s_flow_version, s_agent_id, s_agent_version,
	s_conversation_id, s_project_id, s_input, s_created_at
	FROM kindgi_open_run($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`

// openRun is OpenRun, with the statements of extra (when set) after its
// own in the same round trip and transaction (see openTurn).
func (s *Store) openRun(ctx context.Context, in storeio.OpenRunInput, extra *batchExtra) (storeio.OpenRunResult, error) {
	st, sn := in.Start, in.Snapshot
	switch {
	case st.TenantID == "":
		return storeio.OpenRunResult{}, invalid("tenant id is empty")
	case st.RunID == "":
		return storeio.OpenRunResult{}, invalid("run id is empty")
	case sn.TenantID != st.TenantID || sn.RunID != st.RunID:
		return storeio.OpenRunResult{}, invalid("the snapshot and the run name different runs")
	}
	if err := firstErr(checkSnapshot(sn), bindings.CheckStartRun(st)); err != nil {
		return storeio.OpenRunResult{}, err
	}
	input, err := wrapOpt("snapshot input", sn.Input)
	if err != nil {
		return storeio.OpenRunResult{}, err
	}
	status, now, exp, err := s.startOf(st)
	if err != nil {
		return storeio.OpenRunResult{}, err
	}
	snapAt := s.stamp(sn.CreatedAt)
	var out storeio.OpenRunResult
	var o openRow
	child := st.ParentRunID != ""
	err = s.send(ctx, "open run", func(b *pgx.Batch) {
		if child {
			b.Queue(sqlSetParent, st.ParentRunID, st.ParentStepKey)
		}
		b.Queue(sqlOpenRunFn, st.TenantID, st.RunID, sn.FlowID, sn.FlowVersion, sn.AgentID, sn.AgentVersion,
			sn.ConversationID, sn.ProjectID, textArg(input), snapAt, st.Owner, exp, now, st.FlowID, st.FlowVersion, string(status))
		if child {
			b.Queue(sqlGetParent, st.TenantID, st.RunID)
		}
		b.Queue(sqlReadJournal, st.TenantID, st.RunID)
		extra.queue(b)
	}, func(br pgx.BatchResults) error {
		if child {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		if err := br.QueryRow().Scan(&o.taken, &o.created, &o.flowID, &o.flowVersion, &o.status, &o.owner, &o.expires,
			&o.createdAt, &o.updatedAt, &o.snapWritten, &o.sFlowID, &o.sFlowVersion, &o.sAgentID, &o.sAgentVersion,
			&o.sConversationID, &o.sProjectID, &o.sInput, &o.sCreatedAt); err != nil {
			return err
		}
		if child {
			// The stored parent: the input's for a run this call created,
			// the run's own for one that existed.
			parent, _, err := collectOne(br, scanParent)
			if err != nil {
				return err
			}
			o.parentRunID, o.parentStepKey = parent[0], parent[1]
		}
		return extra.readAfterJournal(br, &out.Journal)
	})
	switch {
	case err != nil:
		return storeio.OpenRunResult{}, err
	case !o.taken && o.flowID != nil:
		return storeio.OpenRunResult{}, &agents.RunBusyError{RunID: st.RunID, Owner: deref(o.owner)}
	case !o.taken || (!o.snapWritten && o.sCreatedAt == nil):
		return storeio.OpenRunResult{}, &agents.PersistenceError{Op: "open run", Err: pgx.ErrNoRows}
	}
	out.Run = bindings.Run{TenantID: st.TenantID, ID: st.RunID, FlowID: deref(o.flowID), FlowVersion: deref(o.flowVersion),
		Status: bindings.RunStatus(deref(o.status)), LeaseOwner: deref(o.owner), ParentRunID: o.parentRunID, ParentStepKey: o.parentStepKey}
	if o.expires != nil && out.Run.LeaseOwner != "" {
		out.Run.LeaseExpiresAt = o.expires.UTC()
	}
	if o.createdAt != nil {
		out.Run.CreatedAt = utc(*o.createdAt)
	}
	if o.updatedAt != nil {
		out.Run.UpdatedAt = utc(*o.updatedAt)
	}
	out.Created = o.created != nil && *o.created
	if o.snapWritten {
		out.Snapshot = sn
		out.Snapshot.Input, out.Snapshot.CreatedAt = compacted(sn.Input), snapAt
	} else {
		out.Snapshot = bindings.RunSnapshotRecord{TenantID: st.TenantID, RunID: st.RunID, FlowID: deref(o.sFlowID),
			FlowVersion: deref(o.sFlowVersion), AgentID: deref(o.sAgentID), AgentVersion: deref(o.sAgentVersion),
			ConversationID: deref(o.sConversationID), ProjectID: deref(o.sProjectID), CreatedAt: utc(*o.sCreatedAt)}
		if out.Snapshot.Input, err = unwrapOpt(o.sInput); err != nil {
			return storeio.OpenRunResult{}, err
		}
	}
	if out.Journal == nil {
		out.Journal = []bindings.JournalEntry{}
	}
	return out, nil
}

// openRow is the row kindgi_open_run returns.
type openRow struct {
	taken, snapWritten                             bool
	created                                        *bool
	flowID, flowVersion, status, owner             *string
	expires, createdAt, updatedAt                  *time.Time
	sFlowID, sFlowVersion, sAgentID, sAgentVersion *string
	sConversationID, sProjectID                    *string
	sInput                                         []byte
	sCreatedAt                                     *time.Time
	parentRunID, parentStepKey                     string
}

// scanParent scans a row of sqlGetParent.
func scanParent(row pgx.CollectableRow) ([2]string, error) {
	var p [2]string
	return p, row.Scan(&p[0], &p[1])
}
