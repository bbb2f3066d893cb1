package pack

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// CheckOutcome is the result of a guardrail check (CheckResult in
// @kindgi/guardrails). It is open beyond the listed fields: Extra keeps
// every other field, and marshalling writes them back.
type CheckOutcome struct {
	// Passed says whether the check passed (required).
	Passed bool
	// Reason says why, when the check gives one.
	Reason string
	// JudgeResponse is the raw answer of a model judge, when one ran.
	JudgeResponse string
	// Attributes are the check's own attributes (a JSON object).
	Attributes map[string]any
	// Extra holds the fields beyond the listed ones, by name.
	Extra map[string]json.RawMessage
}

// Names of the listed fields of a CheckOutcome.
var checkOutcomeFields = map[string]bool{"passed": true, "reason": true, "judgeResponse": true, "attributes": true}

// MarshalJSON writes the listed fields and every field of Extra (a listed
// name in Extra is ignored).
func (o CheckOutcome) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(o.Extra)+4)
	for k, v := range o.Extra {
		if !checkOutcomeFields[k] {
			m[k] = v
		}
	}
	m["passed"] = o.Passed
	if o.Reason != "" {
		m["reason"] = o.Reason
	}
	if o.JudgeResponse != "" {
		m["judgeResponse"] = o.JudgeResponse
	}
	if o.Attributes != nil {
		m["attributes"] = o.Attributes
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads the listed fields (by their exact names) and keeps
// the others in Extra.
func (o *CheckOutcome) UnmarshalJSON(b []byte) error {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	out := CheckOutcome{}
	for k, v := range all {
		var err error
		switch k {
		case "passed":
			err = json.Unmarshal(v, &out.Passed)
		case "reason":
			err = json.Unmarshal(v, &out.Reason)
		case "judgeResponse":
			err = json.Unmarshal(v, &out.JudgeResponse)
		case "attributes":
			err = json.Unmarshal(v, &out.Attributes)
		default:
			if out.Extra == nil {
				out.Extra = make(map[string]json.RawMessage)
			}
			out.Extra[k] = bytes.Clone(v)
		}
		if err != nil {
			return fmt.Errorf("check result field %q: %w", k, err)
		}
	}
	*o = out
	return nil
}
