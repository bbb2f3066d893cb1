package bindingstest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
)

// RunValueTests checks the values every storage binding holds and the ones
// it refuses, whatever the backend: any text (NUL, the noncharacters,
// bytes that are not UTF-8) and any valid JSON (strings with "\u0000" and
// lone surrogate escapes, numbers beyond float64, deep nesting) read back
// as written through every binding; ids of exactly bindings.MaxIDLength
// bytes and step keys of bindings.MaxStepKeyLength are held; ids that are
// too long or hold a control character, step keys past the maximum,
// payloads that are not JSON and non-finite embeddings are refused with
// invalid-message before anything is stored; and a keyword query of any
// size answers. Each case skips when the harness lacks the binding it
// needs.
func RunValueTests(t *testing.T, newHarness NewHarness) {
	t.Helper()
	runSuite(t, newHarness, "storage binding", func(Harness) bool { return true }, valueCases)
}

var valueCases = []testCase{
	{name: "MessagesHoldAnyTextAndJSON", run: testMessagesHoldAnyValue},
	{name: "JournalHoldsAnyJSON", run: testJournalHoldsAnyValue},
	{name: "SnapshotsHoldAnyJSON", run: testSnapshotsHoldAnyValue},
	{name: "ApprovalsHoldAnyTextAndJSON", run: testApprovalsHoldAnyValue},
	{name: "FactsHoldAnyTextAndJSON", run: testFactsHoldAnyValue},
	{name: "IDsOfTheMaximumLengthAreHeld", run: testMaxLengthIDs},
	{name: "StepKeysOfTheMaximumLengthAreHeld", run: testMaxLengthStepKeys},
	{name: "BadIDsAreRefusedAndNothingStored", run: testBadIDsRefused},
	{name: "InvalidJSONIsRefusedAndNothingStored", run: testInvalidJSONRefused},
	{name: "NonFiniteEmbeddingsAreRefused", run: testNonFiniteEmbeddings},
	{name: "KeywordQueryOfAnySizeAnswers", run: testHugeKeywordQuery},
	{name: "HugeFactTextIsHeldAndMatched", run: testHugeFact},
	{name: "ComplianceRecordsHoldAnyText", run: testComplianceHoldsAnyText},
}

// need skips the case, saying which binding the implementation lacks,
// unless has.
func need(t *testing.T, has bool, binding string) {
	t.Helper()
	if !has {
		t.Skip("the implementation has no " + binding)
	}
}

// oddTexts are texts a store must read back exactly.
var oddTexts = []string{
	"a\x00b",
	"\x00",
	"\x00\x00 trailing NUL\x00",
	"\uFDD0",                 // the noncharacter pgstore escapes with
	"\uFDD00\uFDD0x41\uFDD0", // what looks like such escapes
	"x\uFDD0\x00\uFDD0\uFDD0",
	"\uFFFF\uFFFE\uFEFF",               // noncharacters and a BOM
	"😀 \U0001F468\u200D\U0001F469",     // astral plane, ZWJ sequence
	"\u2028\u2029 \u202Eright-to-left", // line separators, RTL override
	"e\u0301\u0308\u20DD",              // combining marks
	"tab\tnewline\ncr\rdel\x7f c1\u0085\u009f",
	"not UTF-8: \xff\xfe \xc3( \xed\xa0\x80",
	strings.Repeat("long text with a NUL \x00 ", 2000),
}

// oddDocs are valid JSON documents a store must read back by value.
var oddDocs = []string{
	`"a\u0000b"`,
	`{"\u0000":"key is NUL","k":["x\u0000y","\u0000"]}`,
	`{"lone":"\ud800","low":"\udc00x","pair":"\ud83d\ude00","swapped":"\udc00\ud800"}`,
	`{"noncharacters":"\ufdd0\uffff","escapes":"\"\\\/\b\f\n\r\t\u001f"}`,
	`{"big":123456789012345678901234567890123456789,"tiny":1e-400,"huge":1e400,"vast":1e200000,"neg":-0,"exp":1E+2}`,
	`{"dup":1,"dup":2}`,
	strings.Repeat(`[`, 600) + `"deep\u0000"` + strings.Repeat(`]`, 600),
	`[1.5,true,false,null,{},[],""]`,
}

// metaDoc wraps a document as an object (message metadata is an object).
func metaDoc(doc string) json.RawMessage { return json.RawMessage(`{"doc":` + doc + `}`) }

// sameJSON reports whether two JSON documents hold the same value: objects
// with the same members (the last of duplicate keys counts), numbers of
// the same exact value (1e2 is 100), strings of the same characters, and
// an unpaired surrogate escape kept as the same escape.
func sameJSON(a, b []byte) bool {
	va, oka := decodeExact(a)
	vb, okb := decodeExact(b)
	if !oka || !okb {
		return false
	}
	return EqualJSONValues(va, vb)
}

// decodeExact decodes doc keeping numbers exact and lone surrogate
// escapes distinct from U+FFFD.
func decodeExact(doc []byte) (any, bool) {
	doc = markLoneSurrogates(doc)
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}

