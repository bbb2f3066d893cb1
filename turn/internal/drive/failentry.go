package drive

import "github.com/kindgi/agents/bindings"

// FailedEntry is the failed entry of step key (node key) that ends a run
// for good with err's code and msg as its message: any later drive
// returns that error without calling anything (turn's Worker ends a run
// with its compose-result step's).
func FailedEntry(key string, err error, msg string) bindings.JournalEntry {
	se, detail := EncodeFailure(err)
	se.Message = msg
	return bindings.JournalEntry{Key: key, Node: key, Status: bindings.StepFailed, Output: detail, Error: se}
}
