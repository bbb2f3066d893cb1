// Package demo is the module "demo" of the example pack service: the tools
// demo.echo, demo.sleep, demo.fail, demo.bad-output and demo.env, and the
// guardrail check demo.no-digits. The binary in the parent directory serves
// it with packserver.Main; tests and benchmarks serve it in-process.
package demo

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"time"

	"github.com/kindgi/agents/pack"
	"github.com/kindgi/agents/pack/packserver"
)

// Name is the module's name in index.json.
const Name = "demo"

// Module returns the demo module with all its handlers.
func Module() packserver.Module {
	return packserver.Module{
		Name: Name,
		Tools: map[string]packserver.ToolHandler{
			"demo.echo":       Echo,
			"demo.sleep":      Sleep,
			"demo.fail":       Fail,
			"demo.bad-output": BadOutput,
			"demo.env":        Env,
		},
		Checks: map[string]packserver.CheckHandler{
			"demo.no-digits": NoDigits,
		},
	}
}

// EchoIO is the input and the output of demo.echo.
type EchoIO struct {
	Text string `json:"text"`
}

// Echo returns its input text.
func Echo(_ context.Context, input json.RawMessage, _ pack.CallContext) (any, error) {
	var in EchoIO
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, err
	}
	return in, nil
}

// SleepOutput is the output of demo.sleep.
type SleepOutput struct {
	SleptMs int64 `json:"sleptMs"`
}

// Sleep waits input.ms milliseconds, or until ctx is done, in which case
// it returns ctx's error.
func Sleep(ctx context.Context, input json.RawMessage, _ pack.CallContext) (any, error) {
	var in struct {
		Ms int64 `json:"ms"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, err
	}
	start := time.Now()
	t := time.NewTimer(time.Duration(in.Ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return SleepOutput{SleptMs: time.Since(start).Milliseconds()}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Fail always fails with an error whose message contains "boom".
func Fail(context.Context, json.RawMessage, pack.CallContext) (any, error) {
	return nil, errors.New("boom: demo.fail always fails")
}

// BadOutput returns an output that breaks its output schema: count must be
// an integer.
func BadOutput(context.Context, json.RawMessage, pack.CallContext) (any, error) {
	return map[string]any{"count": "many"}, nil
}

// EnvOutput is the output of demo.env.
type EnvOutput struct {
	// TokenVisible says whether KINDGI_PACK_SERVICE_TOKEN is set in the
	// process environment; the service removes it, so it is false.
	TokenVisible bool `json:"tokenVisible"`
	// Region is DEMO_REGION's value ("" when unset).
	Region string `json:"region"`
}

// Env reports what pack code sees of the environment.
func Env(context.Context, json.RawMessage, pack.CallContext) (any, error) {
	_, visible := os.LookupEnv(packserver.EnvToken)
	return EnvOutput{TokenVisible: visible, Region: os.Getenv("DEMO_REGION")}, nil
}

// NoDigits passes when trace.response.content holds no digit. A trace
// without a string response content passes: there is nothing to object to.
func NoDigits(_ context.Context, _, trace json.RawMessage) (pack.CheckOutcome, error) {
	var t struct {
		Response struct {
			Content any `json:"content"`
		} `json:"response"`
	}
	if err := json.Unmarshal(trace, &t); err != nil {
		return pack.CheckOutcome{}, err
	}
	content, _ := t.Response.Content.(string)
	if i := strings.IndexAny(content, "0123456789"); i >= 0 {
		return pack.CheckOutcome{Passed: false, Reason: "the response contains a digit"}, nil
	}
	return pack.CheckOutcome{Passed: true}, nil
}
