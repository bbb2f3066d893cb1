package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The connection's write buffer, grown once per batch.
//
// pgx encodes a batch's messages into its connection's write buffer
// (pgproto3.Frontend) and, after writing them, replaces a buffer larger
// than 1 KB with a new one of 1 KB. A journal write's batch is 2–7 KB, so
// each grew the buffer from 1 KB by appends, five or six allocations and
// copies (about 30 KB a turn, a fifth of the bytes a pgstore turn
// allocates). sendBatch first grows the buffer to the batch's estimated
// size, in one allocation, by sending the connection's Frontend a message
// that encodes to no bytes (writeReserve): what goes on the wire is
// unchanged. With pgproto3's tracing on, it traces as an "Unknown"
// message of length 0.

// reserveMin is the batch size from which sendBatch grows the buffer
// first: pgx keeps a buffer of 1 KB between batches.
const reserveMin = 1024

// sendBatch is s.db.SendBatch, with the write buffer of the connection
// the batch goes out on first grown to hold it (see writeReserve) when
// s.db is a pool, a connection or a transaction of pgx's.
func (s *Store) sendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	n := batchSize(b)
	if n < reserveMin {
		return s.db.SendBatch(ctx, b)
	}
	switch db := s.db.(type) {
	case *pgxpool.Pool:
		// As Pool.SendBatch does, with the buffer grown in between; the
		// Store's batches never begin a transaction (Batch.BeginTx).
		c, err := db.Acquire(ctx)
		if err != nil {
			return pgx.FailedBatchResults(b, err)
		}
		reserveWrite(c.Conn().PgConn(), n)
		return &releasingResults{BatchResults: c.SendBatch(ctx, b), c: c}
	case *pgx.Conn:
		reserveWrite(db.PgConn(), n)
	case pgx.Tx:
		if c := db.Conn(); c != nil {
			reserveWrite(c.PgConn(), n)
		}
	}
	return s.db.SendBatch(ctx, b)
}

// releasingResults releases the pool connection a batch was sent on when
// the batch is closed, as pgxpool's own batch results do.
type releasingResults struct {
	pgx.BatchResults
	c *pgxpool.Conn
}

// Close implements pgx.BatchResults.
func (r *releasingResults) Close() error {
	err := r.BatchResults.Close()
	if r.c != nil {
		r.c.Release()
		r.c = nil
	}
	return err
}

// reserveWrite grows c's write buffer to hold n more bytes.
func reserveWrite(c *pgconn.PgConn, n int) {
	if c == nil || c.IsClosed() {
		return
	}
	c.Frontend().Send(writeReserve(n))
}

// writeReserve is a frontend message of no bytes: encoding it grows the
// buffer it is appended to so that n more bytes fit without growing it
// again.
type writeReserve int

// Frontend implements pgproto3.FrontendMessage.
func (writeReserve) Frontend() {}

// Decode implements pgproto3.Message; a writeReserve is never received.
func (writeReserve) Decode([]byte) error { return nil }

// Encode implements pgproto3.Message: dst, with room for n more bytes.
func (n writeReserve) Encode(dst []byte) ([]byte, error) {
	if cap(dst)-len(dst) >= int(n) {
		return dst, nil
	}
	grown := make([]byte, len(dst), len(dst)+int(n))
	copy(grown, dst)
	return grown, nil
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
