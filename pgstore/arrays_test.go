package pgstore

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// arrayCases are the values the array argument types are checked with:
// NULL (a nil slice), empty arrays, NULL and empty elements, text the
// text format must quote or escape, non-ASCII text, a large element and
// more elements than oneDims covers.
func arrayCases() (texts [][]string, nullTexts [][]*string, times [][]time.Time) {
	many := make([]string, 70)
	manyNull := make([]*string, 70)
	manyTimes := make([]time.Time, 70)
	base := time.Date(2026, 12, 1, 16, 54, 53, 53056000, time.UTC)
	for i := range many {
		many[i] = fmt.Sprint("k", i)
		if i%3 != 0 {
			manyNull[i] = ptr(many[i])
		}
		manyTimes[i] = base.Add(time.Duration(i) * time.Microsecond)
	}
	large := strings.Repeat(`{"v":1,"doc":"é \" \\ , {} NULL"}`, 4000) // 132 KB
	texts = [][]string{
		nil, {}, {""}, {"a"}, {"NULL"}, {"null", "Null"}, {`a"b`, `a\b`, "{}", "a,b", " lead", "trail ", "a b", "\t\n"},
		{"é", "日本語", "🙂", "\uFDD0"}, {large, "x"}, many,
	}
	nullTexts = [][]*string{
		nil, {}, {nil}, {nil, nil}, {ptr("NULL"), nil}, {ptr(`{"v":1,"doc":{"a":"b c"}}`), nil, ptr(`"\\"`)},
		{ptr("é"), ptr("🙂")}, {ptr(large), nil}, manyNull,
	}
	times = [][]time.Time{
		nil, {}, {base}, {base, base.Add(time.Hour)}, {time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)}, {time.Unix(0, 0).UTC()}, manyTimes,
	}
	return texts, nullTexts, times
}

// The array argument types encode as pgx encodes the plain slices, in
// each form pgx sends a parameter in: binary and text when it knows the
// parameter's type (prepared or described statements), text when it
// does not (QueryExecModeExec, and QueryExecModeSimpleProtocol, which
// quotes that text into the SQL).
func TestArrayArgumentsEncodeAsPgx(t *testing.T) {
	texts, nullTexts, times := arrayCases()
	type pair struct {
		name        string
		oid         uint32
		plain, ours any
	}
	var pairs []pair
	for i, v := range texts {
		pairs = append(pairs, pair{fmt.Sprint("text ", i), pgtype.TextArrayOID, v, (*textArray)(&v)})
	}
	for i, v := range nullTexts {
		ours := toNullTextArray(v)
		pairs = append(pairs, pair{fmt.Sprint("nullable text ", i), pgtype.TextArrayOID, v, &ours})
	}
	for i, v := range times {
		pairs = append(pairs, pair{fmt.Sprint("timestamptz ", i), pgtype.TimestamptzArrayOID, v, (*timeArray)(&v)})
	}
	m := pgtype.NewMap()
	for _, p := range pairs {
		for _, f := range []struct {
			oid    uint32
			format int16
		}{{p.oid, pgtype.BinaryFormatCode}, {p.oid, pgtype.TextFormatCode}, {0, pgtype.TextFormatCode}} {
			want, werr := m.Encode(f.oid, f.format, p.plain, nil)
			got, gerr := m.Encode(f.oid, f.format, p.ours, nil)
			if werr != nil || gerr != nil {
				t.Fatalf("%s, oid %d format %d: errors %v and %v", p.name, f.oid, f.format, werr, gerr)
			}
			if !bytes.Equal(got, want) || (got == nil) != (want == nil) {
				t.Errorf("%s, oid %d format %d: encoded %q, pgx encodes the slice as %q", p.name, f.oid, f.format, clip(got), clip(want))
			}
		}
	}
}

// toNullTextArray is v as a nullTextArray: "" for nil (v holds no empty
// string: a nullTextArray's elements are envelopes, never empty).
func toNullTextArray(v []*string) nullTextArray {
	if v == nil {
		return nil
	}
	a := make(nullTextArray, len(v))
	for i, p := range v {
		if p != nil {
			a[i] = *p
		}
	}
	return a
}

func ptr[T any](v T) *T { return &v }

// clip shortens a value in a failure message.
func clip(b []byte) []byte {
	if len(b) > 200 {
		return append(b[:200:200], "…"...)
	}
	return b
}

// The array argument types read back from PostgreSQL as the slices they
// wrap, in every one of pgx's query execution modes.
func TestArrayArgumentsRoundTrip(t *testing.T) {
	pool := testPool(t)
	ctx := context.Background()
	texts, nullTexts, times := arrayCases()
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe,
		pgx.QueryExecModeDescribeExec, pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol} {
		for i := range max(len(texts), len(nullTexts), len(times)) {
			tv, nv, mv := texts[i%len(texts)], nullTexts[i%len(nullTexts)], times[i%len(times)]
			var gotT []string
			var gotN []*string
			var gotM []time.Time
			var nullT, nullN, nullM bool
			err := pool.QueryRow(ctx, `SELECT $1::text[], $2::text[], $3::timestamptz[], $1::text[] IS NULL, $2::text[] IS NULL, $3::timestamptz[] IS NULL`,
				mode, (*textArray)(&tv), ptr(toNullTextArray(nv)), (*timeArray)(&mv)).Scan(&gotT, &gotN, &gotM, &nullT, &nullN, &nullM)
			if err != nil {
				t.Fatalf("%v, case %d: %v", mode, i, err)
			}
			if nullT != (tv == nil) || nullN != (nv == nil) || nullM != (mv == nil) {
				t.Errorf("%v, case %d: NULL arrays %v %v %v, want %v %v %v", mode, i, nullT, nullN, nullM, tv == nil, nv == nil, mv == nil)
			}
			if !slices.Equal(gotT, tv) {
				t.Errorf("%v, case %d: text[] read back as %d elements, want %d: %.200q", mode, i, len(gotT), len(tv), gotT)
			}
			if !slices.EqualFunc(gotN, nv, func(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }) {
				t.Errorf("%v, case %d: nullable text[] read back differently (%d elements, want %d)", mode, i, len(gotN), len(nv))
			}
			if !slices.EqualFunc(gotM, mv, time.Time.Equal) {
				t.Errorf("%v, case %d: timestamptz[] read back as %v, want %v", mode, i, gotM, mv)
			}
		}
	}
}
