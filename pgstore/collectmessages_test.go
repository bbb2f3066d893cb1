package pgstore

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kindgi/agents/bindings"
)

// unwrapStored reads every envelope as jsonb prints it exactly as Unwrap
// does, and falls back to Unwrap for what it does not read itself.
func TestUnwrapStoredReadsAsUnwrap(t *testing.T) {
	pool := testPool(t)
	ctx := t.Context()
	r := rand.New(rand.NewPCG(3, 4))
	var envs []string
	for range 300 {
		doc := randomDoc(r, 0)
		if !json.Valid([]byte(doc)) {
			continue
		}
		raw, err := Wrap(json.RawMessage(doc))
		if err != nil {
			t.Fatal(err)
		}
		envs = append(envs, string(raw))
	}
	envs = append(envs, `{"v":1,"doc":1,"dog":2}`, `{"v":1,"doc":{"a":[1, 2]},"zzzz":"x"}`, `{"v":1,"doc":"a \" b, c"}`,
		`{"v":1,"json":"[1, \"\\u0000\"]"}`, `{"v":2,"doc":1}`, `{"v":1}`, `{"v":1,"doc":" \t\n spaced \\\" , {"}`)
	for _, e := range envs {
		var back []byte
		if err := pool.QueryRow(ctx, `SELECT $1::text::jsonb::text`, e).Scan(&back); err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		want, wantErr := unwrapOpt(back)
		got, gotErr := unwrapStored(nil, back)
		if !bytes.Equal(got, want) || (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Fatalf("%s: unwrapStored = %s, %v; Unwrap = %s, %v", back, got, gotErr, want, wantErr)
		}
		scratch := []byte("prefix")
		got, gotErr = unwrapStored(scratch, back)
		if gotErr == nil && !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Fatalf("%s: unwrapStored after a prefix = %s", back, got)
		}
	}
}

