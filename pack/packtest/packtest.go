// Package packtest is a black-box conformance suite for pack services: it
// speaks HTTP to any service of pack protocol v2, in Go or another
// language, given its base URL and token (or a way to start it), and checks
// the transport contract: statuses, headers, error codes, and that every
// message the service answers is valid against the protocol's JSON Schema.
//
// In a Go test:
//
//	packtest.Run(t, packtest.Target{BaseURL: url, Token: token})
//
// Outside a test (a probe command), run the named checks one by one:
//
//	for _, c := range packtest.ChecksFor(target) {
//		err := c.Run(ctx, target)
//		fmt.Println(c.Name, err == nil)
//	}
//
// The generic checks need nothing but a ready service. Behaviour that
// depends on the service's own tools (a validation failure, a throw, a
// deadline) is checked with Cases the caller supplies.
package packtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// CodeConformanceFailed is the code of a *Failure.
const CodeConformanceFailed = "pack-conformance-failed"

// Target is the service under test.
type Target struct {
	// BaseURL is the service's base URL, e.g. http://127.0.0.1:8080. It
	// may be empty when Start returns it.
	BaseURL string
	// Token is the service token sent in kindgi-pack-token.
	Token string
	// Start, when set, is called once by Run before the checks: it starts
	// the service and returns its base URL ("" keeps BaseURL) and a stop
	// function Run calls at the end of the test.
	Start func(ctx context.Context) (baseURL string, stop func(), err error)
	// Client is the HTTP client to use; nil means a client with a 30 s
	// timeout.
	Client *http.Client
	// Cases are service-specific requests with their expected outcome.
	Cases []Case
}

// Case is one request the service must answer with a given response.
type Case struct {
	// Name names the case in reports.
	Name string
	// Request is the request message: a json.RawMessage or []byte is sent
	// as is, anything else is JSON-encoded.
	Request any
	// TimeoutMs, when positive, is sent as kindgi-timeout-ms.
	TimeoutMs int
	// WantKind is the response kind expected: result, check-result or
	// error.
	WantKind string
	// WantCode is the error code expected when WantKind is error.
	WantCode string
	// Verify, when set, is given the response body for further checks.
	Verify func(body []byte) error
}

// Check is one named conformance check.
type Check struct {
	// Name is short and stable, e.g. "info-requires-token".
	Name string
	// Rule says what the check verifies, in the words of spec/pack-protocol.md.
	Rule string
	// Run returns nil when the service passes, else a *Failure.
	Run func(ctx context.Context, target Target) error
}

// Failure is the error of a check the service does not pass.
type Failure struct {
	Check   string
	Message string
}

// Error implements the error interface.
func (f *Failure) Error() string { return f.Check + ": " + f.Message }

// Code returns pack-conformance-failed.
func (f *Failure) Code() string { return CodeConformanceFailed }

// Checks returns the generic checks, which hold for any ready pack
// service, in a stable order.
func Checks() []Check {
	return []Check{
		{"healthz", "GET /healthz answers 200 without a token", checkHealthz},
		{"readyz", "GET /readyz answers 200 without a token once the service is ready", checkReadyz},
		{"info-requires-token", "GET /v1/info answers 401 without the token, with a wrong token, and with the token only in Authorization", checkInfoToken},
		{"info", "GET /v1/info answers an info message valid against the schema, protocol 2, missingEnv sorted", checkInfo},
		{"invoke-requires-token", "POST /v1/invoke answers 401 without the token and with the token only in Authorization", checkInvokeToken},
		{"method-not-allowed", "a wrong method answers 405 with an Allow header naming the right one", checkMethods},
		{"not-found", "an unknown path answers 404", checkNotFound},
		{"unsupported-media-type", "a body that is not application/json answers 415", checkMediaType},
		{"media-type-parameters", "application/json with parameters (charset) is accepted", checkMediaTypeParams},
		{"payload-too-large", "a body over 10 MiB answers 413, with or without Content-Length", checkTooLarge},
		{"body-at-limit", "a body of exactly 10 MiB is accepted", checkAtLimit},
		{"invalid-request", "bad JSON, v other than 2, an unknown kind and missing fields answer 200 invalid-request with issues", checkInvalidRequest},
		{"unknown-tool", "an invoke of a tool not in the index answers unknown-tool with toolId", checkUnknownTool},
		{"unknown-check", "a check-invoke of a check not in the index answers unknown-check with checkId", checkUnknownCheck},
		{"tool-version-mismatch", "an invoke naming another version of an indexed tool answers tool-version-mismatch", checkVersionMismatch},
	}
}

// ChecksFor returns the generic checks followed by one check per case of
// target, named "case/<name>".
func ChecksFor(target Target) []Check {
	checks := Checks()
	for _, c := range target.Cases {
		c := c
		rule := "answers " + c.WantKind
		if c.WantCode != "" {
			rule += " " + c.WantCode
		}
		checks = append(checks, Check{Name: "case/" + c.Name, Rule: rule, Run: func(ctx context.Context, t Target) error {
			return runCase(ctx, t, c)
		}})
	}
	return checks
}

// Run starts the target when it has a Start function, then runs every
// check of ChecksFor(target) as a subtest.
func Run(t *testing.T, target Target) {
	t.Helper()
	if target.Start != nil {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		url, stop, err := target.Start(ctx)
		cancel()
		if err != nil {
			t.Fatalf("starting the pack service: %v", err)
		}
		if stop != nil {
			t.Cleanup(stop)
		}
		if url != "" {
			target.BaseURL = url
		}
	}
	if target.BaseURL == "" {
		t.Fatal("packtest: the target has no base URL")
	}
	for _, c := range ChecksFor(target) {
		t.Run(c.Name, func(t *testing.T) {
			if err := c.Run(t.Context(), target); err != nil {
				t.Errorf("%v\nrule: %s", err, c.Rule)
			}
		})
	}
}

// failf returns a *Failure of the named check.
func failf(check, format string, args ...any) error {
	return &Failure{Check: check, Message: fmt.Sprintf(format, args...)}
}

// runCase sends one case and checks the response.
func runCase(ctx context.Context, t Target, c Case) error {
	name := "case/" + c.Name
	var body []byte
	switch r := c.Request.(type) {
	case json.RawMessage:
		body = r
	case []byte:
		body = r
	default:
		var err error
		if body, err = json.Marshal(r); err != nil {
			return failf(name, "encoding the request: %v", err)
		}
	}
	hdr := http.Header{}
	if c.TimeoutMs > 0 {
		hdr.Set("kindgi-timeout-ms", fmt.Sprint(c.TimeoutMs))
	}
	msg, raw, err := invoke(ctx, t, name, hdr, body)
	if err != nil {
		return err
	}
	if msg.Kind != c.WantKind {
		return failf(name, "kind %q, want %q: %s", msg.Kind, c.WantKind, raw)
	}
	if c.WantKind == "error" && c.WantCode != "" && msg.Code != c.WantCode {
		return failf(name, "code %q, want %q: %s", msg.Code, c.WantCode, raw)
	}
	if c.Verify != nil {
		if err := c.Verify(raw); err != nil {
			return failf(name, "%v: %s", err, raw)
		}
	}
	return nil
}

// short trims a body for a failure message.
func short(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
