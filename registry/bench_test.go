package registry

import (
	"fmt"
	"testing"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
)

// hundredVersions returns 100 versions: 10 minors × 10 patches of 1.x,
// every fifth one a prerelease.
func hundredVersions() []string {
	out := make([]string, 0, 100)
	for minor := range 10 {
		for patch := range 10 {
			v := fmt.Sprintf("1.%d.%d", minor, patch)
			if patch%5 == 4 {
				v += "-rc.1"
			}
			out = append(out, v)
		}
	}
	return out
}

func BenchmarkResolveVersion(b *testing.B) {
	avail := hundredVersions()
	for _, rng := range []string{"^1.0.0", "~1.4.0", ">=1.2.3 <1.5.0 || 1.9.x"} {
		b.Run(rng, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ResolveVersion(avail, rng); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkToolsResolve resolves over 100 registered versions, which the
// catalog keeps parsed and sorted.
func BenchmarkToolsResolve(b *testing.B) {
	tools := NewTools()
	for _, v := range hundredVersions() {
		if err := tools.Add("t1", bindings.ToolDescriptor{ID: "acme.x", Version: v}, echo(v)); err != nil {
			b.Fatal(err)
		}
	}
	tt := tools.ForTenant("t1")
	for _, rng := range []string{"^1.0.0", "~1.4.0"} {
		b.Run(rng, func(b *testing.B) {
			b.ReportAllocs()
			ref := agent.ToolRef{ID: "acme.x", Version: rng}
			for b.Loop() {
				if _, err := tt.Resolve(b.Context(), ref); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
