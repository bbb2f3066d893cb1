package packserver_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/kindgi/agents/pack/packserver"
)

// TestLoadCapExactlyOnce: with the cap at 4, 2,000 calls from 64
// goroutines each either ran exactly once (200) or got 503 and did not run;
// the probe's per-request counter proves it, and no more than 4 handlers
// ever ran at once.
func TestLoadCapExactlyOnce(t *testing.T) {
	const (
		calls   = 2000
		workers = 64
		limit   = 4
	)
	h := newHarness(t, &packserver.Options{MaxConcurrency: limit})
	transport := h.http.Client().Transport.(*http.Transport)
	transport.MaxIdleConnsPerHost = workers

	type outcome struct {
		id     string
		status int
		err    error
	}
	outcomes := make([]outcome, calls)
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				id := fmt.Sprintf("load-%d", i)
				status, _, body, err := h.do(context.Background(), toolCall("probe.count", id, map[string]any{"ms": 1}))
				if err == nil && status == http.StatusOK {
					var m message
					m, err = decodeMsg(status, http.Header{"Kindgi-Artifact-Version": {"demo-1.0.0+example"}, "Kindgi-Duration-Ms": {"0"}}, body)
					if err == nil && m.Kind != "result" {
						err = fmt.Errorf("200 answer %s %s", m.Kind, m.Code)
					}
				}
				outcomes[i] = outcome{id: id, status: status, err: err}
			}
		})
	}
	for i := range calls {
		next <- i
	}
	close(next)
	wg.Wait()

	ran, refused := 0, 0
	for _, o := range outcomes {
		if o.err != nil {
			t.Fatalf("%s: %v", o.id, o.err)
		}
		runs := h.probe.count(o.id)
		switch o.status {
		case http.StatusOK:
			ran++
			if runs != 1 {
				t.Errorf("%s answered 200 but ran %d times", o.id, runs)
			}
		case http.StatusServiceUnavailable:
			refused++
			if runs != 0 {
				t.Errorf("%s answered 503 but ran %d times", o.id, runs)
			}
		default:
			t.Errorf("%s answered %d", o.id, o.status)
		}
	}
	if m := h.probe.maxRun.Load(); m > limit {
		t.Errorf("%d handlers ran at once; the cap is %d", m, limit)
	}
	if ran == 0 || refused == 0 {
		t.Errorf("ran %d, refused %d: the load did not reach the cap", ran, refused)
	}
	if n := h.srv.InFlight(); n != 0 {
		t.Errorf("%d calls still in flight", n)
	}
	t.Logf("%d calls: %d ran once, %d refused without running; at most %d handlers at once", calls, ran, refused, h.probe.maxRun.Load())
}
