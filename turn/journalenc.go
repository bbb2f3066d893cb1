package turn

import (
	"encoding/json"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/kindgi/agents/bindings"
)

// encodeOutput is json.Marshal(out), the bytes a step's output is
// journaled as. A stored message (four of them a turn, the largest
// outputs a turn writes) is encoded by appendMessageJSON without
// reflection; anything it cannot vouch for byte for byte goes to
// json.Marshal.
func encodeOutput[T any](out *T) ([]byte, error) { return appendOutput(nil, out) }

// appendOutput is encodeOutput writing into room when it is not nil (from
// its start, growing it as append does; see encodeStep), and into a buffer
// of its own, sized for the output, otherwise.
func appendOutput[T any](room []byte, out *T) ([]byte, error) {
	if b, ok := appendKnown(room, out); ok {
		return b, nil
	}
	return json.Marshal(*out)
}

// appendKnown is appendOutput through the hand-written encoders
// alone: it reports false for a value they leave to encoding/json.
func appendKnown[T any](room []byte, out *T) ([]byte, bool) {
	if m, ok := any(out).(*bindings.ConversationMessage); ok {
		size := 512 + len(m.ID) + len(m.Content) + len(m.Metadata) // the names, ids, numbers and time fit in 512
		for i := range m.ToolCalls {
			size += 48 + len(m.ToolCalls[i].ID) + len(m.ToolCalls[i].Name) + len(m.ToolCalls[i].Arguments)
		}
		if b, ok := appendMessageJSON(roomFor(room, size), m); ok {
			return b, true
		}
	}
	switch v := any(out).(type) {
	case *bindings.GenerateResponse: // a model call's result, two a turn
		size := 128 + len(v.Text) + len(v.FinishReason) + len(v.Model)
		for i := range v.ToolCalls {
			size += 48 + len(v.ToolCalls[i].ID) + len(v.ToolCalls[i].Name) + len(v.ToolCalls[i].Arguments)
		}
		if b, ok := appendResponseJSON(roomFor(room, size), v); ok {
			return b, true
		}
	case *toolResult: // a tool call's result
		if b, ok := appendToolResultJSON(roomFor(room, 48+len(v.Status)+len(v.Output)+len(v.Error)), v); ok {
			return b, true
		}
	case *approvalOutcome: // a decided approval
		if !encApproval {
			break
		}
		if b, ok := appendApprovalOutcomeJSON(roomFor(room, approvalOutcomeSize(v)), v); ok {
			return b, true
		}
	case *budgetState: // a budget check, one per model call
		if b, ok := appendBudgetJSON(roomFor(room, 80), v); ok {
			return b, true
		}
	case *setupState:
		if b, ok := appendSetupJSON(room, v); ok {
			return b, true
		}
	case *string: // the rendered prompt
		if b, ok := appendStringJSON(room, *v); ok {
			return b, true
		}
	case *[]bindings.ChatMessage: // the initial messages
		if b, ok := appendChatMessagesJSON(room, *v); ok {
			return b, true
		}
	case *[]callPlan: // a dispatch plan
		if b, ok := appendPlansJSON(room, *v); ok {
			return b, true
		}
	case *composeRecord:
		if b, ok := appendComposeJSON(room, v); ok {
			return b, true
		}
	case *[]RetrievedFact: // none retrieved: null or []
		if len(*v) == 0 {
			return emptyListJSON(*v == nil), true
		}
	case *[]GuardrailOutcome: // no guardrail: null or []
		if len(*v) == 0 {
			return emptyListJSON(*v == nil), true
		}
	case **bindings.ProvenanceRecord: // no provenance emitted
		if *v == nil {
			return []byte("null"), true
		}
	}
	return nil, false
}

// roomFor is room (emptied) when it is set, or a new buffer of size bytes.
func roomFor(room []byte, size int) []byte {
	if room != nil {
		return room[:0]
	}
	return make([]byte, 0, size)
}

// emptyListJSON is json.Marshal of an empty slice: null when it is nil.
func emptyListJSON(isNil bool) []byte {
	if isNil {
		return []byte("null")
	}
	return []byte("[]")
}

