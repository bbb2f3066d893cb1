// Package prompt renders an agent's instructions: a Liquid template,
// rendered LiquidJS-compatibly and strictly.
//
// # Variables
//
// A template sees the agent's declared parameters (the value passed in
// Context.Parameters, else the parameter's default; an optional parameter
// with neither is bound to nil, so `{% if nickname %}` works), any other
// entry of Context.Parameters, and the auto-injected variables of
// AutoInjectedVars, which win over a parameter of the same name:
//
//   - today: the date of Context.Now in its location, "2006-01-02";
//   - now: Context.Now in RFC 3339;
//   - agent: {id, name, version};
//   - conversation: {id, turn}.
//
// Result.Context holds every value the template saw, under its name.
//
// # Strictness
//
// A required parameter that is absent fails with
// *agents.MissingParameterError naming it, before rendering. A variable the
// template reads that nothing binds, anywhere — an output, an if, unless,
// case or for tag, an assign, a filter argument — fails with
// *agents.MissingParameterError naming it, never with an empty string. So
// does a missing key of a map read through a property path in an output
// ({{ firm.city }} names "firm.city"). As in LiquidJS with strictVariables
// (and without lenientIf), `{{ x | default: "y" }}` fails when x is unbound:
// the variable is read before the filter runs. Bind x to nil (declare it
// optional) to use a default.
//
// Every other failure is an *agents.RenderFailureError whose Err is the
// cause: a syntax error (an unclosed "{{" or "{%" is one, as in LiquidJS),
// an unknown tag or filter, a filter given bad arguments, a bound hit.
//
// # Bounds
//
// Instructions are at most 128 KiB, with blocks nested at most 32 deep and
// brackets at most 8 deep in one expression (agent.MaxInstructionsBytes,
// MaxInstructionsDepth, MaxInstructionsBrackets): agent.Define refuses
// more before parsing, and so does Render.
//
// Rendering is metered (see internal/tmpl): the text may not exceed 1 MiB,
// all loops of a render together may not run more than 100000 iterations,
// no value may grow past 1 MiB (its approximate memory), and every
// operation is charged to a work budget of 16 Mi units: each node run, the
// bytes written (into the text or a capture), the size of every value a
// tag or output reads (what its comparisons, contains and case/when can
// touch) and of every filter's input and output (sorts times log2 of the
// length). A filter whose result could be many times its input and
// arguments (replace, join, split, json…) measures the result before it
// builds it. Past a bound the render stops with render-failure. So any
// template Define accepts renders or fails within about a second and
// 64 MiB allocated, parse included (FuzzRenderBounded checks it); a
// 200-million-item loop fails after 100000 iterations in tens to a few
// hundred milliseconds on a 2-core machine.
//
// RenderContext also stops when its context is done, with the context's
// error. A panic inside the engine is recovered into a render-failure whose
// message is the panic's alone, without a stack trace.
//
// # Compatibility with LiquidJS
//
// Every template either renders exactly as the npm package liquidjs
// (10.30.1, strictVariables and strictFilters) renders it, or agent.Define
// refuses it with a message that names the construct and says what
// LiquidJS would do. TestLiquidJSDifferential renders a corpus
// (testdata/liquid-corpus.json: every tag and filter LiquidJS has,
// whitespace control, strict variables, filters on nil and on the wrong
// type, parse errors, the cases of issue 27) with both and requires the
// same output or the same class of error (missing-parameter,
// render-failure, or a parse error); TestLiquidJSDifferentialGenerated
// does the same for random templates over every tag and filter.
//
// The engine is github.com/osteele/liquid; what LiquidJS does differently
// is done here (internal/tmpl), through its public API: conditions (and/or
// read from the right with both operands evaluated, contains on lists,
// ranges and strings only, strict ==, JavaScript's coercions in <, <=, >
// and >=, not, the nil literal as LiquidJS's NullDrop, empty and blank);
// for (a string iterates once, the else branch for an empty collection,
// offset, limit and reversed applied in that order, offset: continue, the
// loop variable scoped to the loop), tablerow and tablerowloop, case
// rendering every matching when, unless with elsif, capture, assign (a
// value LiquidJS leaves undefined, such as first of an empty list, leaves
// the variable unbound), break and continue (outside a loop they stop the
// render), a property of nil read as nil everywhere, {% echo %},
// {% liquid %}, {% increment %}, {% decrement %}, {% cycle %} (its state
// kept in the render), inline comments, whitespace control that trims
// only the adjacent text, and LiquidJS's filters with its coercions (the
// _exp filters evaluate their expression in the render's scope; strip_html
// removes script and style blocks and comments; round shifts the decimal
// exponent, so 1.005 | round: 2 is 1.01; arithmetic is JavaScript's). A
// filter LiquidJS lacks (handleize, pluralize, type) is an unknown filter.
//
// # Time zone
//
// The date filters show times in UTC, or in Context.Location: a time with
// an offset is that instant in the zone (with the zone's offset and
// daylight saving time then), a time without one is a wall time there, a
// number or a string of digits is seconds since the epoch. This is LiquidJS
// in a process whose TZ is that zone (the differential runs Node with
// TZ=UTC).
//
// # Refused at Define
//
// On purpose, because they reach outside the prompt: include, render and
// layout (they read other template files, and a prompt has none; LiquidJS
// would read its file system), and block (only meaningful inside a
// layout). Because this engine cannot render them as LiquidJS does, with
// the message saying what LiquidJS would do:
//
//   - the operator <> (LiquidJS has none and finds every comparison
//     written with it false);
//   - a filter in a for or tablerow collection (LiquidJS ignores it);
//   - a raw block ended by a trimmed {%- endraw -%} (LiquidJS does not end
//     it there and fails);
//   - an empty filter after | (LiquidJS ignores it);
//   - a number with an exponent such as 1e3 (LiquidJS reads a variable);
//   - the literal nil given to json, jsonify or inspect (LiquidJS prints
//     {});
//   - break or continue in a tablerow outside a for (LiquidJS skips the
//     rest of the cell and, in later cells, all but their first node).
//
// Left as they are (data, not templates, decide them): iterating over a Go
// map visits its keys in sorted order (LiquidJS: the object's insertion
// order, which a Go map does not keep; pass a list when the order
// matters); sample is random in both; sort by a property some items lack
// puts those items first (LiquidJS's comparison finds an undefined
// property equal to everything, so V8's sort algorithm decides); a date
// filter given a list or a map returns it as it is (LiquidJS hands its
// text to V8's Date parser); sort of a list mixing booleans and nil
// follows V8's comparison there. (map of a property the items lack yields
// LiquidJS's undefined items, as there.)
//
// # Caching
//
// Parsed templates are cached per (agent id, version, instructions), at most
// CacheSize of them, least recently used first out. Render is safe for
// concurrent use.
package prompt

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/internal/tmpl"
)