// markLoneSurrogates rewrites each unpaired surrogate escape \uDXXX as the
// text "<lone DXXX>", so that comparing decoded strings tells it apart
// from other characters (encoding/json decodes it as U+FFFD).
func markLoneSurrogates(doc []byte) []byte {
	var out []byte
	inString := false
	for i := 0; i < len(doc); i++ {
		c := doc[i]
		switch {
		case !inString:
			inString = c == '"'
		case c == '"':
			inString = false
		case c == '\\' && i+1 < len(doc) && doc[i+1] == 'u' && i+6 <= len(doc):
			r := hexRune(doc[i+2 : i+6])
			if r >= 0xD800 && r <= 0xDBFF && i+12 <= len(doc) && doc[i+6] == '\\' && doc[i+7] == 'u' {
				if low := hexRune(doc[i+8 : i+12]); low >= 0xDC00 && low <= 0xDFFF {
					out = append(out, doc[i:i+12]...)
					i += 11
					continue
				}
			}
			if r >= 0xD800 && r <= 0xDFFF {
				out = append(out, fmt.Sprintf("<lone %04X>", r)...)
				i += 5
				continue
			}
			out = append(out, doc[i:i+6]...)
			i += 5
			continue
		case c == '\\':
			out = append(out, c, doc[i+1])
			i++
			continue
		}
		out = append(out, c)
	}
	return out
}

func hexRune(h []byte) rune {
	var r rune
	for _, c := range h {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c|0x20 && c|0x20 <= 'f':
			r = r<<4 | rune(c|0x20-'a'+10)
		default:
			return -1
		}
	}
	return r
}

// EqualJSONValues compares values decoded from JSON with UseNumber:
// objects and arrays member by member, numbers by their exact value (so
// 1E+2 equals 100, as a store like PostgreSQL's jsonb may rewrite it), the
// rest with ==.
func EqualJSONValues(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !EqualJSONValues(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !EqualJSONValues(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		rx, okx := new(big.Rat).SetString(string(x))
		ry, oky := new(big.Rat).SetString(string(y))
		return okx && oky && rx.Cmp(ry) == 0
	default:
		return a == b
	}
}

// wantJSON fails the test unless got holds the value of want.
func wantJSON(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	if !sameJSON(got, []byte(want)) {
		t.Fatalf("%s: read back %.300s, want the value of %.300s", what, got, want)
	}
}

// wantText fails the test unless got is want, byte for byte.
func wantText(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: read back %.200q, want %.200q", what, got, want)
	}
}

func testMessagesHoldAnyValue(t *testing.T, f *fixture) {
	need(t, f.Conversations != nil, "ConversationBinding")
	a := f.tenant("a")
	for i, text := range oddTexts {
		conv := fmt.Sprintf("conv-%d", i)
		c := f.openIn(t, bindings.OpenConversationInput{TenantID: a, ID: conv, ProjectID: "p", AgentID: "acme.drafter", AgentVersion: "1.0.0", Title: text})
		wantText(t, "title returned by OpenConversation", c.Title, text)
		wantText(t, "title", f.get(t, a, conv).Title, text)
		m, err := f.Conversations.AppendMessage(f.ctx, bindings.AppendMessageInput{
			TenantID: a, ConversationID: conv, ID: "m1", Role: bindings.RoleAgent, Content: text, TurnNumber: 1,
			ToolCalls: []bindings.ToolCall{{ID: "call_1", Name: "acme.search\x00" + text, Arguments: json.RawMessage(`{"q":"\u0000","text":` + mustQuote(text) + `}`)}},
		})
		must(t, "AppendMessage", err)
		wantText(t, "content returned by AppendMessage", m.Content, text)
		ms := f.read(t, a, conv, -1, 0)
		if len(ms) != 1 {
			t.Fatalf("read %d messages, want 1", len(ms))
		}
		wantText(t, "content", ms[0].Content, text)
		if len(ms[0].ToolCalls) != 1 {
			t.Fatalf("read %d tool calls, want 1", len(ms[0].ToolCalls))
		}
		// A tool call is JSON in a store: text that is not UTF-8 reads back
		// as encoding/json writes it.
		wantText(t, "tool call name", ms[0].ToolCalls[0].Name, asJSONString("acme.search\x00"+text))
		wantJSON(t, "tool call arguments", ms[0].ToolCalls[0].Arguments, `{"q":"\u0000","text":`+mustQuote(text)+`}`)
	}
	conv := "conv-meta"
	f.open(t, a, conv, at(0))
	for i, doc := range oddDocs {
		id := fmt.Sprintf("meta-%d", i)
		_, err := f.Conversations.AppendMessage(f.ctx, bindings.AppendMessageInput{
			TenantID: a, ConversationID: conv, ID: id, Role: bindings.RoleTool, Content: "result", ToolCallID: "call_1",
			Metadata: metaDoc(doc),
		})
		must(t, "AppendMessage with metadata "+id, err)
	}
	ms := f.read(t, a, conv, -1, 0)
	if len(ms) != len(oddDocs) {
		t.Fatalf("read %d messages, want %d", len(ms), len(oddDocs))
	}
	for i, m := range ms {
		wantJSON(t, "metadata "+m.ID, m.Metadata, string(metaDoc(oddDocs[i])))
	}
}

// asJSONString is text as it reads back from a JSON string: each byte
// that is not UTF-8 is U+FFFD.
func asJSONString(text string) string {
	var s string
	if err := json.Unmarshal([]byte(mustQuote(text)), &s); err != nil {
		panic(err)
	}
	return s
}

