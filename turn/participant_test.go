package turn_test

import (
	"testing"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn"
)

func TestParticipantIsRecordedOnTheUserMessageAndInProvenance(t *testing.T) {
	f := newFixture(t, searchThenAnswer(), nil)
	in := f.input("Draft a confidentiality clause.")
	in.ParticipantID = "user-7"
	res, err := turn.Invoke(t.Context(), in, f.bindings())
	if err != nil {
		t.Fatal(err)
	}
	stored := f.messages()
	for _, m := range stored {
		want := ""
		if m.Role == bindings.RoleUser {
			want = "user-7"
		}
		if m.ParticipantID != want {
			t.Errorf("stored %s message has participant %q, want %q", m.Role, m.ParticipantID, want)
		}
	}
	if res.Appended[0].Role != bindings.RoleUser || res.Appended[0].ParticipantID != "user-7" {
		t.Errorf("Result.Appended[0] = %+v, want the user message of user-7", res.Appended[0])
	}
	if res.Provenance == nil || res.Provenance.ParticipantID != "user-7" {
		t.Fatalf("provenance %+v, want participant user-7", res.Provenance)
	}
	if err := turn.VerifyProvenance(t.Context(), *res.Provenance, f.keys); err != nil {
		t.Errorf("the record with a participant does not verify: %v", err)
	}
	tampered := *res.Provenance
	tampered.ParticipantID = "user-8"
	if err := turn.VerifyProvenance(t.Context(), tampered, f.keys); err == nil {
		t.Error("the signature does not cover the participant")
	}
	if rec, ok := f.store.Provenance(tenant, res.RunID); !ok || rec.ParticipantID != "user-7" {
		t.Errorf("emitted record %+v, want participant user-7", rec)
	}
}
