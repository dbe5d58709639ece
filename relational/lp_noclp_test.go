//go:build !clp

package relational

import (
	"errors"
	"testing"
)

// TestThreeUnitsNeedCLP checks that without the clp tag R2T with three
// units is refused with a message saying how to enable it.
func TestThreeUnitsNeedCLP(t *testing.T) {
	_, err := NewTruncation([]Contribution{{Units: []int{0, 0, 0}, Psi: 1}}, []int{1, 1, 1})
	if !errors.Is(err, ErrNeedsCLP) {
		t.Fatalf("got %v, want ErrNeedsCLP", err)
	}
}
