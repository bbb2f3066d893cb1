package memstore_test

import (
	"context"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
	"github.com/kindgi/agents/memstore"
)

// appendSteps commits in's entries through the store's Driver and returns
// what it stored: the entries and whether each was appended.
func appendSteps(ctx context.Context, s *memstore.Store, in journal.CommitInput) ([]bindings.JournalEntry, []bool, error) {
	res, err := s.Commit(ctx, in)
	return res.Entries, res.Appended, err
}
