package packtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kindgi/agents/pack"
)

// A call context every request of the suite carries.
var suiteCtx = map[string]any{"tenantId": "packtest", "runId": "packtest-run", "requestId": "packtest-req"}

// reply is a decoded response message: enough to check kind and code.
type reply struct {
	Kind    string       `json:"kind"`
	Code    string       `json:"code"`
	ToolID  string       `json:"toolId"`
	CheckID string       `json:"checkId"`
	Issues  []pack.Issue `json:"issues"`
}

func (t Target) client() *http.Client {
	if t.Client != nil {
		return t.Client
	}
	return &http.Client{Timeout: 30 * time.Second}
}

// send makes one request and reads the whole answer.
func send(ctx context.Context, t Target, method, path string, hdr http.Header, body io.Reader) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(t.BaseURL, "/")+path, body)
	if err != nil {
		return nil, nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	res, err := t.client().Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res, b, err
}

// authed returns headers with the token and a JSON content type.
func authed(t Target) http.Header {
	h := http.Header{}
	h.Set(pack.HeaderToken, t.Token)
	h.Set("Content-Type", pack.ContentType)
	h.Set(pack.HeaderProtocol, strconv.Itoa(pack.Version))
	return h
}

// invoke posts body to /v1/invoke with the token (plus extra headers) and
// checks what every invoke answer must be: 200, application/json, the
// duration and artifact-version headers, a response message valid against
// the schema.
func invoke(ctx context.Context, t Target, check string, extra http.Header, body []byte) (reply, []byte, error) {
	hdr := authed(t)
	for k, v := range extra {
		hdr[k] = v
	}
	res, raw, err := send(ctx, t, http.MethodPost, pack.PathInvoke, hdr, bytes.NewReader(body))
	if err != nil {
		return reply{}, nil, failf(check, "POST %s: %v", pack.PathInvoke, err)
	}
	if res.StatusCode != http.StatusOK {
		return reply{}, raw, failf(check, "POST %s answered %d, want 200: %s", pack.PathInvoke, res.StatusCode, short(raw))
	}
	if err := jsonType(res); err != nil {
		return reply{}, raw, failf(check, "%v", err)
	}
	if d := res.Header.Get(pack.HeaderDurationMs); d == "" {
		return reply{}, raw, failf(check, "the answer lacks %s", pack.HeaderDurationMs)
	} else if f, err := strconv.ParseFloat(d, 64); err != nil || f < 0 {
		return reply{}, raw, failf(check, "%s is %q, want a number of milliseconds ≥ 0", pack.HeaderDurationMs, d)
	}
	if res.Header.Get(pack.HeaderArtifactVersion) == "" {
		return reply{}, raw, failf(check, "the answer lacks %s", pack.HeaderArtifactVersion)
	}
	if issues := pack.ValidateResponse(raw); len(issues) > 0 {
		return reply{}, raw, failf(check, "the answer is not a valid response message: %v: %s", issues, short(raw))
	}
	var r reply
	if err := json.Unmarshal(raw, &r); err != nil {
		return reply{}, raw, failf(check, "decoding the answer: %v", err)
	}
	return r, raw, nil
}

func jsonType(res *http.Response) error {
	mt, _, err := mime.ParseMediaType(res.Header.Get("Content-Type"))
	if err != nil || mt != pack.ContentType {
		return fmt.Errorf("Content-Type is %q, want %s", res.Header.Get("Content-Type"), pack.ContentType)
	}
	return nil
}

// wantStatus sends a request and checks the status code.
func wantStatus(ctx context.Context, t Target, check, method, path string, hdr http.Header, body io.Reader, want int) (*http.Response, error) {
	res, raw, err := send(ctx, t, method, path, hdr, body)
	if err != nil {
		return nil, failf(check, "%s %s: %v", method, path, err)
	}
	if res.StatusCode != want {
		return res, failf(check, "%s %s answered %d, want %d: %s", method, path, res.StatusCode, want, short(raw))
	}
	return res, nil
}

