package journalcodec

import (
	"slices"
	"strings"
	"time"
)

// timeValue is the type a kTime descriptor reads.
type timeValue = time.Time

// digitPairs is "00" to "99", two bytes a number.
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// AppendTime appends t as t.AppendFormat(b, time.RFC3339Nano) writes it,
// for a time at offset 0 in the years 0–9999 (what json.Marshal writes for
// those, without its quotes), and reports false, appending nothing, for
// any other. It computes the date once from the Unix seconds (time's
// Zone, Year and AppendFormat each compute it again: ≈ 850 instructions a
// message). TestAppendTimeAsAppendFormat holds it to AppendFormat.
func AppendTime(b []byte, t time.Time) ([]byte, bool) {
	if t.Location() != time.UTC { // UTC, the journal's, needs no look-up
		if _, off := t.Zone(); off != 0 {
			return b, false
		}
	}
	sec := t.Unix()
	days := sec / 86400
	rem := sec % 86400
	if rem < 0 {
		rem += 86400
		days--
	}
	// Civil date from days since 1970-01-01 (H. Hinnant's days_from_civil
	// inverse), in 400-year eras from 0000-03-01.
	z := days + 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era--
	}
	doe := z - era*146097                                  // [0, 146096]
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365 // [0, 399]
	year := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100) // [0, 365], from March 1
	mp := (5*doy + 2) / 153                  // [0, 11], March = 0
	day := doy - (153*mp+2)/5 + 1
	month := mp + 3
	if month > 12 {
		month -= 12
	}
	if month <= 2 {
		year++
	}
	if year < 0 || year > 9999 {
		return b, false
	}
	b = slices.Grow(b, 30)
	start := len(b)
	buf := b[start : start+30]
	pair := func(i int, v int64) { buf[i], buf[i+1] = digitPairs[2*v], digitPairs[2*v+1] }
	pair(0, year/100)
	pair(2, year%100)
	buf[4], buf[7], buf[10], buf[13], buf[16] = '-', '-', 'T', ':', ':'
	pair(5, month)
	pair(8, day)
	pair(11, rem/3600)
	pair(14, rem/60%60)
	pair(17, rem%60)
	n := 19
	if ns := int64(t.Nanosecond()); ns != 0 {
		buf[19] = '.'
		hi, mid, lo := ns/1000000, ns/1000%1000, ns%1000
		buf[20], buf[23], buf[26] = byte('0'+hi/100), byte('0'+mid/100), byte('0'+lo/100)
		pair(21, hi%100)
		pair(24, mid%100)
		pair(27, lo%100)
		n = 29
		for buf[n-1] == '0' {
			n--
		}
	}
	buf[n] = 'Z'
	return b[:start+n+1], true
}

// timev reads a time as time.Time's UnmarshalJSON does (json.Unmarshal
// hands it the quoted bytes).
func (d *decoder) timev() time.Time {
	if d.peek() != '"' {
		d.fail()
		return time.Time{}
	}
	start := d.i
	if n := strings.IndexByte(d.s[start+1:], '"'); n >= 0 {
		// The encoder's form has no escape: the first quote ends it.
		if t, ok := utcTime(d.s[start+1 : start+1+n]); ok {
			d.i = start + n + 2
			return t
		}
	}
	d.skipString()
	if d.bad {
		return time.Time{}
	}
	var t time.Time
	if t.UnmarshalJSON(d.b[start:d.i]) != nil {
		d.fail()
	}
	return t
}

// digits is the number s[a:b] writes in decimal digits, or -1 when a byte
// is not a digit.
func digits(s string, a, b int) int {
	n := 0
	for _, c := range []byte(s[a:b]) {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// utcTime reads the form AppendTime writes a UTC time in,
// "2006-01-02T15:04:05[.fraction]Z", as time.Time's UnmarshalJSON reads
// it (time.Date in UTC, which is time.Unix of the same instant in UTC);
// it reports false for anything else, and for a day past the 28th (left
// to UnmarshalJSON, which knows the months).
func utcTime(s string) (time.Time, bool) {
	if len(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[len(s)-1] != 'Z' {
		return time.Time{}, false
	}
	pair := func(i int) int { // two digits, or -1 (a byte below '0' wraps past 9)
		hi, lo := s[i]-'0', s[i+1]-'0'
		if hi > 9 || lo > 9 {
			return -1
		}
		return int(hi)*10 + int(lo)
	}
	century, yy, month, day := pair(0), pair(2), pair(5), pair(8)
	hour, minute, sec := pair(11), pair(14), pair(17)
	if century < 0 || yy < 0 || month < 1 || month > 12 || day < 1 || day > 28 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || sec < 0 || sec > 59 {
		return time.Time{}, false
	}
	nsec := 0
	switch frac := s[19 : len(s)-1]; {
	case frac == "":
	case len(frac) >= 2 && len(frac) <= 10 && frac[0] == '.':
		if nsec = digits(s, 20, len(s)-1); nsec < 0 {
			return time.Time{}, false
		}
		for i := len(frac) - 1; i < 9; i++ {
			nsec *= 10
		}
	default:
		return time.Time{}, false
	}
	// Days since 1970-01-01 of the civil date (H. Hinnant's
	// days_from_civil), in 400-year eras from 0000-03-01.
	y := century*100 + yy
	if month <= 2 {
		y--
	}
	era := (y+400)/400 - 1 // floor(y / 400) for y ≥ -1
	yoe := y - era*400
	doy := (153*((month+9)%12)+2)/5 + day - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	days := int64(era)*146097 + int64(doe) - 719468
	return time.Unix(days*86400+int64(hour*3600+minute*60+sec), int64(nsec)).UTC(), true
}
