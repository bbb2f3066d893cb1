package bindingstest

import (
	"errors"
	"fmt"
	"testing"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// The turn-number cases of RunConversationTests: a user message with
// TurnNumber > 0 opens that turn, and a turn has one user message, so two
// turns that picked the same number cannot both store theirs.

var turnCases = []testCase{
	{name: "UserMessageOfATakenTurnIsBusy", run: testUserMessageOfTakenTurnIsBusy},
	{name: "UserMessageOfAnEarlierTurnIsBusy", run: testUserMessageOfEarlierTurnIsBusy},
	{name: "ReplayOfTheSameUserMessageIsIdempotent", run: testReplayOfUserMessageIsIdempotent},
	{name: "ConcurrentUserMessagesOneWins", run: testConcurrentUserMessagesOneWins},
	{name: "OtherRolesOfATakenTurnAreStored", run: testOtherRolesOfTakenTurn},
	{name: "TurnNumberZeroIsPartOfNoTurn", run: testTurnNumberZero},
	{name: "ClosedWinsOverBusy", run: testClosedWinsOverBusy},
}

// appendRole appends a message of role with a fixed time and returns what
// the binding returned.
func (f *fixture) appendRole(tenant, conv, id string, role bindings.MessageRole, content string, turn int) (bindings.ConversationMessage, error) {
	return f.Conversations.AppendMessage(f.ctx, bindings.AppendMessageInput{
		TenantID: tenant, ConversationID: conv, ID: id, Role: role,
		Content: content, TurnNumber: turn, RunID: "run-" + id, CreatedAt: t0,
	})
}

// wantBusy fails unless err is a *agents.ConversationBusyError naming conv
// and turn.
func wantBusy(t *testing.T, what string, err error, conv string, turn int) {
	t.Helper()
	wantCode(t, what, err, agents.CodeConversationBusy)
	var busy *agents.ConversationBusyError
	if !errors.As(err, &busy) || busy.ConversationID != conv || busy.TurnNumber != turn {
		t.Fatalf("%s: error %#v, want *agents.ConversationBusyError{ConversationID: %q, TurnNumber: %d}", what, err, conv, turn)
	}
}

// wantCounts fails unless the conversation has the counts given.
func (f *fixture) wantCounts(t *testing.T, tenant, conv string, turns, messages int) {
	t.Helper()
	c := f.get(t, tenant, conv)
	if c.TurnCount != turns || c.MessageCount != messages {
		t.Fatalf("TurnCount %d MessageCount %d, want %d and %d", c.TurnCount, c.MessageCount, turns, messages)
	}
}

func testUserMessageOfTakenTurnIsBusy(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(0))
	first := f.appendMsg(t, a, "conv-1", "u1", "first question", 1)
	_, err := f.appendRole(a, "conv-1", "u1-other", bindings.RoleUser, "the same turn, asked again", 1)
	wantBusy(t, "a second user message of turn 1", err, "conv-1", 1)
	diff(t, "stored", f.read(t, a, "conv-1", -1, 0), []bindings.ConversationMessage{first})
	f.wantCounts(t, a, "conv-1", 1, 1)
	// The next number is free.
	next := f.appendMsg(t, a, "conv-1", "u2", "second question", 2)
	if next.TurnNumber != 2 {
		t.Fatalf("the user message of turn 2 was stored with TurnNumber %d", next.TurnNumber)
	}
	f.wantCounts(t, a, "conv-1", 2, 2)
}

func testUserMessageOfEarlierTurnIsBusy(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(0))
	f.appendMsg(t, a, "conv-1", "u3", "a turn 3 with no turns before it", 3)
	for _, turn := range []int{1, 2, 3} {
		_, err := f.appendRole(a, "conv-1", fmt.Sprintf("late-%d", turn), bindings.RoleUser, "late", turn)
		wantBusy(t, fmt.Sprintf("a user message of turn %d after turn 3", turn), err, "conv-1", turn)
	}
	diff(t, "stored", msgIDs(f.read(t, a, "conv-1", -1, 0)), []string{"u3"})
	f.wantCounts(t, a, "conv-1", 3, 1)
}

