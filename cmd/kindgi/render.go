package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/prompt"
)

// paramFlags collects repeated --param name=value flags.
type paramFlags []string

func (p *paramFlags) String() string     { return strings.Join(*p, ",") }
func (p *paramFlags) Set(v string) error { *p = append(*p, v); return nil }

func runRender(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("render", "render FILE [--param name=value]... [--now RFC3339] [--conversation ID] [--turn N]\n\nRenders the agent's instructions and prints them, or prints the coded error and exits 1.", stderr)
	var params paramFlags
	fs.Var(&params, "param", "a parameter as name=value (repeatable); the value is converted to the declared type")
	now := fs.String("now", "", "the time the template sees (RFC 3339); the current time when empty")
	conv := fs.String("conversation", "", "conversation id the template sees")
	turn := fs.Int("turn", 1, "turn number the template sees")
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(files) != 1 {
		fmt.Fprintln(stderr, "kindgi render: exactly one FILE is needed")
		fs.Usage()
		return exitUsage
	}
	c := prompt.Context{ConversationID: *conv, Turn: *turn}
	if *now != "" {
		t, err := time.Parse(time.RFC3339, *now)
		if err != nil {
			fmt.Fprintf(stderr, "kindgi render: --now: %v\n", err)
			return exitUsage
		}
		c.Now = t
	}
	a, err := agent.Load(files[0])
	if err != nil {
		fmt.Fprintf(stderr, "kindgi render: %s: %s\n", files[0], errLine(err))
		return exitFailure
	}
	c.Parameters, err = parseParams(a, params)
	if err != nil {
		fmt.Fprintf(stderr, "kindgi render: %v\n", err)
		return exitUsage
	}
	res, err := prompt.Render(a, c)
	if err != nil {
		fmt.Fprintf(stderr, "kindgi render: %s\n", errLine(err))
		return exitFailure
	}
	fmt.Fprintln(stdout, res.Text)
	return exitOK
}

// parseParams converts name=value pairs to the declared parameter types.
// A name the agent does not declare is an error naming the declared ones:
// the template could not see it (a typo would otherwise pass silently).
func parseParams(a agent.Agent, pairs []string) (map[string]any, error) {
	types := make(map[string]string, len(a.Parameters))
	names := make([]string, len(a.Parameters))
	for i, p := range a.Parameters {
		types[p.Name] = p.Type
		names[i] = p.Name
	}
	out := make(map[string]any, len(pairs))
	for _, pair := range pairs {
		name, value, ok := strings.Cut(pair, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--param %q: want name=value", pair)
		}
		typ, declared := types[name]
		if !declared {
			if len(names) == 0 {
				return nil, fmt.Errorf("--param %s: the agent declares no parameters", name)
			}
			return nil, fmt.Errorf("--param %s: the agent declares no parameter %q (declared: %s)", name, name, strings.Join(names, ", "))
		}
		v, err := convertParam(typ, value)
		if err != nil {
			return nil, fmt.Errorf("--param %s: %v", name, err)
		}
		out[name] = v
	}
	return out, nil
}

func convertParam(typ, value string) (any, error) {
	switch typ {
	case agent.TypeString:
		return value, nil
	case agent.TypeNumber:
		return strconv.ParseFloat(value, 64)
	case agent.TypeInteger:
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("want an integer: %v", err)
		}
		return n, nil
	case agent.TypeBoolean:
		return strconv.ParseBool(value)
	case agent.TypeObject, agent.TypeArray:
		var v any
		if err := json.Unmarshal([]byte(value), &v); err != nil {
			return nil, fmt.Errorf("want JSON (%s): %v", typ, err)
		}
		return v, nil
	}
	var v any
	if json.Unmarshal([]byte(value), &v) == nil {
		return v, nil
	}
	return value, nil
}
