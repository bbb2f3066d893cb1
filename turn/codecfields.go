package turn

import (
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
)

// The hand-written journal encoders (journalenc.go, encodestate.go,
// appendApprovalOutcomeJSON) write a fixed list of fields. So that a field
// added to one of the types they write is never dropped from the journal
// (there on the first drive, gone after a Resume), each encoder runs only
// while every struct type it writes has exactly the exported fields it was
// taught, as codecFields lists them; otherwise its values go to
// encoding/json, which writes every field. The decoders need no such
// guard: they decline a key they do not know, and encoding/json decodes
// the document (journaldec.go). TestCodecKnowsEveryField fails when a
// type has a field the encoders were not taught, and
// TestCodecRoundTripsEveryField holds the encoders and decoders to
// encoding/json value by value and byte by byte.

// leftToJSON marks, in codecFields, a type the encoders never write
// themselves: a value that holds one goes to encoding/json whole.
const leftToJSON = "(left to encoding/json)"

// codecFields is, for every struct type the encoders meet, the names of
// the exported fields they write (or leave to encoding/json when set), in
// declaration order, separated by spaces; fields tagged json:"-" are not
// listed.
var codecFields = map[reflect.Type]string{
	reflect.TypeFor[bindings.GenerateResponse]():    "Text ToolCalls FinishReason Model Usage",
	reflect.TypeFor[bindings.ToolCall]():            "ID Name Arguments",
	reflect.TypeFor[bindings.Usage]():               "InputTokens OutputTokens CostUsd",
	reflect.TypeFor[bindings.ConversationMessage](): "TenantID ConversationID ID Seq Role Content ToolCalls ToolCallID TurnNumber RunID ParticipantID Metadata CreatedAt",
	reflect.TypeFor[bindings.ChatMessage]():         "Role Content ToolCalls ToolCallID",
	reflect.TypeFor[toolResult]():                   "Status Output Error",
	reflect.TypeFor[approvalOutcome]():              "Status ApprovalID Reviewer Comment NextRole",
	reflect.TypeFor[budgetState]():                  "ModelCalls CostUsd ElapsedMs",
	reflect.TypeFor[setupState]():                   "Now TurnNumber Tools Guardrails Policy Route Model Hitl SessionGate Budget HistoryLimit",
	reflect.TypeFor[bindings.ToolDescriptor]():      "ID Version Description InputSchema OutputSchema Secrets Env Config Annotations Gate",
	reflect.TypeFor[bindings.Guardrail]():           "ID Kind CheckID Action Config",
	reflect.TypeFor[Policy]():                       "AllowProviders DenyProviders AllowModels DenyModels MaxCostUsd MaxSteps MaxWallMs Hitl",
	reflect.TypeFor[ProviderRef]():                  "Provider Model",
	reflect.TypeFor[bindings.ModelInfo]():           "ID Features ContextWindow InputPricePerMTok OutputPricePerMTok",
	reflect.TypeFor[EffectiveHitlPolicy]():          "TimeoutMs ReviewerRole OnTimeout AfterTurns ToolGates ToolFloors",
	reflect.TypeFor[SessionGateResult]():            "Required AfterTurns TurnNumber Reason",
	reflect.TypeFor[budgetCaps]():                   "MaxSteps MaxCostUsd MaxWallMs MaxToolCalls",
	reflect.TypeFor[callPlan]():                     "ID Key ToolID ToolVersion Arguments Action Status Message ReviewerRole Reason",
	reflect.TypeFor[composeRecord]():                "Status MessageID",
	reflect.TypeFor[toolMeta]():                     "ToolID ToolVersion Status",
	reflect.TypeFor[Input]():                        "TenantID ProjectID ConversationID UserMessage Parameters ParticipantID DryRun Principal RunID ModelSettings",
	reflect.TypeFor[bindings.Principal]():           "ID Roles",

	// Set, these send their value to encoding/json.
	reflect.TypeFor[bindings.ToolAnnotations](): leftToJSON,
	reflect.TypeFor[agent.ToolGate]():           leftToJSON,
	reflect.TypeFor[agent.ToolGates]():          leftToJSON,
	reflect.TypeFor[bindings.HitlSpec]():        leftToJSON,
	reflect.TypeFor[bindings.ModelSettings]():   leftToJSON,
}

// Whether each hand-written encoder knows every field of what it writes
// (see codecFields): set once, when the package is initialised.
var (
	encResponse = taught[bindings.GenerateResponse]()
	encMessage  = taught[bindings.ConversationMessage]()
	encChat     = taught[[]bindings.ChatMessage]()
	encResult   = taught[toolResult]()
	encApproval = taught[approvalOutcome]()
	encBudget   = taught[budgetState]()
	encSetup    = taught[setupState]()
	encPlans    = taught[[]callPlan]()
	encCompose  = taught[composeRecord]()
	encToolMeta = taught[toolMeta]()
	encInput    = taught[Input]()
)

// taught reports whether the encoders know every field T holds.
func taught[T any]() bool { return len(untaught(reflect.TypeFor[T]())) == 0 }

// untaught returns the fields reachable from t (through slices, arrays,
// maps and pointers, and the fields of its structs) that codecFields does
// not list, as "Type.Field", and each struct type it does not know at all,
// as "Type".
func untaught(t reflect.Type) []string { return untaughtIn(codecFields, t) }

// untaughtIn is untaught against the list fields.
func untaughtIn(fields map[reflect.Type]string, t reflect.Type) []string {
	var out []string
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		switch t.Kind() {
		case reflect.Slice, reflect.Array, reflect.Pointer, reflect.Map:
			walk(t.Elem())
			return
		case reflect.Struct:
		default:
			return
		}
		if t == reflect.TypeFor[time.Time]() || seen[t] {
			return
		}
		seen[t] = true
		list, ok := fields[t]
		switch {
		case !ok:
			out = append(out, t.String())
			return
		case list == leftToJSON:
			return
		}
		known := strings.Fields(list)
		var have []string
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				continue
			}
			have = append(have, f.Name)
			if !slices.Contains(known, f.Name) {
				out = append(out, t.String()+"."+f.Name)
			}
			walk(f.Type)
		}
		for _, k := range known {
			if !slices.Contains(have, k) {
				out = append(out, t.String()+"."+k+" (listed, not a field)")
			}
		}
	}
	walk(t)
	return out
}
