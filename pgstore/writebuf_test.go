package pgstore

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kindgi/agents/bindings"
)

// recordingConn keeps a copy of every byte written to it.
type recordingConn struct {
	net.Conn
	mu  *sync.Mutex
	out *bytes.Buffer
}

func (c recordingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.out.Write(p)
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// recordedConn connects to the test database through a recordingConn and
// returns the connection and a function that returns (and forgets) what
// was written since it was last called.
func recordedConn(t *testing.T) (*pgx.Conn, func() []byte) {
	t.Helper()
	testPool(t)
	var mu sync.Mutex
	var out bytes.Buffer
	cfg := testEnv.config.ConnConfig.Copy()
	var d net.Dialer
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return recordingConn{Conn: c, mu: &mu, out: &out}, nil
	}
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn, func() []byte {
		mu.Lock()
		defer mu.Unlock()
		b := bytes.Clone(out.Bytes())
		out.Reset()
		return b
	}
}

// Growing the write buffer first (sendBatch) changes no byte sent, and
// batchSize's estimate holds a batch shaped like a journal write, so that
// pgx does not grow the buffer again while it encodes it.
func TestWriteReserveSendsTheSameBytes(t *testing.T) {
	conn, written := recordedConn(t)
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 17, 0, 0, 123456000, time.UTC)
	out := strings.Repeat(`{"v":1,"doc":{"role":"user","content":"What is the answer?"}},`, 80)
	keys := textArray{"setup", "build-initial-messages", "agent-loop/1/model-call"}
	outs := nullTextArray{out, "", out}
	ats := timeArray{now, now, now}
	batch := func() *pgx.Batch {
		b := &pgx.Batch{}
		b.Queue(setTenantSQL, "tenant")
		b.Queue(`SELECT $1::text, cardinality($2::text[]), length(array_to_string($3::text[], '')), cardinality($4::timestamptz[]), $5::timestamptz, $6::int8`,
			"run", &keys, &outs, &ats, now, int64(7))
		return b
	}
	send := func(reserve bool) []byte {
		b := batch()
		if reserve {
			reserveWrite(conn.PgConn(), &writeReserve{n: batchSize(b)})
		}
		written()
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			t.Fatal(err)
		}
		return written()
	}
	send(false) // prepares the statements
	plain := send(false)
	reserved := send(true)
	if !bytes.Equal(plain, reserved) {
		t.Fatalf("with the buffer grown first, the batch went out as %d bytes %q, without as %d bytes %q", len(reserved), clip(reserved), len(plain), clip(plain))
	}
	if n := batchSize(batch()); n < len(plain) || n > 2*len(plain) {
		t.Errorf("batchSize = %d for a batch of %d bytes", n, len(plain))
	}
}

// A Store over a single connection or a transaction (which sendBatch
// reaches through their connection) writes and reads as one over a pool.
func TestSendBatchOverAConnectionAndATransaction(t *testing.T) {
	conn, _ := recordedConn(t)
	ctx := context.Background()
	big := []byte(`{"text":"` + strings.Repeat("x", 3000) + `"}`)
	check := func(s *Store, tenant string) {
		t.Helper()
		if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: tenant, RunID: "r", FlowID: "f", FlowVersion: "1", Owner: "o", LeaseTTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
		entries, _, err := s.AppendSteps(ctx, bindings.AppendStepsInput{TenantID: tenant, RunID: "r", Owner: "o", Entries: []bindings.JournalEntry{
			{Key: "a", Node: "n", Status: bindings.StepCompleted, Output: big}, {Key: "b", Node: "n", Status: bindings.StepCompleted, Output: big}}})
		if err != nil {
			t.Fatal(err)
		}
		journal, err := s.ReadJournal(ctx, tenant, "r")
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 2 || len(journal) != 2 || !bytes.Equal(journal[1].Output, big) || !bytes.Equal(entries[1].Output, big) {
			t.Fatalf("appended %d entries, read %d back", len(entries), len(journal))
		}
	}
	check(New(conn, nil), "conn-"+randomID())
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	check(New(tx, nil), "tx-"+randomID())
}

// A buffer handed to the Frontend is given back only when the Frontend
// no longer holds it: after a batch of more than 1 KB (pgx then replaces
// it), not before the batch is written nor after a batch of 1 KB or less
// (pgx keeps it). A batch sent through a Store whose buffer came from
// writeBufs writes the same bytes as one that did not.
func TestFrontendHoldsTheReservedBuffer(t *testing.T) {
	conn, written := recordedConn(t)
	ctx := context.Background()
	pc := conn.PgConn()
	small := &pgx.Batch{}
	small.Queue(setTenantSQL, "t")
	large := &pgx.Batch{}
	large.Queue(`SELECT length($1::text)`, strings.Repeat("x", 3000))
	for _, c := range []struct {
		name    string
		b       *pgx.Batch
		reserve int // more than the buffer the case before left has
		held    bool
	}{{"a batch of 1 KB or less", small, 16 << 10, true}, {"a batch of more than 1 KB", large, 64 << 10, false}} {
		w := &writeReserve{n: c.reserve}
		reserveWrite(pc, w)
		if w.buf == nil || !frontendHolds(pc, *w.buf) {
			t.Fatalf("%s: the reserved buffer is not the Frontend's before the batch", c.name)
		}
		if err := conn.SendBatch(ctx, c.b).Close(); err != nil {
			t.Fatal(err)
		}
		if got := frontendHolds(pc, *w.buf); got != c.held {
			t.Errorf("%s: the Frontend holds the reserved buffer after it: %v, want %v", c.name, got, c.held)
		}
	}
	// Through a Store over the connection, twice: the second batch's
	// buffer is the one the first gave back.
	s := New(conn, nil)
	tenant := "reuse-" + randomID()
	if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: tenant, RunID: "r", FlowID: "f", FlowVersion: "1", Owner: "o", LeaseTTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	big := []byte(`{"text":"` + strings.Repeat("y", 3000) + `"}`)
	var sent [][]byte
	for _, key := range []string{"warm-up: prepares the statement", "a", "b"} {
		written()
		if _, _, err := s.AppendSteps(ctx, bindings.AppendStepsInput{TenantID: tenant, RunID: "r", Owner: "o",
			Entries: []bindings.JournalEntry{{Key: key, Status: bindings.StepCompleted, Output: big}}}); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, written())
	}
	if len(sent[1]) < 3000 || len(sent[1]) != len(sent[2]) {
		t.Fatalf("two appends of the same size went out as %d and %d bytes", len(sent[1]), len(sent[2]))
	}
}