// AutoInjectedVars are the variables injected into every render. They are
// reserved: an agent cannot declare a parameter with one of these names.
var AutoInjectedVars = []string{"today", "now", "agent", "conversation"}

// Context is what a render binds besides the agent's own data.
type Context struct {
	// Parameters are the values of the agent's parameters, by name. Entries
	// that no parameter declares are bound too.
	Parameters map[string]any
	// Now is the time of the render; the zero time means time.Now().
	Now time.Time
	// ConversationID and Turn are bound as conversation.id and
	// conversation.turn.
	ConversationID string
	Turn           int
	// Location is the time zone of the date filters: a time with an
	// offset is shown in it (its offset and daylight saving time at that
	// instant), a time without one is a wall time in it. Nil is UTC. This
	// is LiquidJS run in a process whose time zone is Location (TZ=...).
	Location *time.Location
}

// Result is a rendered prompt.
type Result struct {
	// Text is the rendered instructions.
	Text string
	// Context holds every value the template saw, by name: parameters
	// (defaults applied) and the auto-injected variables.
	Context map[string]any
}

// Render renders a's instructions with c. See the package documentation
// for the variables, strictness and bounds. Errors are
// *agents.MissingParameterError and *agents.RenderFailureError.
func Render(a agent.Agent, c Context) (Result, error) {
	return render(nil, a, c)
}