// appendResponseJSON appends what json.Marshal(*v) returns and reports
// true, or reports false when a field holds something it leaves to
// encoding/json (see appendMessageJSON; and a cost json.Marshal writes
// with an exponent, or cannot write).
func appendResponseJSON(b []byte, v *bindings.GenerateResponse) ([]byte, bool) {
	if !encResponse {
		return b, false
	}
	ok := true
	b = append(b, '{')
	sep := func() {
		if len(b) > 1 {
			b = append(b, ',')
		}
	}
	if v.Text != "" {
		b = append(b, `"text":`...)
		b, ok = appendJSONString(b, v.Text)
	}
	if len(v.ToolCalls) > 0 && ok {
		sep()
		b = append(b, `"toolCalls":`...)
		b, ok = appendToolCallsJSON(b, v.ToolCalls)
	}
	if v.FinishReason != "" && ok {
		sep()
		b = append(b, `"finishReason":`...)
		b, ok = appendJSONString(b, v.FinishReason)
	}
	if v.Model != "" && ok {
		sep()
		b = append(b, `"model":`...)
		b, ok = appendJSONString(b, v.Model)
	}
	if !ok {
		return b, false
	}
	sep()
	b = append(b, `"usage":{"inputTokens":`...)
	b = strconv.AppendInt(b, int64(v.Usage.InputTokens), 10)
	b = append(b, `,"outputTokens":`...)
	b = strconv.AppendInt(b, int64(v.Usage.OutputTokens), 10)
	b = append(b, `,"costUsd":`...)
	b, ok = appendJSONFloat(b, v.Usage.CostUsd)
	return append(b, `}}`...), ok
}

