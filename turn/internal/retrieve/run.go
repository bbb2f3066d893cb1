package retrieve

import (
	"context"
	"strings"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/codes"
	"github.com/kindgi/agents/turn/internal/drive"
)

// Run runs each intent as one memory query on mem (Query), in order, and
// gives add every fact not fetched before (by id; a fact two intents
// fetch goes with the first) without its embedding and with its data as
// the journal stores it. A failed query is coded "query memory".
func Run(ctx context.Context, mem bindings.MemoryQueryBinding, tenantID, projectID, conversationID, query string,
	intents []agent.RetrievalIntent, embedding []float32, add func(bindings.ScoredFact, agent.RetrievalIntent)) error {
	seen := map[string]bool{}
	for _, in := range intents {
		facts, err := mem.QueryFacts(ctx, Query(tenantID, projectID, conversationID, in, query, embedding))
		if err != nil {
			return codes.Coded(err, "query memory")
		}
		for _, f := range facts {
			if seen[f.Fact.ID] {
				continue
			}
			seen[f.Fact.ID] = true
			f.Fact.Embedding = nil
			f.Fact.Data = drive.Journaled(f.Fact.Data)
			add(f, in)
		}
	}
	return nil
}

// Format builds the prompt section that shows the model the facts (each
// item's fact is fact(&item)), one line per fact with its id and type; ""
// when there are none.
func Format[F any](items []F, fact func(*F) *bindings.Fact) string {
	if len(items) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("## Retrieved facts\n")
	b.WriteString("Facts from memory that may help; cite a fact by its id.\n")
	for i := range items {
		f := fact(&items[i])
		b.WriteString("- [")
		b.WriteString(f.ID)
		b.WriteString("] (")
		b.WriteString(f.Type)
		b.WriteString(") ")
		b.WriteString(strings.ReplaceAll(strings.TrimSpace(f.Text), "\n", " "))
		b.WriteByte('\n')
	}
	return b.String()
}
