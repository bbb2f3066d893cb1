package bindings

import "encoding/json"

// EncodeMessageStep is the Output of a message step's entry: the stored
// message as encoding/json encodes it.
func EncodeMessageStep(m ConversationMessage) ([]byte, error) { return json.Marshal(m) }
