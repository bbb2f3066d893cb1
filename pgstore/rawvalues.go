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
	int4 := func(v []byte, dst *int32) *int32 {
		if v == nil {
			return nil
		}
		if len(v) != 4 {
			ok = false
			return nil
		}
		*dst = int32(binary.BigEndian.Uint32(v))
		return dst
	}
	int8 := func(v []byte, dst *int64) *int64 {
		if v == nil {
			return nil
		}
		if len(v) != 8 {
			ok = false
			return nil
		}
		*dst = int64(binary.BigEndian.Uint64(v))
		return dst
	}
	boolean := func(v []byte, dst *bool) *bool {
		if v == nil {
			return nil
		}
		if len(v) != 1 {
			ok = false
			return nil
		}
		*dst = v[0] != 0
		return dst
	}
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
	stamp := func(v []byte, dst *time.Time) *time.Time {
		if v == nil {
			return nil
		}
		t, good := len(v) == 8, false
		if t {
			*dst, good = binaryTimestamptz(v)
		}
		if !good {
			ok = false
			return nil
		}
		return dst
	}
	r.ord = int4(raw[1], &r.vOrd)
	r.seq = int8(raw[2], &r.vSeq)
	r.app = boolean(raw[3], &r.vApp)
	r.node, r.stepStatus = text(raw[4]), text(raw[5])
	r.output, r.stepErr = raw[6], raw[7]
	r.at = nil
	if raw[8] != nil {
		r.at = stamp(raw[8], new(time.Time))
	}
	r.mStatus = text(raw[9])
	r.mTurnCount = int4(raw[10], &r.vTurnCount)
	r.mID = text(raw[11])
	r.mSeq = int8(raw[12], &r.vMSeq)
	r.mRole, r.mContent = text(raw[13]), text(raw[14])
	r.mToolCalls = raw[15]
	r.mToolCallID = text(raw[16])
	r.mTurn = int4(raw[17], &r.vTurn)
	r.mRun = text(raw[18])
	r.mMeta = raw[19]
	r.mCreated = stamp(raw[20], &r.vCreated)
	r.mPart = text(raw[21])
	r.mAppended = boolean(raw[22], &r.vAppended)
	return ok
}
