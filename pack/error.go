package pack

import (
	"fmt"
	"net/http"
)

// Codes of a client *Error that come from the transport rather than from an
// error message. A 200 error message gives the message's own code (one of
// the Code… constants of the protocol).
const (
	// CodeUnauthorized: 401, the token was refused.
	CodeUnauthorized = "unauthorized"
	// CodeNotFound: 404.
	CodeNotFound = "not-found"
	// CodeMethodNotAllowed: 405.
	CodeMethodNotAllowed = "method-not-allowed"
	// CodePayloadTooLarge: 413, the request body is over 10 MiB.
	CodePayloadTooLarge = "payload-too-large"
	// CodeUnsupportedMediaType: 415, the request was not application/json.
	CodeUnsupportedMediaType = "unsupported-media-type"
	// CodeServiceError: 500 (the service itself failed) or any other
	// status the protocol does not define.
	CodeServiceError = "service-error"
	// CodeUnavailable: 503 after the retries ran out (or the context left
	// no time to wait for Retry-After). The call did not run.
	CodeUnavailable = "unavailable"
	// CodeInvalidResponse: a 200 answer that is not a valid response (or
	// info) message, or a response of the wrong kind.
	CodeInvalidResponse = "invalid-response"
	// CodeTransport: the connection failed. When it failed after the
	// request was sent the call may have run; it is not retried.
	CodeTransport = "transport-error"
)

// Error is the error of every Client call. ErrorCode is its stable code
// (Code returns it): a transport code (CodeUnauthorized, …), the code of a
// 200 error message (CodeHandlerThrow, …; Response then holds the message),
// or CodeDeadlineExceeded / CodeCancelled when the caller's context ended
// (Err is then the context's error, so errors.Is(err,
// context.DeadlineExceeded) holds).
type Error struct {
	// Status is the HTTP status of the answer; 0 when there was none.
	Status int
	// ErrorCode is the stable code of the error.
	ErrorCode string
	// Message says what happened.
	Message string
	// Response is the error message the service answered, for a 200 error.
	Response *ErrorMessage
	// Err is the cause, if any.
	Err error
}

// Error returns a one-line description.
func (e *Error) Error() string {
	s := "pack: " + e.ErrorCode
	if e.Status != 0 && e.Status != http.StatusOK {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Response != nil {
		if id := e.Response.ToolID + e.Response.CheckID; id != "" {
			s += " [" + id + "]"
		}
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Code returns the stable code of the error (agents.CodeOf reads it).
func (e *Error) Code() string { return e.ErrorCode }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// statusCode maps a non-200 status to its transport code.
func statusCode(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return CodeUnauthorized
	case http.StatusNotFound:
		return CodeNotFound
	case http.StatusMethodNotAllowed:
		return CodeMethodNotAllowed
	case http.StatusRequestEntityTooLarge:
		return CodePayloadTooLarge
	case http.StatusUnsupportedMediaType:
		return CodeUnsupportedMediaType
	case http.StatusServiceUnavailable:
		return CodeUnavailable
	}
	return CodeServiceError
}
