package journalcodec

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestAppendTimeAsAppendFormat: AppendTime writes what
// AppendFormat(time.RFC3339Nano) writes for every time at offset 0 in the
// years 0–9999 (UTC or another zone at offset 0; nanoseconds with and
// without trailing zeros; the edges of days, months, leap years and
// centuries), and refuses the rest without appending.
func TestAppendTimeAsAppendFormat(t *testing.T) {
	zero := time.FixedZone("ZERO", 0)
	var times []time.Time
	for _, y := range []int{0, 1, 4, 99, 100, 400, 1600, 1899, 1900, 1969, 1970, 1971, 2000, 2024, 2026, 2100, 2400, 9999} {
		for _, md := range [][2]int{{1, 1}, {2, 28}, {2, 29}, {3, 1}, {6, 30}, {12, 31}} {
			for _, ns := range []int{0, 1, 10, 100000, 120000000, 999999999, 500} {
				times = append(times, time.Date(y, time.Month(md[0]), md[1], 0, 0, 0, ns, time.UTC))
				times = append(times, time.Date(y, time.Month(md[0]), md[1], 23, 59, 59, ns, time.UTC))
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	lo := time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	hi := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Unix()
	for range 200000 {
		sec := lo + rng.Int64N(hi-lo+1)
		ns := rng.Int64N(1e9)
		if rng.IntN(4) == 0 {
			ns = ns / 1000 * 1000 // microseconds, as PostgreSQL keeps them
		}
		times = append(times, time.Unix(sec, ns).UTC())
	}
	times = append(times, time.Now().UTC(), time.Now().In(zero), time.Unix(0, 0).In(zero), time.Time{})
	for _, tm := range times {
		got, ok := AppendTime([]byte("x"), tm)
		want := tm.AppendFormat([]byte("x"), time.RFC3339Nano)
		if !ok || string(got) != string(want) {
			t.Fatalf("AppendTime(%v) = %q, %v; want %q", tm, got, ok, want)
		}
	}
	east := time.FixedZone("E", 3600)
	for _, tm := range []time.Time{
		time.Now().In(east), time.Date(2026, 1, 1, 0, 0, 0, 0, east),
		time.Date(-1, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-400, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(-100000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(100000, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		if got, ok := AppendTime([]byte("x"), tm); ok || string(got) != "x" {
			t.Errorf("AppendTime(%v) = %q, %v; want it refused", tm, got, ok)
		}
	}
}
