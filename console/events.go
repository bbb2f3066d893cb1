package console

import (
	"context"
	"fmt"
	"hash/fnv"
	"net/http"
	"slices"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// maxStream bounds one event stream; the browser's EventSource connects
// again at once (and so re-authenticates).
const maxStream = 5 * time.Minute

// events streams server-sent events telling a page to refresh itself:
// for ?run=TENANT/ID when that run's journal grows or its status changes,
// else (the approvals page) when any run of the reviewer's tenants
// changes. Changes come from the store's bindings.RunWatcher when it has
// one, checked against the store every RefreshSeconds (a watcher is best
// effort, and a journal growing inside a drive is not a run change);
// without a watcher that check alone drives the stream. The page script
// (assets/console.js) then fetches the page again; without JavaScript a
// reload shows the same.
func (h *handler) events(w http.ResponseWriter, r *http.Request, rv Reviewer) {
	ctx, cancel := context.WithTimeout(r.Context(), maxStream)
	defer cancel()
	var tenant, id string
	if q := r.URL.Query().Get("run"); q != "" {
		t, i, ok := cutRun(q)
		if !ok || !allowed(rv, t) {
			h.notFound(w, r, rv)
			return
		}
		tenant, id = t, i
	}
	var changes <-chan bindings.RunChange
	if wr, ok := h.opts.Store.(bindings.RunWatcher); ok {
		if ch, err := wr.WatchRuns(ctx); err == nil {
			changes = ch
		}
	}
	// The page says what it showed (since); without it, what there is
	// now, taken before the stream starts, is the baseline.
	last, ended := h.state(ctx, rv, tenant, id)
	if since := r.URL.Query().Get("since"); since != "" && since != last {
		last, ended = since, false // changed since the page: tell at once
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a stream outlives the server's write timeout
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprint(w, "retry: 2000\n\n"); err != nil || rc.Flush() != nil {
		return
	}
	every := time.Duration(max(h.opts.RefreshSeconds, 1)) * time.Second
	tick := time.NewTicker(every)
	defer tick.Stop()
	if r.URL.Query().Get("since") != "" {
		tick.Reset(time.Millisecond) // check against the page's state at once
	}
	for !ended {
		select {
		case <-ctx.Done():
			return
		case c, ok := <-changes:
			if !ok {
				changes = nil
				continue
			}
			if c.RunID != "" && (id != "" && (c.TenantID != tenant || c.RunID != id) || id == "" && !slices.Contains(rv.TenantIDs, c.TenantID)) {
				continue
			}
		case <-tick.C:
			tick.Reset(every)
		}
		var now string
		if now, ended = h.state(ctx, rv, tenant, id); now == last {
			continue
		}
		last = now
		if _, err := fmt.Fprint(w, "event: change\ndata: changed\n\n"); err != nil || rc.Flush() != nil {
			return
		}
	}
	// The run ended: nothing more will change, and the script stops
	// listening.
	_, _ = fmt.Fprint(w, "event: end\ndata: ended\n\n")
	_ = rc.Flush()
}

// state is what a page shows, in short: the run's status and last journal
// entry (ended once the run completed or failed), or which approvals are
// pending.
func (h *handler) state(ctx context.Context, rv Reviewer, tenant, id string) (string, bool) {
	if id != "" {
		run, err := h.opts.Store.GetRun(ctx, tenant, id)
		if err != nil {
			return "error " + agents.CodeOf(err), false
		}
		es, err := h.opts.Store.ReadJournal(ctx, tenant, id)
		if err != nil {
			return "error " + agents.CodeOf(err), false
		}
		return runState(run, es), finished(run.Status)
	}
	sum := fnv.New64a()
	for _, t := range rv.TenantIDs {
		list, err := h.approvalsOf(ctx, t, true)
		if err != nil {
			return "error " + agents.CodeOf(err), false
		}
		for _, a := range list {
			sum.Write([]byte(a.Request.ID + "\x00"))
		}
	}
	return fmt.Sprintf("%x", sum.Sum64()), false
}

// runState is the short state of a run the page shows: its status, last
// journal entry and update time, hashed.
func runState(run bindings.Run, es []bindings.JournalEntry) string {
	var seq int64
	if len(es) > 0 {
		seq = es[len(es)-1].Seq
	}
	sum := fnv.New64a()
	fmt.Fprintf(sum, "%s %d %d", run.Status, seq, run.UpdatedAt.UnixNano())
	return fmt.Sprintf("%x", sum.Sum64())
}

// cutRun splits "TENANT/ID" (a run id may hold slashes; a tenant id may
// not be empty).
func cutRun(s string) (tenant, id string, ok bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return s[:i], s[i+1:], i > 0 && i < len(s)-1
		}
	}
	return "", "", false
}
