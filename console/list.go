package console

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn"
)

// Bounds of the lists.
const (
	perPage = 50
	// maxScan bounds the rows a list reads to count, filter and page
	// (per tenant): beyond it the count says "more than".
	maxScan = 10000
)

// filters are a list's query: what it keeps and where its page starts.
type filters struct {
	Status, Agent, Tool, ID string
	From, To                string // dates (YYYY-MM-DD) as given
	from, to                time.Time
	Older, Newer            string // cursors
}

// parseFilters reads the list query of r; an error is a bad request.
func parseFilters(r *http.Request) (filters, string) {
	q := r.URL.Query()
	f := filters{Status: q.Get("status"), Agent: strings.TrimSpace(q.Get("agent")), Tool: strings.TrimSpace(q.Get("tool")),
		ID: strings.TrimSpace(q.Get("id")), From: q.Get("from"), To: q.Get("to"), Older: q.Get("older"), Newer: q.Get("newer")}
	if f.From != "" {
		t, err := time.Parse(time.DateOnly, f.From)
		if err != nil {
			return f, "from must be a date (YYYY-MM-DD)"
		}
		f.from = t
	}
	if f.To != "" {
		t, err := time.Parse(time.DateOnly, f.To)
		if err != nil {
			return f, "to must be a date (YYYY-MM-DD)"
		}
		f.to = t.Add(24 * time.Hour) // through the end of that day
	}
	return f, ""
}

// inRange reports whether t is in the filters' time range.
func (f filters) inRange(t time.Time) bool {
	return (f.from.IsZero() || !t.Before(f.from)) && (f.to.IsZero() || t.Before(f.to))
}

// Query is the filters as a query string, without the cursors.
func (f filters) Query() url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"status": f.Status, "agent": f.Agent, "tool": f.Tool, "id": f.ID, "from": f.From, "to": f.To} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v
}

// sortKey orders list rows: by time (fixed-width, so that the keys
// compare as the times do), then tenant and id.
func sortKey(t time.Time, tenant, id string) string {
	return fmt.Sprintf("%020d\x00%s\x00%s", max(0, t.UnixNano()), tenant, id)
}

// keyed is a list row with its sort key.
type keyed[T any] struct {
	key string
	row T
}

// pager is one page of a list.
type pager[T any] struct {
	Rows         []T
	Total        int
	More         bool // Total stopped at maxScan
	Older, Newer string
	First        int // the 1-based position of the page's first row
}

// paginate sorts rows newest first (oldest first with asc) and cuts the
// page f's cursor names: after Older, or just before Newer, or the first.
// A cursor is the sort key of the row it follows, so a page holds even
// when rows come and go.
func paginate[T any](rows []keyed[T], f filters, asc, more bool) pager[T] {
	cmp := func(a, b keyed[T]) int { return strings.Compare(b.key, a.key) }
	if asc {
		cmp = func(a, b keyed[T]) int { return strings.Compare(a.key, b.key) }
	}
	slices.SortStableFunc(rows, cmp)
	p := pager[T]{Total: len(rows), More: more}
	lo, hi := 0, min(perPage, len(rows))
	if k, ok := cursor(f.Older); ok {
		lo = slices.IndexFunc(rows, func(r keyed[T]) bool { return cmp(r, keyed[T]{key: k}) > 0 })
		if lo < 0 {
			lo = len(rows)
		}
		hi = min(lo+perPage, len(rows))
	} else if k, ok := cursor(f.Newer); ok {
		hi = slices.IndexFunc(rows, func(r keyed[T]) bool { return cmp(r, keyed[T]{key: k}) >= 0 })
		if hi < 0 {
			hi = len(rows)
		}
		lo = max(0, hi-perPage)
		if lo == 0 {
			hi = min(perPage, len(rows)) // the first page is always full
		}
	}
	for _, r := range rows[lo:hi] {
		p.Rows = append(p.Rows, r.row)
	}
	p.First = lo + 1
	if hi < len(rows) {
		p.Older = base64.RawURLEncoding.EncodeToString([]byte(rows[hi-1].key))
	}
	if lo > 0 {
		p.Newer = base64.RawURLEncoding.EncodeToString([]byte(rows[lo].key))
	}
	return p
}

