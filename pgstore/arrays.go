package pgstore

import (
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// Array arguments encoded without an allocation per element.
//
// pgx encodes a []string argument as a FlatArray[string], whose Index
// boxes each element into an interface (an allocation per element), and
// a []*string or []time.Time through reflection or a wrapper per element.
// The journal writes pass seven arrays per statement, two statements a
// write. textArray and timeArray are the same slices, and nullTextArray
// the payload columns (a []string whose empty elements are NULL, instead
// of a []*string), seen through types whose Index returns a pointer into
// the slice, which an
// interface holds without allocating, to an element type pgx's text and
// timestamptz codecs take as it is (pgtype.TextValuer,
// pgtype.TimestamptzValuer). The binary encoding, which pgx uses when it
// knows the parameter is text[] or timestamptz[] (a prepared or described
// statement), is built by pgx's own ArrayCodec from these elements.
// Where pgx does not know the parameter's type (QueryExecModeExec,
// QueryExecModeSimpleProtocol) it sends a text value; each array's
// TextValue is then pgx's own text encoding of the plain slice (for
// nullTextArray, of the []*string with nil for its empty elements), so
// that every mode sends what it sent for the slice.

// textArray is a []string argument of type text[].
type textArray []string

// nullTextArray is a []string argument of type text[] whose empty
// elements are NULL (its elements are wrapped payloads, which are never
// empty: see Wrap).
type nullTextArray []string

// timeArray is a []time.Time argument of type timestamptz[].
type timeArray []time.Time

// textItem is an element of a text[] argument.
type textItem string

// TextValue implements pgtype.TextValuer: t's text; a nil t is NULL.
func (t *textItem) TextValue() (pgtype.Text, error) {
	if t == nil {
		return pgtype.Text{}, nil
	}
	return pgtype.Text{String: string(*t), Valid: true}, nil
}

// timeItem is an element of a timestamptz[] argument.
type timeItem time.Time

// TimestamptzValue implements pgtype.TimestamptzValuer.
func (t *timeItem) TimestamptzValue() (pgtype.Timestamptz, error) {
	return pgtype.Timestamptz{Time: time.Time(*t), Valid: true}, nil
}

// Dimensions implements pgtype.ArrayGetter: one dimension; a nil slice
// is NULL, as for pgx's FlatArray.
func (a *textArray) Dimensions() []pgtype.ArrayDimension { return dims(*a == nil, len(*a)) }

// Index implements pgtype.ArrayGetter: a pointer to element i.
func (a *textArray) Index(i int) any { return (*textItem)(&(*a)[i]) }

// IndexType implements pgtype.ArrayGetter.
func (a *textArray) IndexType() any { return (*textItem)(nil) }

// TextValue implements pgtype.TextValuer, which pgx uses for a
// parameter sent as text without a known type: pgx's text encoding of
// the []string.
func (a *textArray) TextValue() (pgtype.Text, error) {
	return arrayText(pgtype.TextArrayOID, []string(*a))
}

// Dimensions implements pgtype.ArrayGetter (see textArray).
func (a *nullTextArray) Dimensions() []pgtype.ArrayDimension { return dims(*a == nil, len(*a)) }

// Index implements pgtype.ArrayGetter: a pointer to element i, nil for
// NULL.
func (a *nullTextArray) Index(i int) any {
	if (*a)[i] == "" {
		return (*textItem)(nil)
	}
	return (*textItem)(&(*a)[i])
}

// IndexType implements pgtype.ArrayGetter.
func (a *nullTextArray) IndexType() any { return (*textItem)(nil) }

// TextValue implements pgtype.TextValuer (see textArray): pgx's text
// encoding of a.pointers().
func (a *nullTextArray) TextValue() (pgtype.Text, error) {
	return arrayText(pgtype.TextArrayOID, a.pointers())
}

// pointers is a as the []*string pgx encodes it as: nil for NULL.
func (a *nullTextArray) pointers() []*string {
	if *a == nil {
		return nil
	}
	p := make([]*string, len(*a))
	for i := range *a {
		if (*a)[i] != "" {
			p[i] = &(*a)[i]
		}
	}
	return p
}

// Dimensions implements pgtype.ArrayGetter (see textArray).
func (a *timeArray) Dimensions() []pgtype.ArrayDimension { return dims(*a == nil, len(*a)) }

// Index implements pgtype.ArrayGetter: a pointer to element i.
func (a *timeArray) Index(i int) any { return (*timeItem)(&(*a)[i]) }

// IndexType implements pgtype.ArrayGetter.
func (a *timeArray) IndexType() any { return (*timeItem)(nil) }

// TextValue implements pgtype.TextValuer (see textArray): pgx's text
// encoding of the []time.Time.
func (a *timeArray) TextValue() (pgtype.Text, error) {
	return arrayText(pgtype.TimestamptzArrayOID, []time.Time(*a))
}

// oneDims[n] is the dimensions of a one-dimensional array of n elements,
// shared read-only (pgx only reads them) so that Dimensions does not
// allocate for the arrays of a journal write.
var oneDims = func() (d [65][1]pgtype.ArrayDimension) {
	for n := range d {
		d[n][0] = pgtype.ArrayDimension{Length: int32(n), LowerBound: 1}
	}
	return d
}()

// dims is the dimensions of a one-dimensional array of n elements; nil
// (a NULL array) when null.
func dims(null bool, n int) []pgtype.ArrayDimension {
	switch {
	case null:
		return nil
	case n < len(oneDims):
		return oneDims[n][:]
	}
	return []pgtype.ArrayDimension{{Length: int32(n), LowerBound: 1}}
}

// textMaps holds type maps for arrayText: a pgtype.Map is not safe for
// concurrent use.
var textMaps = sync.Pool{New: func() any { return pgtype.NewMap() }}

// arrayText is pgx's text encoding of the array v as type oid: a NULL
// when v is a nil slice.
func arrayText(oid uint32, v any) (pgtype.Text, error) {
	m := textMaps.Get().(*pgtype.Map)
	defer textMaps.Put(m)
	buf, err := m.Encode(oid, pgtype.TextFormatCode, v, nil)
	if err != nil || buf == nil {
		return pgtype.Text{}, err
	}
	return pgtype.Text{String: string(buf), Valid: true}, nil
}
