package packserver

import (
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kindgi/agents/pack"
)

// RetryAfterSeconds is the Retry-After value of every 503 answer.
const RetryAfterSeconds = "1"

// Options configure a Server. The zero value is not usable: Token is
// required.
type Options struct {
	// Token is the service token callers must send in kindgi-pack-token on
	// /v1/invoke and /v1/info. Required.
	Token string
	// MaxConcurrency caps the calls in progress; a call beyond it is
	// answered 503 without running. 0 means no cap.
	MaxConcurrency int
	// LookupEnv reads the environment for the index's required env names;
	// nil means os.LookupEnv. The names are read once, by New.
	LookupEnv func(string) (string, bool)
	// Logger, when set, receives one record per invoke that ends in an
	// error message (code, tool or check id, duration).
	Logger *slog.Logger
	// BodyTimeout bounds how long a caller may take to send its request
	// body, counted from the request's arrival; the call's own deadline
	// (kindgi-timeout-ms) bounds it too, whichever is first. A caller past
	// it is answered invalid-request and the connection closed. 0 means
	// DefaultBodyTimeout.
	BodyTimeout time.Duration
}

// DefaultBodyTimeout is the body timeout of a Server whose Options set
// none: 10 MiB at 350 KB/s.
const DefaultBodyTimeout = 30 * time.Second

// Server is a pack service as an http.Handler: POST /v1/invoke, GET
// /v1/info, GET /healthz and GET /readyz. It is safe for concurrent use.
type Server struct {
	index    *Index
	bound    *bound
	token    []byte
	logger   *slog.Logger
	infoJSON []byte
	// artifactHeader is the kindgi-artifact-version header value, shared
	// by every answer (net/http only reads it).
	artifactHeader []string
	// notReady is why the service is not ready ("" when it is), apart
	// from draining: the strict env check.
	notReady string

	bodyTimeout time.Duration
	// bodyBudget bounds the bytes buffered for bodies still being read
	// (not yet admitted): MaxConcurrency × (MaxBodyBytes+1), the bound the
	// admitted calls' bodies have; 0 (no cap) means unbounded.
	bodyBudget int64
	bodyBytes  atomic.Int64

	mu       sync.Mutex
	cap      int
	inflight int
	draining bool
	drained  chan struct{} // closed once draining and inflight == 0
}

var _ http.Handler = (*Server)(nil)

// New builds a Server for idx from the registered modules: it checks that
// every module the index names is registered and that every indexed tool
// and check has a handler, compiles the tool schemas, then runs the Init of
// each module the index names, in index order. Any problem is reported in a
// *BootError listing all of them. The returned Server is ready unless the
// index's strict env check fails.
func New(ctx context.Context, idx *Index, modules []Module, opts *Options) (*Server, error) {
	if opts == nil {
		opts = &Options{}
	}
	if idx == nil {
		return nil, &BootError{Problems: []string{"no index"}}
	}
	var problems []string
	if opts.Token == "" {
		problems = append(problems, "no service token (KINDGI_PACK_SERVICE_TOKEN is unset or empty)")
	}
	if opts.MaxConcurrency < 0 {
		problems = append(problems, "max concurrency must not be negative")
	}
	if opts.BodyTimeout < 0 {
		problems = append(problems, "body timeout must not be negative")
	}
	if p := idx.check(); len(p) > 0 {
		return nil, &BootError{Problems: append(problems, p...)}
	}
	b, p := bind(idx, modules)
	problems = append(problems, p...)
	if len(problems) > 0 {
		return nil, &BootError{Problems: problems}
	}
	// Compile the protocol schema now rather than on the first call.
	_ = pack.ValidateRequest([]byte("{}"))
	if p := initModules(ctx, idx, modules); len(p) > 0 {
		return nil, &BootError{Problems: p}
	}
	lookup := opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	s := &Server{
		index:   idx,
		bound:   b,
		token:   []byte(opts.Token),
		logger:  opts.Logger,
		cap:     opts.MaxConcurrency,
		drained: make(chan struct{}),

		bodyTimeout: cmp.Or(opts.BodyTimeout, DefaultBodyTimeout),
		bodyBudget:  int64(opts.MaxConcurrency) * (pack.MaxBodyBytes + 1),

		artifactHeader: []string{idx.ArtifactVersion},
	}
	info := pack.Info{
		Protocol:        pack.Version,
		PackID:          idx.PackID,
		PackVersion:     idx.PackVersion,
		ArtifactVersion: idx.ArtifactVersion,
		MissingEnv:      idx.MissingEnv(lookup),
	}
	for _, t := range idx.Tools {
		info.Tools = append(info.Tools, pack.InfoTool{ID: t.ID, Version: t.Version})
	}
	for _, g := range idx.Guardrails {
		info.Checks = append(info.Checks, g.Key())
	}
	slices.Sort(info.Checks)
	raw, err := json.Marshal(info)
	if err != nil {
		return nil, &BootError{Problems: []string{"encoding info: " + err.Error()}}
	}
	s.infoJSON = raw
	if idx.StrictEnv && len(info.MissingEnv) > 0 {
		s.notReady = "missing required env"
	}
	return s, nil
}

// Info returns the service's info message, as GET /v1/info answers it.
func (s *Server) Info() pack.Info {
	var info pack.Info
	_ = json.Unmarshal(s.infoJSON, &info) // written by New from the same type
	return info
}

// Ready reports whether the service takes calls: it is not draining and,
// under the strict env check, no required env variable is missing.
func (s *Server) Ready() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.draining && s.notReady == ""
}

