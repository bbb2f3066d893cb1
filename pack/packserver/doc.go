// Package packserver is a pack service written in Go: the HTTP transport and
// the process contract of pack protocol v2 around tool handlers and
// guardrail checks registered in code.
//
// # Modules
//
// Go has no dynamic import, so the pack code a service runs is linked into
// its binary. Each pack module is a Module value: a name, its tool handlers
// by tool id, its checks by check id, and an optional Init. Main is the
// whole main function of a service binary:
//
//	func main() { packserver.Main(demo.Module(), billing.Module()) }
//
// The index file says which of the registered modules the service serves
// and with which schemas. Every module the index names must be registered,
// every indexed tool and check must have a handler in its module, and every
// named module's Init must succeed before the service listens; otherwise it
// exits 1 after one {"kind":"boot-failed","problems":[…]} line on stderr.
// Because handlers are checked at boot, this service never answers
// handler-import-failed.
//
// # Index file
//
// The index is one JSON object; unknown fields are refused:
//
//	{
//	  "packId": "demo",                       // required; info.packId
//	  "packVersion": "1.0.0",                 // required, semver; info.packVersion
//	  "artifactVersion": "demo-1.0.0+abc",    // required; kindgi-artifact-version
//	  "modules": ["demo"],                    // modules to initialise before listening
//	  "tools": [{
//	    "id": "demo.echo",                    // required, unique
//	    "version": "1.0.0",                   // required, semver; checked against tool.version
//	    "module": "demo",                     // one of modules; handler = Tools["demo.echo"]
//	    "description": "Returns its input.",  // optional
//	    "inputSchema": {…},                   // required JSON Schema (draft 2020-12 default)
//	    "outputSchema": {…}                   // required JSON Schema
//	  }],
//	  "guardrails": [{
//	    "id": "demo.no-digits",               // required
//	    "checkId": "…",                       // optional: the id the check is invoked by
//	    "module": "demo"                      // handler = Checks[checkId, else id]
//	  }],
//	  "requiredEnv": ["DEMO_REGION"],         // reported in info.missingEnv when unset or empty
//	  "strictEnv": false                      // true: not ready while any is missing
//	}
//
// Schemas must be self-contained (no references to other documents) and
// are compiled at boot with format assertion on; input and output failures
// are answered with Ajv-shaped issues. Numbers are validated as float64,
// like Ajv's JavaScript numbers (a number beyond float64's range is
// validated exactly).
//
// # Transport
//
// Server is an http.Handler serving POST /v1/invoke, GET /v1/info (both
// need the kindgi-pack-token header; Authorization is ignored), GET
// /healthz and GET /readyz. Every outcome of running pack code is a 200
// answer with a response message: result, check-result, or an error with
// code input-validation-failed, output-validation-failed, handler-throw
// (a returned error or a panic, with its cause), unknown-tool,
// unknown-check, tool-version-mismatch, deadline-exceeded (the
// kindgi-timeout-ms deadline, default 120000), cancelled (the caller
// closed the connection) or invalid-request (a body that is not a request
// message, or a bad kindgi-timeout-ms). Non-2xx answers are transport
// level: 401, 404, 405 (with Allow), 413 (over 10 MiB), 415 (not
// application/json), 503 with Retry-After (not ready, draining, or at the
// concurrency cap) and 500. A call answered 503 did not run. Invoke
// answers carry kindgi-duration-ms and kindgi-artifact-version.
//
// kindgi-timeout-ms is a whole number of milliseconds ≥ 0, counted from
// the request's arrival; any value past what a time.Duration holds (about
// 292 years), however many digits it has, is clamped to that. The body is
// read before the call takes a slot under the concurrency cap, within the
// call's deadline and Options.BodyTimeout (default 30 s): a caller that
// stalls part-way through its body holds no slot and is answered
// deadline-exceeded (or invalid-request, past the body timeout) with
// Connection: close when its time is up, while other callers are served.
// Bodies still being read hold at most MaxConcurrency × 10 MiB between
// them; past that a call is answered 503.
//
// A member named twice in a request ("tool", "ctx", an id…) is decided as
// the protocol schema check (pack.ValidateRequest) decides it: its decode
// keeps the last occurrence, whole, so the request is valid, and runs,
// exactly when it would be with only the last occurrence there.
//
// A handler runs on the request's goroutine with a context that ends at
// the deadline or when the caller goes away. A handler that ignores it is
// still answered on time (deadline-exceeded, with Connection: close); its
// slot under the concurrency cap, and a drain, wait until it returns.
//
// # Process
//
// Main reads:
//
//   - --index: the index file; a relative path is resolved against
//     --module-root when that is given.
//   - --module-root: the directory of the pack's files. Modules are linked
//     in, so nothing is imported from it; it only anchors a relative
//     --index (default: the working directory).
//   - --host: the address to listen on (default 0.0.0.0).
//   - KINDGI_PACK_SERVICE_TOKEN: the service token, required. It is read
//     and removed from the process environment first, before any module's
//     Init runs, so pack code does not find it with os.Getenv and child
//     processes do not inherit it. On Linux its value is also overwritten
//     in the start environment block, so /proc/self/environ does not show
//     it either.
//   - PORT: the port (default 8080; 0 picks a free one).
//   - KINDGI_PACK_SERVICE_MAX_CONCURRENCY: the cap on calls in progress
//     (unset or 0: no cap).
//
// Once listening it writes {"kind":"listening","port":N,…} on stderr.
// SIGTERM (or SIGINT) makes /readyz and new invokes answer 503 while the
// calls in progress finish, for up to DrainTimeout (8 s); calls still
// running then are cancelled, and the process exits 0. Each invoke that
// ends in an error message is logged as one JSON line on stderr.
package packserver
