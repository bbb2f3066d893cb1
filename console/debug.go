package console

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn"
)

// Bounds of the run page.
const (
	stepsPerPage = 300  // step rows shown at once; more are paged
	foldBytes    = 1500 // a value longer than this is folded behind "show all"
	foldLines    = 30   // or one of more lines
)

// attemptSep is how the turn keys the failed attempts of a step
// ("agent-loop/1/model-call/attempt/2"; turn/journal.go).
const attemptSep = "/attempt/"

// folded is a value as the run page shows it: all of it when short, else
// its head with the whole behind a "show all".
type folded struct {
	Head string
	Full string // "" when Head is all of it
}

func fold(s string) folded {
	if len(s) <= foldBytes && strings.Count(s, "\n") < foldLines {
		return folded{Head: s}
	}
	head := s
	if i := nthIndex(head, '\n', foldLines); i >= 0 {
		head = head[:i]
	}
	if len(head) > foldBytes {
		cut := foldBytes
		for cut > 0 && !utf8.RuneStart(head[cut]) { // not mid-rune
			cut--
		}
		head = head[:cut]
	}
	return folded{Head: head + "\n…", Full: s}
}

func nthIndex(s string, c byte, n int) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			if n--; n == 0 {
				return i
			}
		}
	}
	return -1
}

func foldJSON(raw json.RawMessage) folded { return fold(pretty(raw)) }

// attemptView is one failed attempt of a step.
type attemptView struct {
	N       int
	At      time.Time
	Code    string
	Message string
}

// callView is one tool call a model asked for.
type callView struct {
	ID, Name string
	Args     folded
}

// msgView is one message of a model request.
type msgView struct {
	Role    string
	Content folded
	Calls   []string
}

// stepRow is one step of the run page: its started and final entries
// merged, its failed attempts, and its decoded content.
type stepRow struct {
	N        int
	Key      string
	Node     string
	Status   string
	Start    time.Time
	End      time.Time
	Took     time.Duration
	Attempts []attemptView
	ErrCode  string
	ErrText  string
	// Bar places the step on the run's waterfall, in percent of the
	// run's wall time.
	BarLeft, BarWidth string

	// Content, by node.
	Prompt     *folded    // render-prompt
	Model      string     // model-call
	Text       *folded    // model-call answer
	Calls      []callView // model-call tool calls
	Finish     string
	Usage      *bindings.Usage
	Cost       string
	Offered    []string  // tools offered to the model
	Messages   []msgView // the request's messages, rebuilt from the journal
	Tool       string    // tool call: id@version
	Args       *folded   // tool call arguments
	Result     *folded   // tool call result
	ToolStatus string
	ToolError  string
	Approval   *approvalView // the approval a gate step waited on
	Output     *folded       // any other step's output
	Stored     *folded       // the message a step stored
}

// Summary is the short content of the row (shown without expanding).
func (s stepRow) Summary() string {
	switch {
	case s.ErrCode != "":
		return s.ErrCode
	case s.Text != nil:
		return firstLine(s.Text.Head, 80)
	case len(s.Calls) > 0:
		names := make([]string, len(s.Calls))
		for i, c := range s.Calls {
			names[i] = c.Name
		}
		return "→ " + strings.Join(names, ", ")
	case s.Tool != "":
		return s.Tool + " " + s.ToolStatus
	case s.Approval != nil:
		return string(s.Approval.A.Status)
	}
	return ""
}

func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// Ms is the step's duration for people.
func (s stepRow) Ms() string { return duration(s.Took) }

// duration formats d in ms (µs below 1 ms), never negative.
func duration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	if d < time.Millisecond {
		return strconv.FormatInt(d.Microseconds(), 10) + " µs"
	}
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + " ms"
}

// genOut is a model call's journaled output (a bindings.GenerateResponse).
type genOut = bindings.GenerateResponse

// toolOut is a tool call's journaled output.
type toolOut struct {
	Status string          `json:"status"`
	Output json.RawMessage `json:"output"`
	Error  string          `json:"error"`
}

// setupOut is what the run page reads of the setup step's output.
type setupOut struct {
	Tools []struct {
		ID      string `json:"id"`
		Version string `json:"version"`
	} `json:"tools"`
}

// pendingCall is a dispatched call as the dispatch-tools step journals it.
type pendingCall struct {
	ID          string          `json:"id"`
	Key         string          `json:"key"`
	ToolID      string          `json:"toolId"`
	ToolVersion string          `json:"toolVersion"`
	Arguments   json.RawMessage `json:"arguments"`
}

