package turn

import "testing"

// plainWords agrees with jsonPlain on every byte in every position, next to
// plain bytes and next to every other byte.
func TestPlainWordsIsJSONPlain(t *testing.T) {
	for c := 0; c < 256; c++ {
		for pos := 0; pos < 8; pos++ {
			for _, fill := range []byte{'a', 0x00, 0x1F, 0x20, 0x7F, 0x80, 0xFF, '"', '<'} {
				w := []byte("abcdefgh")
				for k := range w {
					if k != pos && k%3 == 0 {
						w[k] = fill
					}
				}
				w[pos] = byte(c)
				want := 8
				for _, x := range w {
					if !jsonPlain[x] {
						want = 0
					}
				}
				if got := plainWords(string(w) + "xyz"); got != want {
					t.Fatalf("plainWords(%q) = %d, want %d", w, got, want)
				}
				if got := plainWords("01234567" + string(w)); got != 8+want {
					t.Fatalf("plainWords(01234567%q) = %d, want %d", w, got, 8+want)
				}
			}
		}
	}
}
