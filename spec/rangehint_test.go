package spec

import (
	"errors"
	"strings"
	"testing"
)

// TestRangeHintBinEdges: an integer column declared with bin_edges ending
// at 50 rejects 50 and says how to fix the edges.
func TestRangeHintBinEdges(t *testing.T) {
	c := Column{Name: "q", Type: Integer, BinEdges: []float64{1, 10, 25, 50}, Min: 1, Max: 49}
	if _, err := c.Bin("49"); err != nil {
		t.Fatal(err)
	}
	_, err := c.Bin("50")
	if !errors.Is(err, ErrOutOfDomain) {
		t.Fatalf("Bin(50) = %v, want ErrOutOfDomain", err)
	}
	for _, want := range []string{"half-open", "the last edge 50 is not in the domain", "largest value is 49", "51 to accept 50"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	for _, c := range []Column{
		{Type: Integer, Min: 1, Max: 50, Bins: 10},
		{Type: Numeric, BinEdges: []float64{0, 1.5, 3}},
		{Type: Categorical, Values: []string{"a"}},
	} {
		if h := c.RangeHint(); h != "" {
			t.Errorf("%+v: hint %q, want none", c, h)
		}
	}
}
