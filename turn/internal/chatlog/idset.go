package chatlog

import "slices"

// idSet is a set of call ids: a list while it is short (a history
// window's calls mostly are), a map past idSetScan.
type idSet struct {
	list []string
	m    map[string]bool
}

// idSetScan is the most ids an idSet scans.
const idSetScan = 32

// init makes room for n ids.
func (s *idSet) init(n int) {
	if n > idSetScan {
		s.m = make(map[string]bool, n)
	} else {
		s.list = make([]string, 0, n)
	}
}

func (s *idSet) add(id string) {
	switch {
	case s.m != nil:
		s.m[id] = true
	case len(s.list) == idSetScan:
		s.m = make(map[string]bool, 2*idSetScan)
		for _, k := range s.list {
			s.m[k] = true
		}
		s.m[id] = true
	default:
		s.list = append(s.list, id)
	}
}

func (s *idSet) has(id string) bool {
	if s.m != nil {
		return s.m[id]
	}
	return slices.Contains(s.list, id)
}
