package precheck

import (
	"bytes"
	"encoding/json"
	"fmt"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// SnapshotAgent compares the agent passed (id@version) with the run's:
// *agents.AgentVersionMismatchError when they differ.
func SnapshotAgent(snap bindings.RunSnapshotRecord, id, version string) error {
	if snap.AgentID != id || snap.AgentVersion != version {
		return &agents.AgentVersionMismatchError{
			Subject:  "run " + snap.RunID,
			Expected: snap.AgentID + "@" + snap.AgentVersion,
			Actual:   id + "@" + version,
		}
	}
	return nil
}

// SnapshotFlow refuses a run of another flow or flow version than id@version, the
// one this build replays: its journal's keys and outputs are not this
// build's (*agents.RunJournalUnavailableError).
func SnapshotFlow(snap bindings.RunSnapshotRecord, id, version string) error {
	if snap.FlowID != id || snap.FlowVersion != version {
		return &agents.RunJournalUnavailableError{RunID: snap.RunID, Err: fmt.Errorf("the run was written by flow %s@%s; this build replays %s@%s", snap.FlowID, snap.FlowVersion, id, version)}
	}
	return nil
}

// SameJSON reports whether a and b encode to the same JSON (maps encode
// with sorted keys, so equal values encode alike).
func SameJSON(a, b any) bool {
	ra, errA := json.Marshal(a)
	rb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ra, rb)
}
