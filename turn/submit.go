package turn

import (
	"context"
	"encoding/json"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
	"github.com/kindgi/agents/turn/internal/agenttool"
	"github.com/kindgi/agents/turn/internal/precheck"
)

// Submit queues one turn for a worker (Worker) to drive, and returns its
// run id at once: the turn runs in whichever process claims it. Wait
// returns its outcome.
//
// Submit checks what Invoke checks before its first side effect (the
// bindings, the input, the context, that the input round-trips through
// JSON, that an existing run of in.RunID was started with this input),
// then writes the run snapshot and creates the run in status
// bindings.RunQueued with no lease, so that any worker's
// bindings.RunClaimer hands it out. Nothing else runs: no message is
// stored and nothing is called.
//
// An empty in.RunID gets a fresh run id. Submitting again with the run id
// of an existing run changes nothing and returns the id (after checking
// that the run was started with this very input, as Invoke does:
// run-input-mismatch or agent-version-mismatch otherwise), so a host may
// retry a Submit safely with the same RunID.
func Submit(ctx context.Context, in Input, b Bindings) (string, error) {
	in, raw, _, explicit, err := prepare(ctx, in, &b)
	if err != nil {
		return "", err
	}
	if explicit {
		// prepare found the run's snapshot, if any, to hold this input.
		if _, err := b.Runs.GetRun(ctx, in.TenantID, in.RunID); err == nil {
			return in.RunID, nil
		} else if agents.CodeOf(err) != agents.CodeRunJournalUnavailable {
			return "", coded(err, "get run")
		}
	}
	jd, _ := driverOf(&b)
	d, err := jd.Open(ctx, journal.OpenInput{
		TenantID: in.TenantID, RunID: in.RunID,
		Create: &journal.Create{Status: bindings.RunQueued, Snapshot: bindings.RunSnapshotWriteInput{
			TenantID: in.TenantID, RunID: in.RunID, FlowID: FlowID, FlowVersion: FlowVersion,
			AgentID: in.Agent.ID, AgentVersion: in.Agent.Version,
			ConversationID: in.ConversationID, ProjectID: in.ProjectID, Input: raw,
		}},
	})
	if err != nil {
		return "", coded(err, "open run")
	}
	// A concurrent Submit of the same run id may have written first.
	if err := precheck.SnapshotAgent(d.Snapshot, in.Agent.ID, in.Agent.Version); err != nil {
		return "", err
	}
	return in.RunID, nil
}

// findAgent looks up the agent a run's snapshot recorded, with
// Bindings.Agents.
func findAgent(ctx context.Context, b *Bindings, snap bindings.RunSnapshotRecord) (agent.Agent, error) {
	return agenttool.Lookup(ctx, b.Agents, snap.TenantID, snap.AgentID, snap.AgentVersion)
}

// prepare checks what Invoke and Submit check before their first side
// effect — the bindings, the input, the context, that the input
// round-trips through JSON, and that an existing run of an explicit run id
// was started with this very input — and returns the input with its run
// id, its JSON, the input as the snapshot stores it, and whether the run
// id was the caller's.
func prepare(ctx context.Context, in Input, b *Bindings) (_ Input, raw json.RawMessage, stored Input, explicit bool, err error) {
	if err := checkBindings(b, len(in.Agent.Retrieval) > 0); err != nil {
		return Input{}, nil, Input{}, false, err
	}
	if err := checkHitlBinding(b, in.Agent); err != nil {
		return Input{}, nil, Input{}, false, err
	}
	if err := checkInput(in); err != nil {
		return Input{}, nil, Input{}, false, err
	}
	if err := checkModelSettings(in); err != nil {
		return Input{}, nil, Input{}, false, err
	}
	if err := ctx.Err(); err != nil {
		return Input{}, nil, Input{}, false, &agents.TurnAbortedError{Reason: agents.AbortExternal, Err: err}
	}
	explicit = in.RunID != ""
	if !explicit {
		in.RunID = newID(b)
	}
	if c := b.child; c != nil && c.Fresh {
		explicit = false // a child run no drive created before: nothing to compare
	}
	// The turn works on the input as the snapshot stores it, so that a
	// resumed run sees exactly what this drive saw.
	if b, ok := appendInputJSON(&in); ok {
		raw, stored = b, storedInput(&in) // what decoding b gives, without decoding it
	} else {
		raw, err = json.Marshal(in)
		if err != nil {
			return Input{}, nil, Input{}, false, &agents.InvalidMessageError{Reason: "turn input is not JSON: " + err.Error()}
		}
		dec := new(Input) // on the heap only on this path (stored stays on the stack)
		if err := json.Unmarshal(raw, dec); err != nil {
			return Input{}, nil, Input{}, false, &agents.InvalidMessageError{Reason: "turn input does not round-trip through JSON: " + err.Error()}
		}
		stored = *dec
	}
	stored.Agent = in.Agent
	if b.child != nil {
		// A sub-agent's child run: its snapshot records its place in the
		// tree, for any later drive of it (see childContext).
		if raw, err = b.child.AddTo(raw); err != nil {
			return Input{}, nil, Input{}, false, &agents.InvalidMessageError{Reason: "turn input is not JSON: " + err.Error()}
		}
	}
	if explicit {
		// A run id never answers another input: an existing run is
		// compared with this input before anything is stored, leased or
		// called.
		prior, err := b.Snapshots.Read(ctx, in.TenantID, in.RunID)
		switch {
		case err == nil:
			if err := checkSameInput(prior, stored); err != nil {
				return Input{}, nil, Input{}, false, err
			}
		case agents.CodeOf(err) != agents.CodeRunSnapshotMissing:
			return Input{}, nil, Input{}, false, coded(err, "read run snapshot")
		}
	}
	return in, raw, stored, explicit, nil
}
