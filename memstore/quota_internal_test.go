package memstore

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kindgi/agents/bindings"
)

// TestQuotaWindowMatchesASum holds the window's running sum (quotaRec's
// head and sum, moved on by each take) to the plain sum of the units in
// the window, over random takes and adds whose times mostly go forward,
// sometimes back, past the window and past the retention.
func TestQuotaWindowMatchesASum(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 25))
	s := New(nil)
	q := bindings.Quota{Name: "q", Scope: bindings.QuotaTokens, Limit: 400, WindowSeconds: 60}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type unit struct {
		at     time.Time
		amount float64
	}
	kept := map[string]unit{}
	for i := range 3000 {
		switch r := rng.IntN(100); {
		case r < 70:
			now = now.Add(time.Duration(rng.IntN(5000)) * time.Millisecond)
		case r < 80:
			now = now.Add(-time.Duration(rng.IntN(90)) * time.Second)
		case r < 82:
			now = now.Add(bindings.QuotaUnitRetention + time.Duration(rng.IntN(120))*time.Second)
		case r < 84:
			now = now.Add(-bindings.QuotaUnitRetention + time.Duration(rng.IntN(120))*time.Second)
		}
		name := fmt.Sprint("u", rng.IntN(400))
		amount := float64(rng.IntN(50))
		add := rng.IntN(3) == 0
		var res bindings.QuotaTakeResult
		var err error
		in := bindings.QuotaTakeInput{TenantID: "t", Quota: q, Unit: name, Amount: amount, Now: now}
		if add {
			res, err = s.Add(t.Context(), in)
		} else {
			res, err = s.Take(t.Context(), in)
		}
		if err != nil {
			t.Fatal(err)
		}
		for k, u := range kept { // the retention forgets units
			if !u.at.After(now.Add(-q.Window() - bindings.QuotaUnitRetention)) {
				delete(kept, k)
			}
		}
		before := 0.0
		for _, u := range kept {
			if u.at.After(now.Add(-q.Window())) {
				before += u.amount
			}
		}
		_, had := kept[name]
		want := before
		if !had && (add || (amount > 0 && before+amount <= q.Limit)) {
			kept[name] = unit{now, amount}
			want += amount
		}
		if d := res.Used - want; d > 1e-9 || d < -1e-9 {
			t.Fatalf("op %d (%s %v at %v): used %v, want %v", i, name, amount, now, res.Used, want)
		}
	}
}
