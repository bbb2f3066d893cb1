package memstore

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/kindgi/agents/bindings"
)

var _ bindings.QuotaCounter = (*Store)(nil)

// quotaKey names one quota of one tenant.
type quotaKey struct{ tenant, name string }

// quotaRec is one quota's counted units: units oldest first, amounts by
// unit (every unit remembered, in the window or within the retention
// after it). units[head:] are the window that ended at the last take,
// holding sum: a take moves head on past the units that left it, so it
// costs the units that left, not the window's length.
type quotaRec struct {
	def    bindings.Quota
	units  []quotaUnit
	amount map[string]float64
	head   int
	sum    float64
	from   time.Time // the start of the window head and sum are of
}

type quotaUnit struct {
	unit string
	bindings.QuotaUnit
}

// quotaCounts is the Store's QuotaCounter state, under its own lock.
type quotaCounts struct {
	mu   sync.Mutex
	recs map[quotaKey]*quotaRec
}

// Take implements bindings.QuotaCounter.
func (s *Store) Take(ctx context.Context, in bindings.QuotaTakeInput) (bindings.QuotaTakeResult, error) {
	return s.count(ctx, in, false)
}

// Add implements bindings.QuotaCounter.
func (s *Store) Add(ctx context.Context, in bindings.QuotaTakeInput) (bindings.QuotaTakeResult, error) {
	return s.count(ctx, in, true)
}

// count takes (or, with add, adds) one unit under the quota lock.
func (s *Store) count(ctx context.Context, in bindings.QuotaTakeInput, add bool) (bindings.QuotaTakeResult, error) {
	if err := checkedCall(ctx, bindings.CheckQuotaTake(in)); err != nil {
		return bindings.QuotaTakeResult{}, err
	}
	now := in.Now
	if now.IsZero() {
		now = s.now()
	}
	q := &s.quotas
	q.mu.Lock()
	defer q.mu.Unlock()
	rec := q.rec(in.TenantID, in.Quota)
	rec.prune(now)
	used := rec.window(now)
	if _, ok := rec.amount[in.Unit]; ok {
		return bindings.QuotaTakeResult{Allowed: true, Used: used}, nil
	}
	if !add && !bindings.QuotaFits(used, in.Amount, in.Quota.Limit) {
		return bindings.QuotaTakeResult{Used: used, RetryAfter: bindings.QuotaRetryAfter(in.Quota, rec.windowUnits(), in.Amount, now)}, nil
	}
	if in.Amount == 0 && !add {
		return bindings.QuotaTakeResult{Allowed: true, Used: used}, nil // a check records nothing
	}
	rec.amount[in.Unit] = in.Amount
	u := quotaUnit{in.Unit, bindings.QuotaUnit{At: now, Amount: in.Amount}}
	byTime := func(a, b quotaUnit) int { return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.unit, b.unit)) }
	if n := len(rec.units); n == 0 || byTime(rec.units[n-1], u) < 0 {
		rec.units = append(rec.units, u) // the usual case: time goes forward
	} else {
		i, _ := slices.BinarySearchFunc(rec.units, u, byTime)
		rec.units = slices.Insert(rec.units, i, u)
	}
	rec.sum += in.Amount // u.At is now: in the window, at or after head
	return bindings.QuotaTakeResult{Allowed: true, Used: used + in.Amount}, nil
}

// rec returns the tenant's record of quota, made on first use, with the
// quota's definition as given now.
func (q *quotaCounts) rec(tenant string, def bindings.Quota) *quotaRec {
	if q.recs == nil {
		q.recs = map[quotaKey]*quotaRec{}
	}
	k := quotaKey{tenant, def.Name}
	rec := q.recs[k]
	if rec == nil {
		rec = &quotaRec{amount: map[string]float64{}}
		q.recs[k] = rec
	}
	rec.def = def
	return rec
}

// prune forgets the units older than the window and its retention.
func (rec *quotaRec) prune(now time.Time) {
	cut := now.Add(-rec.def.Window() - bindings.QuotaUnitRetention)
	n := 0
	for n < len(rec.units) && !rec.units[n].At.After(cut) {
		delete(rec.amount, rec.units[n].unit)
		if n >= rec.head {
			rec.sum -= rec.units[n].Amount // still in the window head and sum are of
		}
		n++
	}
	if n > 0 {
		rec.units = slices.Delete(rec.units, 0, n)
		rec.head = max(rec.head-n, 0)
	}
}

// window moves the window to the one ending at now and returns what it
// holds. A window that starts before the last one (a clock set back, or
// takes passing their own times) is summed afresh.
func (rec *quotaRec) window(now time.Time) float64 {
	from := now.Add(-rec.def.Window())
	if from.Before(rec.from) || rec.head > len(rec.units) {
		rec.head, rec.sum = 0, 0
		for _, u := range rec.units {
			rec.sum += u.Amount
		}
	}
	for rec.head < len(rec.units) && !rec.units[rec.head].At.After(from) {
		rec.sum -= rec.units[rec.head].Amount
		rec.head++
	}
	if rec.head == len(rec.units) {
		rec.sum = 0 // no rounding left behind by the subtractions
	}
	rec.from = from
	return rec.sum
}

// windowUnits returns the window's units, oldest first (after window).
func (rec *quotaRec) windowUnits() []bindings.QuotaUnit {
	out := make([]bindings.QuotaUnit, len(rec.units)-rec.head)
	for i, u := range rec.units[rec.head:] {
		out[i] = u.QuotaUnit
	}
	return out
}

// QuotaUsage implements bindings.QuotaCounter.
func (s *Store) QuotaUsage(ctx context.Context, tenantID string, now time.Time) ([]bindings.QuotaUsage, error) {
	if err := checkedCall(ctx, bindings.CheckID("tenant id", tenantID)); err != nil {
		return nil, err
	}
	if now.IsZero() {
		now = s.now()
	}
	q := &s.quotas
	q.mu.Lock()
	defer q.mu.Unlock()
	out := []bindings.QuotaUsage{}
	for k, rec := range q.recs {
		if k.tenant != tenantID {
			continue
		}
		u := bindings.QuotaUsage{Quota: rec.def, Used: rec.window(now)}
		if rec.head < len(rec.units) {
			u.FreesAt = rec.units[rec.head].At.Add(rec.def.Window())
		}
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b bindings.QuotaUsage) int { return cmp.Compare(a.Quota.Name, b.Quota.Name) })
	return out, nil
}