func testReplayOfUserMessageIsIdempotent(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(0))
	first, err := f.appendRole(a, "conv-1", "run-1/persist-user-message", bindings.RoleUser, "question", 1)
	must(t, "append the user message of turn 1", err)
	// A driver retrying the step after a crash appends the same id again:
	// that is the turn that holds the number, not a rival.
	again, err := f.appendRole(a, "conv-1", "run-1/persist-user-message", bindings.RoleUser, "question", 1)
	must(t, "replay the user message of turn 1", err)
	diff(t, "replayed append", again, first)
	// Also after later turns moved TurnCount on.
	f.appendMsg(t, a, "conv-1", "u2", "next question", 2)
	again, err = f.appendRole(a, "conv-1", "run-1/persist-user-message", bindings.RoleUser, "question", 1)
	must(t, "replay the user message of turn 1 after turn 2", err)
	diff(t, "replayed append after turn 2", again, first)
	diff(t, "stored", msgIDs(f.read(t, a, "conv-1", -1, 0)), []string{"run-1/persist-user-message", "u2"})
	f.wantCounts(t, a, "conv-1", 2, 2)
}

func testConcurrentUserMessagesOneWins(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(0))
	f.appendMsg(t, a, "conv-1", "u1", "turn 1", 1)
	msgs := make([]bindings.ConversationMessage, racers)
	winner := raceOne(t, "stored a user message of turn 2", func(i int, racer string) (err error) {
		msgs[i], err = f.appendRole(a, "conv-1", racer, bindings.RoleUser, fmt.Sprintf("question %d", i), 2)
		return err
	}, func(racer string, err error) { wantBusy(t, racer, err, "conv-1", 2) })
	want := fmt.Sprintf("racer-%d", winner)
	if msgs[winner].ID != want || msgs[winner].TurnNumber != 2 {
		t.Fatalf("the winner got %+v, want message %s of turn 2", msgs[winner], want)
	}
	diff(t, "stored", msgIDs(f.read(t, a, "conv-1", -1, 0)), []string{"u1", want})
	f.wantCounts(t, a, "conv-1", 2, 2)
}

func testOtherRolesOfTakenTurn(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(0))
	f.appendMsg(t, a, "conv-1", "u1", "turn 1", 1)
	for _, role := range []bindings.MessageRole{bindings.RoleAgent, bindings.RoleTool, bindings.RoleSystem} {
		_, err := f.appendRole(a, "conv-1", "t1-"+string(role), role, "of turn 1", 1)
		must(t, "append a "+string(role)+" message of the current turn 1", err)
	}
	// A turn parked on an approval goes on after a later turn began: its
	// messages carry its own, now lower, number.
	f.appendMsg(t, a, "conv-1", "u2", "turn 2", 2)
	_, err := f.appendRole(a, "conv-1", "t1-late", bindings.RoleAgent, "turn 1 resumed", 1)
	must(t, "append an agent message of turn 1 after turn 2 began", err)
	diff(t, "stored", msgIDs(f.read(t, a, "conv-1", -1, 0)), []string{"u1", "t1-agent", "t1-tool", "t1-system", "u2", "t1-late"})
	f.wantCounts(t, a, "conv-1", 2, 6)
}

func testTurnNumberZero(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(0))
	f.appendMsg(t, a, "conv-1", "u1", "turn 1", 1)
	// User messages outside any turn (an imported history, a note) are
	// never busy and leave TurnCount alone.
	for i := range 3 {
		_, err := f.appendRole(a, "conv-1", fmt.Sprintf("n%d", i), bindings.RoleUser, "no turn", 0)
		must(t, "append a user message of turn 0", err)
	}
	f.wantCounts(t, a, "conv-1", 1, 4)
}

func testClosedWinsOverBusy(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(0))
	f.appendMsg(t, a, "conv-1", "u1", "turn 1", 1)
	must(t, "CloseConversation", f.Conversations.CloseConversation(f.ctx, a, "conv-1"))
	_, err := f.appendRole(a, "conv-1", "u1-other", bindings.RoleUser, "turn 1 again", 1)
	wantCode(t, "a user message of a taken turn in a closed conversation", err, agents.CodeConversationClosed)
	// The stored user message still replays.
	_, err = f.Conversations.AppendMessage(f.ctx, bindings.AppendMessageInput{TenantID: a, ConversationID: "conv-1", ID: "u1", Role: bindings.RoleUser, Content: "turn 1", TurnNumber: 1})
	must(t, "replay of the stored user message of a closed conversation", err)
}
