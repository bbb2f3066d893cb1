package pgstore

import (
	"context"
	"sync"
	"time"
	"unsafe"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The connection's write buffer, grown once per batch, from buffers kept
// between batches.
//
// pgx encodes a batch's messages into its connection's write buffer
// (pgproto3.Frontend) and, after writing them, replaces a buffer larger
// than 1 KB with a new one of 1 KB. A journal write's batch is 2–7 KB, so
// each grew the buffer from 1 KB by appends, five or six allocations and
// copies (about 30 KB a turn, a fifth of the bytes a pgstore turn
// allocated). sendBatch first hands the connection a buffer that holds
// the batch's estimated size, by sending its Frontend a message that
// encodes to no bytes (writeReserve): what goes on the wire is unchanged.
// The buffer comes from writeBufs and goes back there once the batch is
// closed, when the Frontend no longer holds it (writeProbe: it holds a
// buffer it kept after an error, or after a batch smaller than 1 KB; such
// a buffer is left to it). With pgproto3's tracing on, the two messages
// trace as "Unknown" messages of length 0.

// reserveMin is the batch size from which sendBatch grows the buffer
// first: pgx keeps a buffer of 1 KB between batches.
const reserveMin = 1024

// writeBufMin is the least capacity of a buffer of writeBufs.
const writeBufMin = 8 << 10

// writeBufs holds write buffers between batches (*[]byte).
var writeBufs sync.Pool

// sendBatch is s.db.SendBatch, with the write buffer of the connection
// the batch goes out on first grown to hold it (see writeReserve) when
// s.db is a pool, a connection or a transaction of pgx's.
func (s *Store) sendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	n := batchSize(b)
	if n < reserveMin {
		return s.db.SendBatch(ctx, b)
	}
	var conn *pgx.Conn
	switch db := s.db.(type) {
	case *pgxpool.Pool:
		// As Pool.SendBatch does, with the buffer grown in between; the
		// Store's batches never begin a transaction (Batch.BeginTx).
		c, err := db.Acquire(ctx)
		if err != nil {
			return pgx.FailedBatchResults(b, err)
		}
		r := &reservedResults{pc: c.Conn().PgConn(), pool: c, reserve: writeReserve{n: n}}
		reserveWrite(r.pc, &r.reserve)
		r.BatchResults = c.SendBatch(ctx, b)
		return r
	case *pgx.Conn:
		conn = db
	case pgx.Tx:
		conn = db.Conn()
	}
	if conn == nil {
		return s.db.SendBatch(ctx, b)
	}
	r := &reservedResults{pc: conn.PgConn(), reserve: writeReserve{n: n}}
	reserveWrite(r.pc, &r.reserve)
	r.BatchResults = s.db.SendBatch(ctx, b)
	return r
}

// reservedResults are the results of a batch sent with a reserved write
// buffer: closing them gives the buffer back (when the connection's
// Frontend no longer holds it) and releases the pool connection, as
// pgxpool's own batch results do.
type reservedResults struct {
	pgx.BatchResults
	pc      *pgconn.PgConn
	pool    *pgxpool.Conn // nil for a connection of the caller's
	reserve writeReserve
	closed  bool
}

// Close implements pgx.BatchResults.
func (r *reservedResults) Close() error {
	err := r.BatchResults.Close()
	if !r.closed {
		r.closed = true
		if buf := r.reserve.buf; buf != nil && !frontendHolds(r.pc, *buf) {
			writeBufs.Put(buf)
		}
		if r.pool != nil {
			r.pool.Release()
		}
	}
	return err
}

// reserveWrite hands c's write buffer room for w.n more bytes.
func reserveWrite(c *pgconn.PgConn, w *writeReserve) {
	if c == nil || c.IsClosed() {
		return
	}
	c.Frontend().Send(w)
}

// frontendHolds reports whether c's Frontend holds buf as its write
// buffer (or cannot be asked: then it is taken to hold it).
func frontendHolds(c *pgconn.PgConn, buf []byte) bool {
	var p writeProbe
	c.Frontend().Send(&p)
	return !p.asked || p.data == unsafe.SliceData(buf[:cap(buf)])
}

// writeReserve is a frontend message of no bytes: encoding it hands the
// buffer it is appended to room for n more bytes, in a buffer of
// writeBufs (buf) when the buffer has no such room.
type writeReserve struct {
	n   int
	buf *[]byte // the buffer handed over, if any
}

// Frontend implements pgproto3.FrontendMessage.
func (*writeReserve) Frontend() {}

// Decode implements pgproto3.Message; a writeReserve is never received.
func (*writeReserve) Decode([]byte) error { return nil }

// Encode implements pgproto3.Message: dst, with room for n more bytes.
func (w *writeReserve) Encode(dst []byte) ([]byte, error) {
	need := len(dst) + w.n
	if cap(dst) >= need {
		return dst, nil
	}
	p, _ := writeBufs.Get().(*[]byte)
	if p == nil || cap(*p) < need {
		b := make([]byte, 0, max(need, writeBufMin))
		p = &b
	}
	w.buf = p
	return append((*p)[:0], dst...), nil
}

// writeProbe is a frontend message of no bytes that notes the buffer it
// is appended to.
type writeProbe struct {
	asked bool
	data  *byte
}

// Frontend implements pgproto3.FrontendMessage.
func (*writeProbe) Frontend() {}

// Decode implements pgproto3.Message; a writeProbe is never received.
func (*writeProbe) Decode([]byte) error { return nil }

// Encode implements pgproto3.Message: dst as it is.
func (p *writeProbe) Encode(dst []byte) ([]byte, error) {
	p.asked, p.data = true, unsafe.SliceData(dst[:cap(dst)])
	return dst, nil
}

// batchSize estimates the bytes of b's messages as pgx sends the
// statements of a statement cache: for each statement a Bind (the
// prepared statement's name, the parameters' formats, lengths and values,
// the result formats) and an Execute, then a Sync. Values it does not
// know are counted as 16 bytes.
func batchSize(b *pgx.Batch) int {
	n := 5 // Sync
	for _, q := range b.QueuedQueries {
		n += 160 // Bind and Execute headers, the statement's name, result formats
		for _, a := range q.Arguments {
			n += 6 // format and length
			switch v := a.(type) {
			case nil:
			case string:
				n += len(v)
			case *string:
				if v != nil {
					n += len(*v)
				}
			case *textArray:
				n += 20
				for _, s := range *v {
					n += 4 + len(s)
				}
			case *nullTextArray:
				n += 20
				for _, s := range *v {
					n += 4 + len(s)
				}
			case *timeArray:
				n += 20 + 12*len(*v)
			case time.Time, int64, int32, bool:
				n += 8
			default:
				n += 16
			}
		}
	}
	return n
}