// collectMessages reads what pgx.CollectRows(rows, scanMessage) reads.
func TestCollectMessagesReadsAsScanMessage(t *testing.T) {
	ctx := t.Context()
	s := New(testPool(t), nil)
	conv, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: "t-collect", AgentID: "a", AgentVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	base := bindings.AppendMessageInput{TenantID: "t-collect", ConversationID: conv.ID}
	for i, in := range []bindings.AppendMessageInput{
		{Role: bindings.RoleUser, Content: "plain"},
		{Role: bindings.RoleUser, Content: "nul \x00, bad \xff, escape \uFDD0 and 日本語", ParticipantID: "p1"},
		{Role: bindings.RoleAgent, ToolCalls: []bindings.ToolCall{{ID: "c1", Name: "get", Arguments: json.RawMessage(`{ "q" : "a \" b", "n": [1, 2.50, {"x": null}] }`)},
			{ID: "c2", Name: "nul", Arguments: json.RawMessage(`{"s": "\u0000"}`)}}, Metadata: json.RawMessage(`{"k": [true, false], "s": "x, y"}`)},
		{Role: bindings.RoleAgent, ToolCalls: []bindings.ToolCall{{ID: "c3", Name: "é/🙂", Arguments: json.RawMessage(`"text, with } and ]"`)},
			{ID: "c4", Name: "n", Arguments: json.RawMessage(`[1, {"a": "]"}, []]`)}, {ID: "", Name: "", Arguments: json.RawMessage(`12.5e3`)}}},
		{Role: bindings.RoleAgent, ToolCalls: []bindings.ToolCall{{ID: `c"5`, Name: "x", Arguments: json.RawMessage(`{}`)},
			{ID: "c6\\", Name: "y", Arguments: json.RawMessage(`{"a": "\\"}`)}}},
		{Role: bindings.RoleTool, Content: "42", ToolCallID: "c1", RunID: "r1", TurnNumber: 3},
		{Role: bindings.RoleTool, Content: "", ToolCallID: "c2", RunID: "r1", TurnNumber: 3, Metadata: json.RawMessage(`"\u0000"`), ToolCalls: nil},
		{Role: bindings.RoleAgent, Content: strings.Repeat("long ", 200), RunID: "r1", TurnNumber: 3, Metadata: json.RawMessage(`null`)},
	} {
		in.TenantID, in.ConversationID = base.TenantID, base.ConversationID
		if in.Content == "" && len(in.ToolCalls) == 0 {
			in.Content = "x"
		}
		if _, err := s.AppendMessage(ctx, in); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	readTwice(t, s, base.TenantID, conv.ID, 8)
	// Rows read by scanMessage (a created_at past the year 9999) between
	// the others: the rows after them take their repeated columns from
	// them.
	for _, seq := range []int{1, 4, 5, 8} {
		if _, err := s.db.Exec(ctx, `UPDATE agent_conversation_messages SET created_at = '12000-06-01Z' WHERE tenant_id = $1 AND conversation_id = $2 AND seq = $3`,
			base.TenantID, conv.ID, seq); err != nil {
			t.Fatal(err)
		}
		readTwice(t, s, base.TenantID, conv.ID, 8)
	}
}

// readTwice reads the messages of conversation conv with scanMessage and
// with collectMessages, and checks that both read the same n messages.
func readTwice(t *testing.T, s *Store, tenant, conv string, n int) {
	t.Helper()
	ctx := t.Context()
	var want, got []bindings.ConversationMessage
	err := s.batch(ctx, "read twice", tenant, func(b *pgx.Batch) {
		b.Queue(sqlReadMessages, tenant, conv, int64(1<<62), int64(100))
		b.Queue(sqlReadMessages, tenant, conv, int64(1<<62), int64(100))
	}, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		if want, err = pgx.CollectRows(rows, scanMessage); err != nil {
			return err
		}
		if rows, err = br.Query(); err != nil {
			return err
		}
		if !fastMessageColumns(rows.FieldDescriptions()) {
			t.Error("the columns are not read by collectMessages' own path")
		}
		got, err = collectMessages(rows, 2) // a hint below the count: the slice grows
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != n || !reflect.DeepEqual(got, want) {
		t.Fatalf("collectMessages read\n%+v\nscanMessage read\n%+v", got, want)
	}
	// A caller appending to a payload does not change another message's.
	for i := range got {
		if got[i].Metadata != nil {
			_ = append(got[i].Metadata, "garbage"...)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatal("appending to a read message's metadata changed the read")
	}
}

// binaryTimestamptz reads an instant as the check by year it replaced
// did, on both sides of each bound: years 1 and 9999, the zero time,
// ±infinity.
func TestBinaryTimestamptzBounds(t *testing.T) {
	byYear := func(v []byte) (time.Time, bool) {
		us := int64(binary.BigEndian.Uint64(v))
		if us == math.MaxInt64 || us == math.MinInt64 {
			return time.Time{}, false
		}
		t := time.Unix(microsecondsToY2K/1_000_000+us/1_000_000, (microsecondsToY2K%1_000_000*1_000)+(us%1_000_000*1_000))
		if y := t.UTC().Year(); y < 1 || y > 9999 || t.IsZero() {
			return time.Time{}, false
		}
		return t.UTC(), true
	}
	var cases []int64
	for _, b := range []int64{y2kMicrosYear1, y2kMicrosYear10000, 0, -microsecondsToY2K} {
		for d := int64(-2); d <= 2; d++ {
			cases = append(cases, b+d, b+d*1_000_000)
		}
	}
	cases = append(cases, math.MaxInt64, math.MinInt64, math.MaxInt64-1, math.MinInt64+1, 1<<60, -(1 << 60))
	for _, us := range cases {
		v := binary.BigEndian.AppendUint64(nil, uint64(us))
		got, ok := binaryTimestamptz(v)
		want, wantOK := byYear(v)
		if ok != wantOK || !got.Equal(want) || got.Location() != want.Location() {
			t.Errorf("binaryTimestamptz(%d) = %v, %v; by year %v, %v", us, got, ok, want, wantOK)
		}
	}
}
