package registry_test

import (
	"context"
	"encoding/json"
	"fmt"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/registry"
)

func ExampleResolveVersion() {
	available := []string{"1.9.0", "1.10.0", "2.0.0-rc.1", "1.2.3-beta.4", "1.2.4-beta.1"}
	for _, rng := range []string{"^1.0.0", "~1.9.0", "^1.2.3-beta.2 <1.2.3", "^2.0.0"} {
		v, err := registry.ResolveVersion(available, rng)
		if err != nil {
			fmt.Printf("%-22s %s: %v\n", rng, agents.CodeOf(err), err)
			continue
		}
		fmt.Printf("%-22s %s\n", rng, v)
	}
	// Output:
	// ^1.0.0                 1.10.0
	// ~1.9.0                 1.9.0
	// ^1.2.3-beta.2 <1.2.3   1.2.3-beta.4
	// ^2.0.0                 tool-version-unresolvable: tool: no version satisfies "^2.0.0" (available: 2.0.0-rc.1, 1.10.0, 1.9.0, 1.2.4-beta.1, 1.2.3-beta.4)
}

func ExampleAgents() {
	drafter := func(version string) agent.Agent {
		return agent.Agent{ID: "acme.contract-drafter", Version: version, Name: "Contract Drafter"}
	}
	reg, err := registry.NewAgents(drafter("1.9.0"), drafter("1.10.0"), drafter("2.0.0-rc.1"))
	if err != nil {
		panic(err)
	}
	fmt.Println(reg.ListVersions("acme.contract-drafter"))
	latest, _ := reg.GetLatest("acme.contract-drafter")
	fmt.Println("latest:", latest.Ref())

	err = reg.Register(drafter("1.10.0"))
	fmt.Println(agents.CodeOf(err))
	_, err = reg.Get("acme.contract-drafter", "3.0.0")
	fmt.Println(agents.CodeOf(err))
	// Output:
	// [1.9.0 1.10.0 2.0.0-rc.1]
	// latest: acme.contract-drafter@2.0.0-rc.1
	// agent-already-registered
	// agent-not-found
}

func ExampleTools() {
	tools := registry.NewTools()
	search := func(_ context.Context, input json.RawMessage, _ bindings.CallContext) (json.RawMessage, error) {
		return json.RawMessage(`{"hits":[]}`), nil
	}
	for _, v := range []string{"1.0.0", "1.4.2", "2.0.0"} {
		d := bindings.ToolDescriptor{ID: "acme.clause-search", Version: v, Description: "Search clauses"}
		if err := tools.Add("tenant-a", d, search); err != nil {
			panic(err)
		}
	}
	ctx := context.Background()
	ref := agent.ToolRef{ID: "acme.clause-search", Version: "^1.0.0"}

	d, _ := tools.ForTenant("tenant-a").Resolve(ctx, ref)
	fmt.Println("tenant-a:", d.Ref())
	out, _ := tools.ForTenant("tenant-a").Invoke(ctx, d, json.RawMessage(`{"q":"indemnity"}`), bindings.CallContext{TenantID: "tenant-a", RequestID: "r1"})
	fmt.Println(string(out))

	_, err := tools.ForTenant("tenant-b").Resolve(ctx, ref)
	fmt.Println("tenant-b:", agents.CodeOf(err))
	// Output:
	// tenant-a: acme.clause-search@1.4.2
	// {"hits":[]}
	// tenant-b: unresolved-tool
}

func ExampleAddFunc() {
	type searchArgs struct {
		Query string `json:"query" jsonschema:"what to look for"`
		Limit int    `json:"limit,omitempty" jsonschema:"at most this many hits"`
	}
	type searchResult struct {
		Hits []string `json:"hits"`
	}
	tools := registry.NewTools()
	err := registry.AddFunc(tools, "acme", registry.FuncTool{ID: "acme.clause-search", Version: "1.4.2", Description: "Search clauses"},
		func(_ context.Context, in searchArgs, call bindings.CallContext) (searchResult, error) {
			return searchResult{Hits: []string{"12.3 Limitation of liability: " + in.Query}}, nil
		})
	if err != nil {
		panic(err)
	}
	tt := tools.ForTenant("acme")
	d, _ := tt.Resolve(context.Background(), agent.ToolRef{ID: "acme.clause-search", Version: "^1.0.0"})
	fmt.Println(string(d.InputSchema))

	out, err := tt.Invoke(context.Background(), d, json.RawMessage(`{"query":"cap"}`), bindings.CallContext{TenantID: "acme", RequestID: "r1"})
	fmt.Println(string(out), err)
	_, err = tt.Invoke(context.Background(), d, json.RawMessage(`{"limit":"ten"}`), bindings.CallContext{TenantID: "acme", RequestID: "r2"})
	fmt.Println(err != nil, agents.CodeOf(err) == "")
	// Output:
	// {"type":"object","properties":{"query":{"type":"string","description":"what to look for"},"limit":{"type":"integer","description":"at most this many hits"}},"required":["query"],"additionalProperties":false}
	// {"hits":["12.3 Limitation of liability: cap"]} <nil>
	// true true
}