// RenderContext is Render that stops when ctx is done: before parsing, and
// during the render at the next node, loop iteration or filter (or within
// 64 Ki units of work, see the package documentation). A render stopped so
// fails with ctx.Err() itself — context.Canceled or
// context.DeadlineExceeded, whose agents.CodeOf is turn-aborted — never
// with a render-failure: the template did not fail, its caller gave up, and
// a turn maps the error to turn-aborted (external, or timeout when its
// maxWallMs ran out) without journaling a failure.
func RenderContext(ctx context.Context, a agent.Agent, c Context) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	return render(ctx, a, c)
}

// RenderText is RenderContext's text alone: it builds no Result.Context,
// and instructions without a template delimiter (no "{" or "}" at all)
// render to themselves with no parse and no render, at near-zero cost.
// It fails as RenderContext does: a required parameter that is absent is
// an *agents.MissingParameterError even then.
func RenderText(ctx context.Context, a agent.Agent, c Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if !plain(a.Instructions) {
		res, err := render(ctx, a, c)
		return res.Text, err
	}
	for _, p := range a.Parameters {
		if _, ok := c.Parameters[p.Name]; !ok && p.Default == nil && !p.Optional {
			return "", &agents.MissingParameterError{Name: p.Name}
		}
	}
	return a.Instructions, nil
}

// plain reports whether s holds no template delimiter, so that it renders
// to itself whatever is bound.
func plain(s string) bool {
	// Two vectorised byte searches: strings.ContainsAny tests the bytes
	// one by one (3,500 instructions for 315 characters, against ~200).
	return len(s) <= tmpl.MaxSource && strings.IndexByte(s, '{') < 0 && strings.IndexByte(s, '}') < 0
}

func render(ctx context.Context, a agent.Agent, c Context) (Result, error) {
	vars, err := bindings(a, c)
	if err != nil {
		return Result{}, err
	}
	t, err := parsed(a)
	if err != nil {
		return Result{}, &agents.RenderFailureError{Reason: err.Error(), Err: err}
	}
	text, err := t.RenderIn(ctx, vars, c.Location)
	if err != nil {
		if ctx != nil && ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			return Result{}, err
		}
		var ue *tmpl.UndefinedError
		if errors.As(err, &ue) {
			return Result{}, &agents.MissingParameterError{Name: ue.Name}
		}
		return Result{}, &agents.RenderFailureError{Reason: err.Error(), Err: err}
	}
	return Result{Text: text, Context: vars}, nil
}

// stamp is the today and now of one second in one location.
type stamp struct {
	unix       int64
	loc        *time.Location
	today, now any
}

// lastStamp is the stamp of the last render: renders in the same second
// (the same Context.Now, or time.Now() within a second) share its strings
// instead of formatting them again.
var lastStamp atomic.Pointer[stamp]

// stamps returns today ("2006-01-02") and now (RFC 3339) of t: both depend
// only on its second and its location.
func stamps(t time.Time) (today, now any) {
	sec, loc := t.Unix(), t.Location()
	if s := lastStamp.Load(); s != nil && s.unix == sec && s.loc == loc {
		return s.today, s.now
	}
	s := &stamp{unix: sec, loc: loc, today: t.Format(time.DateOnly), now: t.Format(time.RFC3339)}
	lastStamp.Store(s)
	return s.today, s.now
}

// bindings returns the values a render of a with c binds: what
// Result.Context holds. A required parameter that is absent is an
// *agents.MissingParameterError.
func bindings(a agent.Agent, c Context) (map[string]any, error) {
	vars := make(map[string]any, len(c.Parameters)+len(a.Parameters)+len(AutoInjectedVars))
	for k, v := range c.Parameters {
		vars[k] = v
	}
	for _, p := range a.Parameters {
		if _, ok := c.Parameters[p.Name]; ok {
			continue
		}
		switch {
		case p.Default != nil:
			vars[p.Name] = p.Default
		case p.Optional:
			vars[p.Name] = nil
		default:
			return nil, &agents.MissingParameterError{Name: p.Name}
		}
	}
	now := c.Now
	if now.IsZero() {
		now = time.Now()
	}
	vars["today"], vars["now"] = stamps(now)
	vars["agent"] = map[string]any{"id": a.ID, "name": a.Name, "version": a.Version}
	vars["conversation"] = map[string]any{"id": c.ConversationID, "turn": c.Turn}
	return vars, nil
}
