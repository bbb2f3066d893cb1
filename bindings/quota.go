package bindings

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	agents "github.com/kindgi/agents"
)

// Quota scopes: what a Quota counts (Quota.Scope).
const (
	// QuotaModelCalls counts model calls, one unit each.
	QuotaModelCalls = "model-calls"
	// QuotaTokens counts the input and output tokens of model calls.
	QuotaTokens = "tokens"
	// QuotaCostUsd counts the cost of model calls, in US dollars.
	QuotaCostUsd = "cost-usd"
	// QuotaToolCalls counts the calls of one tool (Quota.ToolID), or of
	// every tool when ToolID is empty, one unit each.
	QuotaToolCalls = "tool-calls"
	// QuotaTurns counts turns (runs), one unit each.
	QuotaTurns = "turns"
)

// What a turn does when a quota refuses it (Quota.OnExceeded).
const (
	// QuotaFail ends the turn with *agents.QuotaExceededError (a tool
	// quota answers the call with a tool error instead). The default.
	QuotaFail = "fail"
	// QuotaWait puts the run back in the queue until the window frees
	// (Run.NotBefore); a worker continues it then.
	QuotaWait = "wait"
)

// MaxQuotaWindowSeconds is the longest quota window: 366 days.
const MaxQuotaWindowSeconds = 366 * 24 * 3600

// Quota bounds a tenant's use of one scope over a sliding window: at any
// time, the units used in the WindowSeconds before it add up to at most
// Limit (tokens and cost are counted after the call that used them, so a
// call may end a little over; see turn.Bindings.Quotas).
type Quota struct {
	// Name identifies the quota within the tenant (the counter keys its
	// units by it): changing a quota's limit or window under the same
	// name keeps the units already counted.
	Name  string `json:"name"`
	Scope string `json:"scope"`
	// ToolID narrows a tool-calls quota to one tool; empty counts every
	// tool. Only tool-calls quotas may set it.
	ToolID string `json:"toolId,omitempty"`
	// Limit is the most the window may hold: calls, turns, tokens, or US
	// dollars for cost-usd. It is positive.
	Limit float64 `json:"limit"`
	// WindowSeconds is the sliding window's length, 1 to
	// MaxQuotaWindowSeconds.
	WindowSeconds int64 `json:"windowSeconds"`
	// OnExceeded is QuotaFail (also when empty) or QuotaWait.
	OnExceeded string `json:"onExceeded,omitempty"`
}

// Window returns the quota's window as a Duration.
func (q Quota) Window() time.Duration { return time.Duration(q.WindowSeconds) * time.Second }

// Waits reports whether the quota's OnExceeded is QuotaWait.
func (q Quota) Waits() bool { return q.OnExceeded == QuotaWait }

// CheckQuotas validates a tenant policy's quotas: each has a name valid as
// an id (CheckID), unique among them, a known scope, a ToolID only for
// tool-calls, a positive finite limit (whole for the counted scopes), a
// window of 1 to MaxQuotaWindowSeconds seconds, and OnExceeded fail, wait
// or empty. A bad one is *agents.InvalidMessageError naming the field
// ("quotas[2].limit").
func CheckQuotas(qs []Quota) error {
	for i, q := range qs {
		field := func(name string) string { return fmt.Sprintf("quotas[%d].%s", i, name) }
		bad := func(name, why string) error {
			return &agents.InvalidMessageError{Reason: field(name) + ": " + why}
		}
		if err := CheckID("quota name", q.Name); err != nil {
			return bad("name", reason(err))
		}
		for _, p := range qs[:i] { // a policy holds a few quotas
			if p.Name == q.Name {
				return bad("name", fmt.Sprintf("%q names two quotas; give each its own name", q.Name))
			}
		}
		switch q.Scope {
		case QuotaModelCalls, QuotaTokens, QuotaCostUsd, QuotaToolCalls, QuotaTurns:
		default:
			return bad("scope", fmt.Sprintf("%q is not a scope (model-calls, tokens, cost-usd, tool-calls or turns)", q.Scope))
		}
		if q.ToolID != "" {
			if q.Scope != QuotaToolCalls {
				return bad("toolId", "only a tool-calls quota names a tool")
			}
			if err := CheckID("tool id", q.ToolID); err != nil {
				return bad("toolId", reason(err))
			}
		}
		if !(q.Limit > 0) || math.IsInf(q.Limit, 0) {
			return bad("limit", fmt.Sprintf("%v is not a positive finite number", q.Limit))
		}
		if q.Scope != QuotaCostUsd && q.Limit != math.Trunc(q.Limit) {
			return bad("limit", fmt.Sprintf("%v is not a whole number of %s", q.Limit, q.Scope))
		}
		if q.WindowSeconds < 1 || q.WindowSeconds > MaxQuotaWindowSeconds {
			return bad("windowSeconds", fmt.Sprintf("%d is not between 1 and %d", q.WindowSeconds, MaxQuotaWindowSeconds))
		}
		switch q.OnExceeded {
		case "", QuotaFail, QuotaWait:
		default:
			return bad("onExceeded", fmt.Sprintf("%q is not fail or wait", q.OnExceeded))
		}
	}
	return nil
}

// reason is the reason of an invalid-message error, or its text.
func reason(err error) string {
	var im *agents.InvalidMessageError
	if errors.As(err, &im) {
		return im.Reason
	}
	return err.Error()
}

