package main

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestExample runs the example: three recorded runs, the tool never run
// by the evaluation, one case regressed with the grader's reason.
func TestExample(t *testing.T) {
	var out bytes.Buffer
	ok, err := run(t.Context(), &out)
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		t.Error("run reported every case passed; the second regresses")
	}
	want := `recorded 3 runs of acme.support@1.0.0 (the tool ran 3 times)
evaluated acme.support@1.1.0 on them (the tool ran 0 times)

PASS      run-1  "Where is order 17?"
          baseline: Sorry for the delay: order 17 arrives on Friday.
          new:      Sorry, order 17 arrives Friday.
REGRESSED run-2  "Order 23 is late!"
          baseline: Sorry for the delay: order 23 arrives on Friday.
          new:      Order 23: Friday.
          matches /(?i)\bsorry\b/: the answer does not match /(?i)\bsorry\b/
PASS      run-3  "Status of order 42?"
          baseline: Order 42 is delayed, sorry; it arrives on Friday.
          new:      Sorry, order 42 arrives Friday.

2 passed, 1 failed, 1 regressed; 6 model calls, $0.0009
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}