// toolRequest returns an invoke of tool id (at version when not "").
func toolRequest(id, version string, input any) []byte {
	tool := map[string]any{"id": id}
	if version != "" {
		tool["version"] = version
	}
	b, _ := json.Marshal(map[string]any{"v": pack.Version, "kind": pack.KindInvoke, "tool": tool, "input": input, "ctx": suiteCtx})
	return b
}

// unknownToolID is a tool id no service indexes.
const unknownToolID = "packtest.no-such-tool"

func checkHealthz(ctx context.Context, t Target) error {
	_, err := wantStatus(ctx, t, "healthz", http.MethodGet, pack.PathHealthz, nil, nil, http.StatusOK)
	return err
}

func checkReadyz(ctx context.Context, t Target) error {
	_, err := wantStatus(ctx, t, "readyz", http.MethodGet, pack.PathReadyz, nil, nil, http.StatusOK)
	return err
}

func checkInfoToken(ctx context.Context, t Target) error {
	const name = "info-requires-token"
	wrong := http.Header{}
	wrong.Set(pack.HeaderToken, t.Token+"-wrong")
	bearer := http.Header{}
	bearer.Set("Authorization", "Bearer "+t.Token)
	for _, h := range []http.Header{nil, wrong, bearer} {
		if _, err := wantStatus(ctx, t, name, http.MethodGet, pack.PathInfo, h, nil, http.StatusUnauthorized); err != nil {
			return err
		}
	}
	return nil
}

// fetchInfo reads and checks /v1/info.
func fetchInfo(ctx context.Context, t Target, check string) (pack.Info, error) {
	res, raw, err := send(ctx, t, http.MethodGet, pack.PathInfo, authed(t), nil)
	if err != nil {
		return pack.Info{}, failf(check, "GET %s: %v", pack.PathInfo, err)
	}
	if res.StatusCode != http.StatusOK {
		return pack.Info{}, failf(check, "GET %s answered %d, want 200: %s", pack.PathInfo, res.StatusCode, short(raw))
	}
	if err := jsonType(res); err != nil {
		return pack.Info{}, failf(check, "%v", err)
	}
	if issues := pack.ValidateInfo(raw); len(issues) > 0 {
		return pack.Info{}, failf(check, "not a valid info message: %v: %s", issues, short(raw))
	}
	var info pack.Info
	if err := json.Unmarshal(raw, &info); err != nil {
		return pack.Info{}, failf(check, "decoding info: %v", err)
	}
	return info, nil
}

func checkInfo(ctx context.Context, t Target) error {
	info, err := fetchInfo(ctx, t, "info")
	if err != nil {
		return err
	}
	if info.Protocol != pack.Version {
		return failf("info", "protocol %d, want %d", info.Protocol, pack.Version)
	}
	if !slices.IsSorted(info.MissingEnv) {
		return failf("info", "missingEnv %q is not sorted", info.MissingEnv)
	}
	seen := map[string]bool{}
	for _, tool := range info.Tools {
		if seen[tool.ID] {
			return failf("info", "tool %q is listed twice", tool.ID)
		}
		seen[tool.ID] = true
	}
	return nil
}

func checkInvokeToken(ctx context.Context, t Target) error {
	const name = "invoke-requires-token"
	body := toolRequest(unknownToolID, "", map[string]any{})
	none := http.Header{}
	none.Set("Content-Type", pack.ContentType)
	bearer := none.Clone()
	bearer.Set("Authorization", "Bearer "+t.Token)
	for _, h := range []http.Header{none, bearer} {
		if _, err := wantStatus(ctx, t, name, http.MethodPost, pack.PathInvoke, h, bytes.NewReader(body), http.StatusUnauthorized); err != nil {
			return err
		}
	}
	return nil
}

