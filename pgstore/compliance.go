package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/kindgi/agents/bindings"
)

var _ bindings.ComplianceRecorder = (*Store)(nil)

// sqlRecordCompliance stores a record; the first of an identity wins.
const sqlRecordCompliance = `INSERT INTO agent_compliance_records
	(tenant_id, run_id, key, conversation_id, turn_number, agent_id, agent_version,
	 guardrail_id, check_id, kind, action, passed, reason, judge_response, evaluated_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
	ON CONFLICT (tenant_id, run_id, key) DO NOTHING`

// sqlListCompliance reads one page: $2 ” is every run; $3 false starts at
// the oldest, else the page starts after ($4, $5, $6); $7 is the limit
// plus one, to tell whether a next page exists.
const sqlListCompliance = `SELECT tenant_id, run_id, key, conversation_id, turn_number, agent_id, agent_version,
	guardrail_id, check_id, kind, action, passed, reason, judge_response, evaluated_at
	FROM agent_compliance_records
	WHERE tenant_id = $1 AND ($2 = '' OR run_id = $2)
	  AND (NOT $3 OR (evaluated_at, run_id COLLATE "C", key COLLATE "C") > ($4, $5 COLLATE "C", $6 COLLATE "C"))
	ORDER BY evaluated_at, run_id COLLATE "C", key COLLATE "C"
	LIMIT $7`

// RecordCompliance implements bindings.ComplianceRecorder with an INSERT
// … ON CONFLICT DO NOTHING on the record's identity.
func (s *Store) RecordCompliance(ctx context.Context, rec bindings.ComplianceRecord) error {
	if err := bindings.CheckComplianceRecord(rec); err != nil {
		return err
	}
	at := s.stamp(rec.EvaluatedAt)
	_, err := s.exec(ctx, "record compliance", rec.TenantID, sqlRecordCompliance,
		rec.TenantID, rec.RunID, rec.Key, rec.ConversationID, rec.TurnNumber, rec.AgentID, rec.AgentVersion, rec.GuardrailID, rec.CheckID, rec.Kind, rec.Action,
		rec.Passed, encodeText(rec.Reason), encodeText(rec.JudgeResponse), at)
	return err
}

// ListCompliance implements bindings.ComplianceRecorder.
func (s *Store) ListCompliance(ctx context.Context, in bindings.ListComplianceInput) (bindings.CompliancePage, error) {
	limit, err := bindings.CheckListCompliance(in)
	if err != nil {
		return bindings.CompliancePage{}, err
	}
	var after bindings.ComplianceCursor
	if in.After != nil {
		after = *in.After
		after.EvaluatedAt = after.EvaluatedAt.UTC()
	}
	var recs []bindings.ComplianceRecord
	err = s.batch(ctx, "list compliance", in.TenantID, func(b *pgx.Batch) {
		b.Queue(sqlListCompliance, in.TenantID, in.RunID, in.After != nil, after.EvaluatedAt, after.RunID, after.Key, limit+1)
	}, func(br pgx.BatchResults) error {
		return collectInto(br, &recs, scanCompliance)
	})
	if err != nil {
		return bindings.CompliancePage{}, err
	}
	page := bindings.CompliancePage{Records: recs}
	if page.Records == nil {
		page.Records = []bindings.ComplianceRecord{}
	}
	if len(recs) > limit {
		page.Records = recs[:limit]
		next := recs[limit-1].Cursor()
		page.Next = &next
	}
	return page, nil
}

func scanCompliance(row pgx.CollectableRow) (bindings.ComplianceRecord, error) {
	var r bindings.ComplianceRecord
	err := row.Scan(&r.TenantID, &r.RunID, &r.Key, &r.ConversationID, &r.TurnNumber, &r.AgentID, &r.AgentVersion,
		&r.GuardrailID, &r.CheckID, &r.Kind, &r.Action, &r.Passed, &r.Reason, &r.JudgeResponse, &r.EvaluatedAt)
	r.EvaluatedAt = utc(r.EvaluatedAt)
	// Free text, as stored (see "Values PostgreSQL refuses").
	r.Reason, r.JudgeResponse = decodeText(r.Reason), decodeText(r.JudgeResponse)
	return r, err
}
