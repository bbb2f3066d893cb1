package packserver

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/kindgi/agents/pack"
)

// ToolHandler runs one tool call. input is the request's input, already
// valid against the tool's input schema; call is the request's call
// context. The returned value is encoded as JSON (a json.RawMessage is sent
// as is) and must be valid against the tool's output schema.
//
// ctx is cancelled when the caller's deadline (kindgi-timeout-ms) passes or
// the caller closes the connection; a handler doing slow work must honour
// it. A returned error, or a panic, is answered as handler-throw with the
// error as its cause; the service stays up.
type ToolHandler func(ctx context.Context, input json.RawMessage, call pack.CallContext) (any, error)

// CheckHandler evaluates one guardrail check: evaluate(config, trace).
// config is the guardrail's configuration and trace the run trace, both as
// sent. Errors and panics are answered as for a ToolHandler.
type CheckHandler func(ctx context.Context, config, trace json.RawMessage) (pack.CheckOutcome, error)

// Module is the Go counterpart of a pack module: Go cannot import code at
// run time, so a service binary registers its modules in code and the
// index refers to them by Name.
type Module struct {
	// Name is the module name the index's modules, tools[].module and
	// guardrails[].module use.
	Name string
	// Tools maps tool ids to their handlers.
	Tools map[string]ToolHandler
	// Checks maps check ids (a guardrail's checkId, else its id) to their
	// handlers.
	Checks map[string]CheckHandler
	// Init, when set, runs once before the service listens, after
	// KINDGI_PACK_SERVICE_TOKEN has been removed from the environment. An
	// error (or panic) fails the boot.
	Init func(ctx context.Context) error
}

// CodeBootFailed is the code of a *BootError, and the kind of the JSON line
// Main writes when the service cannot start.
const CodeBootFailed = "boot-failed"

// BootError lists every reason a pack service cannot start: a bad index,
// a module the index names that is not registered, a tool or check without
// a handler, a module whose Init failed, a bad setting.
type BootError struct {
	Problems []string
}

// Error implements the error interface.
func (e *BootError) Error() string {
	return "pack service cannot start: " + strings.Join(e.Problems, "; ")
}

// Code returns boot-failed.
func (e *BootError) Code() string { return CodeBootFailed }

// bound is the runtime table built from an index and the registered
// modules: every indexed tool and check with its handler.
type bound struct {
	tools  map[string]*boundTool
	checks map[string]CheckHandler
}

type boundTool struct {
	index   IndexTool
	handler ToolHandler
	input   *pack.Schema
	output  *pack.Schema
}

// bind matches the index against the registered modules and compiles the
// tool schemas. It does not run Init. It returns every problem found.
func bind(idx *Index, modules []Module) (*bound, []string) {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	registered := make(map[string]*Module, len(modules))
	for i := range modules {
		m := &modules[i]
		if m.Name == "" {
			add("module #%d registered without a name", i)
			continue
		}
		if registered[m.Name] != nil {
			add("module %q is registered twice", m.Name)
			continue
		}
		registered[m.Name] = m
	}
	for _, name := range idx.Modules {
		if name != "" && registered[name] == nil {
			add("module %q named by the index is not registered in this binary", name)
		}
	}
	b := &bound{tools: make(map[string]*boundTool, len(idx.Tools)), checks: make(map[string]CheckHandler, len(idx.Guardrails))}
	for _, t := range idx.Tools {
		m := registered[t.Module]
		if m == nil {
			continue // reported above
		}
		h := m.Tools[t.ID]
		if h == nil {
			add("tool %q: module %q has no handler for it", t.ID, t.Module)
		}
		in, err := pack.CompileSchema(t.InputSchema)
		if err != nil {
			add("tool %q: inputSchema: %v", t.ID, err)
		}
		out, err := pack.CompileSchema(t.OutputSchema)
		if err != nil {
			add("tool %q: outputSchema: %v", t.ID, err)
		}
		b.tools[t.ID] = &boundTool{index: t, handler: h, input: in, output: out}
	}
	for _, g := range idx.Guardrails {
		m := registered[g.Module]
		if m == nil {
			continue
		}
		h := m.Checks[g.Key()]
		if h == nil {
			add("check %q: module %q has no handler for it", g.Key(), g.Module)
		}
		b.checks[g.Key()] = h
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return b, nil
}

// initModules runs Init of every module the index names, in index order,
// and returns a problem per failure. A panicking Init is a failure too.
func initModules(ctx context.Context, idx *Index, modules []Module) []string {
	byName := make(map[string]*Module, len(modules))
	for i := range modules {
		byName[modules[i].Name] = &modules[i]
	}
	var problems []string
	for _, name := range idx.Modules {
		m := byName[name]
		if m == nil || m.Init == nil {
			continue
		}
		if err := safeInit(ctx, m.Init); err != nil {
			problems = append(problems, fmt.Sprintf("module %q: init failed: %v", name, err))
		}
	}
	return problems
}

func safeInit(ctx context.Context, init func(context.Context) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	return init(ctx)
}
