package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/storeio"
)

// resumeRun serves the Driver: ReopenRun and the read of the
// run's approvals (agent_approvals_run_idx) in one round trip, one more
// statement in ReopenRun's batch.
func (s *Store) resumeRun(ctx context.Context, in storeio.ReopenRunInput) (storeio.ResumeRunResult, error) {
	var aps []bindings.Approval
	res, err := s.reopenRun(ctx, in, &batchExtra{
		queueFn: func(b *pgx.Batch) { b.Queue(sqlListApprovals, in.TenantID, in.RunID) },
		readFn: func(br pgx.BatchResults) error {
			return collectInto(br, &aps, scanApproval)
		},
	})
	if err != nil {
		return storeio.ResumeRunResult{}, err
	}
	for i := range aps {
		aps[i] = s.withExpiry(aps[i])
	}
	if aps == nil {
		aps = []bindings.Approval{}
	}
	return storeio.ResumeRunResult{ReopenRunResult: res, Approvals: aps}, nil
}
