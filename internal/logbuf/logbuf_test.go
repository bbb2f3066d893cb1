package logbuf_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/kindgi/agents/internal/logbuf"
)

// TestConcurrentWrites: lines written from many goroutines at once all
// arrive whole (run with -race).
func TestConcurrentWrites(t *testing.T) {
	var b logbuf.Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if _, err := b.Write([]byte("line\n")); err != nil {
					t.Error(err)
				}
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("line\n", 800) {
		t.Errorf("buffer holds %d bytes, want 800 whole lines", len(got))
	}
}
