//go:build !ipopt

package ipopt

import (
	"context"
	"errors"
	"testing"
)

// TestUnavailable: without the tag, Solve refuses with ErrUnavailable.
func TestUnavailable(t *testing.T) {
	if Available {
		t.Fatal("Available without the ipopt tag")
	}
	if _, err := Solve(context.Background(), &QCQP{}, nil); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("error %v, want ErrUnavailable", err)
	}
}
