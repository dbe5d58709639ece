package multi

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/synth-dp/synth/internal/stattest"
)

// TestSortEntries: sortEntries gives what a stable sort by (unit,
// coordinate) gives, entry for entry (Psi tells equal keys apart, so a
// sort that is not stable fails), on dense unit numbers (the counting
// sort), sparse and negative ones (the fallback) and empty input.
func TestSortEntries(t *testing.T) {
	r := rand.New(rand.NewPCG(stattest.Seed(t), 3))
	for inst := range 300 {
		n := r.IntN(200)
		units := 1 + r.IntN(50)
		offset, scale := 0, 1
		switch inst % 3 {
		case 1:
			scale = 1000 // sparse: past 4n+16
		case 2:
			offset = -7
		}
		es := make([]Entry, n)
		for i := range es {
			es[i] = Entry{Unit: offset + scale*r.IntN(units), Coord: r.IntN(4), Psi: float64(i)}
		}
		want := slices.Clone(es)
		slices.SortStableFunc(want, func(a, b Entry) int {
			if a.Unit != b.Unit {
				return cmp.Compare(a.Unit, b.Unit)
			}
			return a.Coord - b.Coord
		})
		if got := sortEntries(slices.Clone(es)); !slices.Equal(got, want) {
			t.Fatalf("instance %d: %v, want %v", inst, got, want)
		}
	}
}
