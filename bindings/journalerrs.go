package bindings

import "errors"

// ErrConversationChanged is journal.Driver Commit's error when its
// Message.CheckCount does not hold: a message was appended to the
// conversation (or it was deleted) since the caller read it, and nothing
// was stored.
var ErrConversationChanged = errors.New("the conversation changed since it was read")

// ErrRunExists is journal.Driver Commit's error when it takes a pending
// open (Pending.Create) and the run or its snapshot is stored already:
// nothing was stored, and the caller opens the run again as an existing
// one.
var ErrRunExists = errors.New("the run exists already")
