package gate

import (
	"context"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/codes"
)

// Record writes the compliance records to rec, in order (turn's
// RecordCompliance); a failed write is coded "record compliance". A nil
// recorder records nothing.
func Record(ctx context.Context, rec bindings.ComplianceRecorder, recs []bindings.ComplianceRecord) error {
	if rec == nil {
		return nil
	}
	for _, r := range recs {
		if err := rec.RecordCompliance(ctx, r); err != nil {
			return codes.Coded(err, "record compliance")
		}
	}
	return nil
}
