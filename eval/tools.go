package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
)

// ToolMode says how a case's tool calls are answered.
type ToolMode string

// Tool modes. The zero ToolMode is ReplayTools for a case with a baseline
// (from a run) and LiveTools for one without.
const (
	// ReplayTools answers a call whose tool id and arguments (compared as
	// canonical JSON) match a call of the case's baseline with the
	// recorded output (or the recorded tool error), and never calls a
	// handler; any other call fails the case, naming the tool and its
	// arguments. Matching calls are answered in recorded order; a call
	// made more often than recorded gets the last recorded answer again.
	ReplayTools ToolMode = "replay"
	// LiveTools calls the handlers of Options.Bindings.Tools: for cases
	// written by hand against test tools.
	LiveTools ToolMode = "live"
)

// replayRegistry is the ToolRegistry of a case under ReplayTools. It
// resolves tools through the host's registry when there is one (for their
// schemas) and otherwise from the recorded calls, and answers every call
// from the recording.
type replayRegistry struct {
	inner bindings.ToolRegistry // nil: resolve from the recording
	calls []RecordedCall
	canon []string // canonical arguments of calls

	mu     sync.Mutex
	used   map[int]int // per first matching call index: answers given
	missed []RecordedCall
}

var _ bindings.ToolRegistry = (*replayRegistry)(nil)

func newReplayRegistry(inner bindings.ToolRegistry, calls []RecordedCall) *replayRegistry {
	r := &replayRegistry{inner: inner, calls: calls, canon: make([]string, len(calls)), used: map[int]int{}}
	for i, c := range calls {
		r.canon[i] = canonical(c.Arguments)
	}
	return r
}

// ForTenant returns the replaying view of tenantID's tools.
func (r *replayRegistry) ForTenant(tenantID string) bindings.TenantTools {
	var inner bindings.TenantTools
	if r.inner != nil {
		inner = r.inner.ForTenant(tenantID)
	}
	return replayTools{r: r, inner: inner}
}

// misses returns the calls that matched no recorded call, in order.
func (r *replayRegistry) misses() []RecordedCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]RecordedCall(nil), r.missed...)
}

type replayTools struct {
	r     *replayRegistry
	inner bindings.TenantTools
}

// Resolve resolves through the host's registry, or, without one, to the
// version the recording used (ref's own version for a tool the recording
// never called): the descriptor then has no schemas.
func (t replayTools) Resolve(ctx context.Context, ref agent.ToolRef) (bindings.ToolDescriptor, error) {
	if t.inner != nil {
		return t.inner.Resolve(ctx, ref)
	}
	for _, c := range t.r.calls {
		if c.ToolID == ref.ID && c.ToolVersion != "" {
			return bindings.ToolDescriptor{ID: ref.ID, Version: c.ToolVersion}, nil
		}
	}
	return bindings.ToolDescriptor{ID: ref.ID, Version: ref.Version}, nil
}

// Invoke answers from the recording; a call it holds no answer for is
// recorded as missed and fails the turn with tool-invocation-failed.
func (t replayTools) Invoke(_ context.Context, d bindings.ToolDescriptor, input json.RawMessage, _ bindings.CallContext) (json.RawMessage, error) {
	args := canonical(input)
	r := t.r
	r.mu.Lock()
	defer r.mu.Unlock()
	var matches []int
	for i, c := range r.calls {
		if c.ToolID == d.ID && r.canon[i] == args {
			matches = append(matches, i)
		}
	}
	if len(matches) == 0 {
		r.missed = append(r.missed, RecordedCall{ToolID: d.ID, ToolVersion: d.Version, Arguments: json.RawMessage(args)})
		return nil, &agents.ToolInvocationError{ToolID: d.ID, ToolVersion: d.Version,
			Message: "eval: no recorded call of " + d.ID + " with arguments " + args + " to replay"}
	}
	n := r.used[matches[0]]
	r.used[matches[0]] = n + 1
	c := r.calls[matches[min(n, len(matches)-1)]]
	if c.Error != "" {
		return nil, recordedToolError(c.Error)
	}
	return append(json.RawMessage(nil), c.Output...), nil
}

// recordedToolError is a tool's own failure, replayed: it has no code, so
// the turn tells the model, as it did when the tool failed.
type recordedToolError string

func (e recordedToolError) Error() string { return string(e) }

// canonical returns raw as canonical JSON (object keys sorted, no
// insignificant space, numbers as written); raw itself, compacted when it
// can be, when it is not JSON.
func canonical(raw json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err == nil {
		if b, err := marshalPlain(v); err == nil {
			return string(b)
		}
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) == nil {
		return buf.String()
	}
	return string(raw)
}

// marshalPlain marshals v as JSON without HTML escaping and without the
// encoder's trailing newline.
func marshalPlain(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
