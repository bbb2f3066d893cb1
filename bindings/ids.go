package bindings

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	agents "github.com/kindgi/agents"
)

// MaxIDLength is the longest id, in bytes, that a binding accepts and every
// store must be able to hold: tenant, project, conversation, run, message,
// approval and participant ids. Ids are refused up front, before any side
// effect, when they are longer, are not valid UTF-8, or hold a control
// character (Unicode category Cc: NUL, tab, newline, DEL, C1 controls).
const MaxIDLength = 256

// CheckID returns an *agents.InvalidMessageError naming field when id is
// empty or breaks the id rules of MaxIDLength, and nil otherwise. Stores
// and the turn call it on every id they are given, so that what no store
// should hold is refused before anything is stored or called.
func CheckID(field, id string) error {
	if id == "" {
		return &agents.InvalidMessageError{Reason: field + " is empty"}
	}
	return CheckOptionalID(field, id)
}

// CheckOptionalID is CheckID for an id that may be empty.
func CheckOptionalID(field, id string) error {
	if len(id) > MaxIDLength {
		return &agents.InvalidMessageError{Reason: fmt.Sprintf("%s is %d bytes long; the maximum is %d", field, len(id), MaxIDLength)}
	}
	ascii := true
	for i := 0; i < len(id); i++ { // the common case: printable ASCII, one pass
		if c := id[i]; c < 0x20 || c >= 0x7f {
			ascii = false
			break
		}
	}
	if ascii {
		return nil
	}
	if !utf8.ValidString(id) {
		return &agents.InvalidMessageError{Reason: field + " is not valid UTF-8"}
	}
	for i, r := range id {
		if unicode.IsControl(r) {
			return &agents.InvalidMessageError{Reason: fmt.Sprintf("%s holds a control character (U+%04X) at byte %d", field, r, i)}
		}
	}
	return nil
}

// CheckLookup checks the ids of a call that reads or changes one record
// by id: the tenant's (required, CheckID) and the record's, named field
// (CheckOptionalID: an empty id finds nothing).
func CheckLookup(tenantID, field, id string) error {
	return firstErr(CheckID("tenant id", tenantID), CheckOptionalID(field, id))
}

// firstErr returns the first non-nil error of errs: the ids of one input
// are checked together.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
