package mcp

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// terminateAfter is how long a stdio server has to exit after its stdin
// closes before it is sent SIGTERM (and, as long again later, killed).
const terminateAfter = 2 * time.Second

// inheritedEnv are the variables of the host's environment a stdio server
// gets (when set), before Server.Env.
var inheritedEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "LANG", "TERM"}

// transport returns a fresh transport to the server.
func (c *conn) transport(ctx context.Context) (sdk.Transport, error) {
	s := c.cfg
	switch {
	case s.Transport != nil:
		return s.Transport, nil
	case s.Command != "":
		cmd := exec.Command(s.Command, s.Args...)
		cmd.Dir = s.Dir
		cmd.Env = serverEnv(s.Env)
		if w := c.src.opts.Stderr; w != nil {
			cmd.Stderr = w
		}
		return &sdk.CommandTransport{Command: cmd, TerminateDuration: terminateAfter}, nil
	default:
		headers := make(http.Header, len(s.Headers)+len(s.SecretHeaders))
		for k, v := range s.Headers {
			headers.Set(k, v)
		}
		if r := c.src.opts.Secrets; r != nil {
			for h, name := range s.SecretHeaders {
				v, err := r.ResolveSecret(ctx, c.tenant, name)
				if err != nil {
					if ctx.Err() != nil {
						return nil, ctx.Err()
					}
					return nil, c.failure("resolve secret "+name, err)
				}
				headers.Set(h, v)
			}
		}
		base := http.DefaultTransport
		client := &http.Client{}
		if hc := c.src.opts.HTTPClient; hc != nil {
			*client = *hc
			if hc.Transport != nil {
				base = hc.Transport
			}
		}
		client.Transport = &headerTransport{base: base, headers: headers, secretHeaders: s.SecretHeaders}
		return &sdk.StreamableClientTransport{Endpoint: s.URL, HTTPClient: client}, nil
	}
}

// serverEnv is a stdio server's environment.
func serverEnv(extra map[string]string) []string {
	var env []string
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			if _, over := extra[k]; !over {
				env = append(env, k+"="+v)
			}
		}
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+extra[k])
	}
	return env
}

// callSecretsKey carries a call's resolved secrets to headerTransport.
type callSecretsKey struct{}

func withCallSecrets(ctx context.Context, secrets map[string]string) context.Context {
	return context.WithValue(ctx, callSecretsKey{}, secrets)
}

// headerTransport adds a server's headers to every request: the static
// ones, the secret ones resolved when the session connected, and, on a
// request made for a call, the call's own secret values in their place.
type headerTransport struct {
	base          http.RoundTripper
	headers       http.Header
	secretHeaders map[string]string // header → secret name
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	secrets, _ := req.Context().Value(callSecretsKey{}).(map[string]string)
	if len(t.headers) == 0 && secrets == nil {
		return t.base.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	for k, vs := range t.headers {
		req.Header[k] = vs
	}
	for h, name := range t.secretHeaders {
		if v, ok := secrets[name]; ok {
			req.Header.Set(h, v)
		}
	}
	return t.base.RoundTrip(req)
}
