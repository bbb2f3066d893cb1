package memstore_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
)

// FuzzConversationPages checks the keyset index against a model. After a
// random mix of opens (with many OpenedAt ties) and deletes, it pages with
// a random page size, opening a random conversation between pages. The
// pages must hold, in list order and without repeats, the conversations
// that existed at the start plus those opened between pages that sort
// after the cursor in force when they were opened.
func FuzzConversationPages(f *testing.F) {
	for _, seed := range []uint64{1, 2, 3, 42, 1000, 65535} {
		f.Add(seed, uint8(seed%7))
	}
	f.Fuzz(func(t *testing.T, seed uint64, pageSize uint8) {
		ctx := t.Context()
		rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		s := memstore.New(nil)
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		type row struct {
			at time.Time
			id string
		}
		// order is the list order: OpenedAt DESC, then ID DESC.
		order := func(a, b row) int {
			if c := b.at.Compare(a.at); c != 0 {
				return c
			}
			return cmp.Compare(b.id, a.id)
		}
		used := map[string]bool{}
		var live []row
		open := func() row {
			r := row{at: base.Add(time.Duration(rng.IntN(5)) * time.Second)}
			for r.id == "" || used[r.id] {
				r.id = fmt.Sprintf("c%05d", rng.IntN(100_000))
			}
			used[r.id] = true
			if _, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: "t", ID: r.id, AgentID: "a", AgentVersion: "1", OpenedAt: r.at}); err != nil {
				t.Fatal(err)
			}
			return r
		}
		for range 20 + rng.IntN(40) {
			if len(live) > 0 && rng.IntN(4) == 0 {
				i := rng.IntN(len(live))
				if err := s.DeleteConversation(ctx, "t", live[i].id); err != nil {
					t.Fatal(err)
				}
				live = slices.Delete(live, i, i+1)
				continue
			}
			live = append(live, open())
		}
		want := slices.Clone(live)
		in := bindings.ListConversationsPageInput{ListConversationsInput: bindings.ListConversationsInput{TenantID: "t", Limit: int(pageSize%7) + 1}}
		var got []string
		for pages := 0; ; pages++ {
			if pages > 200 {
				t.Fatal("pagination did not end after 200 pages")
			}
			p, err := s.ListConversationsPage(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range p.Conversations {
				got = append(got, c.ID)
			}
			if p.Next == nil {
				break
			}
			in.Cursor = p.Next
			if r := open(); order(r, row{at: p.Next.OpenedAt, id: p.Next.ID}) > 0 {
				want = append(want, r)
			}
		}
		slices.SortFunc(want, order)
		wantIDs := []string{}
		for _, r := range want {
			wantIDs = append(wantIDs, r.id)
		}
		if d := gocmp.Diff(wantIDs, got, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("pages (-model +got):\n%s", d)
		}
	})
}