// mustQuote is text as a JSON string (invalid UTF-8 becomes U+FFFD, as
// encoding/json writes it).
func mustQuote(text string) string {
	b, err := json.Marshal(text)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func testJournalHoldsAnyValue(t *testing.T, f *fixture) {
	need(t, f.Runs != nil, "RunBinding")
	a := f.tenant("a")
	f.startRun(t, a, "run-1", "w1")
	var keys []string
	for i, doc := range oddDocs {
		key := fmt.Sprintf("agent-loop/%d/model-call", i)
		keys = append(keys, key)
		_, _, err := f.Runs.AppendStep(f.ctx, bindings.AppendStepInput{TenantID: a, RunID: "run-1", Owner: "w1", Entry: bindings.JournalEntry{
			Key: key, Node: "agent-loop", Status: bindings.StepCompleted, Output: json.RawMessage(doc), At: at(i),
		}})
		must(t, "AppendStep "+key, err)
	}
	for i, text := range oddTexts {
		key := fmt.Sprintf("agent-loop/%d/dispatch-tools/call_%d", i, i)
		_, _, err := f.Runs.AppendStep(f.ctx, bindings.AppendStepInput{TenantID: a, RunID: "run-1", Owner: "w1", Entry: bindings.JournalEntry{
			Key: key, Node: "agent-loop", Status: bindings.StepFailed, At: at(i),
			Error: &bindings.StepError{Code: agents.CodeToolInvocationFailed, Message: text},
		}})
		must(t, "AppendStep "+key, err)
	}
	es := f.journal(t, a, "run-1")
	if len(es) != len(oddDocs)+len(oddTexts) {
		t.Fatalf("read %d entries, want %d", len(es), len(oddDocs)+len(oddTexts))
	}
	for i, doc := range oddDocs {
		wantJSON(t, "output of "+keys[i], es[i].Output, doc)
	}
	for i, text := range oddTexts {
		e := es[len(oddDocs)+i]
		if e.Error == nil {
			t.Fatalf("entry %s has no error", e.Key)
		}
		// A step error is JSON in a store: text that is not UTF-8 reads
		// back as encoding/json writes it.
		wantText(t, "error message of "+e.Key, e.Error.Message, asJSONString(text))
	}
	if d, ok := f.Runs.(journal.Driver); ok {
		var entries []bindings.JournalEntry
		for i, doc := range oddDocs {
			entries = append(entries, bindings.JournalEntry{Key: fmt.Sprintf("batch/%d", i), Node: "batch", Status: bindings.StepCompleted, Output: json.RawMessage(doc)})
		}
		out, err := d.Commit(f.ctx, journal.CommitInput{TenantID: a, RunID: "run-1", Owner: "w1", Entries: entries})
		must(t, "Commit", err)
		es := f.journal(t, a, "run-1")
		for i, doc := range oddDocs {
			wantJSON(t, "Commit returned output "+entries[i].Key, out.Entries[i].Output, doc)
			wantJSON(t, "Commit stored output "+entries[i].Key, es[len(es)-len(oddDocs)+i].Output, doc)
		}
	}
}

func testSnapshotsHoldAnyValue(t *testing.T, f *fixture) {
	need(t, f.Snapshots != nil, "RunSnapshotBinding")
	a := f.tenant("a")
	for i, doc := range oddDocs {
		run := fmt.Sprintf("run-%d", i)
		in := snapshot(a, run)
		in.Input = json.RawMessage(doc)
		must(t, "Write "+run, f.Snapshots.Write(f.ctx, in))
		got, err := f.Snapshots.Read(f.ctx, a, run)
		must(t, "Read "+run, err)
		wantJSON(t, "input of "+run, got.Input, doc)
	}
	if d, ok := f.Runs.(journal.Driver); ok {
		doc := oddDocs[1]
		sn := snapshot(a, "run-open")
		sn.Input = json.RawMessage(doc)
		dr, err := d.Open(f.ctx, journal.OpenInput{TenantID: a, RunID: "run-open", Owner: "w1", TTL: time.Minute, Create: &journal.Create{Snapshot: sn}})
		must(t, "Open with Create", err)
		wantJSON(t, "Open snapshot input", dr.Snapshot.Input, doc)
	}
}

func testApprovalsHoldAnyValue(t *testing.T, f *fixture) {
	need(t, f.Hitl != nil, "HitlBinding")
	a := f.tenant("a")
	for i, doc := range oddDocs {
		id := fmt.Sprintf("ap-%d", i)
		req := approvalRequest(a, id)
		req.Arguments = json.RawMessage(doc)
		req.Reason = oddTexts[i%len(oddTexts)]
		ap := f.request(t, req)
		wantJSON(t, "arguments returned by RequestApproval", ap.Request.Arguments, doc)
		got := f.approval(t, a, id)
		wantJSON(t, "arguments of "+id, got.Request.Arguments, doc)
		wantText(t, "reason of "+id, got.Request.Reason, req.Reason)
	}
	for i, text := range oddTexts {
		id := fmt.Sprintf("ap-text-%d", i)
		f.request(t, approvalRequest(a, id))
		d := approve("alice")
		d.Comment = text
		ap, err := f.Hitl.ResolveApproval(f.ctx, a, id, d)
		must(t, "ResolveApproval "+id, err)
		wantText(t, "comment returned by ResolveApproval", ap.Comment, text)
		wantText(t, "comment of "+id, f.approval(t, a, id).Comment, text)
	}
}

func testFactsHoldAnyValue(t *testing.T, f *fixture) {
	need(t, f.Memory != nil, "MemoryStore")
	a := f.tenant("a")
	for i, text := range oddTexts {
		fa := fact(a, fmt.Sprintf("fact-%d", i), text+" marker"+fmt.Sprint(i), i)
		fa.Data = json.RawMessage(oddDocs[i%len(oddDocs)])
		f.put(t, fa)
	}
	got := f.query(t, bindings.MemoryQuery{TenantID: a, Types: []string{clauseType}, Scope: agent.ScopeTenant, Limit: 100})
	if len(got) != len(oddTexts) {
		t.Fatalf("read %d facts, want %d", len(got), len(oddTexts))
	}
	byID := map[string]bindings.Fact{}
	for _, sf := range got {
		byID[sf.Fact.ID] = sf.Fact
	}
	for i, text := range oddTexts {
		id := fmt.Sprintf("fact-%d", i)
		fa, ok := byID[id]
		if !ok {
			t.Fatalf("fact %s not read back", id)
		}
		wantText(t, "text of "+id, fa.Text, text+" marker"+fmt.Sprint(i))
		wantJSON(t, "data of "+id, fa.Data, oddDocs[i%len(oddDocs)])
	}
	// Words on either side of a NUL are words.
	f.put(t, fact(a, "nul-words", "alpha\x00omega", 99))
	res := f.query(t, bindings.MemoryQuery{TenantID: a, Types: []string{clauseType}, Scope: agent.ScopeTenant, Mode: agent.ModeKeyword, Query: "omega"})
	if ids := factIDs(res); len(ids) != 1 || ids[0] != "nul-words" {
		t.Fatalf("keyword query for a word after a NUL found %v, want [nul-words]", ids)
	}
}

// longID is an id of exactly n bytes: prefix, padded with multi-byte
// characters and then ASCII.
func longID(prefix string, n int) string {
	id := prefix + "-é漢"
	for len(id)+len("漢") <= n-8 {
		id += "漢"
	}
	return id + strings.Repeat("x", n-len(id))
}

func testMaxLengthIDs(t *testing.T, f *fixture) {
	max := bindings.MaxIDLength
	tenant := longID(f.tenant("long"), max)
	conv, msg, run, project := longID("conv", max), longID("msg", max), longID("run", max), longID("project", max)
	participant, approvalID, factID := longID("participant", max), longID("approval", max), longID("fact", max)
	if len(tenant) != max || len(conv) != max {
		t.Fatalf("test ids are %d and %d bytes, want %d", len(tenant), len(conv), max)
	}
	if f.Conversations != nil {
		c := f.openIn(t, bindings.OpenConversationInput{TenantID: tenant, ID: conv, ProjectID: project, AgentID: longID("agent", max),
			AgentVersion: longID("1.0.0", max), ParticipantID: participant})
		if c.ID != conv || c.ParticipantID != participant || c.ProjectID != project {
			t.Fatalf("conversation read back with other ids: %+v", c)
		}
		m, err := f.Conversations.AppendMessage(f.ctx, bindings.AppendMessageInput{TenantID: tenant, ConversationID: conv, ID: msg,
			Role: bindings.RoleTool, Content: "ok", ToolCallID: longID("call", max), RunID: run, TurnNumber: 1})
		must(t, "AppendMessage", err)
		ms := f.read(t, tenant, conv, -1, 0)
		if len(ms) != 1 || ms[0].ID != msg || ms[0].ToolCallID != m.ToolCallID || ms[0].RunID != run {
			t.Fatalf("message read back with other ids: %+v", ms)
		}
		list, err := f.Conversations.ListConversations(f.ctx, bindings.ListConversationsInput{TenantID: tenant, ProjectID: project})
		must(t, "ListConversations", err)
		if len(list) != 1 || list[0].ID != conv {
			t.Fatalf("ListConversations = %v, want [%s]", convIDs(list), conv)
		}
	}
	if f.Runs != nil {
		r, err := f.Runs.StartRun(f.ctx, bindings.StartRunInput{TenantID: tenant, RunID: run, FlowID: "agent.turn", FlowVersion: "1.1.0",
			Owner: longID("owner", max), LeaseTTL: leaseTTL})
		must(t, "StartRun", err)
		if r.ID != run {
			t.Fatalf("run id read back as %q", r.ID)
		}
		key := "agent-loop/1/dispatch-tools/" + longID("call", max) + "/approval"
		_, _, err = f.Runs.AppendStep(f.ctx, bindings.AppendStepInput{TenantID: tenant, RunID: run, Owner: r.LeaseOwner,
			Entry: bindings.JournalEntry{Key: key, Node: "agent-loop", Status: bindings.StepParked}})
		must(t, "AppendStep", err)
		if es := f.journal(t, tenant, run); len(es) != 1 || es[0].Key != key {
			t.Fatalf("journal = %v, want one entry %q", keys(es), key)
		}
		must(t, "ReleaseLease", f.Runs.ReleaseLease(f.ctx, tenant, run, r.LeaseOwner))
	}
	if f.Snapshots != nil {
		sn := snapshot(tenant, run)
		sn.AgentID, sn.AgentVersion, sn.ConversationID, sn.ProjectID = longID("agent", max), longID("1.0.0", max), conv, project
		must(t, "Write", f.Snapshots.Write(f.ctx, sn))
		got, err := f.Snapshots.Read(f.ctx, tenant, run)
		must(t, "Read", err)
		diff(t, "snapshot with long ids", got, sn)
	}
	if f.Hitl != nil {
		req := approvalRequest(tenant, approvalID)
		req.RunID, req.ConversationID, req.ToolCallID = run, conv, longID("call", max)
		req.ToolID, req.ToolVersion, req.ReviewerRole = longID("tool", max), longID("1.2.3", max), longID("role", max)
		f.request(t, req)
		got := f.approval(t, tenant, approvalID)
		diff(t, "approval request with long ids", got.Request, req)
		d := approve(longID("reviewer", max))
		d.ReviewerRoles = []string{req.ReviewerRole}
		ap, err := f.Hitl.ResolveApproval(f.ctx, tenant, approvalID, d)
		must(t, "ResolveApproval", err)
		if ap.Reviewer != d.Reviewer {
			t.Fatalf("reviewer read back as %q", ap.Reviewer)
		}
	}
	if f.Memory != nil {
		fa := fact(tenant, factID, "long ids", 0)
		fa.Type, fa.ProjectID, fa.ConversationID = longID("type", max), project, conv
		f.put(t, fa)
		for _, scope := range []string{agent.ScopeSameConversation, agent.ScopeSameProject} {
			got := f.query(t, bindings.MemoryQuery{TenantID: tenant, ProjectID: project, ConversationID: conv, Types: []string{fa.Type}, Scope: scope})
			if ids := factIDs(got); len(ids) != 1 || ids[0] != factID {
				t.Fatalf("query in scope %s found %d facts, want the one with long ids", scope, len(ids))
			}
		}
	}
}

func testMaxLengthStepKeys(t *testing.T, f *fixture) {
	need(t, f.Runs != nil, "RunBinding")
	a := f.tenant("a")
	f.startRun(t, a, "run-1", "w1")
	key := longID("agent-loop/1/dispatch-tools/", bindings.MaxStepKeyLength)
	if len(key) != bindings.MaxStepKeyLength {
		t.Fatalf("test key is %d bytes, want %d", len(key), bindings.MaxStepKeyLength)
	}
	for _, st := range []bindings.StepStatus{bindings.StepStarted, bindings.StepCompleted} {
		_, appended, err := f.Runs.AppendStep(f.ctx, bindings.AppendStepInput{TenantID: a, RunID: "run-1", Owner: "w1",
			Entry: bindings.JournalEntry{Key: key, Node: "agent-loop", Status: st, Output: json.RawMessage(`{"ok":true}`)}})
		must(t, "AppendStep of a key of the maximum length", err)
		if !appended {
			t.Fatalf("AppendStep %s: not appended", st)
		}
	}
	// Idempotent per key and phase at the maximum too.
	_, appended, err := f.Runs.AppendStep(f.ctx, bindings.AppendStepInput{TenantID: a, RunID: "run-1", Owner: "w1",
		Entry: bindings.JournalEntry{Key: key, Node: "agent-loop", Status: bindings.StepCompleted}})
	must(t, "AppendStep again", err)
	if appended {
		t.Fatal("a second result of the same long key was appended")
	}
	for name, bad := range map[string]string{
		"one byte too long": key + "x",
		"9,000 bytes":       strings.Repeat("k", 9000),
		"a NUL":             "agent-loop/1/dispatch-tools/call\x00",
		"a newline":         "agent-loop/1/dispatch-tools/call\n",
		"not UTF-8":         "agent-loop/1/dispatch-tools/\xff",
	} {
		_, _, err := f.Runs.AppendStep(f.ctx, bindings.AppendStepInput{TenantID: a, RunID: "run-1", Owner: "w1",
			Entry: bindings.JournalEntry{Key: bad, Node: "agent-loop", Status: bindings.StepStarted}})
		wantCode(t, "AppendStep with a key of "+name, err, agents.CodeInvalidMessage)
		if agents.IsRetryable(err) {
			t.Fatalf("AppendStep with a key of %s: the refusal is retryable", name)
		}
	}
	if es := f.journal(t, a, "run-1"); len(es) != 2 {
		t.Fatalf("journal holds %d entries after the refusals, want 2", len(es))
	}
}

// badIDs are ids no binding accepts, by what is wrong with them.
func badIDs() map[string]string {
	return map[string]string{
		"too long":   strings.Repeat("x", bindings.MaxIDLength+1),
		"9,000 long": strings.Repeat("y", 9000),
		"a NUL":      "id\x00",
		"a newline":  "id\nx",
		"a DEL":      "id\x7f",
		"a C1":       "id\u0085",
		"not UTF-8":  "id\xff",
	}
}

// refused fails the test unless err is a non-retryable invalid-message.
func refused(t *testing.T, what string, err error) {
	t.Helper()
	wantCode(t, what, err, agents.CodeInvalidMessage)
	if agents.IsRetryable(err) {
		t.Fatalf("%s: the refusal %v is retryable", what, err)
	}
}

// refuseEach checks that call refuses each input of ins, keyed by the
// field that holds the bad id called name: "what with a FIELD id of NAME".
func refuseEach[T any](t *testing.T, what, name string, ins map[string]T, call func(T) error) {
	t.Helper()
	for field, in := range ins {
		refused(t, what+" with a "+field+" id of "+name, call(in))
	}
}

// refuseEachField is refuseEach of a fresh base() with each field of set
// given the bad id.
func refuseEachField[T any](t *testing.T, what, name string, base func() T, set map[string]func(*T), call func(T) error) {
	t.Helper()
	ins := make(map[string]T, len(set))
	for field, mod := range set {
		in := base()
		mod(&in)
		ins[field] = in
	}
	refuseEach(t, what, name, ins, call)
}

// errOnly is call with the context ctx, returning its error alone.
func errOnly[T, R any](ctx context.Context, call func(context.Context, T) (R, error)) func(T) error {
	return func(in T) error {
		_, err := call(ctx, in)
		return err
	}
}

func testBadIDsRefused(t *testing.T, f *fixture) {
	n := 0
	for name, bad := range badIDs() {
		n++
		a := f.tenant(fmt.Sprintf("a%d", n)) // a fresh tenant for each bad id
		if c := f.Conversations; c != nil {
			_, err := c.OpenConversation(f.ctx, bindings.OpenConversationInput{TenantID: bad, ID: "conv-1", AgentID: "x", AgentVersion: "1.0.0"})
			refused(t, "OpenConversation with a tenant id of "+name, err)
			refuseEach(t, "OpenConversation", name, map[string]bindings.OpenConversationInput{
				"conversation": {TenantID: a, ID: bad, AgentID: "x", AgentVersion: "1.0.0"},
				"project":      {TenantID: a, ID: "conv-x", ProjectID: bad, AgentID: "x", AgentVersion: "1.0.0"},
				"participant":  {TenantID: a, ID: "conv-x", ParticipantID: bad, AgentID: "x", AgentVersion: "1.0.0"},
				"agent":        {TenantID: a, ID: "conv-x", AgentID: bad, AgentVersion: "1.0.0"},
			}, errOnly(f.ctx, c.OpenConversation))
			list, err := c.ListConversations(f.ctx, bindings.ListConversationsInput{TenantID: a})
			must(t, "ListConversations", err)
			if len(list) != 0 {
				t.Fatalf("refused conversations were stored: %v", convIDs(list))
			}
			f.open(t, a, "conv-1", at(0))
			refuseEach(t, "AppendMessage", name, map[string]bindings.AppendMessageInput{
				"message":      {TenantID: a, ConversationID: "conv-1", ID: bad, Role: bindings.RoleUser, Content: "hi", TurnNumber: 1},
				"run":          {TenantID: a, ConversationID: "conv-1", ID: "m1", Role: bindings.RoleUser, Content: "hi", TurnNumber: 1, RunID: bad},
				"tool call":    {TenantID: a, ConversationID: "conv-1", ID: "m1", Role: bindings.RoleTool, Content: "hi", ToolCallID: bad},
				"conversation": {TenantID: a, ConversationID: bad, ID: "m1", Role: bindings.RoleUser, Content: "hi"},
			}, errOnly(f.ctx, c.AppendMessage))
			if got := f.get(t, a, "conv-1"); got.MessageCount != 0 || got.TurnCount != 0 {
				t.Fatalf("a refused message was counted: %+v", got)
			}
			if ms := f.read(t, a, "conv-1", -1, 0); len(ms) != 0 {
				t.Fatalf("refused messages were stored: %v", msgIDs(ms))
			}
			_, err = c.GetConversation(f.ctx, bad, "conv-1")
			refused(t, "GetConversation with a tenant id of "+name, err)
			_, err = c.GetConversation(f.ctx, a, bad)
			refused(t, "GetConversation with a conversation id of "+name, err)
			must(t, "DeleteConversation", c.DeleteConversation(f.ctx, a, "conv-1"))
		}
		if r := f.Runs; r != nil {
			refuseEach(t, "StartRun", name, map[string]bindings.StartRunInput{
				"tenant": {TenantID: bad, RunID: "run-1", Owner: "w1", LeaseTTL: leaseTTL},
				"run":    {TenantID: a, RunID: bad, Owner: "w1", LeaseTTL: leaseTTL},
				"owner":  {TenantID: a, RunID: "run-bad", Owner: bad, LeaseTTL: leaseTTL},
			}, errOnly(f.ctx, r.StartRun))
			_, err := r.GetRun(f.ctx, a, "run-bad")
			wantCode(t, "GetRun of the run whose start was refused", err, agents.CodeRunJournalUnavailable)
			f.startRun(t, a, "run-1", "w1")
			_, _, err = r.AppendStep(f.ctx, bindings.AppendStepInput{TenantID: a, RunID: "run-1", Owner: "w1",
				Entry: bindings.JournalEntry{Key: "setup", Node: bad, Status: bindings.StepStarted}})
			refused(t, "AppendStep with a node of "+name, err)
			_, _, err = r.AppendStep(f.ctx, bindings.AppendStepInput{TenantID: a, RunID: bad, Owner: "w1",
				Entry: bindings.JournalEntry{Key: "setup", Node: "setup", Status: bindings.StepStarted}})
			refused(t, "AppendStep with a run id of "+name, err)
			_, err = r.AcquireLease(f.ctx, bindings.LeaseInput{TenantID: a, RunID: "run-1", Owner: bad, TTL: leaseTTL})
			refused(t, "AcquireLease with an owner of "+name, err)
			_, err = r.ReadJournal(f.ctx, a, bad)
			refused(t, "ReadJournal with a run id of "+name, err)
			if es := f.journal(t, a, "run-1"); len(es) != 0 {
				t.Fatalf("refused entries were stored: %v", keys(es))
			}
			if got := f.getRun(t, a, "run-1"); got.LeaseOwner != "w1" {
				t.Fatalf("a refused lease changed the owner to %q", got.LeaseOwner)
			}
		}
		if s := f.Snapshots; s != nil {
			refuseEachField(t, "Write", name, func() bindings.RunSnapshotRecord { return snapshot(a, "run-snap") }, map[string]func(*bindings.RunSnapshotRecord){
				"tenant":       func(r *bindings.RunSnapshotRecord) { r.TenantID = bad },
				"run":          func(r *bindings.RunSnapshotRecord) { r.RunID = bad },
				"agent":        func(r *bindings.RunSnapshotRecord) { r.AgentID = bad },
				"conversation": func(r *bindings.RunSnapshotRecord) { r.ConversationID = bad },
				"project":      func(r *bindings.RunSnapshotRecord) { r.ProjectID = bad },
			}, func(sn bindings.RunSnapshotRecord) error { return s.Write(f.ctx, sn) })
			_, err := s.Read(f.ctx, a, "run-snap")
			wantCode(t, "Read of a refused snapshot", err, agents.CodeRunSnapshotMissing)
		}
		if h := f.Hitl; h != nil {
			refuseEachField(t, "RequestApproval", name, func() bindings.ApprovalRequest { return approvalRequest(a, "ap-bad") }, map[string]func(*bindings.ApprovalRequest){
				"tenant":       func(r *bindings.ApprovalRequest) { r.TenantID = bad },
				"approval":     func(r *bindings.ApprovalRequest) { r.ID = bad },
				"run":          func(r *bindings.ApprovalRequest) { r.RunID = bad },
				"conversation": func(r *bindings.ApprovalRequest) { r.ConversationID = bad },
				"tool call":    func(r *bindings.ApprovalRequest) { r.ToolCallID = bad },
			}, errOnly(f.ctx, h.RequestApproval))
			if _, err := h.GetApproval(f.ctx, a, "ap-bad"); err == nil {
				t.Fatal("a refused approval was stored")
			}
			_, err := h.GetApproval(f.ctx, a, bad)
			refused(t, "GetApproval with an approval id of "+name, err)
		}
		if m := f.Memory; m != nil {
			refuseEachField(t, "PutFact", name, func() bindings.Fact { return fact(a, "fact-bad", "text", 0) }, map[string]func(*bindings.Fact){
				"tenant":       func(fa *bindings.Fact) { fa.TenantID = bad },
				"fact":         func(fa *bindings.Fact) { fa.ID = bad },
				"type":         func(fa *bindings.Fact) { fa.Type = bad },
				"project":      func(fa *bindings.Fact) { fa.ProjectID = bad },
				"conversation": func(fa *bindings.Fact) { fa.ConversationID = bad },
			}, errOnly(f.ctx, m.PutFact))
			if got := f.query(t, bindings.MemoryQuery{TenantID: a, Types: []string{clauseType}, Scope: agent.ScopeTenant}); len(got) != 0 {
				t.Fatalf("refused facts were stored: %v", factIDs(got))
			}
			_, err := m.QueryFacts(f.ctx, bindings.MemoryQuery{TenantID: bad, Types: []string{clauseType}, Scope: agent.ScopeTenant})
			refused(t, "QueryFacts with a tenant id of "+name, err)
		}
	}
}

// badDocs are payloads that are not JSON.
var badDocs = map[string]string{
	"NaN":             `NaN`,
	"Infinity":        `{"cost":Infinity}`,
	"a truncated doc": `{"a":`,
	"not UTF-8":       "\"\xff\"",
	"a raw NUL":       "\"a\x00b\"",
}

func testInvalidJSONRefused(t *testing.T, f *fixture) {
	a := f.tenant("a")
	n := 0
	for name, bad := range badDocs {
		n++
		doc := json.RawMessage(bad)
		if r := f.Runs; r != nil {
			run := "run-" + fmt.Sprint(n)
			f.startRun(t, a, run, "w1")
			_, _, err := r.AppendStep(f.ctx, bindings.AppendStepInput{TenantID: a, RunID: run, Owner: "w1",
				Entry: bindings.JournalEntry{Key: "agent-loop/1/model-call", Node: "agent-loop", Status: bindings.StepCompleted, Output: doc}})
			refused(t, "AppendStep with an output of "+name, err)
			if d, ok := r.(journal.Driver); ok {
				_, err := d.Commit(f.ctx, journal.CommitInput{TenantID: a, RunID: run, Owner: "w1", Entries: []bindings.JournalEntry{
					{Key: "setup", Node: "setup", Status: bindings.StepCompleted, Output: json.RawMessage(`{}`)},
					{Key: "agent-loop/1/model-call", Node: "agent-loop", Status: bindings.StepCompleted, Output: doc},
				}})
				refused(t, "Commit with an output of "+name, err)
			}
			if es := f.journal(t, a, run); len(es) != 0 {
				t.Fatalf("entries with an output of %s were stored: %v", name, keys(es))
			}
		}
		if s := f.Snapshots; s != nil {
			sn := snapshot(a, "run-snap")
			sn.Input = doc
			refused(t, "Write with an input of "+name, s.Write(f.ctx, sn))
			_, err := s.Read(f.ctx, a, "run-snap")
			wantCode(t, "Read of a refused snapshot", err, agents.CodeRunSnapshotMissing)
		}
		if c := f.Conversations; c != nil {
			conv := "conv-" + fmt.Sprint(n)
			f.open(t, a, conv, at(0))
			_, err := c.AppendMessage(f.ctx, bindings.AppendMessageInput{TenantID: a, ConversationID: conv, ID: "m1",
				Role: bindings.RoleAgent, Content: "x", Metadata: doc})
			refused(t, "AppendMessage with metadata of "+name, err)
			_, err = c.AppendMessage(f.ctx, bindings.AppendMessageInput{TenantID: a, ConversationID: conv, ID: "m2",
				Role: bindings.RoleAgent, ToolCalls: []bindings.ToolCall{{ID: "call_1", Name: "t", Arguments: doc}}})
			refused(t, "AppendMessage with tool call arguments of "+name, err)
			if ms := f.read(t, a, conv, -1, 0); len(ms) != 0 {
				t.Fatalf("messages with %s were stored: %v", name, msgIDs(ms))
			}
		}
		if h := f.Hitl; h != nil {
			req := approvalRequest(a, "ap-bad")
			req.Arguments = doc
			_, err := h.RequestApproval(f.ctx, req)
			refused(t, "RequestApproval with arguments of "+name, err)
			if _, err := h.GetApproval(f.ctx, a, "ap-bad"); err == nil {
				t.Fatal("a refused approval was stored")
			}
		}
		if m := f.Memory; m != nil {
			fa := fact(a, "fact-bad", "text", 0)
			fa.Data = doc
			_, err := m.PutFact(f.ctx, fa)
			refused(t, "PutFact with data of "+name, err)
			if got := f.query(t, bindings.MemoryQuery{TenantID: a, Types: []string{clauseType}, Scope: agent.ScopeTenant}); len(got) != 0 {
				t.Fatalf("a fact with data of %s was stored", name)
			}
		}
	}
}

func testNonFiniteEmbeddings(t *testing.T, f *fixture) {
	need(t, f.Memory != nil, "MemoryStore")
	a := f.tenant("a")
	for name, x := range map[string]float32{"NaN": float32(math.NaN()), "+Inf": float32(math.Inf(1)), "-Inf": float32(math.Inf(-1))} {
		_, err := f.Memory.PutFact(f.ctx, withEmbedding(fact(a, "fact-1", "text", 0), 1, x, 0))
		refused(t, "PutFact with an embedding holding "+name, err)
		_, err = f.Memory.QueryFacts(f.ctx, bindings.MemoryQuery{TenantID: a, Types: []string{clauseType}, Scope: agent.ScopeTenant,
			Mode: agent.ModeSemantic, QueryEmbedding: []float32{x, 1}})
		refused(t, "QueryFacts with a query embedding holding "+name, err)
	}
	if got := f.query(t, bindings.MemoryQuery{TenantID: a, Types: []string{clauseType}, Scope: agent.ScopeTenant}); len(got) != 0 {
		t.Fatal("a fact with a non-finite embedding was stored")
	}
}

// hugeQuery is a 1.2 MiB message with 20,000 distinct short words, each
// many times, and the one long word "incomprehensibilities" once.
func hugeQuery() string {
	var b strings.Builder
	for i := 0; b.Len() < 1200<<10; i++ {
		fmt.Fprintf(&b, "w%d ", i%20000)
		if i == 100000 {
			b.WriteString("Incomprehensibilities ")
		}
	}
	return b.String()
}

func testHugeKeywordQuery(t *testing.T, f *fixture) {
	need(t, f.Memory != nil, "MemoryStore")
	a := f.tenant("a")
	f.put(t,
		fact(a, "rare", "the word incomprehensibilities is rare", 1),
		fact(a, "short", "w1 w2 w3 and w19999", 2),
	)
	q := hugeQuery()
	for _, mode := range []string{agent.ModeKeyword, agent.ModeBoth} {
		start := time.Now()
		got := f.query(t, bindings.MemoryQuery{TenantID: a, Types: []string{clauseType}, Scope: agent.ScopeTenant, Mode: mode, Query: q,
			QueryEmbedding: []float32{1, 0}, Limit: 10})
		took := time.Since(start)
		ids := factIDs(got)
		// The long word is among the most distinctive terms, whichever
		// terms a store keeps: the fact holding it matches.
		found := false
		for _, id := range ids {
			found = found || id == "rare"
		}
		if !found {
			t.Fatalf("mode %s: a 1.2 MiB query found %v, want the fact holding its longest word", mode, ids)
		}
		t.Logf("mode %s: a 1.2 MiB query of 20,000 distinct words answered in %v", mode, took)
	}
}

func testHugeFact(t *testing.T, f *fixture) {
	need(t, f.Memory != nil, "MemoryStore")
	a := f.tenant("a")
	var b strings.Builder
	b.WriteString("firstword ")
	for i := 0; b.Len() < 1536<<10; i++ {
		fmt.Fprintf(&b, "t%d ", i)
	}
	text := b.String() + "\x00"
	f.put(t, fact(a, "huge", text, 1))
	got := f.query(t, bindings.MemoryQuery{TenantID: a, Types: []string{clauseType}, Scope: agent.ScopeTenant, Mode: agent.ModeKeyword, Query: "firstword"})
	if ids := factIDs(got); len(ids) != 1 || ids[0] != "huge" {
		t.Fatalf("keyword query for the first word of a 1.5 MiB fact found %v, want [huge]", ids)
	}
	if got[0].Fact.Text != text {
		t.Fatalf("the 1.5 MiB fact text read back with %d bytes, want %d", len(got[0].Fact.Text), len(text))
	}
}

func testComplianceHoldsAnyText(t *testing.T, f *fixture) {
	need(t, f.Compliance != nil, "ComplianceRecorder")
	a := f.tenant("a")
	for i, text := range oddTexts {
		rec := bindings.ComplianceRecord{TenantID: a, RunID: longID("run", bindings.MaxIDLength), Key: fmt.Sprintf("evaluate-guardrails/%d", i),
			GuardrailID: "acme.no-pii", Passed: i%2 == 0, Reason: text, JudgeResponse: text + " judged", EvaluatedAt: at(i)}
		must(t, "RecordCompliance", f.Compliance.RecordCompliance(f.ctx, rec))
	}
	page, err := f.Compliance.ListCompliance(f.ctx, bindings.ListComplianceInput{TenantID: a})
	must(t, "ListCompliance", err)
	if len(page.Records) != len(oddTexts) {
		t.Fatalf("read %d records, want %d", len(page.Records), len(oddTexts))
	}
	for i, rec := range page.Records {
		wantText(t, "reason of "+rec.Key, rec.Reason, oddTexts[i])
		wantText(t, "judge response of "+rec.Key, rec.JudgeResponse, oddTexts[i]+" judged")
	}
	for name, bad := range badIDs() {
		rec := bindings.ComplianceRecord{TenantID: a, RunID: "run-1", Key: "k", GuardrailID: "g", AgentID: bad}
		refused(t, "RecordCompliance with an agent id of "+name, f.Compliance.RecordCompliance(f.ctx, rec))
	}
	page, err = f.Compliance.ListCompliance(f.ctx, bindings.ListComplianceInput{TenantID: a, RunID: "run-1"})
	must(t, "ListCompliance", err)
	if len(page.Records) != 0 {
		t.Fatalf("refused records were stored: %d", len(page.Records))
	}
}
