package prompt

import (
	"fmt"
	"testing"

	"github.com/kindgi/agents/agent"
)

func TestLRUEvictsLeastRecentlyUsed(t *testing.T) {
	c := newLRU(2)
	a, _ := parsed(agent.Agent{ID: "a", Version: "1.0.0", Instructions: "a"})
	b, _ := parsed(agent.Agent{ID: "b", Version: "1.0.0", Instructions: "b"})
	ka, kb, kc := cacheKey{"a", "1", "a"}, cacheKey{"b", "1", "b"}, cacheKey{"c", "1", "c"}
	c.put(ka, a)
	c.put(kb, b)
	if _, ok := c.get(ka); !ok { // a is now the most recent
		t.Fatal("a missing")
	}
	c.put(kc, b)
	if _, ok := c.get(kb); ok {
		t.Error("b survived; want it evicted as least recently used")
	}
	if _, ok := c.get(ka); !ok {
		t.Error("a evicted; want it kept")
	}
	if c.len() != 2 {
		t.Errorf("len = %d, want 2", c.len())
	}
}

func TestCacheKeyIncludesInstructions(t *testing.T) {
	base := agent.Agent{ID: "same", Version: "1.0.0", Name: "N"}
	for i := range 3 {
		a := base
		a.Instructions = fmt.Sprintf("v%d", i)
		got, err := Render(a, Context{})
		if err != nil || got.Text != a.Instructions {
			t.Fatalf("Render = %q, %v; want %q", got.Text, err, a.Instructions)
		}
	}
}

func TestCacheIsBounded(t *testing.T) {
	for i := range CacheSize + 10 {
		if _, err := parsed(agent.Agent{ID: "bound", Version: "1.0.0", Instructions: fmt.Sprintf("t%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if n := cache.len(); n > CacheSize {
		t.Errorf("cache holds %d templates, want at most %d", n, CacheSize)
	}
}
