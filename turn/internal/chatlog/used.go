package chatlog

import (
	"context"
	"encoding/json"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/codes"
)

// usedPage is how many messages Used reads at a time.
const usedPage = 200

// Used reports whether a stored tool message of conversation convID
// before seq before answered as match says of its metadata (turn's: the
// tool ran and succeeded). It pages back from the newest and stops at
// the first match; a failed read is coded "read messages".
func Used(ctx context.Context, convs bindings.ConversationBinding, tenantID, convID string, before int64, match func(meta json.RawMessage) bool) (bool, error) {
	for {
		msgs, err := convs.ReadMessages(ctx, bindings.ReadMessagesInput{
			TenantID: tenantID, ConversationID: convID, Limit: usedPage, BeforeSeq: before,
		})
		if err != nil {
			return false, codes.Coded(err, "read messages")
		}
		for k := len(msgs) - 1; k >= 0; k-- {
			if m := msgs[k]; m.Role == bindings.RoleTool && len(m.Metadata) > 0 && match(m.Metadata) {
				return true, nil
			}
		}
		if len(msgs) < usedPage || msgs[0].Seq <= 1 {
			return false, nil
		}
		before = msgs[0].Seq
	}
}