// steps merges a run's journal into step rows, oldest first, and places
// them on the run's waterfall: from start (the run's creation or its first
// entry, whichever is first) to end (the last entry, or now for a run
// still going). Durations are never negative: a step with no started entry
// starts where the step before it ended.
func steps(run bindings.Run, entries []bindings.JournalEntry, approvals map[string]approvalView, now time.Time) (rows []stepRow, wall time.Duration) {
	index := map[string]int{}
	var initial []bindings.ChatMessage
	var offered []string
	var history []msgView // messages the model has seen so far
	calls := map[string]pendingCall{}
	start := run.CreatedAt
	for _, e := range entries {
		if start.IsZero() || e.At.Before(start) {
			start = e.At
		}
	}
	for _, e := range entries {
		key := e.Key
		attempt := 0
		if i := strings.LastIndex(key, attemptSep); i >= 0 {
			if n, err := strconv.Atoi(key[i+len(attemptSep):]); err == nil {
				key, attempt = key[:i], n
			}
		}
		if base, ok := strings.CutSuffix(key, "/message"); ok && e.Status != bindings.StepStarted {
			if i, ok := index[base]; ok {
				f := foldJSON(e.Output)
				rows[i].Stored = &f
				continue
			}
		}
		i, ok := index[key]
		if !ok {
			i = len(rows)
			index[key] = i
			rows = append(rows, stepRow{N: i + 1, Key: key, Node: e.Node, Status: "running", Start: e.At, End: e.At})
			if e.Status != bindings.StepStarted && i > 0 && rows[i-1].End.Before(e.At) {
				rows[i].Start = rows[i-1].End // a step journaled once, at its end
			}
		}
		s := &rows[i]
		if e.At.After(s.End) {
			s.End = e.At
		}
		if attempt > 0 {
			a := attemptView{N: attempt, At: e.At}
			if e.Error != nil {
				a.Code, a.Message = e.Error.Code, e.Error.Message
			}
			s.Attempts = append(s.Attempts, a)
			continue
		}
		if e.Status == bindings.StepStarted {
			continue
		}
		s.Status = string(e.Status)
		if e.Error != nil {
			s.ErrCode, s.ErrText = e.Error.Code, e.Error.Message
		}
		out := e.Output
		switch {
		case len(out) == 0 || string(out) == "null":
		case e.Node == turn.NodeSetup:
			var so setupOut
			if json.Unmarshal(out, &so) == nil {
				for _, t := range so.Tools {
					offered = append(offered, t.ID+"@"+t.Version)
				}
			}
			f := foldJSON(out)
			s.Output = &f
		case e.Node == turn.NodeRenderPrompt:
			var p string
			if json.Unmarshal(out, &p) == nil {
				f := fold(p)
				s.Prompt = &f
			}
		case e.Node == turn.NodeBuildInitialMessages:
			if json.Unmarshal(out, &initial) == nil {
				for _, m := range initial {
					history = append(history, msgOf(string(m.Role), m.Content, m.ToolCalls))
				}
			}
			f := foldJSON(out)
			s.Output = &f
		case e.Node == turn.NodeModelCall && e.Status == bindings.StepCompleted:
			var g genOut
			if json.Unmarshal(out, &g) != nil {
				f := foldJSON(out)
				s.Output = &f
				break
			}
			s.Model, s.Finish, s.Offered = g.Model, g.FinishReason, offered
			s.Messages = append([]msgView(nil), history...)
			u := g.Usage
			s.Usage, s.Cost = &u, fmt.Sprintf("$%.6f", u.CostUsd)
			if g.Text != "" {
				f := fold(g.Text)
				s.Text = &f
			}
			for _, c := range g.ToolCalls {
				s.Calls = append(s.Calls, callView{ID: c.ID, Name: c.Name, Args: foldJSON(c.Arguments)})
			}
			history = append(history, msgOf("agent", g.Text, g.ToolCalls))
		case e.Node == turn.NodeDispatchTools && strings.HasSuffix(key, "/approval"):
			if v, ok := approvals[run.ID+"/"+e.Key]; ok {
				s.Approval = &v
			}
			f := foldJSON(out)
			s.Output = &f
		case e.Node == turn.NodeDispatchTools && strings.Count(key, "/") == 3:
			// agent-loop/N/dispatch-tools/<call id>: one tool call.
			var t toolOut
			if json.Unmarshal(out, &t) != nil {
				f := foldJSON(out)
				s.Output = &f
				break
			}
			s.ToolStatus, s.ToolError = t.Status, t.Error
			r := foldJSON(t.Output)
			s.Result = &r
			if c, ok := calls[key]; ok {
				s.Tool = c.ToolID + "@" + c.ToolVersion
				a := foldJSON(c.Arguments)
				s.Args = &a
			}
			history = append(history, msgOf("tool", string(t.Output), nil))
		case e.Node == turn.NodeDispatchTools:
			var pcs []pendingCall
			if json.Unmarshal(out, &pcs) == nil {
				for _, c := range pcs {
					calls[c.Key] = c
				}
			}
			f := foldJSON(out)
			s.Output = &f
		default:
			f := foldJSON(out)
			s.Output = &f
		}
	}
	end := start
	for _, s := range rows {
		if s.End.After(end) {
			end = s.End
		}
	}
	if !finished(run.Status) && now.After(end) {
		end = now
	}
	wall = end.Sub(start)
	for i := range rows {
		s := &rows[i]
		if s.Start.Before(start) {
			s.Start = start
		}
		if s.Status == "running" && !finished(run.Status) && run.Status != bindings.RunSuspended {
			s.End = end
		}
		s.Took = max(0, s.End.Sub(s.Start))
		s.BarLeft, s.BarWidth = percent(s.Start.Sub(start), wall), percent(s.Took, wall)
	}
	return rows, wall
}

func msgOf(role, content string, calls []bindings.ToolCall) msgView {
	m := msgView{Role: role, Content: fold(content)}
	for _, c := range calls {
		m.Calls = append(m.Calls, c.Name)
	}
	return m
}

// percent is d as a percentage of of, for an SVG length ("12.5%").
func percent(d, of time.Duration) string {
	if of <= 0 || d <= 0 {
		return "0%"
	}
	p := min(100, 100*float64(d)/float64(of))
	return strconv.FormatFloat(p, 'f', 2, 64) + "%"
}

func finished(s bindings.RunStatus) bool {
	return s == bindings.RunCompleted || s == bindings.RunFailed
}
