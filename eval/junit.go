package eval

import (
	"encoding/xml"
	"io"

	agents "github.com/kindgi/agents"
	"strconv"
	"strings"
)

// The JUnit XML shape CI systems read (the Ant/Surefire schema's
// testsuites → testsuite → testcase, a failure per failing case).
type (
	junitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Name     string       `xml:"name,attr"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Errors   int          `xml:"errors,attr"`
		Suites   []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name     string      `xml:"name,attr"`
		Tests    int         `xml:"tests,attr"`
		Failures int         `xml:"failures,attr"`
		Errors   int         `xml:"errors,attr"`
		Skipped  int         `xml:"skipped,attr"`
		Time     string      `xml:"time,attr"`
		Cases    []junitCase `xml:"testcase"`
		Props    []junitProp `xml:"properties>property,omitempty"`
	}
	junitProp struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	}
	junitCase struct {
		Name      string        `xml:"name,attr"`
		Classname string        `xml:"classname,attr"`
		Time      string        `xml:"time,attr"`
		Failure   *junitFailure `xml:"failure,omitempty"`
		Error     *junitFailure `xml:"error,omitempty"`
		SystemOut string        `xml:"system-out,omitempty"`
	}
	junitFailure struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
)

// WriteJUnit writes the report as JUnit XML: one testsuite named after the
// agent, one testcase per case (named by its id), a failure for a case
// whose grades fail (type "regression" when it passed on its baseline) and
// an error for a case whose turn failed. Each testcase's system-out holds
// the new answer and the baseline's. A failed write is
// *agents.PersistenceError.
func (r Report) WriteJUnit(w io.Writer) error {
	suite := junitSuite{Name: r.Agent, Tests: len(r.Cases), Time: "0", Cases: make([]junitCase, len(r.Cases)),
		Props: []junitProp{{Name: "regressed", Value: strconv.Itoa(r.Regressed)}, {Name: "costUsd", Value: strconv.FormatFloat(r.Usage.CostUsd, 'f', -1, 64)}}}
	for i, c := range r.Cases {
		jc := junitCase{Name: c.ID, Classname: "eval." + r.Agent, Time: "0", SystemOut: caseText(c)}
		if !c.Pass {
			f := &junitFailure{Message: c.Reason, Type: "failure", Text: c.Reason}
			switch {
			case c.Error != nil:
				f.Type = c.Error.Code
				jc.Error = f
				suite.Errors++
			default:
				if c.Regressed {
					f.Type = "regression"
				}
				jc.Failure = f
				suite.Failures++
			}
		}
		suite.Cases[i] = jc
	}
	doc := junitSuites{Name: "kindgi eval", Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors, Suites: []junitSuite{suite}}
	b, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return &agents.InvalidMessageError{Reason: "eval: the report does not encode as XML: " + err.Error()}
	}
	return writeAll(w, append(append([]byte(xml.Header), b...), '\n'), "write JUnit report")
}

// caseText is a case's answers as plain text.
func caseText(c CaseResult) string {
	var sb strings.Builder
	if c.FromRunID != "" {
		sb.WriteString("run: " + c.FromRunID + "\n")
	}
	sb.WriteString("answer:\n" + c.Answer + "\n")
	if c.Baseline != nil {
		sb.WriteString("baseline answer:\n" + c.Baseline.Answer + "\n")
	}
	for _, g := range c.Grades {
		mark := "PASS"
		if !g.Pass {
			mark = "FAIL"
		}
		sb.WriteString(mark + " " + g.Name)
		if g.Reason != "" {
			sb.WriteString(": " + g.Reason)
		}
		sb.WriteString("\n")
	}
	return sb.String()
}
