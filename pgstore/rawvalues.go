package pgstore

import (
	"encoding/binary"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// rawKind is a column type and format whose raw values pgstore reads
// itself, without rows.Scan's allocation per value (see
// messageStepRow).
type rawKind uint8

const (
	rawInt4        rawKind = iota // integer, binary
	rawInt8                       // bigint, binary
	rawBool                       // boolean, binary
	rawText                       // text, as text
	rawJSONB                      // jsonb, as text
	rawTimestamptz                // timestamptz, binary
)

// rawColumns reports whether the columns fds are of kinds, one each.
func rawColumns(fds []pgconn.FieldDescription, kinds []rawKind) bool {
	if len(fds) != len(kinds) {
		return false
	}
	for i, fd := range fds {
		var oid uint32
		format := int16(pgtype.BinaryFormatCode)
		switch kinds[i] {
		case rawInt4:
			oid = pgtype.Int4OID
		case rawInt8:
			oid = pgtype.Int8OID
		case rawBool:
			oid = pgtype.BoolOID
		case rawText:
			oid, format = pgtype.TextOID, pgtype.TextFormatCode
		case rawJSONB:
			oid, format = pgtype.JSONBOID, pgtype.TextFormatCode
		case rawTimestamptz:
			oid = pgtype.TimestamptzOID
		}
		if fd.DataTypeOID != oid || fd.Format != format {
			return false
		}
	}
	return true
}

// messageStepKinds are the columns of sqlMessageStep.
var messageStepKinds = [...]rawKind{
	rawInt4, rawInt4, rawInt8, rawBool, rawText, rawText, rawJSONB, rawJSONB, rawTimestamptz, // o_part … o_at
	rawText, rawInt4, rawText, rawInt8, rawText, rawText, rawJSONB, rawText, rawInt4, rawText, rawJSONB, // m_status … m_metadata
	rawTimestamptz, rawText, rawBool, // m_created_at, m_participant_id, m_appended
}

// messageStepRow is a row of sqlMessageStep: a NULL column is a nil
// pointer (or slice).
type messageStepRow struct {
	part                     int32
	ord                      *int32
	seq                      *int64
	app                      *bool
	node, stepStatus         *string
	output, stepErr          []byte
	at                       *time.Time
	mStatus, mID             *string
	mTurnCount, mTurn        *int32
	mSeq                     *int64
	mRole, mContent          *string
	mToolCalls, mMeta        []byte
	mToolCallID, mRun, mPart *string
	mCreated                 *time.Time
	mAppended                *bool

	// What the pointers point to when decode set them; at is the only
	// one a reader keeps past the row (the lease row's expiry), so it is
	// not among them.
	vOrd, vTurnCount, vTurn int32
	vSeq, vMSeq             int64
	vApp, vAppended         bool
	vCreated                time.Time
	vText                   [9]string
}

// scan reads the row with rows.Scan.
func (r *messageStepRow) scan(row interface{ Scan(...any) error }) error {
	return row.Scan(&r.part, &r.ord, &r.seq, &r.app, &r.node, &r.stepStatus, &r.output, &r.stepErr, &r.at,
		&r.mStatus, &r.mTurnCount, &r.mID, &r.mSeq, &r.mRole, &r.mContent, &r.mToolCalls, &r.mToolCallID, &r.mTurn, &r.mRun,
		&r.mMeta, &r.mCreated, &r.mPart, &r.mAppended)
}

// decode reads the raw values of a row whose columns are
// messageStepKinds, as scan would but for the pointers' targets, which
// it reuses from row to row, and the payloads, which alias raw (the
// readers copy what they keep). ok is false when a value is not what
// decode reads (the row is then for scan).
func (r *messageStepRow) decode(raw [][]byte) (ok bool) {
	if len(raw) != len(messageStepKinds) || len(raw[0]) != 4 {
		return false
	}
	r.part = int32(binary.BigEndian.Uint32(raw[0]))
	ok = true
	texts := 0
	text := func(v []byte) *string {
		if v == nil {
			return nil
		}
		p := &r.vText[texts]
		texts++
		*p = string(v)
		return p
	}
	r.ord = fixedRaw(raw[1], 4, &r.vOrd, &ok, int4At)
	r.seq = fixedRaw(raw[2], 8, &r.vSeq, &ok, int8At)
	r.app = fixedRaw(raw[3], 1, &r.vApp, &ok, boolAt)
	r.node, r.stepStatus = text(raw[4]), text(raw[5])
	r.output, r.stepErr = raw[6], raw[7]
	r.at = nil
	if raw[8] != nil {
		r.at = fixedRaw(raw[8], 8, new(time.Time), &ok, stampAt)
	}
	r.mStatus = text(raw[9])
	r.mTurnCount = fixedRaw(raw[10], 4, &r.vTurnCount, &ok, int4At)
	r.mID = text(raw[11])
	r.mSeq = fixedRaw(raw[12], 8, &r.vMSeq, &ok, int8At)
	r.mRole, r.mContent = text(raw[13]), text(raw[14])
	r.mToolCalls = raw[15]
	r.mToolCallID = text(raw[16])
	r.mTurn = fixedRaw(raw[17], 4, &r.vTurn, &ok, int4At)
	r.mRun = text(raw[18])
	r.mMeta = raw[19]
	r.mCreated = fixedRaw(raw[20], 8, &r.vCreated, &ok, stampAt)
	r.mPart = text(raw[21])
	r.mAppended = fixedRaw(raw[22], 1, &r.vAppended, &ok, boolAt)
	return ok
}

// fixedRaw reads v, the raw value of a binary column of size bytes, into
// *dst with read and returns dst: a NULL is nil; a value of another size,
// or one read refuses, is nil and clears ok (decode's verdict on the row).
func fixedRaw[T any](v []byte, size int, dst *T, ok *bool, read func(v []byte, dst *T) bool) *T {
	if v == nil {
		return nil
	}
	if len(v) != size || !read(v, dst) {
		*ok = false
		return nil
	}
	return dst
}

// int4At, int8At, boolAt and stampAt read a binary integer, bigint,
// boolean and timestamptz (the sizes fixedRaw checked) into dst.
func int4At(v []byte, dst *int32) bool { *dst = int32(binary.BigEndian.Uint32(v)); return true }

func int8At(v []byte, dst *int64) bool { *dst = int64(binary.BigEndian.Uint64(v)); return true }

func boolAt(v []byte, dst *bool) bool { *dst = v[0] != 0; return true }

func stampAt(v []byte, dst *time.Time) (good bool) {
	*dst, good = binaryTimestamptz(v)
	return good
}
