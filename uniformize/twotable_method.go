package uniformize

import (
	"fmt"

	"github.com/synth-dp/synth/spec"
)

// ChooseMethod resolves the release method of s: an explicit join-as-one or
// uniformized is kept; auto (the default) picks from the spec alone —
// never from the data, so the choice is public — uniformized for a join
// that is two relations after the public lookups are folded and that share
// a join attribute (Alg. 4 + Alg. 5, [TwoTable]), join-as-one otherwise.
// reason says why, in one sentence.
func ChooseMethod(s *spec.Spec) (m spec.Method, reason string, err error) {
	f, err := s.Folding()
	if err != nil {
		return "", "", err
	}
	h := f.Folded()
	switch s.Release.Method {
	case spec.JoinAsOne, spec.Uniformized:
		return s.Release.Method, "set by release.method in the spec", nil
	}
	switch {
	case h.Private() == 0:
		return spec.JoinAsOne, "every relation is public", nil
	case h.Len() == 1:
		return spec.JoinAsOne, "one relation after folding: nothing to uniformize", nil
	case h.Len() == 2 && len(h.Boundary(1)) > 0:
		// Measured, not assumed: on Example 4.2 (k = 2⁶ … 2¹⁰, ε = 1) and
		// TPC-H orders ⋈ lineitem (ε = 1, 4) the uniformized release had
		// 1.5–5× the workload error of join-as-one: the bucket width
		// λ = ln(1/δ)/ε is as large as the degrees there, so buckets barely
		// separate values while each pays its own padding. The paper's gain
		// needs degrees far above λ. Until a variant wins, auto keeps
		// join-as-one; release.method: uniformized runs Alg. 4 + 5.
		return spec.JoinAsOne, fmt.Sprintf("two relations after folding (%s and %s, joined on %v): "+
			"join-as-one (Alg. 1); the uniformized partition (release.method: uniformized) measured worse on "+
			"degrees near λ = ln(1/δ)/ε, which is where real data sits", h.Relation(0).Name, h.Relation(1).Name, h.Boundary(1)), nil
	case h.Len() == 2:
		return spec.JoinAsOne, "two relations sharing no join attribute (a cross product): no join value to bucket", nil
	}
	// TODO(hierarchical): when the hierarchical partition (Alg. 6/7) runs
	// in release, pick it here for a hierarchical join (h.Hierarchical()).
	if ok, _ := h.Hierarchical(); ok {
		return spec.JoinAsOne, fmt.Sprintf("%d relations after folding: the join is hierarchical, "+
			"but the hierarchical uniformized release (Alg. 6/7) is not yet available", h.Len()), nil
	}
	_, why := h.Hierarchical()
	return spec.JoinAsOne, fmt.Sprintf("%d relations after folding and the join is not hierarchical (%s): "+
		"uniformized partitions need a hierarchical join", h.Len(), why), nil
}
