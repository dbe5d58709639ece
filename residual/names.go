package residual

import (
	"sort"
	"strings"

	"github.com/synth-dp/synth/hypergraph"
)

// setName renders a set of relations as their names, sorted and joined by
// commas: "lineitem,orders".
func setName(h *hypergraph.Hypergraph, e hypergraph.Set) string {
	names := h.Names(e)
	sort.Strings(names)
	return strings.Join(names, ",")
}
