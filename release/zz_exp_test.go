package release

import (
	"os"
	"strconv"
	"testing"

	"github.com/synth-dp/synth/dp"
)

func TestZZPerMarginal(t *testing.T) {
	name := os.Getenv("ZZ_DATA")
	if name == "" {
		t.Skip()
	}
	eps, _ := strconv.ParseFloat(os.Getenv("ZZ_EPS"), 64)
	sum := map[int]float64{}
	var ms [][]int
	for seed := uint64(1); seed <= 3; seed++ {
		r, _ := scoredRelease(t, name, eps, dp.NewSeededSource(seed), nil)
		ms = r.Marginals
		for i, v := range r.TVD {
			sum[i] += v / 3
		}
	}
	for i, m := range ms {
		t.Logf("%v %.4f", m, sum[i])
	}
}
