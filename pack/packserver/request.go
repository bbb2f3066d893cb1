package packserver

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/kindgi/agents/internal/jsonscan"
	"github.com/kindgi/agents/pack"
)

// decodeRequest is pack.DecodeRequest with a cheaper fast path in front:
// profiling demo.echo showed request decoding to be the largest part of
// the service's own cost per call. fastRequest reads the envelope straight
// from the bytes, with no reflection, and accepts only bodies the protocol
// schema certainly accepts; anything else, and every invalid body, is
// decided by pack.DecodeRequest. TestFastRequestAgreesWithPack and
// FuzzFastRequest check the agreement.
func decodeRequest(body []byte) (any, *pack.ErrorMessage) {
	if msg, ok := fastRequest(body); ok {
		return msg, nil
	}
	return pack.DecodeRequest(body)
}

// envelope holds the raw values of the members fastRequest reads, nil when
// absent. Member names are matched exactly, as the schema matches them.
type envelope struct {
	v, kind, tool, input, ctx, check, config, trace []byte
}

// fastRequest returns a *pack.ToolInvoke or *pack.CheckInvoke for a body
// the request schema plainly accepts, or false.
//
// A member named twice in the envelope, in tool, check or ctx makes it
// false: the protocol schema check decodes with encoding/json into a map,
// where the last occurrence replaces the earlier ones whole, and the
// decode after it does the same, so the full path decides such a body as
// if only the last occurrence were there. Leaving duplicates to it keeps
// both paths on one rule. Keys with escapes (which may decode to a member
// name) are left to it too.
func fastRequest(body []byte) (any, bool) {
	p := parser{Scanner: jsonscan.Scanner{B: body}}
	p.WS()
	var e envelope
	ok := p.object(func(key, val []byte) bool {
		var slot *[]byte
		switch string(key) {
		case "v":
			slot = &e.v
		case "kind":
			slot = &e.kind
		case "tool":
			slot = &e.tool
		case "input":
			slot = &e.input
		case "ctx":
			slot = &e.ctx
		case "check":
			slot = &e.check
		case "config":
			slot = &e.config
		case "trace":
			slot = &e.trace
		default:
			return true // another member: the schema allows it
		}
		if *slot != nil {
			return false // a duplicate: the full path decides
		}
		*slot = val
		return true
	})
	if !ok {
		return nil, false
	}
	p.WS()
	if p.I != len(p.B) || string(e.v) != "2" {
		return nil, false
	}
	switch string(e.kind) {
	case `"invoke"`:
		return fastInvoke(&e)
	case `"check-invoke"`:
		return fastCheckInvoke(&e)
	}
	return nil, false
}

// Member names of tool, ctx and check, in the order of their values in
// fields' result.
var (
	toolNames  = []string{"id", "version"}
	ctxNames   = []string{"tenantId", "runId", "requestId", "env", "secrets", "config"}
	checkNames = []string{"id"}
)

func fastInvoke(e *envelope) (any, bool) {
	if e.input == nil || !isObject(e.tool) || !isObject(e.ctx) {
		return nil, false
	}
	var tool [2][]byte
	var ctx [6][]byte
	if !fields(e.tool, toolNames, tool[:]) || !fields(e.ctx, ctxNames, ctx[:]) ||
		tool[0] == nil || ctx[0] == nil || ctx[1] == nil {
		return nil, false
	}
	m := &pack.ToolInvoke{V: pack.Version, Kind: pack.KindInvoke, Input: e.input}
	var s strs
	ok := s.add(tool[0], &m.Tool.ID) && s.add(tool[1], &m.Tool.Version) &&
		s.add(ctx[0], &m.Ctx.TenantID) && s.add(ctx[1], &m.Ctx.RunID) && s.add(ctx[2], &m.Ctx.RequestID) &&
		obj(ctx[3], &m.Ctx.Env) && obj(ctx[4], &m.Ctx.Secrets) && obj(ctx[5], &m.Ctx.Config)
	if !ok {
		return nil, false
	}
	s.finish()
	return m, true
}

