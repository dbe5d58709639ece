package pmw

import (
	"errors"
	"fmt"
	"strings"
)

// ErrTooLarge is wrapped by every error about a universe (or a workload
// over it) whose dense arrays would not fit the memory cap.
var ErrTooLarge = errors.New("pmw: universe too large")

// ErrInvalidConfig is wrapped by every error about a [Config] value
// (NaN, ±Inf, out of range).
var ErrInvalidConfig = errors.New("pmw: invalid config")

// ErrInvalidInput is wrapped by every error about a universe, a family or a
// histogram that does not fit together (unknown column, cell out of range,
// negative count, query value outside [−1, 1]).
var ErrInvalidInput = errors.New("pmw: invalid input")

// TooLargeError reports a universe whose dense arrays need more memory than
// the cap. It names the released columns and their (binned) sizes so a user
// can choose coarser bins. It wraps [ErrTooLarge].
type TooLargeError struct {
	// Columns and Sizes are the released columns and their domain sizes.
	Columns []string
	Sizes   []int
	// Cells is |X|, or −1 when the product overflows int64.
	Cells int64
	// Bytes is the estimated memory, or −1 on overflow; Cap is the cap.
	Bytes, Cap int64
	// Parts, when set, splits Bytes by kind of array ([CheckMemory]).
	Parts *Memory
}

func (e *TooLargeError) Error() string {
	var b strings.Builder
	for i, c := range e.Columns {
		if i > 0 {
			b.WriteString(" × ")
		}
		fmt.Fprintf(&b, "%s(%d)", c, e.Sizes[i])
	}
	cells, bytes := "more than 2^63", "more than 2^63 bytes"
	if e.Cells >= 0 {
		cells = fmt.Sprintf("%d", e.Cells)
	}
	if e.Bytes >= 0 {
		bytes = exactBytes(e.Bytes)
		if e.Parts != nil && e.Parts.Total() == e.Bytes {
			bytes += " (" + e.Parts.String() + ")"
		}
	}
	return fmt.Sprintf("pmw: universe too large: %s cells over columns %s need %s, above the memory cap of %s; "+
		"use coarser bins, release fewer columns or drop the largest workload families", cells, b.String(), bytes, exactBytes(e.Cap))
}

// Unwrap returns [ErrTooLarge].
func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

// exactBytes prints n in bytes, exactly, with the binary unit beside it:
// "2147483664 B (2.00 GiB)". Rounded units alone can make a need just above
// the cap read as equal to it.
func exactBytes(n int64) string {
	if h := humanBytes(n); h != fmt.Sprintf("%d B", n) {
		return fmt.Sprintf("%d B (%s)", n, h)
	}
	return fmt.Sprintf("%d B", n)
}

func humanBytes(n int64) string {
	const gib, mib = 1 << 30, 1 << 20
	switch {
	case n >= gib:
		return fmt.Sprintf("%.2f GiB", float64(n)/gib)
	case n >= mib:
		return fmt.Sprintf("%.2f MiB", float64(n)/mib)
	}
	return fmt.Sprintf("%d B", n)
}
