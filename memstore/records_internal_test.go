package memstore

import (
	"testing"
	"unsafe"
)

// TestRecordsFillTheirSizeClass holds that a runRec and a convRec fill
// their allocation to the byte (its size class less the runtime's 8-byte
// type header): the GC reads a larger allocation's tail as another record
// and counts it as scan work, which more than doubled the scan work of the
// records kept (see runText). A change to bindings.Run, bindings.Conversation
// or the records fails it: adjust runText or convText.
func TestRecordsFillTheirSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(runRec{}); n != 6144-8 {
		t.Errorf("runRec is %d bytes, want %d: adjust runText", n, 6144-8)
	}
	if n := unsafe.Sizeof(convRec{}); n != 1408-8 {
		t.Errorf("convRec is %d bytes, want %d: adjust convText", n, 1408-8)
	}
}