func fastCheckInvoke(e *envelope) (any, bool) {
	if !isObject(e.check) || !isObject(e.config) || !isObject(e.trace) {
		return nil, false
	}
	var check [1][]byte
	if !fields(e.check, checkNames, check[:]) || check[0] == nil {
		return nil, false
	}
	m := &pack.CheckInvoke{V: pack.Version, Kind: pack.KindCheckInvoke, Config: e.config, Trace: e.trace}
	var s strs
	if !s.add(check[0], &m.Check.ID) {
		return nil, false
	}
	s.finish()
	return m, true
}

// fields reads the members of the object raw (already checked by the
// envelope's parse): the value of names[k] goes to vals[k] (nil when
// absent); other members are skipped. A name given twice gives false.
func fields(raw []byte, names []string, vals [][]byte) bool {
	p := parser{Scanner: jsonscan.Scanner{B: raw}}
	return p.object(func(key, val []byte) bool {
		for k, name := range names {
			if string(key) == name {
				if vals[k] != nil {
					return false // a duplicate: the full path decides
				}
				vals[k] = val
				return true
			}
		}
		return true
	})
}

// strs builds the plain strings of a message in one allocation: add
// schedules each, finish copies them all into one string and points the
// message's fields at slices of it.
type strs struct {
	in   [5][]byte
	dsts [5]*string
	n    int
	size int
}

// add schedules the JSON string raw (nil: absent, left "") for dst. A
// string with an escape or invalid UTF-8 is decoded by encoding/json
// (rare) straight into dst. Anything but a string gives false.
func (s *strs) add(raw []byte, dst *string) bool {
	if raw == nil {
		return true
	}
	if raw[0] != '"' {
		return false
	}
	in := raw[1 : len(raw)-1]
	if bytes.IndexByte(in, '\\') >= 0 || !utf8.Valid(in) {
		return json.Unmarshal(raw, dst) == nil
	}
	s.in[s.n], s.dsts[s.n] = in, dst
	s.n++
	s.size += len(in)
	return true
}

// finish sets every scheduled string.
func (s *strs) finish() {
	var b strings.Builder
	b.Grow(s.size)
	for _, in := range s.in[:s.n] {
		b.Write(in)
	}
	all := b.String()
	for k, in := range s.in[:s.n] {
		*s.dsts[k] = all[:len(in)]
		all = all[len(in):]
	}
}

// obj decodes an optional object member into dst.
func obj(raw []byte, dst *map[string]any) bool {
	return raw == nil || (isObject(raw) && json.Unmarshal(raw, dst) == nil)
}

func isObject(raw []byte) bool { return len(raw) > 0 && raw[0] == '{' }

// maxDepth bounds the nesting parser follows; deeper bodies are left to
// pack (encoding/json itself refuses nesting past 10000).
const maxDepth = 256

// parser reads strict JSON (RFC 8259, as encoding/json accepts it)
// straight from the bytes.
type parser struct {
	jsonscan.Scanner
	depth int
}

// object parses the object at p.I and calls member with each key (a
// string without escapes) and the bytes of its value (valid JSON, no
// surrounding whitespace); member returning false stops with false, as
// does anything that is not such an object.
func (p *parser) object(member func(key, val []byte) bool) bool {
	if p.Peek() != '{' {
		return false
	}
	if p.Open('}') {
		return true
	}
	for {
		key, ok := p.Key()
		if !ok {
			return false
		}
		start := p.I
		if !p.value() || !member(key, p.B[start:p.I]) {
			return false
		}
		more, ok := p.Next('}')
		if !ok || !more {
			return ok
		}
	}
}

// value skips one JSON value at p.I, checking its syntax.
func (p *parser) value() bool {
	switch p.Peek() {
	case '{':
		if p.depth >= maxDepth {
			return false
		}
		p.depth++
		ok := p.object(func(_, _ []byte) bool { return true })
		p.depth--
		return ok
	case '[':
		if p.depth >= maxDepth {
			return false
		}
		p.depth++
		ok := p.array()
		p.depth--
		return ok
	case '"':
		return p.SkipString()
	case 't':
		return p.Literal("true")
	case 'f':
		return p.Literal("false")
	case 'n':
		return p.Literal("null")
	}
	_, ok := p.Number()
	return ok
}

func (p *parser) array() bool {
	if p.Open(']') {
		return true
	}
	for {
		p.WS()
		if !p.value() {
			return false
		}
		more, ok := p.Next(']')
		if !ok || !more {
			return ok
		}
	}
}
