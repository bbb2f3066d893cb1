package pgstore

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// The optional journal capabilities pgstore implements.
var (
	_ bindings.StepBatcher = (*Store)(nil)
	_ bindings.RunFinisher = (*Store)(nil)
	_ bindings.RunOpener   = (*Store)(nil)

	_ bindings.StepMessageAppender = (*Store)(nil)
)

// sqlAppendMessageLeased is sqlAppendMessage that stores nothing unless
// run $14 exists and, when $13 is not empty, $13 holds its lease at $15:
// the message of AppendStepsAndMessage is stored only with its entries.
var sqlAppendMessageLeased = strings.Replace(sqlAppendMessage, "\n\t\tRETURNING message_count", `
		  AND EXISTS (SELECT 1 FROM agent_runs r WHERE r.tenant_id = $1 AND r.id = $14
		      AND ($13 = '' OR (r.lease_owner = $13 AND r.lease_expires_at > $15)))
		RETURNING message_count`, 1)

// AppendStepsAndMessage implements bindings.StepMessageAppender: the
// entries, then the message (stored only when the entries are), in one
// round trip and one transaction.
func (s *Store) AppendStepsAndMessage(ctx context.Context, steps bindings.AppendStepsInput, msg bindings.AppendMessageInput) ([]bindings.JournalEntry, []bool, bindings.ConversationMessage, error) {
	if msg.TenantID != steps.TenantID {
		return nil, nil, bindings.ConversationMessage{}, invalid("the entries and the message are of different tenants")
	}
	row, err := s.prepareMessage(msg)
	if err != nil {
		return nil, nil, bindings.ConversationMessage{}, err
	}
	tail := &messageTail{row: row}
	entries, appended, err := s.appendSteps(ctx, "append steps and message", steps, "", tail)
	if err != nil {
		return nil, nil, bindings.ConversationMessage{}, err
	}
	m, err := tail.ma.result()
	return entries, appended, m, err
}

// messageTail is a message appended after the entries of appendSteps.
type messageTail struct {
	row messageRow
	ma  messageAppend
}

// sqlFinishStatus sets the status of a run whose lease $5 (when not empty)
// still holds at $4.
const sqlFinishStatus = `UPDATE agent_runs SET status = $3, updated_at = $4
	WHERE tenant_id = $1 AND id = $2 AND ($5 = '' OR (lease_owner = $5 AND lease_expires_at > $4))`

// AppendStep implements bindings.RunBinding: AppendSteps with one entry.
func (s *Store) AppendStep(ctx context.Context, in bindings.AppendStepInput) (bindings.JournalEntry, bool, error) {
	if in.TenantID == "" {
		return bindings.JournalEntry{}, false, invalid("tenant id is empty")
	}
	entries, appended, err := s.appendSteps(ctx, "append step", bindings.AppendStepsInput{
		TenantID: in.TenantID, RunID: in.RunID, Owner: in.Owner, Entries: []bindings.JournalEntry{in.Entry},
	}, "", nil)
	if err != nil {
		return bindings.JournalEntry{}, false, err
	}
	return entries[0], appended[0], nil
}

// AppendSteps implements bindings.StepBatcher: the entries are appended to
// one run's journal, in order, in one round trip and one transaction. Each
// entry is appended as AppendStep would: idempotent per (key, phase), so
// for an entry whose key and phase are stored already (or repeated earlier
// in entries) the stored entry is returned with appended false. The owner,
// when not empty, must hold the run's lease, checked once for all entries:
// otherwise nothing is stored and the error is *agents.RunBusyError. A
// missing run is *agents.RunJournalUnavailableError.
func (s *Store) AppendSteps(ctx context.Context, in bindings.AppendStepsInput) ([]bindings.JournalEntry, []bool, error) {
	return s.appendSteps(ctx, "append steps", in, "", nil)
}

// FinishRun implements bindings.RunFinisher: the entries, the status and
// the release of the owner's lease in one round trip and one transaction.
func (s *Store) FinishRun(ctx context.Context, in bindings.FinishRunInput) ([]bindings.JournalEntry, []bool, error) {
	switch in.Status {
	case bindings.RunRunning, bindings.RunSuspended, bindings.RunCompleted, bindings.RunFailed:
	default:
		return nil, nil, invalid("unknown run status " + string(in.Status))
	}
	return s.appendSteps(ctx, "finish run", bindings.AppendStepsInput{
		TenantID: in.TenantID, RunID: in.RunID, Owner: in.Owner, Entries: in.Entries,
	}, in.Status, nil)
}