func cursor(s string) (string, bool) {
	if s == "" {
		return "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	return string(b), err == nil
}

// allRuns reads the runs of the reviewer's tenants that pass f, up to
// maxScan per tenant.
func (h *handler) allRuns(ctx context.Context, rv Reviewer, f filters) ([]keyed[runRow], bool, error) {
	var statuses []bindings.RunStatus
	if f.Status != "" {
		statuses = []bindings.RunStatus{bindings.RunStatus(f.Status)}
	}
	var out []keyed[runRow]
	more := false
	for _, t := range rv.TenantIDs {
		in := bindings.ListRunsInput{TenantID: t, Statuses: statuses, Limit: bindings.MaxRunPageLimit}
		cut, err := scan(func(after string) ([]bindings.Run, string, error) {
			in.After = after
			p, err := h.opts.Store.ListRuns(ctx, in)
			return p.Runs, p.Next, err
		}, func(run bindings.Run) {
			if (f.ID != "" && !strings.Contains(run.ID, f.ID)) || !f.inRange(run.CreatedAt) {
				return
			}
			row := runRow{Run: run}
			if f.Tool != "" && !h.calledTool(ctx, t, run.ID, f.Tool) {
				return
			}
			if f.Agent != "" {
				snap, err := h.opts.Store.Read(ctx, t, run.ID)
				if err != nil || snap.AgentID != f.Agent {
					return
				}
				row.Agent = snap.AgentID + "@" + snap.AgentVersion
			}
			out = append(out, keyed[runRow]{sortKey(run.CreatedAt, t, run.ID), row})
		})
		if err != nil {
			return nil, false, err
		}
		more = more || cut
	}
	return out, more, nil
}

// scan reads one tenant's list page by page: read returns the items of
// the page at cursor and the next page's cursor (zero after the last).
// Each item is given to each. Past maxScan items it stops, with more true
// when pages were left unread.
func scan[T any, C comparable](read func(cursor C) ([]T, C, error), each func(T)) (more bool, err error) {
	var cursor, last C
	n := 0
	for {
		items, next, err := read(cursor)
		if err != nil {
			return false, err
		}
		for _, it := range items {
			n++
			each(it)
		}
		if next == last {
			return false, nil
		}
		if n >= maxScan {
			return true, nil
		}
		cursor = next
	}
}

// calledTool reports whether the run's journal dispatched a call of tool
// (the dispatch-tools step's list of calls).
func (h *handler) calledTool(ctx context.Context, tenant, runID, tool string) bool {
	es, err := h.opts.Store.ReadJournal(ctx, tenant, runID)
	if err != nil {
		return false
	}
	for _, e := range es {
		if e.Node != turn.NodeDispatchTools || e.Status != bindings.StepCompleted || len(e.Output) == 0 || e.Output[0] != '[' {
			continue
		}
		var calls []pendingCall
		if json.Unmarshal(e.Output, &calls) == nil && slices.ContainsFunc(calls, func(c pendingCall) bool { return c.ToolID == tool }) {
			return true
		}
	}
	return false
}

// allConversations reads the conversations of the reviewer's tenants that
// pass f, up to maxScan per tenant.
func (h *handler) allConversations(ctx context.Context, rv Reviewer, f filters) ([]keyed[bindings.Conversation], bool, error) {
	var out []keyed[bindings.Conversation]
	more := false
	for _, t := range rv.TenantIDs {
		in := bindings.ListConversationsPageInput{ListConversationsInput: bindings.ListConversationsInput{TenantID: t, Limit: 200}}
		cut, err := scan(func(cursor *bindings.ConversationPageCursor) ([]bindings.Conversation, *bindings.ConversationPageCursor, error) {
			in.Cursor = cursor
			p, err := h.opts.Store.ListConversationsPage(ctx, in)
			return p.Conversations, p.Next, err
		}, func(c bindings.Conversation) {
			if (f.ID != "" && !strings.Contains(c.ID, f.ID) && !strings.Contains(strings.ToLower(c.Title), strings.ToLower(f.ID))) ||
				(f.Agent != "" && c.AgentID != f.Agent) || (f.Status != "" && string(c.Status) != f.Status) || !f.inRange(c.LastActivityAt) {
				return
			}
			out = append(out, keyed[bindings.Conversation]{sortKey(c.LastActivityAt, t, c.ID), c})
		})
		if err != nil {
			return nil, false, err
		}
		more = more || cut
	}
	return out, more, nil
}
