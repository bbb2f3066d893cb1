package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn"
)

// Case is one conversation turn to evaluate: the user message and prompt
// parameters of a turn, the run it was recorded from (if any) with what
// that run answered, and expectations written by hand.
type Case struct {
	// ID names the case in reports; DatasetFromRuns uses the run id.
	ID string `json:"id"`
	// TenantID is the tenant the turn runs for (Options.TenantID when
	// empty): the tenant whose tools, guardrails and policy apply.
	TenantID    string         `json:"tenantId,omitempty"`
	UserMessage string         `json:"userMessage"`
	Parameters  map[string]any `json:"parameters,omitempty"`
	// FromRunID is the run the case was recorded from ("" for a case
	// written by hand).
	FromRunID string `json:"fromRunId,omitempty"`
	// History are the earlier turns of the conversation, oldest first,
	// stored before the case's turn runs so that it has the same turn
	// number and history as the recorded one.
	History []HistoryMessage `json:"history,omitempty"`
	// Baseline is what the recorded run did: its answer and tool calls.
	Baseline *Baseline `json:"baseline,omitempty"`
	// Expect are the case's own checks, graded besides Options.Graders.
	Expect *Expect `json:"expect,omitempty"`
}

// HistoryMessage is a message of an earlier turn: a user message or an
// agent's answer (the tool calls of earlier turns are not kept).
type HistoryMessage struct {
	Role       bindings.MessageRole `json:"role"`
	Content    string               `json:"content"`
	TurnNumber int                  `json:"turnNumber"`
}

// Baseline is what a recorded run did, read from its journal.
type Baseline struct {
	AgentID      string `json:"agentId,omitempty"`
	AgentVersion string `json:"agentVersion,omitempty"`
	// Status is the run's status when it was read (completed, failed, …).
	Status string `json:"status,omitempty"`
	// Answer is the final answer's text; Output its structured output
	// (agents with an output schema).
	Answer string          `json:"answer"`
	Output json.RawMessage `json:"output,omitempty"`
	// ToolCalls are the calls that ran, in order, with what each returned.
	ToolCalls []RecordedCall `json:"toolCalls,omitempty"`
	Usage     turn.Usage     `json:"usage"`
}

// RecordedCall is one tool call a run made and its recorded result: Output
// when the tool answered, Error when the tool itself failed (told to the
// model).
type RecordedCall struct {
	ToolID      string          `json:"toolId"`
	ToolVersion string          `json:"toolVersion,omitempty"`
	Arguments   json.RawMessage `json:"arguments"`
	Output      json.RawMessage `json:"output,omitempty"`
	Error       string          `json:"error,omitempty"`
}

// Expect are hand-written checks of a case's answer; each set field is one
// grade.
type Expect struct {
	// Contains: the answer contains each of these strings.
	Contains []string `json:"contains,omitempty"`
	// Matches: the answer matches each of these regular expressions (RE2).
	Matches []string `json:"matches,omitempty"`
	// OutputSchema: the answer's structured output (or, without one, its
	// text read as JSON) is valid against this JSON Schema.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
}

// graders returns the graders of e, in field order.
func (e *Expect) graders() []Grader {
	if e == nil {
		return nil
	}
	var gs []Grader
	for _, s := range e.Contains {
		gs = append(gs, Contains(s))
	}
	for _, p := range e.Matches {
		gs = append(gs, Matches(p))
	}
	if len(e.OutputSchema) > 0 {
		gs = append(gs, OutputSchema(e.OutputSchema))
	}
	return gs
}

// Dataset is a list of cases, evaluated and reported in order.
type Dataset struct {
	Cases []Case `json:"cases"`
}

// maxLine bounds one JSON Lines record (a case with its baseline).
const maxLine = 64 << 20

// ReadDataset reads a dataset in JSON Lines: one Case a line, blank lines
// skipped. A line that is not a case, a case without an id or user
// message, or an id used twice is *agents.InvalidMessageError naming the
// line.
func ReadDataset(r io.Reader) (Dataset, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	ds := Dataset{Cases: []Case{}}
	seen := map[string]int{}
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var c Case
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return Dataset{}, lineError(n, err.Error())
		}
		if dec.More() {
			return Dataset{}, lineError(n, "more than one JSON value on the line")
		}
		if err := c.check(); err != nil {
			return Dataset{}, lineError(n, err.Error())
		}
		if first, dup := seen[c.ID]; dup {
			return Dataset{}, lineError(n, "case id "+strconv.Quote(c.ID)+" is used on line "+strconv.Itoa(first)+" too")
		}
		seen[c.ID] = n
		ds.Cases = append(ds.Cases, c)
	}
	if err := sc.Err(); err != nil {
		return Dataset{}, &agents.InvalidMessageError{Reason: "dataset: " + err.Error()}
	}
	return ds, nil
}

func lineError(n int, reason string) error {
	return &agents.InvalidMessageError{Reason: "dataset line " + strconv.Itoa(n) + ": " + reason}
}

// check reports what makes c unusable.
func (c *Case) check() error {
	switch {
	case c.ID == "":
		return errors.New("the case has no id")
	case c.UserMessage == "":
		return errors.New("case " + strconv.Quote(c.ID) + " has no userMessage")
	}
	for i, m := range c.History {
		if (m.Role != bindings.RoleUser && m.Role != bindings.RoleAgent) || m.Content == "" || m.TurnNumber < 1 {
			return errors.New("case " + strconv.Quote(c.ID) + " history " + strconv.Itoa(i) + ": want a user or agent message with content and a turnNumber of 1 or more")
		}
	}
	return nil
}

// Write writes ds as JSON Lines, one case a line, in order; ReadDataset
// reads it back. A case that does not encode is *agents.InvalidMessageError
// and nothing is written; a failed write is *agents.PersistenceError.
func (ds Dataset) Write(w io.Writer) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i := range ds.Cases {
		if err := enc.Encode(&ds.Cases[i]); err != nil {
			return &agents.InvalidMessageError{Reason: "dataset case " + strconv.Quote(ds.Cases[i].ID) + ": " + err.Error()}
		}
	}
	return writeAll(w, buf.Bytes(), "write dataset")
}

// writeAll writes b to w, a failure as *agents.PersistenceError for op.
func writeAll(w io.Writer, b []byte, op string) error {
	if _, err := w.Write(b); err != nil {
		return &agents.PersistenceError{Op: op, Err: err}
	}
	return nil
}
