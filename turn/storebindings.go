package turn

import (
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
)

// StoreBindings returns Bindings whose storage fields are store wherever
// store implements them: Conversations (bindings.ConversationBinding),
// Snapshots (RunSnapshotBinding), Runs (RunBinding), Memory
// (MemoryQueryBinding), Hitl (HitlBinding), Provenance.Emitter
// (ProvenanceEmitter), Compliance (ComplianceRecorder) and Journal
// (journal.Driver: the store's native open and commit). A field store
// does not implement stays nil, and nothing else is set: add Providers and
// Tools (and any optional binding) to the result.
//
//	store := memstore.New(nil)
//	b := turn.StoreBindings(store)
//	b.Providers, b.Tools = providers, tools
//
// It is the Go shape of binding one store everywhere, beside the field by
// field form that the TypeScript package's InvokeAgentBindings has.
func StoreBindings(store any) Bindings {
	var b Bindings
	if store == nil {
		return b
	}
	b.Conversations, _ = store.(bindings.ConversationBinding)
	b.Snapshots, _ = store.(bindings.RunSnapshotBinding)
	b.Runs, _ = store.(bindings.RunBinding)
	b.Memory, _ = store.(bindings.MemoryQueryBinding)
	b.Hitl, _ = store.(bindings.HitlBinding)
	b.Provenance.Emitter, _ = store.(bindings.ProvenanceEmitter)
	b.Compliance, _ = store.(bindings.ComplianceRecorder)
	b.Journal, _ = store.(journal.Driver)
	return b
}
