package pgstore

import (
	"reflect"
	"testing"
	"time"
)

// decode reads a row of sqlMessageStep's column types as rows.Scan does.
func TestMessageStepRowDecodesAsScan(t *testing.T) {
	pool := testPool(t)
	const q = `SELECT * FROM (VALUES
		(2, 7, 9000000000::bigint, true, 'node', 'completed', '{"v": 1, "doc": [1, "a"]}'::jsonb, '{"v": 1, "doc": {"m": "x"}}'::jsonb,
		 '2026-01-02 03:04:05.123456+00'::timestamptz,
		 'open', -3, 'm1', 42::bigint, 'agent', E'nul \uFDD00 text', '{"v": 1, "doc": [{"id": "c"}]}'::jsonb, 'c', 5, 'r', '{"v": 1, "doc": null}'::jsonb,
		 '1999-12-31 23:59:59.999999+00'::timestamptz, '', false),
		(1, NULL::integer, NULL::bigint, NULL::boolean, NULL::text, NULL::text, NULL::jsonb, NULL::jsonb, NULL::timestamptz,
		 NULL::text, NULL::integer, NULL::text, NULL::bigint, NULL::text, NULL::text, NULL::jsonb, NULL::text, NULL::integer, NULL::text, NULL::jsonb,
		 NULL::timestamptz, NULL::text, NULL::boolean)) AS r`
	rows, err := pool.Query(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if !rawColumns(rows.FieldDescriptions(), messageStepKinds[:]) {
		t.Fatalf("the columns %v are not read by decode", rows.FieldDescriptions())
	}
	n := 0
	for rows.Next() {
		n++
		var dec, sc messageStepRow
		if !dec.decode(rows.RawValues()) {
			t.Fatalf("row %d: decode refused it", n)
		}
		if err := sc.scan(rows); err != nil {
			t.Fatal(err)
		}
		if got, want := rowValues(&dec), rowValues(&sc); !reflect.DeepEqual(got, want) {
			t.Errorf("row %d: decode read\n%v\nscan read\n%v", n, got, want)
		}
	}
	if err := rows.Err(); err != nil || n != 2 {
		t.Fatalf("%d rows, %v", n, err)
	}
}

// rowValues is what r's fields point to (nil for NULL), times as UTC
// instants.
func rowValues(r *messageStepRow) []any {
	deref := func(p any) any {
		v := reflect.ValueOf(p)
		if v.IsNil() {
			return nil
		}
		return v.Elem().Interface()
	}
	out := []any{r.part, deref(r.ord), deref(r.seq), deref(r.app), deref(r.node), deref(r.stepStatus), string(r.output), string(r.stepErr),
		r.output == nil, r.stepErr == nil, deref(r.mStatus), deref(r.mTurnCount), deref(r.mID), deref(r.mSeq), deref(r.mRole), deref(r.mContent),
		string(r.mToolCalls), r.mToolCalls == nil, deref(r.mToolCallID), deref(r.mTurn), deref(r.mRun), string(r.mMeta), r.mMeta == nil,
		deref(r.mPart), deref(r.mAppended)}
	for _, p := range []*time.Time{r.at, r.mCreated} {
		if p == nil {
			out = append(out, nil)
		} else {
			out = append(out, p.UTC())
		}
	}
	return out
}
