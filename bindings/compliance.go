package bindings

import (
	"context"
	"fmt"
	"time"

	agents "github.com/kindgi/agents"
)

// The compliance binding.
//
// The TypeScript package lists compliance among the GuardrailsBindings
// fields (guardrails, checks, compliance) without describing it. This
// module reads it as the audit sink of guardrail evaluations: every time a
// guardrail is evaluated on a turn's final response, passed or failed, one
// ComplianceRecord is written, so that an auditor can show which checks
// ran on which answer, with what verdict, without reading run journals.
//
// The turn writes the records from a journaled step that follows the
// evaluation (the verdicts are journaled first, so a resumed or replayed
// run writes the same records again), and a recorder keeps the first
// record of each (tenant, run, key): across crashes, retries and resumes an
// audit holds exactly one record per evaluation. A check that could not
// run gave no verdict: the turn fails closed (guardrail-violation) and no
// record is written for that evaluation.

// ComplianceRecord is the audit record of one guardrail evaluation.
type ComplianceRecord struct {
	TenantID string `json:"tenantId"`
	RunID    string `json:"runId"`
	// Key names the evaluation within its run: the turn uses the journal
	// step key of the evaluation and the guardrail's position in the
	// agent's list ("evaluate-guardrails/0"). (TenantID, RunID, Key) is
	// the record's identity; Key follows the id rules of CheckID.
	Key            string `json:"key"`
	ConversationID string `json:"conversationId,omitempty"`
	TurnNumber     int    `json:"turnNumber,omitempty"`
	AgentID        string `json:"agentId"`
	AgentVersion   string `json:"agentVersion"`
	GuardrailID    string `json:"guardrailId"`
	CheckID        string `json:"checkId"`
	Kind           string `json:"kind"`
	Action         string `json:"action"`
	Passed         bool   `json:"passed"`
	Reason         string `json:"reason,omitempty"`
	// JudgeResponse is what an llm-judge check reported of its model's
	// answer (CheckResult.JudgeResponse).
	JudgeResponse string `json:"judgeResponse,omitempty"`
	// EvaluatedAt is when the verdict was given. The turn writes it zero,
	// so the recorder stamps its now on the first write (a rewrite after a
	// crash or a resume keeps the first record, and its time).
	EvaluatedAt time.Time `json:"evaluatedAt"`
}

// ComplianceCursor is the position after the last record of a page:
// keyset pagination by (EvaluatedAt, RunID, Key), ascending.
type ComplianceCursor struct {
	EvaluatedAt time.Time `json:"evaluatedAt"`
	RunID       string    `json:"runId"`
	Key         string    `json:"key"`
}

// ListComplianceInput asks for one page of a tenant's compliance records,
// oldest first (EvaluatedAt, then RunID, then Key, compared byte-wise).
// RunID "" lists every run's records; Limit 0 means 100 and is at most
// 1000; After nil starts at the oldest.
type ListComplianceInput struct {
	TenantID string            `json:"tenantId"`
	RunID    string            `json:"runId,omitempty"`
	After    *ComplianceCursor `json:"after,omitempty"`
	Limit    int               `json:"limit,omitempty"`
}

// CompliancePage is one page of records; Next is nil on the last page.
type CompliancePage struct {
	Records []ComplianceRecord `json:"records"`
	Next    *ComplianceCursor  `json:"next,omitempty"`
}

// MaxCompliancePage is the largest Limit ListCompliance accepts.
const MaxCompliancePage = 1000

// ComplianceRecorder is the audit sink of guardrail evaluations (the
// GuardrailsBindings' compliance).
//
// RecordCompliance stores rec, idempotently per (TenantID, RunID, Key): a
// record whose identity is stored already stores nothing and is not an
// error (the first record wins, whatever the second holds), also under
// concurrency. An empty or malformed tenant, run, key or guardrail id (see
// CheckID) is *agents.InvalidMessageError; a zero EvaluatedAt is the
// recorder's now. Records are never changed or deleted by the bindings of
// this module (pruning runs leaves them: an audit outlives the run).
//
// ListCompliance returns a page of one tenant's records (never another
// tenant's) in the order ListComplianceInput gives; a Limit below 0 or
// above MaxCompliancePage is *agents.InvalidMessageError.
type ComplianceRecorder interface {
	RecordCompliance(ctx context.Context, rec ComplianceRecord) error
	ListCompliance(ctx context.Context, in ListComplianceInput) (CompliancePage, error)
}

// CheckComplianceRecord returns the *agents.InvalidMessageError a
// recorder refuses rec with (an empty tenant, run, key or guardrail id, or
// an id that breaks the id rules of CheckID), or nil.
func CheckComplianceRecord(rec ComplianceRecord) error {
	if err := CheckID("tenant id", rec.TenantID); err != nil {
		return err
	}
	if err := CheckID("run id", rec.RunID); err != nil {
		return err
	}
	if err := CheckID("compliance key", rec.Key); err != nil {
		return err
	}
	if err := CheckID("guardrail id", rec.GuardrailID); err != nil {
		return err
	}
	return firstErr(CheckOptionalID("conversation id", rec.ConversationID),
		CheckOptionalID("agent id", rec.AgentID), CheckOptionalID("agent version", rec.AgentVersion),
		CheckOptionalID("check id", rec.CheckID), CheckOptionalID("compliance kind", rec.Kind),
		CheckOptionalID("compliance action", rec.Action))
}

// CheckListCompliance returns the page size a recorder lists in with
// (100 for a zero Limit), or the *agents.InvalidMessageError it refuses in
// with: an empty tenant, an id that breaks the id rules (CheckID), or a
// Limit outside 0..MaxCompliancePage.
func CheckListCompliance(in ListComplianceInput) (int, error) {
	if err := firstErr(CheckID("tenant id", in.TenantID), CheckOptionalID("run id", in.RunID)); err != nil {
		return 0, err
	}
	if in.After != nil {
		if err := firstErr(CheckOptionalID("cursor run id", in.After.RunID), CheckOptionalID("cursor key", in.After.Key)); err != nil {
			return 0, err
		}
	}
	switch n := in.Limit; {
	case n == 0:
		return 100, nil
	case n < 0 || n > MaxCompliancePage:
		return 0, &agents.InvalidMessageError{Reason: fmt.Sprintf("limit %d is outside 0..%d", n, MaxCompliancePage)}
	default:
		return n, nil
	}
}

// ComplianceCursorLess orders records by their cursors as ListCompliance
// returns them.
func ComplianceCursorLess(a, b ComplianceCursor) bool {
	return keysetLess(a.EvaluatedAt, a.RunID, a.Key, b.EvaluatedAt, b.RunID, b.Key)
}

// Cursor returns the record's position for ListComplianceInput.After.
func (r ComplianceRecord) Cursor() ComplianceCursor {
	return ComplianceCursor{EvaluatedAt: r.EvaluatedAt, RunID: r.RunID, Key: r.Key}
}