func checkMethods(ctx context.Context, t Target) error {
	const name = "method-not-allowed"
	for _, c := range []struct{ method, path, allow string }{
		{http.MethodGet, pack.PathInvoke, http.MethodPost},
		{http.MethodPut, pack.PathInvoke, http.MethodPost},
		{http.MethodPost, pack.PathInfo, http.MethodGet},
		{http.MethodDelete, pack.PathInfo, http.MethodGet},
	} {
		res, err := wantStatus(ctx, t, name, c.method, c.path, authed(t), nil, http.StatusMethodNotAllowed)
		if err != nil {
			return err
		}
		if !strings.Contains(res.Header.Get("Allow"), c.allow) {
			return failf(name, "%s %s: Allow is %q, want it to name %s", c.method, c.path, res.Header.Get("Allow"), c.allow)
		}
	}
	return nil
}

func checkNotFound(ctx context.Context, t Target) error {
	for _, p := range []string{"/v1/packtest-nowhere", "/v2/invoke"} {
		if _, err := wantStatus(ctx, t, "not-found", http.MethodGet, p, authed(t), nil, http.StatusNotFound); err != nil {
			return err
		}
	}
	return nil
}

func checkMediaType(ctx context.Context, t Target) error {
	body := toolRequest(unknownToolID, "", map[string]any{})
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", ""} {
		h := authed(t)
		if ct == "" {
			h.Del("Content-Type")
		} else {
			h.Set("Content-Type", ct)
		}
		if _, err := wantStatus(ctx, t, "unsupported-media-type", http.MethodPost, pack.PathInvoke, h, bytes.NewReader(body), http.StatusUnsupportedMediaType); err != nil {
			return err
		}
	}
	return nil
}

func checkMediaTypeParams(ctx context.Context, t Target) error {
	const name = "media-type-parameters"
	h := http.Header{}
	h.Set("Content-Type", "application/json; charset=utf-8")
	r, raw, err := invoke(ctx, t, name, h, toolRequest(unknownToolID, "", map[string]any{}))
	if err != nil {
		return err
	}
	if r.Code != pack.CodeUnknownTool {
		return failf(name, "answered %s, want unknown-tool: %s", r.Code, short(raw))
	}
	return nil
}

// padded returns an invoke of the unknown tool padded to exactly size
// bytes (size must exceed the unpadded request).
func padded(size int) []byte {
	head := toolRequest(unknownToolID, "", map[string]any{"pad": ""})
	pad := size - len(head)
	i := bytes.Index(head, []byte(`"pad":""`)) + len(`"pad":"`)
	out := make([]byte, 0, size)
	out = append(out, head[:i]...)
	out = append(out, bytes.Repeat([]byte("x"), pad)...)
	return append(out, head[i:]...)
}

// hideLength makes the body's length unknown, so it is sent chunked.
type hideLength struct{ io.Reader }

func checkTooLarge(ctx context.Context, t Target) error {
	const name = "payload-too-large"
	body := padded(pack.MaxBodyBytes + 1)
	if _, err := wantStatus(ctx, t, name, http.MethodPost, pack.PathInvoke, authed(t), bytes.NewReader(body), http.StatusRequestEntityTooLarge); err != nil {
		return err
	}
	_, err := wantStatus(ctx, t, name+" (chunked)", http.MethodPost, pack.PathInvoke, authed(t), hideLength{bytes.NewReader(body)}, http.StatusRequestEntityTooLarge)
	return err
}

func checkAtLimit(ctx context.Context, t Target) error {
	const name = "body-at-limit"
	r, raw, err := invoke(ctx, t, name, nil, padded(pack.MaxBodyBytes))
	if err != nil {
		return err
	}
	if r.Code != pack.CodeUnknownTool {
		return failf(name, "answered %s %s, want unknown-tool: %s", r.Kind, r.Code, short(raw))
	}
	return nil
}

