package eval_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kindgi/agents/eval"
	"github.com/kindgi/agents/internal/browsertest"
)

// sampleReport evaluates the three recorded cases (one regresses) and a
// hand-written one whose turn fails.
func sampleReport(t *testing.T) eval.Report {
	t.Helper()
	h := newHost(t)
	ds := threeCases(t, h)
	ds.Cases = append(ds.Cases, eval.Case{ID: `hand <"&>`, TenantID: tenant, UserMessage: "<script>alert(1)</script>"})
	rep, err := eval.Run(t.Context(), ds, eval.Options{Agent: defineAgent(t, "1.1.0", "New."), Bindings: h.bindings(newScript()),
		Graders: []eval.Grader{eval.Contains("refund")}})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestWriteJUnitParses: the JUnit output parses as JUnit XML with one
// testcase per case, a failure for each failing case (typed regression
// when it regressed) and an error for a case whose turn failed.
func TestWriteJUnitParses(t *testing.T) {
	rep := sampleReport(t)
	var buf bytes.Buffer
	if err := rep.WriteJUnit(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XMLName  xml.Name `xml:"testsuites"`
		Tests    int      `xml:"tests,attr"`
		Failures int      `xml:"failures,attr"`
		Errors   int      `xml:"errors,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Tests int    `xml:"tests,attr"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Type    string `xml:"type,attr"`
				} `xml:"failure"`
				Error *struct {
					Type string `xml:"type,attr"`
				} `xml:"error"`
				Out string `xml:"system-out"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, buf.String())
	}
	if len(doc.Suites) != 1 || doc.Suites[0].Name != "acme.refunds@1.1.0" || len(doc.Suites[0].Cases) != 4 || doc.Tests != 4 {
		t.Fatalf("suites = %+v", doc.Suites)
	}
	cs := doc.Suites[0].Cases
	for i, c := range cs {
		if c.Name != rep.Cases[i].ID {
			t.Errorf("testcase %d is %q, want %q", i, c.Name, rep.Cases[i].ID)
		}
	}
	if cs[0].Failure == nil || cs[0].Failure.Type != "failure" {
		t.Errorf("case 0 failure = %+v", cs[0].Failure)
	}
	if cs[1].Failure == nil || cs[1].Failure.Type != "regression" || !strings.Contains(cs[1].Failure.Message, `the answer does not contain "refund"`) {
		t.Errorf("case 1 failure = %+v", cs[1].Failure)
	}
	if cs[2].Failure != nil || cs[2].Error != nil || !strings.Contains(cs[2].Out, "baseline answer:\nI could not find order 404") {
		t.Errorf("case 2 = %+v", cs[2])
	}
	if cs[3].Error == nil || cs[3].Error.Type != "missing-parameter" {
		t.Errorf("case 3 error = %+v (%s)", cs[3].Error, rep.Cases[3].Reason)
	}
	if doc.Failures != 2 || doc.Errors != 1 {
		t.Errorf("failures %d errors %d, want 2 and 1", doc.Failures, doc.Errors)
	}
}

// TestWriteHTMLRendersOffline: the HTML report renders in headless
// Chromium, shows the summary and each case's two answers, escapes what
// it shows, and makes no request beyond the page itself.
func TestWriteHTMLRendersOffline(t *testing.T) {
	rep := sampleReport(t)
	var page bytes.Buffer
	if err := rep.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		hits []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits = append(hits, r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(page.Bytes())
	}))
	defer srv.Close()

	ctx := browser(t)
	browsertest.Run(t, ctx, chromedp.Navigate(srv.URL+"/report.html"), chromedp.WaitVisible(chromedp.CSS(`#summary`)))
	summary := browsertest.Value(t, ctx, chromedp.Text(chromedp.CSS(`#summary`)))
	for _, want := range []string{"4 cases", "1 passed", "3 failed", "1 regressed"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary %q lacks %q", summary, want)
		}
	}
	rows := browsertest.Value(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("#cases tbody tr").length`))
	if rows != 4 {
		t.Errorf("%d case rows, want 4", rows)
	}
	side := browsertest.Value(t, ctx, chromedp.Text(chromedp.CSS(`section:nth-of-type(2) .side`)))
	if !strings.Contains(side, "Order 2 was delivered; a refund is possible.") || !strings.Contains(side, "Order 2 was delivered.") {
		t.Errorf("case 2's answers side by side = %q", side)
	}
	scripts := browsertest.Value(t, ctx, chromedp.Evaluate[int](`document.scripts.length`))
	resources := browsertest.Value(t, ctx, chromedp.Evaluate[int](`performance.getEntriesByType("resource").length`))
	if scripts != 0 || resources != 0 {
		t.Errorf("the page has %d scripts and loaded %d resources, want none", scripts, resources)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(hits) != 1 || hits[0] != "/report.html" {
		t.Errorf("requests to the server: %v, want only /report.html", hits)
	}
}

// TestReportJSONRoundTrip: a report encodes as JSON and decodes back to
// itself (the form `kindgi eval --json` prints).
func TestReportJSONRoundTrip(t *testing.T) {
	rep := sampleReport(t)
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back eval.Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	b2, _ := json.Marshal(back)
	if !bytes.Equal(b, b2) {
		t.Errorf("round trip changed the report:\n%s\n%s", b, b2)
	}
}

// browser starts headless Chromium for the test (internal/browsertest).
func browser(t *testing.T) context.Context { return browsertest.Start(t) }
