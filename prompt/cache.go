package prompt

import (
	"container/list"
	"sync"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/internal/tmpl"
)

// CacheSize is how many parsed templates Render keeps.
const CacheSize = 4096

// cacheKey identifies a parsed template. The instructions are part of the
// key, so two agents that reuse an id@version with other text never share
// a template.
type cacheKey struct {
	id, version, instructions string
}

type cacheEntry struct {
	key cacheKey
	t   *tmpl.Template
}

// lru is a mutex-guarded least-recently-used cache of parsed templates.
type lru struct {
	mu    sync.Mutex
	max   int
	order *list.List // front: most recently used; values are *cacheEntry
	items map[cacheKey]*list.Element
}

func newLRU(max int) *lru {
	return &lru{max: max, order: list.New(), items: make(map[cacheKey]*list.Element)}
}

func (c *lru) get(k cacheKey) (*tmpl.Template, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[k]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*cacheEntry).t, true
}

func (c *lru) put(k cacheKey, t *tmpl.Template) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		c.order.MoveToFront(e)
		return
	}
	c.items[k] = c.order.PushFront(&cacheEntry{key: k, t: t})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*cacheEntry).key)
	}
}

func (c *lru) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

var cache = newLRU(CacheSize)

// parsed returns a's parsed instructions from the cache, parsing them on a
// miss. Two goroutines missing at once both parse; one result is kept.
func parsed(a agent.Agent) (*tmpl.Template, error) {
	k := cacheKey{a.ID, a.Version, a.Instructions}
	if t, ok := cache.get(k); ok {
		return t, nil
	}
	t, err := tmpl.Parse(a.Instructions)
	if err != nil {
		return nil, err
	}
	cache.put(k, t)
	return t, nil
}