func checkInvalidRequest(ctx context.Context, t Target) error {
	const name = "invalid-request"
	valid := func(mut func(m map[string]any)) []byte {
		m := map[string]any{"v": pack.Version, "kind": pack.KindInvoke, "tool": map[string]any{"id": unknownToolID}, "input": map[string]any{}, "ctx": suiteCtx}
		mut(m)
		b, _ := json.Marshal(m)
		return b
	}
	for _, c := range []struct {
		what string
		body []byte
	}{
		{"bad JSON", []byte(`{"v":2,"kind":"invoke",`)},
		{"not an object", []byte(`[1,2,3]`)},
		{"v 1", valid(func(m map[string]any) { m["v"] = 1 })},
		{"v 3", valid(func(m map[string]any) { m["v"] = 3 })},
		{"unknown kind", valid(func(m map[string]any) { m["kind"] = "launch" })},
		{"no kind", valid(func(m map[string]any) { delete(m, "kind") })},
		{"no tool", valid(func(m map[string]any) { delete(m, "tool") })},
		{"no input", valid(func(m map[string]any) { delete(m, "input") })},
		{"no ctx", valid(func(m map[string]any) { delete(m, "ctx") })},
		{"no tenantId", valid(func(m map[string]any) { m["ctx"] = map[string]any{"runId": "r"} })},
		{"check without trace", []byte(`{"v":2,"kind":"check-invoke","check":{"id":"packtest.no-such-check"},"config":{}}`)},
	} {
		r, raw, err := invoke(ctx, t, name+" ("+c.what+")", nil, c.body)
		if err != nil {
			return err
		}
		if r.Kind != pack.KindError || r.Code != pack.CodeInvalidRequest {
			return failf(name, "%s: answered %s %s, want error invalid-request: %s", c.what, r.Kind, r.Code, short(raw))
		}
		if len(r.Issues) == 0 {
			return failf(name, "%s: invalid-request without issues: %s", c.what, short(raw))
		}
	}
	return nil
}

func checkUnknownTool(ctx context.Context, t Target) error {
	return expectUnknown(ctx, t, "unknown-tool", toolRequest(unknownToolID, "", map[string]any{}), pack.CodeUnknownTool, "toolId", unknownToolID,
		func(r reply) string { return r.ToolID })
}

func checkUnknownCheck(ctx context.Context, t Target) error {
	const id = "packtest.no-such-check"
	body := []byte(`{"v":2,"kind":"check-invoke","check":{"id":"` + id + `"},"config":{},"trace":{}}`)
	return expectUnknown(ctx, t, "unknown-check", body, pack.CodeUnknownCheck, "checkId", id,
		func(r reply) string { return r.CheckID })
}

// expectUnknown sends body, which names an id the pack lacks, and wants
// the error code for it naming that id in field (got reads it).
func expectUnknown(ctx context.Context, t Target, name string, body []byte, code, field, id string, got func(reply) string) error {
	r, raw, err := invoke(ctx, t, name, nil, body)
	if err != nil {
		return err
	}
	if r.Code != code || got(r) != id {
		return failf(name, "answered %s (%s %q), want %s for %s: %s", r.Code, field, got(r), code, id, short(raw))
	}
	return nil
}

func checkVersionMismatch(ctx context.Context, t Target) error {
	const name = "tool-version-mismatch"
	info, err := fetchInfo(ctx, t, name)
	if err != nil {
		return err
	}
	for _, tool := range info.Tools {
		if tool.Version == "" {
			continue
		}
		other := "0.0.0-packtest.1"
		if tool.Version == other {
			other = "0.0.0-packtest.2"
		}
		r, raw, err := invoke(ctx, t, name, nil, toolRequest(tool.ID, other, map[string]any{}))
		if err != nil {
			return err
		}
		if r.Code != pack.CodeToolVersionMismatch || r.ToolID != tool.ID {
			return failf(name, "%s@%s answered %s (toolId %q), want tool-version-mismatch: %s", tool.ID, other, r.Code, r.ToolID, short(raw))
		}
		return nil
	}
	return nil // no versioned tool: nothing to check
}