// appendToolCallsJSON appends json.Marshal(calls) for a non-empty slice,
// reporting false as appendMessageJSON does.
func appendToolCallsJSON(b []byte, calls []bindings.ToolCall) ([]byte, bool) {
	ok := true
	b = append(b, '[')
	for i := range calls {
		c := &calls[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		if b, ok = appendJSONString(b, c.ID); !ok {
			return b, false
		}
		b = append(b, `,"name":`...)
		if b, ok = appendJSONString(b, c.Name); !ok {
			return b, false
		}
		b = append(b, `,"arguments":`...)
		if c.Arguments == nil {
			b = append(b, "null"...)
		} else if rawAsIs(c.Arguments) {
			b = append(b, c.Arguments...)
		} else {
			return b, false
		}
		b = append(b, '}')
	}
	return append(b, ']'), true
}

// appendToolResultJSON appends what json.Marshal(*v) returns and reports
// true, or reports false as appendMessageJSON does.
func appendToolResultJSON(b []byte, v *toolResult) ([]byte, bool) {
	if !encResult {
		return b, false
	}
	b = append(b, `{"status":`...)
	b, ok := appendJSONString(b, v.Status)
	if !ok {
		return b, false
	}
	if len(v.Output) > 0 {
		if !v.outputAsIs && !rawAsIs(v.Output) {
			return b, false
		}
		b = append(b, `,"output":`...)
		b = append(b, v.Output...)
	}
	if v.Error != "" {
		b = append(b, `,"error":`...)
		if b, ok = appendJSONString(b, v.Error); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// appendBudgetJSON appends what json.Marshal(*v) returns and reports true,
// or false for a cost appendJSONFloat leaves to encoding/json.
func appendBudgetJSON(b []byte, v *budgetState) ([]byte, bool) {
	if !encBudget {
		return b, false
	}
	b = append(b, `{"modelCalls":`...)
	b = strconv.AppendInt(b, int64(v.ModelCalls), 10)
	b = append(b, `,"costUsd":`...)
	b, ok := appendJSONFloat(b, v.CostUsd)
	b = append(b, `,"elapsedMs":`...)
	b = strconv.AppendInt(b, v.ElapsedMs, 10)
	return append(b, '}'), ok
}

// appendJSONFloat appends f as json.Marshal writes a float64 in the range
// it writes without an exponent (0, and 1e-6 ≤ |f| < 1e21); it reports
// false for anything else (an exponent, NaN, ±Inf).
func appendJSONFloat(b []byte, f float64) ([]byte, bool) {
	if a := math.Abs(f); a != 0 && !(a >= 1e-6 && a < 1e21) { // also NaN, Inf
		return b, false
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64), true
}

// appendMessageJSON appends what json.Marshal(*m) returns and reports true,
// or reports false (and what it appended is to be dropped) when a field
// holds something whose encoding it leaves to encoding/json: a string
// with a control character (other than \n, \r, \t) or a non-ASCII byte, a
// raw field that is not compact, HTML-safe, valid JSON, or a time outside
// what it writes (UTC, years 0–9999).
func appendMessageJSON(b []byte, m *bindings.ConversationMessage) ([]byte, bool) {

	if !encMessage {
		return b, false
	}
	ok := true
	str := func(prefix, s string) {
		b = append(b, prefix...)
		if ok {
			b, ok = appendJSONString(b, s)
		}
	}
	str(`{"tenantId":`, m.TenantID)
	str(`,"conversationId":`, m.ConversationID)
	str(`,"id":`, m.ID)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, m.Seq, 10)
	str(`,"role":`, string(m.Role))
	str(`,"content":`, m.Content)
	if len(m.ToolCalls) > 0 {
		b = append(b, `,"toolCalls":[`...)
		for i := range m.ToolCalls {
			c := &m.ToolCalls[i]
			if i > 0 {
				b = append(b, ',')
			}
			str(`{"id":`, c.ID)
			str(`,"name":`, c.Name)
			b = append(b, `,"arguments":`...)
			if c.Arguments == nil {
				b = append(b, "null"...)
			} else if ok = ok && rawAsIs(c.Arguments); ok {
				b = append(b, c.Arguments...)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if m.ToolCallID != "" {
		str(`,"toolCallId":`, m.ToolCallID)
	}
	b = append(b, `,"turnNumber":`...)
	b = strconv.AppendInt(b, int64(m.TurnNumber), 10)
	if m.RunID != "" {
		str(`,"runId":`, m.RunID)
	}
	if m.ParticipantID != "" {
		str(`,"participantId":`, m.ParticipantID)
	}
	if len(m.Metadata) > 0 {
		b = append(b, `,"metadata":`...)
		if ok = ok && rawAsIs(m.Metadata); ok {
			b = append(b, m.Metadata...)
		}
	}
	b = append(b, `,"createdAt":"`...)
	b, tok := appendTimeJSON(b, m.CreatedAt)
	if !tok {
		return b, false
	}
	b = append(b, `"}`...)
	return b, ok
}

// rawAsIs reports whether json.Marshal copies raw as it is: valid JSON
// with nothing its compaction removes or escapes.
func rawAsIs(raw json.RawMessage) bool {
	return len(raw) > 0 && !needsCompact(raw) && bindings.CheckJSON("", raw) == nil
}

// appendJSONString appends s quoted as encoding/json quotes it, for the
// strings it can: printable ASCII, \n, \r and \t. It reports false for
// any other byte (json.Marshal has the answer for those).
func appendJSONString(b []byte, s string) ([]byte, bool) {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		for i < len(s) && jsonPlain[s[i]] {
			i++
		}
		if i == len(s) {
			break
		}
		c := s[i]
		var esc string
		switch {
		case c >= utf8.RuneSelf || (c < 0x20 && c != '\n' && c != '\r' && c != '\t'):
			return b, false
		case c == '"':
			esc = `\"`
		case c == '\\':
			esc = `\\`
		case c == '\n':
			esc = `\n`
		case c == '\r':
			esc = `\r`
		case c == '\t':
			esc = `\t`
		case c == '<':
			esc = `\u003c`
		case c == '>':
			esc = `\u003e`
		case c == '&':
			esc = `\u0026`
		default:
			continue
		}
		b = append(b, s[start:i]...)
		b = append(b, esc...)
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"'), true
}

// digitPairs is "00" to "99", two bytes a number.
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// jsonPlain holds the bytes appendJSONString copies as they are: printable
// ASCII but the quote, the backslash and <, >, & (which json.Marshal
// escapes).
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendTimeJSON appends t as t.AppendFormat(b, time.RFC3339Nano) writes
// it, for a time at offset 0 in the years 0–9999 (what json.Marshal
// writes for those, without its quotes), and reports false, appending
// nothing, for any other. It computes the date once from the Unix seconds
// (time's Zone, Year and AppendFormat each compute it again: ≈ 850
// instructions a message). TestAppendTimeJSONAsAppendFormat holds it to
// AppendFormat.
func appendTimeJSON(b []byte, t time.Time) ([]byte, bool) {
	if _, off := t.Zone(); off != 0 {
		return b, false
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
	var buf [30]byte
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
	return append(b, buf[:n+1]...), true
}
