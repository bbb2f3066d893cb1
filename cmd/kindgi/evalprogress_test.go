package main

import (
	"bytes"
	"testing"

	"github.com/kindgi/agents/eval"
)

// TestProgressBar: on a terminal each finished case redraws one bar in
// place, and the bar's line is ended once; otherwise each case is a plain
// line.
func TestProgressBar(t *testing.T) {
	var buf bytes.Buffer
	p := &progress{w: &buf, tty: true}
	p.onCase(1, 3, eval.CaseResult{ID: "a", Pass: true})
	p.onCase(3, 3, eval.CaseResult{ID: "c", Regressed: true})
	p.end()
	want := "\r\033[K[##########....................] 1/3 a" + "\r\033[K[##############################] 3/3 c" + "\n"
	if buf.String() != want {
		t.Errorf("bar = %q, want %q", buf.String(), want)
	}
	buf.Reset()
	p = newProgress(&buf) // not a terminal
	p.onCase(1, 2, eval.CaseResult{ID: "a", Reason: "the turn failed: boom"})
	p.end()
	if want := "[1/2] FAIL a: the turn failed: boom\n"; buf.String() != want {
		t.Errorf("plain = %q, want %q", buf.String(), want)
	}
}