// Drain stops the service taking calls (/readyz and new invokes answer 503
// from now on) and waits until every call in progress has finished or ctx
// is done, whichever is first; it returns ctx.Err() in the latter case.
// Draining cannot be undone.
func (s *Server) Drain(ctx context.Context) error {
	s.mu.Lock()
	if !s.draining {
		s.draining = true
		if s.inflight == 0 {
			close(s.drained)
		}
	}
	s.mu.Unlock()
	select {
	case <-s.drained:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// InFlight returns the number of calls in progress: admitted invokes whose
// handler has not returned yet.
func (s *Server) InFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inflight
}

// acquire admits one call, or returns why it cannot run now. An admitted
// call must be released exactly once.
func (s *Server) acquire() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if why := s.refusal(); why != "" {
		return why
	}
	s.inflight++
	return ""
}

// admissible returns why a call could not be admitted now, or "".
func (s *Server) admissible() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refusal()
}

// refusal is why a call cannot run now; s.mu must be held.
func (s *Server) refusal() string {
	switch {
	case s.draining:
		return "draining"
	case s.notReady != "":
		return s.notReady
	case s.cap > 0 && s.inflight >= s.cap:
		return "at the concurrency cap"
	}
	return ""
}

// reserve takes n bytes from the budget for bodies in transit; false when
// that would exceed it.
func (s *Server) reserve(n int64) bool {
	if s.bodyBudget == 0 {
		return true
	}
	if s.bodyBytes.Add(n) > s.bodyBudget {
		s.bodyBytes.Add(-n)
		return false
	}
	return true
}

func (s *Server) unreserve(n int64) {
	if s.bodyBudget != 0 {
		s.bodyBytes.Add(-n)
	}
}

func (s *Server) release() {
	s.mu.Lock()
	s.inflight--
	if s.draining && s.inflight == 0 {
		close(s.drained)
	}
	s.mu.Unlock()
}

// ServeHTTP routes the transport's four endpoints. A failure of the
// service's own code (not of a handler) is answered 500.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			transportError(w, http.StatusInternalServerError, "the pack service failed")
			s.logFailure(v, debug.Stack())
		}
	}()
	switch r.URL.Path {
	case pack.PathInvoke:
		if r.Method != http.MethodPost {
			methodNotAllowed(w, "POST")
			return
		}
		s.serveInvoke(w, r)
	case pack.PathInfo:
		if !isGet(r) {
			methodNotAllowed(w, "GET, HEAD")
			return
		}
		if !s.authorized(r) {
			transportError(w, http.StatusUnauthorized, "missing or wrong "+pack.HeaderToken)
			return
		}
		w.Header().Set("Content-Type", pack.ContentType)
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(s.infoJSON)
	case pack.PathHealthz:
		if !isGet(r) {
			methodNotAllowed(w, "GET, HEAD")
			return
		}
		writeStatus(w, http.StatusOK, "ok")
	case pack.PathReadyz:
		if !isGet(r) {
			methodNotAllowed(w, "GET, HEAD")
			return
		}
		s.mu.Lock()
		reason := s.notReady
		if s.draining {
			reason = "draining"
		}
		s.mu.Unlock()
		if reason != "" {
			w.Header().Set("Retry-After", RetryAfterSeconds)
			writeStatus(w, http.StatusServiceUnavailable, reason)
			return
		}
		writeStatus(w, http.StatusOK, "ready")
	default:
		transportError(w, http.StatusNotFound, "no such endpoint: "+r.URL.Path)
	}
}

// logFailure logs a failure of the service's own code; the logger itself
// may be what failed, so a panic here is swallowed.
func (s *Server) logFailure(v any, stack []byte) {
	if s.logger == nil {
		return
	}
	defer func() { _ = recover() }()
	s.logger.Error("pack service failed", "panic", fmt.Sprint(v), "stack", string(stack))
}

// authorized compares the token in constant time: the time taken
// depends on the length of the expected token only, never on the bytes
// or the length of the one sent (so neither the content nor the length of
// the expected token leaks through timing). Authorization is deliberately
// ignored.
func (s *Server) authorized(r *http.Request) bool {
	return tokenEqual(header(r, keyToken), s.token)
}

// tokenEqual reports whether got equals want, in time that depends only on
// len(want): every byte of want is compared with a byte of got (cycling
// through got when it is shorter), and the lengths are compared last.
func tokenEqual(got string, want []byte) bool {
	if got == "" || len(want) == 0 {
		return false
	}
	var diff byte
	for i, c := range want {
		diff |= c ^ got[i%len(got)]
	}
	sameLen := subtle.ConstantTimeEq(int32(min(len(got), math.MaxInt32)), int32(len(want)))
	return subtle.ConstantTimeByteEq(diff, 0)&sameLen == 1
}

func isGet(r *http.Request) bool { return r.Method == http.MethodGet || r.Method == http.MethodHead }

// isJSON reports whether a Content-Type is application/json; parameters
// such as charset are allowed.
func isJSON(ct string) bool {
	if ct == pack.ContentType {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == pack.ContentType
}

// statusBody is the JSON body of the health endpoints and of every non-2xx
// answer.
type statusBody struct {
	Status  int    `json:"status"`
	Message string `json:"message"`
}

func writeStatus(w http.ResponseWriter, code int, message string) {
	w.Header().Set("Content-Type", pack.ContentType)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(statusBody{Status: code, Message: message})
}

func transportError(w http.ResponseWriter, code int, message string) {
	writeStatus(w, code, message)
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	transportError(w, http.StatusMethodNotAllowed, "method not allowed; use "+allow)
}

// errBodyTooLarge is returned by readBody for a body over the limit.
var errBodyTooLarge = errors.New("body too large")

// errBodyBudget is returned by readBody when the budget for bodies in
// transit is spent.
var errBodyBudget = errors.New("no budget for the body")
