package memstore

import (
	"math"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/keywords"
)

// Tokenize is the keyword tokenizer: lower case, split on every rune that
// is not a letter or a digit, runs longer than 255 bytes left out (they
// are no term in either reference store). A keyword query searches for at
// most 64 of a query's distinct terms, the most distinctive (longest)
// ones; pgstore does the same.
func Tokenize(text string) []string { return keywords.Tokenize(text) }

// factRec is a stored fact with what ranking needs: its distinct terms
// with their frequencies, its length in terms, its embedding norm, and its
// slot in tenantFacts.slots. A replaced fact is marked dead and dropped at
// the next compaction.
type factRec struct {
	f      bindings.Fact
	terms  []termFreq
	length int
	norm   float64
	slot   int
	dead   bool
}

type termFreq struct {
	term string
	tf   int
}

// posting is one fact holding a term: its slot and the term's frequency
// in it. Postings are appended in slot order, and a query reads what it
// needs of a fact from tenantFacts.meta by slot, so scoring a term's
// postings walks memory forwards instead of following a pointer per fact.
type posting struct {
	slot int32
	tf   int32
}

// slotMeta is what keyword scoring reads of a fact: its type, interned
// (0 for a dead record), and its length in terms.
type slotMeta struct {
	typ    uint32
	length uint32
}

// tenantFacts is one tenant's facts with an inverted index over their
// text. BM25's collection statistics (live fact count, total length,
// document frequency per term) are the tenant's. slots gives every record a
// dense index, so a query scores into a slice rather than a map; meta holds
// each slot's type and length. The records' embeddings are kept one after
// another in slabs (a semantic query reads every one of them: contiguous,
// they stream from memory rather than being gathered from wherever each
// was allocated).
type tenantFacts struct {
	byID     map[string]*factRec
	slots    []*factRec
	meta     []slotMeta
	types    map[string]uint32 // interned fact types, from 1
	postings map[string][]posting
	df       map[string]int
	totalLen int
	dead     int
	slab     []float32
}

// slabFloats is the size of an embedding slab: 64 Ki components (256 KiB).
const slabFloats = 64 << 10

// keep returns a copy of e in the current slab (capacity-limited, so that
// no append reaches past it), starting a new slab when it is full. A
// vector larger than a slab gets one of its own.
func (tf *tenantFacts) keep(e []float32) []float32 {
	if len(e) == 0 {
		return e
	}
	if len(tf.slab)+len(e) > cap(tf.slab) {
		tf.slab = make([]float32, 0, max(slabFloats, len(e)))
	}
	start := len(tf.slab)
	tf.slab = append(tf.slab, e...)
	return tf.slab[start:len(tf.slab):len(tf.slab)]
}

func newTenantFacts() *tenantFacts {
	return &tenantFacts{byID: map[string]*factRec{}, types: map[string]uint32{}, postings: map[string][]posting{}, df: map[string]int{}}
}

// typeID returns the interned id of a fact type, interning it.
func (tf *tenantFacts) typeID(t string) uint32 {
	id, ok := tf.types[t]
	if !ok {
		id = uint32(len(tf.types) + 1)
		tf.types[t] = id
	}
	return id
}

// newFactRec prepares a record for f (outside any lock).
func newFactRec(f bindings.Fact) *factRec {
	// The terms pgstore indexes too: all of them, or for a text of
	// hundreds of KiB of distinct words each distinct term once, while
	// they fit an index of keywords.MaxIndexSize.
	toks := keywords.IndexTerms(f.Text)
	counts := make(map[string]int, len(toks))
	var terms []termFreq
	for _, t := range toks {
		if counts[t] == 0 {
			terms = append(terms, termFreq{term: t})
		}
		counts[t]++
	}
	for i := range terms {
		terms[i].tf = counts[terms[i].term]
	}
	return &factRec{f: f, terms: terms, length: len(toks), norm: norm(f.Embedding)}
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

// live returns the number of live facts.
func (tf *tenantFacts) live() int { return len(tf.byID) }

// put stores rec, replacing the fact with its id.
func (tf *tenantFacts) put(rec *factRec) {
	if old := tf.byID[rec.f.ID]; old != nil {
		old.dead = true
		tf.meta[old.slot].typ = 0
		tf.dead++
		tf.totalLen -= old.length
		for _, t := range old.terms {
			tf.df[t.term]--
		}
	}
	rec.f.Embedding = tf.keep(rec.f.Embedding)
	rec.slot = len(tf.slots)
	tf.slots = append(tf.slots, rec)
	tf.meta = append(tf.meta, slotMeta{typ: tf.typeID(rec.f.Type), length: uint32(rec.length)})
	tf.byID[rec.f.ID] = rec
	tf.totalLen += rec.length
	for _, t := range rec.terms {
		tf.postings[t.term] = append(tf.postings[t.term], posting{slot: int32(rec.slot), tf: int32(t.tf)})
		tf.df[t.term]++
	}
	if tf.dead > 64 && tf.dead > tf.live() {
		tf.compact()
	}
}

// compact drops dead records from slots, meta and postings (renumbering
// the slots, in order), and copies the live embeddings into fresh slabs
// (the old ones, holding the dead records' too, become garbage).
func (tf *tenantFacts) compact() {
	renum := make([]int32, len(tf.slots))
	slots := tf.slots[:0]
	meta := tf.meta[:0]
	tf.slab = nil
	for i, r := range tf.slots {
		if r.dead {
			renum[i] = -1
			continue
		}
		renum[i] = int32(len(slots))
		m := tf.meta[i]
		r.slot = len(slots)
		r.f.Embedding = tf.keep(r.f.Embedding)
		slots = append(slots, r)
		meta = append(meta, m)
	}
	clear(tf.slots[len(slots):])
	tf.slots, tf.meta = slots, meta
	for term, ps := range tf.postings {
		kept := ps[:0]
		for _, p := range ps {
			if n := renum[p.slot]; n >= 0 {
				p.slot = n
				kept = append(kept, p)
			}
		}
		if len(kept) == 0 {
			delete(tf.postings, term)
			delete(tf.df, term)
			continue
		}
		tf.postings[term] = kept
	}
	tf.dead = 0
}