// QuotaTakeInput is one use of a quota.
type QuotaTakeInput struct {
	TenantID string `json:"tenantId"`
	Quota    Quota  `json:"quota"`
	// Unit identifies the use: the same unit is counted once, however
	// often it is taken or added (the turn uses the run id and the journal
	// step key, so a resumed step reuses its unit).
	Unit string `json:"unit"`
	// Amount is what the unit uses: 1 for a call or a turn, tokens, or US
	// dollars. Take with Amount 0 only checks that the window is not full
	// (see QuotaCounter).
	Amount float64 `json:"amount"`
	// Now is the time of the use; zero is the store's clock. Tests pass a
	// fake clock's time to slide the window without sleeping.
	Now time.Time `json:"now,omitzero"`
}

// QuotaTakeResult is a counter's answer.
type QuotaTakeResult struct {
	// Allowed reports that the unit is counted (now or before).
	Allowed bool `json:"allowed"`
	// Used is what the window holds after the call.
	Used float64 `json:"used"`
	// RetryAfter, when Allowed is false, is how long until enough of the
	// window's units leave it for this one; zero when none will (an
	// amount above the limit).
	RetryAfter time.Duration `json:"retryAfter,omitempty"`
}

// QuotaUsage is one quota's state as a counter last saw it.
type QuotaUsage struct {
	// Quota is the quota as the last take or add of it defined it.
	Quota Quota `json:"quota"`
	// Used is what its window holds at the time asked.
	Used float64 `json:"used"`
	// FreesAt is when the oldest unit in the window leaves it (zero when
	// the window is empty).
	FreesAt time.Time `json:"freesAt,omitzero"`
}

// QuotaCounter counts a tenant's use of its quotas (turn.Bindings.Quotas).
// memstore and pgstore implement it.
//
//   - Take counts in.Unit against in.Quota when the sliding window ending
//     at in.Now (the quota's units of the last WindowSeconds, a unit
//     counting while its time is after in.Now minus the window) has room
//     for in.Amount: Used + Amount <= Limit. A unit already counted is
//     allowed again without counting twice, whatever the window holds now
//     (a resumed step that was counted goes on). A refused unit is not
//     recorded, and RetryAfter says when the window will have room.
//     With in.Amount 0, Take records nothing and allows while Used <
//     Limit (the check before a call whose usage is known only after it).
//   - Add counts in.Unit with in.Amount whatever the window holds, after
//     the fact (the tokens and cost of a model call that ran), once per
//     unit: adding a unit again changes nothing. Allowed is always true.
//   - QuotaUsage lists the tenant's quotas as the last Take or Add of each
//     defined them, by name, with their use in the window ending at now
//     (zero: the store's clock).
//
// Takes and adds are atomic across goroutines and processes sharing the
// store: any number of concurrent takers of one quota never push a
// window past its limit. Counting is per (tenant, quota name): tenants
// never see or spend each other's units. A unit is remembered for at
// least its window plus QuotaUnitRetention, after which a take of it
// counts anew. An invalid input (CheckQuotas, an empty unit, a negative
// or non-finite amount) is *agents.InvalidMessageError.
type QuotaCounter interface {
	Take(ctx context.Context, in QuotaTakeInput) (QuotaTakeResult, error)
	Add(ctx context.Context, in QuotaTakeInput) (QuotaTakeResult, error)
	QuotaUsage(ctx context.Context, tenantID string, now time.Time) ([]QuotaUsage, error)
}

// QuotaUnitRetention is how long past its window a counter remembers a
// unit, so that a step resumed that much later is not counted again.
const QuotaUnitRetention = 24 * time.Hour

// CheckQuotaTake validates a take or add (counters call it first).
func CheckQuotaTake(in QuotaTakeInput) error {
	if err := CheckID("tenant id", in.TenantID); err != nil {
		return err
	}
	if err := CheckQuotas([]Quota{in.Quota}); err != nil {
		return err
	}
	if in.Unit == "" || len(in.Unit) > 1024 {
		return &agents.InvalidMessageError{Reason: "a quota unit is 1 to 1024 bytes"}
	}
	if in.Amount < 0 || math.IsNaN(in.Amount) || math.IsInf(in.Amount, 0) {
		return &agents.InvalidMessageError{Reason: fmt.Sprintf("quota amount %v is not a finite number of 0 or more", in.Amount)}
	}
	return nil
}

// QuotaUnit is a window's record of one counted unit, for QuotaRetryAfter.
type QuotaUnit struct {
	At     time.Time
	Amount float64
}

// QuotaRetryAfter returns how long after now the window of q, holding
// units (oldest first, all inside the window), has room for amount: the
// time the oldest units leave it until Used + amount <= Limit (or, for
// amount 0, Used < Limit). Zero when amount can never fit. Counters share
// it so they answer alike.
func QuotaRetryAfter(q Quota, units []QuotaUnit, amount float64, now time.Time) time.Duration {
	if amount > q.Limit {
		return 0
	}
	used := 0.0
	for _, u := range units {
		used += u.Amount
	}
	for _, u := range units {
		used -= u.Amount
		if QuotaFits(used, amount, q.Limit) {
			return max(u.At.Add(q.Window()).Sub(now), time.Microsecond)
		}
	}
	return 0
}

// QuotaFits reports whether a window holding used has room for amount, as
// Take decides it: used + amount <= limit, or for amount 0 (a check)
// used < limit.
func QuotaFits(used, amount, limit float64) bool {
	if amount == 0 {
		return used < limit
	}
	return used+amount <= limit
}
