package turn_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/turn"
)

// TestUserMessageAfterTheConversationChanged drives a turn whose
// conversation gets a message after Open read it (from the policy
// registry, during setup), on memstore's Driver and through journal.Adapt
// of the same store: the deferred user message is not stored on the stale
// read (a Commit with CheckCount), the turn appends it as without the
// read ahead, and both turns store the same messages, journal the same
// steps, and show the model the same history, with the interjected
// message.
func TestUserMessageAfterTheConversationChanged(t *testing.T) {
	type outcome struct {
		steps    []string
		initial  string
		stored   []string
		lastSeen string
	}
	drive := func(adapt bool) outcome {
		f := newFixture(t, append(searchThenAnswer(), searchThenAnswer()...), nil)
		b := f.bindings()
		if adapt {
			b.Journal = nil
		}
		ctx := context.Background()
		if res, err := turn.Invoke(ctx, f.input("Draft an NDA."), b); err != nil || res.Status != turn.StatusCompleted {
			t.Fatalf("first turn: %+v, %v", res, err)
		}
		var once sync.Once
		b.PolicyRegistry = memstore.Policies{Fail: func(bindings.PolicyRequest) error {
			once.Do(func() {
				if _, err := f.store.AppendMessage(ctx, bindings.AppendMessageInput{TenantID: tenant, ConversationID: f.conv.ID, Role: bindings.RoleSystem, Content: "An operator's note."}); err != nil {
					t.Error(err)
				}
			})
			return nil
		}}
		res, err := turn.Invoke(ctx, f.input("Now the short version."), b)
		if err != nil || res.Status != turn.StatusCompleted || res.TurnNumber != 2 {
			t.Fatalf("second turn: %+v, %v", res, err)
		}
		if len(res.Appended) == 0 || res.Appended[0].Role != bindings.RoleUser || res.Appended[0].Seq == 0 {
			t.Fatalf("second turn appended %+v, want the user message first, with its seq", res.Appended)
		}
		var o outcome
		for _, e := range f.journal(res.RunID) {
			o.steps = append(o.steps, e.Key+" "+string(e.Status))
			switch e.Key {
			case turn.NodeBuildInitialMessages:
				o.initial = string(e.Output)
			case turn.NodePersistUserMessage:
				var m bindings.ConversationMessage
				if err := json.Unmarshal(e.Output, &m); err != nil || m.Seq != res.Appended[0].Seq || m.ID != res.Appended[0].ID {
					t.Errorf("persist-user-message output %s, want the stored message %+v", e.Output, res.Appended[0])
				}
			}
		}
		for _, m := range f.messages() {
			o.stored = append(o.stored, string(m.Role)+" "+m.Content)
		}
		reqs := f.provider.Requests()
		for _, m := range reqs[len(reqs)-2].Messages {
			o.lastSeen += string(m.Role) + ": " + m.Content + "\n"
		}
		return o
	}
	native, adapted := drive(false), drive(true)
	if !strings.Contains(native.initial, "An operator's note.") || !strings.Contains(native.lastSeen, "An operator's note.") {
		t.Errorf("the model's history lacks the interjected message:\n%s\nbuild-initial-messages %s", native.lastSeen, native.initial)
	}
	if native.initial != adapted.initial || native.lastSeen != adapted.lastSeen ||
		strings.Join(native.steps, "\n") != strings.Join(adapted.steps, "\n") || strings.Join(native.stored, "\n") != strings.Join(adapted.stored, "\n") {
		t.Errorf("the turns differ:\nnative  %+v\nadapted %+v", native, adapted)
	}
}
