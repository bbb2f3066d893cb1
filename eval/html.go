package eval

import (
	"bytes"
	"html/template"
	"io"
	"strconv"

	agents "github.com/kindgi/agents"
)

// reportPage is the HTML report: one page, its style inline, no script,
// image, font or link to anything outside it. Its content security policy
// forbids loading anything else, and its icon is empty so that a browser
// asks for no favicon either.
var reportPage = template.Must(template.New("report").Funcs(template.FuncMap{
	"usd": func(f float64) string { return "$" + strconv.FormatFloat(f, 'f', 4, 64) },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<link rel="icon" href="data:,">
<title>Eval report: {{.Agent}}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#1d1d1f}
h1{font-size:1.4em}
table{border-collapse:collapse;width:100%;margin:1em 0}
th,td{border:1px solid #d0d0d7;padding:.4em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f6}
.pass{color:#116329;font-weight:600}
.fail{color:#b3261e;font-weight:600}
.regressed{background:#fdecea}
pre{white-space:pre-wrap;margin:0;font:13px/1.4 ui-monospace,monospace}
section{border:1px solid #d0d0d7;border-radius:6px;padding:.6em 1em;margin:1em 0}
.side{display:grid;grid-template-columns:1fr 1fr;gap:1em}
.summary span{margin-right:1.5em}
</style>
</head>
<body>
<h1>Eval report: {{.Agent}}</h1>
<p class="summary" id="summary"><span>{{len .Cases}} cases</span><span class="pass">{{.Passed}} passed</span><span class="fail">{{.Failed}} failed</span><span>{{.Regressed}} regressed</span><span>{{.Usage.ModelCalls}} model calls</span><span>{{.Usage.InputTokens}} + {{.Usage.OutputTokens}} tokens</span><span>{{usd .Usage.CostUsd}}</span></p>
<table id="cases">
<thead><tr><th>Case</th><th>Run</th><th>Result</th><th>Reason</th><th>Cost</th></tr></thead>
<tbody>
{{- range .Cases}}
<tr{{if .Regressed}} class="regressed"{{end}}><td><a href="#case-{{.ID}}">{{.ID}}</a></td><td>{{.FromRunID}}</td><td><span class="{{if .Pass}}pass{{else}}fail{{end}}">{{.Outcome}}</span></td><td>{{.Reason}}</td><td>{{usd .Usage.CostUsd}}</td></tr>
{{- end}}
</tbody>
</table>
{{- range .Cases}}
<section id="case-{{.ID}}">
<h2>{{.ID}} <span class="{{if .Pass}}pass{{else}}fail{{end}}">{{.Outcome}}</span></h2>
<p><b>User:</b> {{.UserMessage}}</p>
<div class="side">
<div><h3>Baseline</h3>{{if .Baseline}}<pre>{{.Baseline.Answer}}</pre>{{else}}<p>(no recorded run)</p>{{end}}</div>
<div><h3>New</h3><pre>{{.Answer}}</pre></div>
</div>
{{- if .Grades}}
<table><thead><tr><th>Grader</th><th>New</th><th>Score</th><th>Reason</th></tr></thead><tbody>
{{- range .Grades}}
<tr><td>{{.Name}}</td><td>{{if .Pass}}<span class="pass">pass</span>{{else}}<span class="fail">fail</span>{{end}}</td><td>{{printf "%.2f" .Score}}</td><td>{{.Reason}}</td></tr>
{{- end}}
</tbody></table>
{{- end}}
{{- if .Error}}<p class="fail">{{.Error.Code}}: {{.Reason}}</p>{{end}}
</section>
{{- end}}
</body>
</html>
`))

// WriteHTML writes the report as one self-contained HTML page: a summary,
// a table of the cases, and each case's baseline and new answer side by
// side with its grades. The page loads nothing from outside itself (no
// script, image, font or stylesheet link). A failed write is
// *agents.PersistenceError.
func (r Report) WriteHTML(w io.Writer) error {
	var buf bytes.Buffer
	if err := reportPage.Execute(&buf, r); err != nil {
		return &agents.InvalidMessageError{Reason: "eval: the report does not render: " + err.Error()}
	}
	return writeAll(w, buf.Bytes(), "write HTML report")
}
