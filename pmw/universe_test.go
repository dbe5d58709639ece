package pmw

import (
	"errors"
	"strings"
	"testing"
)

func TestUniverseIndexing(t *testing.T) {
	u, err := NewUniverse([]string{"a", "b", "c"}, []int{2, 3, 4}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if u.Len() != 24 {
		t.Fatalf("Len = %d, want 24", u.Len())
	}
	// First column most significant: ((b0·3 + b1)·4 + b2).
	x, err := u.Index([]int{1, 2, 3})
	if err != nil || x != (1*3+2)*4+3 {
		t.Fatalf("Index(1,2,3) = %d, %v; want 23", x, err)
	}
	for x := range u.Len() {
		d := u.Decode(x, nil)
		if y, err := u.Index(d); err != nil || y != x {
			t.Fatalf("Index(Decode(%d)) = %d, %v", x, y, err)
		}
	}
	if _, err := u.Index([]int{0, 3, 0}); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("Index out of range: %v, want ErrInvalidInput", err)
	}
	if i, ok := u.Column("b"); !ok || i != 1 {
		t.Fatalf("Column(b) = %d, %v", i, ok)
	}
}

func TestNewUniverseErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		names []string
		sizes []int
		cap   int64
		want  error
		words []string
	}{
		{"no columns", nil, nil, 0, ErrInvalidInput, nil},
		{"length mismatch", []string{"a"}, []int{1, 2}, 0, ErrInvalidInput, nil},
		{"zero size", []string{"a", "b"}, []int{3, 0}, 0, ErrInvalidInput, []string{`"b"`}},
		{"duplicate name", []string{"a", "a"}, []int{3, 3}, 0, ErrInvalidInput, []string{`"a"`}},
		{"above default cap", []string{"price", "qty", "zip"}, []int{1000, 1000, 1000}, 0, ErrTooLarge,
			[]string{"price(1000)", "qty(1000)", "zip(1000)", "coarser bins", "2.00 GiB"}},
		{"above given cap", []string{"x", "y"}, []int{100, 100}, 1000, ErrTooLarge, []string{"x(100)", "y(100)", "coarser bins"}},
		{"overflow", []string{"a", "b", "c"}, []int{1 << 30, 1 << 30, 1 << 30}, 0, ErrTooLarge, []string{"a(1073741824)", "more than 2^63"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewUniverse(tc.names, tc.sizes, tc.cap)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "pmw: ") {
				t.Errorf("error %q lacks the pmw: prefix", err)
			}
			for _, w := range tc.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			var tl *TooLargeError
			if errors.Is(err, ErrTooLarge) && !errors.As(err, &tl) {
				t.Errorf("ErrTooLarge not carried by a *TooLargeError")
			}
		})
	}
	// 1e8 cells fit the default cap: 1.6 GB of dense state.
	u, err := NewUniverse([]string{"a", "b", "c", "d", "e", "f", "g", "h"}, []int{10, 10, 10, 10, 10, 10, 10, 10}, 0)
	if err != nil {
		t.Fatalf("1e8 cells refused: %v", err)
	}
	if got := u.MemoryEstimate(); got != 1_600_000_000 {
		t.Fatalf("MemoryEstimate(1e8) = %d, want 1.6e9", got)
	}
}
