package sweep

import (
	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// CloseLister is what turn.CloseInactive sweeps with: conv's
// InactiveConversationLister, once conv and lookup are bound
// (*agents.InvalidBindingsError otherwise).
func CloseLister(conv bindings.ConversationBinding, lookup Lookup) (bindings.InactiveConversationLister, error) {
	if conv == nil {
		return nil, &agents.InvalidBindingsError{Reason: "CloseInactive needs Bindings.Conversations"}
	}
	lister, ok := conv.(bindings.InactiveConversationLister)
	if !ok {
		return nil, &agents.InvalidBindingsError{Reason: "CloseInactive needs a conversation binding that implements bindings.InactiveConversationLister"}
	}
	if lookup == nil {
		return nil, &agents.InvalidBindingsError{Reason: "CloseInactive needs an agent lookup"}
	}
	return lister, nil
}

// ExpireSweeper is what turn.ExpireApprovals sweeps with: hitl's
// ApprovalSweeper, once lookup is bound (*agents.InvalidBindingsError
// otherwise).
func ExpireSweeper(hitl bindings.HitlBinding, lookup Lookup) (bindings.ApprovalSweeper, error) {
	if lookup == nil {
		return nil, &agents.InvalidBindingsError{Reason: "ExpireApprovals needs an agent lookup"}
	}
	sweeper, ok := hitl.(bindings.ApprovalSweeper)
	if !ok {
		return nil, &agents.InvalidBindingsError{Reason: "ExpireApprovals needs a HITL binding that implements bindings.ApprovalSweeper"}
	}
	return sweeper, nil
}