// appendSteps appends in.Entries and, when status is set, then sets the
// run's status and releases in.Owner's lease, in one batch. The lease is
// checked once, under the run's row lock: when in.Owner does not hold it,
// no statement changes anything and the error is *agents.RunBusyError.
func (s *Store) appendSteps(ctx context.Context, op string, in bindings.AppendStepsInput, status bindings.RunStatus, tail *messageTail) ([]bindings.JournalEntry, []bool, error) {
	switch {
	case in.TenantID == "":
		return nil, nil, invalid("tenant id is empty")
	case in.RunID == "":
		return nil, nil, invalid("run id is empty")
	}
	if err := firstErr(bindings.CheckID("tenant id", in.TenantID), bindings.CheckID("run id", in.RunID),
		bindings.CheckOptionalID("lease owner", in.Owner)); err != nil {
		return nil, nil, err
	}
	type row struct {
		key, phase, node, status string
		output, stepErr          any
		at                       time.Time
	}
	rows := make([]row, len(in.Entries))
	for i, e := range in.Entries {
		if err := firstErr(bindings.CheckStepKey(e.Key), bindings.CheckOptionalID("step node", e.Node)); err != nil {
			return nil, nil, err
		}
		switch e.Status {
		case bindings.StepStarted, bindings.StepCompleted, bindings.StepFailed, bindings.StepParked:
		default:
			return nil, nil, invalid("unknown step status " + string(e.Status))
		}
		output, err := wrapOpt("step output", e.Output)
		if err != nil {
			return nil, nil, err
		}
		var stepErr []byte
		if e.Error != nil {
			if stepErr, err = Wrap(e.Error); err != nil {
				return nil, nil, err
			}
		}
		rows[i] = row{e.Key, e.Status.Phase(), e.Node, string(e.Status), jsonArg(output), jsonArg(stepErr), s.stamp(e.At)}
	}
	if len(rows) == 0 && status == "" && tail == nil {
		return []bindings.JournalEntry{}, []bool{}, nil
	}
	now := s.stamp(time.Time{})
	var leaseOwner string
	var expires *time.Time
	var exists bool
	out := make([]bindings.JournalEntry, len(rows))
	appended := make([]bool, len(rows))
	found := make([]bool, len(rows))
	err := s.batch(ctx, op, in.TenantID, func(b *pgx.Batch) {
		b.Queue(sqlLockRun, in.TenantID, in.RunID)
		for _, r := range rows {
			b.Queue(sqlAppendStep, in.TenantID, in.RunID, r.key, r.phase, in.Owner, r.node, r.status, r.output, r.stepErr, r.at, now)
			b.Queue(sqlGetEntry, in.TenantID, in.RunID, r.key, r.phase)
		}
		if status != "" {
			b.Queue(sqlFinishStatus, in.TenantID, in.RunID, string(status), now, in.Owner)
			b.Queue(sqlReleaseLease, in.TenantID, in.RunID, in.Owner, now)
		}
		if tail != nil {
			tail.ma.queue(b, tail.row, sqlAppendMessageLeased, in.Owner, in.RunID, now)
		}
	}, func(br pgx.BatchResults) error {
		switch err := br.QueryRow().Scan(&leaseOwner, &expires); err {
		case nil:
			exists = true
		case pgx.ErrNoRows:
		default:
			return err
		}
		for i := range rows {
			tag, err := br.Exec()
			if err != nil {
				return err
			}
			appended[i] = tag.RowsAffected() == 1
			if out[i], found[i], err = collectOne(br, scanEntry); err != nil {
				return err
			}
		}
		if status != "" {
			for range 2 {
				if _, err := br.Exec(); err != nil {
					return err
				}
			}
		}
		if tail != nil {
			return tail.ma.read(br)
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, nil, err
	case !exists:
		return nil, nil, &agents.RunJournalUnavailableError{RunID: in.RunID}
	case in.Owner != "" && (leaseOwner != in.Owner || expires == nil || !expires.After(now)):
		return nil, nil, &agents.RunBusyError{RunID: in.RunID, Owner: leaseOwner}
	}
	for i := range found {
		if !found[i] {
			return nil, nil, &agents.PersistenceError{Op: op, Err: pgx.ErrNoRows}
		}
	}
	return out, appended, nil
}

// sqlOpenRun is sqlStartRun that also tells whether it inserted the row.
const sqlOpenRun = sqlStartRun + `, (xmax = 0)`

// OpenRun implements bindings.RunOpener: the snapshot write, the run start
// and the reads of the stored snapshot and of the journal in one round
// trip and one transaction.
func (s *Store) OpenRun(ctx context.Context, in bindings.OpenRunInput) (bindings.OpenRunResult, error) {
	st, sn := in.Start, in.Snapshot
	switch {
	case st.TenantID == "":
		return bindings.OpenRunResult{}, invalid("tenant id is empty")
	case st.RunID == "":
		return bindings.OpenRunResult{}, invalid("run id is empty")
	case sn.TenantID != st.TenantID || sn.RunID != st.RunID:
		return bindings.OpenRunResult{}, invalid("the snapshot and the run name different runs")
	}
	if err := firstErr(checkSnapshot(sn), checkStart(st)); err != nil {
		return bindings.OpenRunResult{}, err
	}
	input, err := wrapOpt("snapshot input", sn.Input)
	if err != nil {
		return bindings.OpenRunResult{}, err
	}
	status, err := newRunStatus(st.Status)
	if err != nil {
		return bindings.OpenRunResult{}, err
	}
	now := s.stamp(time.Time{})
	exp := now.Add(st.LeaseTTL).Truncate(time.Microsecond)
	var out bindings.OpenRunResult
	var cur bindings.Run
	var taken, exists, found bool
	err = s.batch(ctx, "open run", st.TenantID, func(b *pgx.Batch) {
		b.Queue(sqlWriteSnapshot, sn.TenantID, sn.RunID, sn.FlowID, sn.FlowVersion, sn.AgentID, sn.AgentVersion,
			sn.ConversationID, sn.ProjectID, jsonArg(input), s.stamp(sn.CreatedAt))
		b.Queue(sqlOpenRun, st.TenantID, st.RunID, st.Owner, exp, now, st.FlowID, st.FlowVersion, string(status))
		b.Queue(sqlGetRun, st.TenantID, st.RunID)
		b.Queue(sqlReadSnapshot, st.TenantID, st.RunID)
		b.Queue(sqlReadJournal, st.TenantID, st.RunID)
	}, func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return err
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		for rows.Next() {
			var created bool
			r, err := scanRunAnd(rows, &created)
			if err != nil {
				rows.Close()
				return err
			}
			out.Run, out.Created, taken = r, created, true
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if cur, exists, err = collectOne(br, scanRun); err != nil {
			return err
		}
		if out.Snapshot, found, err = collectOne(br, scanSnapshot); err != nil {
			return err
		}
		rows, err = br.Query()
		if err != nil {
			return err
		}
		out.Journal, err = pgx.CollectRows(rows, scanEntry)
		return err
	})
	switch {
	case err != nil:
		return bindings.OpenRunResult{}, err
	case !taken && exists:
		return bindings.OpenRunResult{}, &agents.RunBusyError{RunID: st.RunID, Owner: cur.LeaseOwner}
	case !taken || !found:
		return bindings.OpenRunResult{}, &agents.PersistenceError{Op: "open run", Err: pgx.ErrNoRows}
	}
	if out.Journal == nil {
		out.Journal = []bindings.JournalEntry{}
	}
	return out, nil
}

// scanRunAnd scans a run row followed by one more column.
func scanRunAnd(row pgx.Rows, extra any) (bindings.Run, error) {
	var r bindings.Run
	var status string
	var expires *time.Time
	err := row.Scan(&r.TenantID, &r.ID, &r.FlowID, &r.FlowVersion, &status, &r.LeaseOwner, &expires, &r.CreatedAt, &r.UpdatedAt, extra)
	if err != nil {
		return r, err
	}
	r.Status = bindings.RunStatus(status)
	if expires != nil && r.LeaseOwner != "" {
		r.LeaseExpiresAt = expires.UTC()
	}
	r.CreatedAt, r.UpdatedAt = utc(r.CreatedAt), utc(r.UpdatedAt)
	return r, nil
}
