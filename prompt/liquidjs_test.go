package prompt_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/internal/tmpl"
	"github.com/kindgi/agents/prompt"
)

// The LiquidJS differential (issue 12, point 5): every case of
// testdata/liquid-corpus.json is rendered by prompt.Render and by the npm
// package liquidjs (pinned in testdata/liquidjs/package.json, strict
// variables and strict filters) under Node, and the two must agree on the
// output or on the class of the error: missing-parameter, render-failure,
// or parse (a render-failure whose template does not parse).
//
// A case whose "differs" field is set is a documented difference (the
// package documentation lists them): it must still differ, so a fixed one
// is noticed and its note removed.
//
// The test runs when node and testdata/liquidjs/node_modules are present
// (`npm ci` in testdata/liquidjs). With KINDGI_REQUIRE_LIQUIDJS=1, as
// .ci/run sets, it fails instead of skipping when they are not.

const liquidjsDir = "testdata/liquidjs"

// corpusCase is one (template, context) case.
type corpusCase struct {
	Name     string `json:"name"`
	Template string `json:"template"`
	// Context is the name of a shared context or the context itself.
	Context json.RawMessage `json:"context,omitempty"`
	// Differs, when set, says why the engines are known to differ.
	Differs string `json:"differs,omitempty"`
}

type corpus struct {
	Contexts map[string]map[string]any `json:"contexts"`
	Cases    []corpusCase              `json:"cases"`
}

