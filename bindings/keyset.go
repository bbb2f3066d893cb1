package bindings

import "time"

// keysetLess orders the keys (at, a1, a2) and (bt, b1, b2) of a keyset
// listing: by time, then by the first id, then by the second (ids compared
// byte-wise). The sweeps' and the compliance listings all page in this
// order.
func keysetLess(at time.Time, a1, a2 string, bt time.Time, b1, b2 string) bool {
	if !at.Equal(bt) {
		return at.Before(bt)
	}
	if a1 != b1 {
		return a1 < b1
	}
	return a2 < b2
}
