package memstore

import (
	"context"
	"slices"
	"sync"

	"github.com/kindgi/agents/bindings"
)

// complianceLog holds the compliance records of every tenant: by identity
// for the idempotency check, and per tenant in cursor order for listing.
type complianceLog struct {
	mu       sync.RWMutex
	byKey    map[complianceKey]bool
	byTenant map[string][]bindings.ComplianceRecord // sorted by Cursor
}

type complianceKey struct{ tenant, run, key string }

var _ bindings.ComplianceRecorder = (*Store)(nil)

// RecordCompliance implements bindings.ComplianceRecorder: the first
// record of a (tenant, run, key) is kept, a later one stores nothing.
func (s *Store) RecordCompliance(ctx context.Context, rec bindings.ComplianceRecord) error {
	if err := checkedCall(ctx, bindings.CheckComplianceRecord(rec)); err != nil {
		return err
	}
	c := &s.compliance
	c.mu.Lock()
	defer c.mu.Unlock()
	k := complianceKey{rec.TenantID, rec.RunID, rec.Key}
	if c.byKey[k] {
		return nil
	}
	if rec.EvaluatedAt.IsZero() {
		rec.EvaluatedAt = s.now()
	}
	rec.EvaluatedAt = rec.EvaluatedAt.UTC()
	if c.byKey == nil {
		c.byKey = map[complianceKey]bool{}
		c.byTenant = map[string][]bindings.ComplianceRecord{}
	}
	c.byKey[k] = true
	recs := c.byTenant[rec.TenantID]
	i, _ := slices.BinarySearchFunc(recs, rec.Cursor(), func(r bindings.ComplianceRecord, at bindings.ComplianceCursor) int {
		return compareCursors(r.Cursor(), at)
	})
	c.byTenant[rec.TenantID] = slices.Insert(recs, i, rec)
	return nil
}

// ListCompliance implements bindings.ComplianceRecorder.
func (s *Store) ListCompliance(ctx context.Context, in bindings.ListComplianceInput) (bindings.CompliancePage, error) {
	limit, err := bindings.CheckListCompliance(in)
	if err := checkedCall(ctx, err); err != nil {
		return bindings.CompliancePage{}, err
	}
	c := &s.compliance
	c.mu.RLock()
	defer c.mu.RUnlock()
	recs := c.byTenant[in.TenantID]
	start := 0
	if in.After != nil {
		start, _ = slices.BinarySearchFunc(recs, *in.After, func(r bindings.ComplianceRecord, at bindings.ComplianceCursor) int {
			if compareCursors(r.Cursor(), at) <= 0 {
				return -1
			}
			return 1
		})
	}
	page := bindings.CompliancePage{Records: []bindings.ComplianceRecord{}}
	for _, r := range recs[start:] {
		if in.RunID != "" && r.RunID != in.RunID {
			continue
		}
		if len(page.Records) == limit {
			last := page.Records[limit-1].Cursor()
			page.Next = &last
			break
		}
		page.Records = append(page.Records, r)
	}
	return page, nil
}

// compareCursors orders compliance records' cursors.
var compareCursors = compareBy(bindings.ComplianceCursorLess)
