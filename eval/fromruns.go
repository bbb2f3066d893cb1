package eval

import (
	"context"
	"encoding/json"
	"strings"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn"
)

// DatasetFromRuns builds one case per run, in the order of runIDs, from
// the tenant's stored runs: the snapshot gives the user message and
// parameters, the journal the baseline (the final answer, its structured
// output, every tool call that ran with its recorded result, and the
// usage of the model calls). It only reads b.Snapshots and b.Runs; either
// missing is *agents.InvalidBindingsError. A run without a snapshot or
// journal keeps the store's error (run-snapshot-missing,
// run-journal-unavailable); a snapshot that is not a turn's input is
// *agents.InvalidMessageError.
func DatasetFromRuns(ctx context.Context, b turn.Bindings, tenantID string, runIDs []string) (Dataset, error) {
	if b.Snapshots == nil || b.Runs == nil {
		return Dataset{}, &agents.InvalidBindingsError{Reason: "eval.DatasetFromRuns reads runs through Bindings.Snapshots and Bindings.Runs: bind both"}
	}
	ds := Dataset{Cases: make([]Case, 0, len(runIDs))}
	for _, id := range runIDs {
		c, err := caseFromRun(ctx, b, tenantID, id)
		if err != nil {
			return Dataset{}, err
		}
		ds.Cases = append(ds.Cases, c)
	}
	return ds, nil
}

// caseFromRun reads one run.
func caseFromRun(ctx context.Context, b turn.Bindings, tenantID, runID string) (Case, error) {
	snap, err := b.Snapshots.Read(ctx, tenantID, runID)
	if err != nil {
		return Case{}, err
	}
	var in turn.Input
	if err := json.Unmarshal(snap.Input, &in); err != nil {
		return Case{}, &agents.InvalidMessageError{Reason: "run " + runID + ": the snapshot is not a turn input: " + err.Error()}
	}
	run, err := b.Runs.GetRun(ctx, tenantID, runID)
	if err != nil {
		return Case{}, err
	}
	entries, err := b.Runs.ReadJournal(ctx, tenantID, runID)
	if err != nil {
		return Case{}, err
	}
	base, turnNo, err := baselineOf(entries)
	if err != nil {
		return Case{}, &agents.InvalidMessageError{Reason: "run " + runID + ": " + err.Error()}
	}
	base.AgentID, base.AgentVersion, base.Status = snap.AgentID, snap.AgentVersion, string(run.Status)
	c := Case{
		ID: runID, TenantID: tenantID, UserMessage: in.UserMessage, Parameters: in.Parameters,
		FromRunID: runID, Baseline: &base,
	}
	if b.Conversations != nil && in.ConversationID != "" && turnNo > 1 {
		if c.History, err = history(ctx, b.Conversations, tenantID, in.ConversationID, turnNo); err != nil {
			return Case{}, err
		}
	}
	return c, nil
}

// history reads the user messages and answers of a conversation's turns
// before turn.
func history(ctx context.Context, conv bindings.ConversationBinding, tenantID, conversationID string, turn int) ([]HistoryMessage, error) {
	msgs, err := conv.ReadMessages(ctx, bindings.ReadMessagesInput{TenantID: tenantID, ConversationID: conversationID, Limit: -1})
	if err != nil {
		return nil, err
	}
	var out []HistoryMessage
	for _, m := range msgs {
		if m.TurnNumber < 1 || m.TurnNumber >= turn || m.Content == "" || len(m.ToolCalls) > 0 ||
			(m.Role != bindings.RoleUser && m.Role != bindings.RoleAgent) {
			continue
		}
		out = append(out, HistoryMessage{Role: m.Role, Content: m.Content, TurnNumber: m.TurnNumber})
	}
	return out, nil
}

// The journal outputs a baseline reads, as the turn documents them: a
// model call's bindings.GenerateResponse, a dispatch plan (the calls of a
// response with the key each one's result is journaled under), a tool
// result, a stored message, a validated output.
type (
	plannedCall struct {
		Key         string          `json:"key"`
		ToolID      string          `json:"toolId"`
		ToolVersion string          `json:"toolVersion"`
		Arguments   json.RawMessage `json:"arguments"`
		Action      string          `json:"action"`
	}
	toolOutcome struct {
		Status string          `json:"status"`
		Output json.RawMessage `json:"output"`
		Error  string          `json:"error"`
	}
	checkedOutput struct {
		Output json.RawMessage `json:"output"`
	}
	setupRecord struct {
		TurnNumber int `json:"turnNumber"`
	}
)

// baselineOf folds a run's journal into what the run did, and returns its
// turn number too. Only completed entries count; a key journaled twice
// keeps its first result, as the turn does.
func baselineOf(entries []bindings.JournalEntry) (base Baseline, turnNo int, err error) {
	done := make(map[string]json.RawMessage, len(entries))
	var order []bindings.JournalEntry
	for _, e := range entries {
		if e.Status != bindings.StepCompleted {
			continue
		}
		if _, dup := done[e.Key]; dup {
			continue
		}
		done[e.Key] = e.Output
		order = append(order, e)
	}
	base.ToolCalls = []RecordedCall{}
	for _, e := range order {
		parts := strings.Split(e.Key, "/")
		switch {
		case e.Key == turn.NodeSetup:
			var s setupRecord
			if err := json.Unmarshal(e.Output, &s); err != nil {
				return Baseline{}, 0, err
			}
			turnNo = s.TurnNumber
		case e.Key == turn.NodePersistFinalMessage:
			var m bindings.ConversationMessage
			if err := json.Unmarshal(e.Output, &m); err != nil {
				return Baseline{}, 0, err
			}
			base.Answer = m.Content
		case len(parts) != 3 || parts[0] != turn.NodeAgentLoop:
		case parts[2] == turn.NodeModelCall:
			var r bindings.GenerateResponse
			if err := json.Unmarshal(e.Output, &r); err != nil {
				return Baseline{}, 0, err
			}
			base.Usage.ModelCalls++
			base.Usage.InputTokens += r.Usage.InputTokens
			base.Usage.OutputTokens += r.Usage.OutputTokens
			base.Usage.CostUsd += r.Usage.CostUsd
		case parts[2] == turn.NodeValidateOutput:
			var c checkedOutput
			if err := json.Unmarshal(e.Output, &c); err != nil {
				return Baseline{}, 0, err
			}
			if len(c.Output) > 0 {
				base.Output = c.Output
			}
		case parts[2] == turn.NodeDispatchTools:
			var plans []plannedCall
			if err := json.Unmarshal(e.Output, &plans); err != nil {
				return Baseline{}, 0, err
			}
			for _, p := range plans {
				raw, ran := done[p.Key]
				if !ran || p.Action == "refuse" {
					continue // refused or never finished: nothing to replay
				}
				var o toolOutcome
				if err := json.Unmarshal(raw, &o); err != nil {
					return Baseline{}, 0, err
				}
				if o.Status != "ok" && o.Status != "error" {
					continue // denied, rejected or expired: the tool never ran
				}
				call := RecordedCall{ToolID: p.ToolID, ToolVersion: p.ToolVersion, Arguments: p.Arguments}
				if o.Status == "ok" {
					call.Output = o.Output
				} else {
					call.Error = o.Error
				}
				base.ToolCalls = append(base.ToolCalls, call)
				base.Usage.ToolCalls++
			}
		}
	}
	return base, turnNo, nil
}
