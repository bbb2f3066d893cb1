package console

import (
	"net/http"
	"slices"
	"time"

	"github.com/kindgi/agents/bindings"
)

// quotaRow is one quota of a tenant as the quotas page shows it.
type quotaRow struct {
	TenantID string
	Usage    bindings.QuotaUsage
	// Percent is how full the window is (0–100, capped), for the bar.
	Percent int
	Full    bool
}

// waitingRun is a run queued until its quota's window frees.
type waitingRun struct {
	Run   bindings.Run
	Until time.Time
}

// quotaTenant is one tenant's section of the quotas page.
type quotaTenant struct {
	TenantID string
	Quotas   []quotaRow
	Waiting  []waitingRun
}

// quotas serves GET /quotas: for each tenant of the reviewer, the use of
// each quota in its window and when the window frees (from the store's
// bindings.QuotaCounter), and the runs waiting on a quota (queued with a
// NotBefore still ahead). A store without a counter shows that it counts
// no quotas.
func (h *handler) quotas(w http.ResponseWriter, r *http.Request, rv Reviewer) {
	ctx := r.Context()
	counter, counts := h.opts.Store.(bindings.QuotaCounter)
	now := h.opts.Now()
	var tenants []quotaTenant
	for _, tenant := range rv.TenantIDs {
		if tenant == "" {
			continue
		}
		qt := quotaTenant{TenantID: tenant}
		if counts {
			usage, err := counter.QuotaUsage(ctx, tenant, now)
			if err != nil {
				h.storeError(w, r, rv, err)
				return
			}
			for _, u := range usage {
				row := quotaRow{TenantID: tenant, Usage: u}
				if u.Quota.Limit > 0 {
					row.Percent = int(min(100, u.Used/u.Quota.Limit*100))
				}
				row.Full = u.Used >= u.Quota.Limit
				qt.Quotas = append(qt.Quotas, row)
			}
		}
		waiting, err := h.waitingRuns(r, tenant, now)
		if err != nil {
			h.storeError(w, r, rv, err)
			return
		}
		qt.Waiting = waiting
		tenants = append(tenants, qt)
	}
	h.render(w, r, http.StatusOK, "quotas", page{Title: "Quotas", Nav: "quotas", Reviewer: rv,
		Data: struct {
			Counts  bool
			Tenants []quotaTenant
		}{counts, tenants}})
}

// waitingRuns lists a tenant's queued runs whose NotBefore is after now,
// soonest first (at most maxScan runs are read).
func (h *handler) waitingRuns(r *http.Request, tenant string, now time.Time) ([]waitingRun, error) {
	var out []waitingRun
	after := ""
	for read := 0; read < maxScan; {
		page, err := h.opts.Store.ListRuns(r.Context(), bindings.ListRunsInput{TenantID: tenant, Statuses: []bindings.RunStatus{bindings.RunQueued}, After: after, Limit: 500})
		if err != nil {
			return nil, err
		}
		for _, run := range page.Runs {
			if run.NotBefore.After(now) {
				out = append(out, waitingRun{Run: run, Until: run.NotBefore})
			}
		}
		read += len(page.Runs)
		if page.Next == "" || len(page.Runs) == 0 {
			break
		}
		after = page.Next
	}
	slices.SortFunc(out, func(a, b waitingRun) int { return a.Until.Compare(b.Until) })
	return out, nil
}
