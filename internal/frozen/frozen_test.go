package frozen

import "testing"

func TestStringSharesTheBytes(t *testing.T) {
	if String(nil) != "" || String([]byte{}) != "" {
		t.Fatal("an empty slice is not the empty string")
	}
	b := []byte("abcdef")
	s := String(b[1:4])
	if s != "bcd" {
		t.Fatalf("String = %q", s)
	}
	// The string shares the bytes: this is what the invariant forbids
	// callers to do, shown once so the sharing is not assumed.
	b[2] = 'X'
	if s != "bXd" {
		t.Fatalf("String = %q after a write, want the shared bytes", s)
	}
}