// outcome is one engine's result for a case.
type outcome struct {
	Output *string `json:"output,omitempty"`
	Error  *struct {
		Class   string `json:"class"`
		Name    string `json:"name,omitempty"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

func (o outcome) String() string {
	if o.Error != nil {
		return o.Error.Class + ": " + o.Error.Message
	}
	if o.Output != nil {
		b, _ := json.Marshal(*o.Output)
		return "output " + string(b)
	}
	return "nothing"
}

func (o outcome) same(p outcome) bool {
	switch {
	case o.Error != nil || p.Error != nil:
		return o.Error != nil && p.Error != nil && o.Error.Class == p.Error.Class
	case o.Output != nil && p.Output != nil:
		return *o.Output == *p.Output
	}
	return false
}

// differentialNow and the conversation below are the auto-injected values
// both engines see.
var differentialNow = time.Date(2026, 3, 4, 9, 30, 0, 0, time.UTC)

func loadCorpus(t *testing.T, path string) corpus {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c corpus
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c
}

// contextOf returns the variables of case c, without the auto-injected
// ones.
func (c corpus) contextOf(t *testing.T, cc corpusCase) map[string]any {
	t.Helper()
	if len(cc.Context) == 0 {
		return map[string]any{}
	}
	var name string
	if json.Unmarshal(cc.Context, &name) == nil {
		ctx, ok := c.Contexts[name]
		if !ok {
			t.Fatalf("case %q: no context %q", cc.Name, name)
		}
		return cloneJSON(t, ctx)
	}
	var ctx map[string]any
	if err := json.Unmarshal(cc.Context, &ctx); err != nil {
		t.Fatalf("case %q: context: %v", cc.Name, err)
	}
	return ctx
}

// cloneJSON deep-copies v through JSON (renders must not share values).
func cloneJSON(t *testing.T, v map[string]any) map[string]any {
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// renderGo renders a case with prompt.Render.
func renderGo(template string, params map[string]any) outcome {
	a := testAgent(template)
	res, err := prompt.Render(a, prompt.Context{Parameters: params, Now: differentialNow, ConversationID: "conv-1", Turn: 3})
	if err == nil {
		return outcome{Output: &res.Text}
	}
	var o outcome
	o.Error = &struct {
		Class   string `json:"class"`
		Name    string `json:"name,omitempty"`
		Message string `json:"message"`
	}{Message: err.Error()}
	var mp *agents.MissingParameterError
	switch {
	case errors.As(err, &mp):
		o.Error.Class = "missing-parameter"
	case tmpl.Check(template) != nil:
		o.Error.Class = "parse"
	default:
		o.Error.Class = "render-failure"
	}
	return o
}

// injected are the auto-injected variables prompt.Render binds for
// renderGo's context, for LiquidJS's.
func injected() map[string]any {
	a := testAgent("x")
	return map[string]any{
		"today":        differentialNow.Format(time.DateOnly),
		"now":          differentialNow.Format(time.RFC3339),
		"agent":        map[string]any{"id": a.ID, "name": a.Name, "version": a.Version},
		"conversation": map[string]any{"id": "conv-1", "turn": 3},
	}
}

// liquidjsAvailable reports whether the LiquidJS side can run, failing the
// test when KINDGI_REQUIRE_LIQUIDJS=1 and it cannot.
func liquidjsAvailable(t *testing.T) bool {
	t.Helper()
	why := ""
	if _, err := exec.LookPath("node"); err != nil {
		why = "node is not on PATH"
	} else if _, err := os.Stat(filepath.Join(liquidjsDir, "node_modules", "liquidjs", "package.json")); err != nil {
		why = "liquidjs is not installed (run `npm ci` in prompt/" + liquidjsDir + ")"
	}
	if why == "" {
		return true
	}
	if os.Getenv("KINDGI_REQUIRE_LIQUIDJS") == "1" {
		t.Fatalf("KINDGI_REQUIRE_LIQUIDJS=1 but %s", why)
	}
	t.Skip(why)
	return false
}

// renderLiquidJS renders templates with their contexts through
// testdata/liquidjs/render.js.
func renderLiquidJS(t *testing.T, templates []string, contexts []map[string]any) []outcome {
	t.Helper()
	type in struct {
		Template string         `json:"template"`
		Context  map[string]any `json:"context"`
	}
	input := make([]in, len(templates))
	for i := range templates {
		input[i] = in{templates[i], contexts[i]}
	}
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "node", "render.js")
	cmd.Dir = liquidjsDir
	// LiquidJS prints dates in the process's zone; the Go side keeps a
	// parsed time's own (UTC in the corpus).
	cmd.Env = append(os.Environ(), "TZ=UTC")
	cmd.Stdin = bytes.NewReader(raw)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node render.js: %v\n%s", err, stderr.String())
	}
	var res []outcome
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("node render.js output: %v", err)
	}
	if len(res) != len(templates) {
		t.Fatalf("node render.js returned %d results for %d cases", len(res), len(templates))
	}
	return res
}

func TestLiquidJSDifferential(t *testing.T) {
	c := loadCorpus(t, "testdata/liquid-corpus.json")
	if len(c.Cases) < 300 {
		t.Fatalf("the corpus has %d cases; it needs at least 300", len(c.Cases))
	}
	if !liquidjsAvailable(t) {
		return
	}
	templates := make([]string, len(c.Cases))
	contexts := make([]map[string]any, len(c.Cases))
	for i, cc := range c.Cases {
		templates[i] = cc.Template
		ctx := c.contextOf(t, cc)
		for k, v := range injected() {
			ctx[k] = v
		}
		contexts[i] = ctx
	}
	js := renderLiquidJS(t, templates, contexts)
	known, matched := 0, 0
	for i, cc := range c.Cases {
		goRes := renderGo(cc.Template, c.contextOf(t, cc))
		same := goRes.same(js[i])
		switch {
		case same && cc.Differs != "":
			t.Errorf("case %q is listed as a difference (%s) but both engines give %v: remove the note", cc.Name, cc.Differs, goRes)
		case same:
			matched++
		case cc.Differs != "":
			known++
		default:
			t.Errorf("case %q: template %q\n  liquidjs: %v\n  prompt:   %v", cc.Name, cc.Template, js[i], goRes)
		}
	}
	t.Logf("%d cases: %d match LiquidJS, %d documented differences", len(c.Cases), matched, known)
}
