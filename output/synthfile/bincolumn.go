package synthfile

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"
)

// A released column has a public, finite set of values — one per bin — so
// its Parquet dictionary and the order of its values are known before any
// row is written. parquet-go does not know that: for every value a column
// writer hashes it into the row group's dictionary (a Go map lookup per
// string) and, for every page, compares the page's values to find its
// bounds (two string comparisons per value). On the TPC-H example's
// shuffled rows that was half of the writer's CPU.
//
// binType removes both. The writer hands parquet-go a released column's
// values as bin numbers (0 … bins−1, a batch of rows at a time in one
// value: see [binBuffer.WriteValues]); binType's column buffer
// maps a bin to its dictionary index through a table of the row group's
// bins (inserting the bin's real value into parquet-go's dictionary the
// first time the bin occurs in the row group, so the dictionary holds the
// same values in the same order as when parquet-go inserts them itself),
// and a page's bounds are the values of its least and greatest bin by a
// rank computed once from the type's own order. The file is byte for byte
// the one parquet-go writes from the real values (TestBinColumnSameBytes),
// but for a numeric column with both −0 and +0 representatives: its bounds
// are then −0 and +0, as the Parquet format recommends, where parquet-go
// keeps whichever zero it met first.
//
// The cost is a table of 4 bytes per bin for every column of every row
// group being written (allocated on the column's first rows, reset by
// the bins used), and a sort of each categorical column's values when
// the writer is created.
//
// parquet-go's Dictionary and ColumnBuffer interfaces have unexported
// methods, so the wrappers below embed them: binDictionary and binPage
// embed parquet-go's own dictionary and page and override only what they
// speed up; binBuffer embeds a nil ColumnBuffer and implements every
// method the column writer of parquet-go v0.32.0 calls on its buffer
// (WriteValues, Len, Size, Page, Reset — ColumnWriter.WriteRowValues and
// Flush), so any other call panics rather than write nothing. The
// wrappers are tied to that version (go.mod pins it); the byte-identity
// test guards an upgrade.

// maxDictionaryBytes bounds the bytes of a categorical column's values.
// parquet-go's column writer switches a column whose byte-array
// dictionary passes 1 GiB (or a configured DictionaryMaxBytes, which the
// writer does not set) to PLAIN encoding and asks the column's type for a
// new buffer; a binBuffer cannot write PLAIN values, so the second buffer
// of a dictionary refuses every write (see binIndexedType.NewColumnBuffer)
// and the release fails. A column whose values fit under the bound never
// gets there.
var maxDictionaryBytes = 1 << 30

// checkDictionaries returns an error if a categorical column's values
// take more than [maxDictionaryBytes].
func checkDictionaries(dec *Decoder) error {
	for j := range dec.NumColumns() {
		n := 0
		for _, v := range dec.cols[j].strs {
			n += len(v)
		}
		if n > maxDictionaryBytes {
			return fmt.Errorf("release: column %q: its values take %d bytes, more than the writer's limit of %d for a Parquet dictionary", dec.Name(j), n, maxDictionaryBytes)
		}
	}
	return nil
}

// binType is the Parquet type of a released column written as bin
// numbers: its own methods are those of the column's real type (string,
// int64, double or date), but its dictionaries are [binDictionary].
type binType struct {
	parquet.Type
	vals []parquet.Value // vals[b]: the real value of bin b
	rank []int32         // rank[b]: position of vals[b] in the type's order
}

// newBinType returns the type of a column of the given real type whose
// bin b has the value vals[b].
func newBinType(typ parquet.Type, vals []parquet.Value) *binType {
	order := make([]int32, len(vals))
	for b := range order {
		order[b] = int32(b)
	}
	// Integer, numeric and date bins are in order already; categorical
	// values are in the order the spec declares them.
	if !slices.IsSortedFunc(vals, typ.Compare) {
		slices.SortStableFunc(order, func(a, b int32) int { return typ.Compare(vals[a], vals[b]) })
	}
	rank := make([]int32, len(vals))
	for r, b := range order {
		rank[b] = int32(r)
	}
	return &binType{Type: typ, vals: vals, rank: rank}
}

// binNode is a leaf of the schema whose type is a [binType]; everything
// else is the real node's.
type binNode struct {
	parquet.Node
	typ *binType
}

// Type returns the bin type.
func (n binNode) Type() parquet.Type { return n.typ }

// NewDictionary returns the dictionary of one column chunk: parquet-go's
// dictionary of the real type, wrapped. A dictionary read from a file
// (numValues > 0) is parquet-go's own: the wrapper serves only writing.
func (t *binType) NewDictionary(columnIndex, numValues int, data encoding.Values) parquet.Dictionary {
	d := t.Type.NewDictionary(columnIndex, numValues, data)
	if numValues > 0 {
		return d
	}
	return &binDictionary{Dictionary: d, t: t}
}

// binDictionary is parquet-go's dictionary of a column chunk plus the
// dictionary index of every bin that occurred in the chunk.
type binDictionary struct {
	parquet.Dictionary
	t       *binType
	idx     []int32         // idx[b]: dictionary index of bin b's value, −1 if not inserted; nil before the first rows
	rank    []int32         // rank[i]: the rank (binType.rank) of dictionary entry i
	used    []int32         // the bins inserted (or marked −2 in idx, to insert), in order
	vals    []parquet.Value // scratch of insert: the values of the new bins
	ins     []int32         // scratch of insert: their dictionary indexes
	buffers int             // column buffers made for the dictionary
}

// Type returns the type of the column's indexed buffers and pages.
func (d *binDictionary) Type() parquet.Type {
	return &binIndexedType{Type: d.Dictionary.Type(), d: d}
}

// Reset empties the dictionary (the column writer does at the end of a row
// group).
func (d *binDictionary) Reset() {
	d.Dictionary.Reset()
	for _, b := range d.used {
		d.idx[b] = -1
	}
	d.used, d.rank = d.used[:0], d.rank[:0]
}

// insert inserts the values of the bins used[from:] (bins first seen in a
// batch, in the order of their first rows) into the dictionary, in one
// call — one call per value was most of the writer's time on a column of
// 2^20 bins — and sets their indexes.
func (d *binDictionary) insert(from int) {
	fresh := d.used[from:]
	if len(fresh) == 0 {
		return
	}
	d.vals = d.vals[:0]
	for _, b := range fresh {
		d.vals = append(d.vals, d.t.vals[b])
	}
	d.ins = slices.Grow(d.ins[:0], len(fresh))[:len(fresh)]
	d.Dictionary.Insert(d.ins, d.vals)
	for k, b := range fresh {
		i := d.ins[k]
		if int(i) == len(d.rank) { // a new entry (two bins may share a value)
			d.rank = append(d.rank, d.t.rank[b])
		}
		d.idx[b] = i
	}
}

// binIndexedType is parquet-go's indexed type of a dictionary, whose
// column buffers are [binBuffer].
type binIndexedType struct {
	parquet.Type
	d *binDictionary
}

// NewColumnBuffer returns a buffer of bin numbers for the column writer.
// A column writer asks once; a second buffer for the same dictionary is
// asked for only when parquet-go falls back to PLAIN encoding, which bin
// numbers cannot feed: that buffer refuses every write.
func (t *binIndexedType) NewColumnBuffer(columnIndex, numValues int) parquet.ColumnBuffer {
	t.d.buffers++
	return &binBuffer{typ: t, column: columnIndex, idx: make([]int32, 0, numValues), plain: t.d.buffers > 1}
}

// binBuffer is the column writer's buffer of a page: the dictionary
// indexes of the rows written so far. Its values arrive as bin numbers.
type binBuffer struct {
	parquet.ColumnBuffer // nil: see the comment at the top of this file
	typ                  *binIndexedType
	column               int
	idx                  []int32
	plain                bool // asked for by a fallback to PLAIN encoding: refuses writes
}

// WriteValues appends the rows of a batch of bin numbers. Each value is a
// BYTE_ARRAY holding a run of rows, one little-endian uint32 bin number
// each (see [binBatch]): parquet-go's ColumnWriter.WriteRowValues passes
// its values to the buffer as they are and counts the rows written by the
// buffer's Len, so one value carries a whole batch and the writer never
// builds a parquet.Value per row. The return value counts the rows.
func (c *binBuffer) WriteValues(values []parquet.Value) (int, error) {
	if c.plain {
		return 0, fmt.Errorf("release: column %d: parquet-go switched the column to PLAIN encoding, which the writer's bin numbers cannot feed", c.column)
	}
	d := c.typ.d
	if d.idx == nil {
		d.idx = make([]int32, len(d.t.vals))
		for b := range d.idx {
			d.idx[b] = -1
		}
	}
	bins := uint32(len(d.idx))
	rows := 0
	for _, v := range values {
		if v.Kind() != parquet.ByteArray || len(v.ByteArray())%4 != 0 {
			return rows, fmt.Errorf("release: column %d: value %v is not a batch of bin numbers", c.column, v)
		}
		p := v.ByteArray()
		lo := len(c.idx)
		c.idx = slices.Grow(c.idx, len(p)/4)[:lo+len(p)/4]
		dst := c.idx[lo:]
		from := len(d.used)
		// A row of a bin already in the dictionary gets its index; a
		// row of a new bin gets −2−bin, and the second pass, after the
		// batch's new bins are inserted, its index.
		for n := range dst {
			b := binary.LittleEndian.Uint32(p[4*n:])
			if b >= bins {
				c.fix(from, dst[:n])
				c.idx = c.idx[:lo+n]
				return rows + n, fmt.Errorf("release: column %d: bin number %d, want one below %d", c.column, b, bins)
			}
			i := d.idx[b]
			if i < 0 {
				if i == -1 {
					d.idx[b] = -2
					d.used = append(d.used, int32(b))
				}
				i = -2 - int32(b)
			}
			dst[n] = i
		}
		c.fix(from, dst)
		rows += len(dst)
	}
	return rows, nil
}

// fix inserts the bins new since used[from] and replaces the −2−bin marks
// in dst by their indexes.
func (c *binBuffer) fix(from int, dst []int32) {
	d := c.typ.d
	if len(d.used) == from {
		return
	}
	d.insert(from)
	for n, i := range dst {
		if i < 0 {
			dst[n] = d.idx[-2-i]
		}
	}
}

// binBatch is a batch of rows of one column as bin numbers, the way
// [binBuffer.WriteValues] takes them.
type binBatch []byte

// set sets rows lo … hi−1 to bin b.
func (p binBatch) set(lo, hi, b int) {
	if lo == hi {
		return
	}
	dst := p[4*lo : 4*hi]
	binary.LittleEndian.PutUint32(dst, uint32(b))
	for k := 4; k < len(dst); k *= 2 {
		copy(dst[k:], dst[:k])
	}
}

// value returns rows 0 … n−1 as the value WriteValues takes; it shares p's
// memory.
func (p binBatch) value(n int) parquet.Value { return parquet.ByteArrayValue(p[:4*n]) }

// Len returns the number of rows buffered.
func (c *binBuffer) Len() int { return len(c.idx) }

// Cap returns the capacity of the buffer in rows.
func (c *binBuffer) Cap() int { return cap(c.idx) }

// Size returns the size of the buffered indexes in bytes (what parquet-go
// counts against its page buffer size).
func (c *binBuffer) Size() int64 { return 4 * int64(len(c.idx)) }

// NumValues returns the number of rows buffered.
func (c *binBuffer) NumValues() int64 { return int64(len(c.idx)) }

// Reset empties the buffer.
func (c *binBuffer) Reset() { c.idx = c.idx[:0] }

// Column returns the column's index.
func (c *binBuffer) Column() int { return c.column }

// Dictionary returns the column chunk's dictionary.
func (c *binBuffer) Dictionary() parquet.Dictionary { return c.typ.d }

// Page returns the buffered rows as parquet-go's indexed page, with bounds
// by rank. The page shares the buffer's memory until Reset.
func (c *binBuffer) Page() parquet.Page {
	p := c.typ.Type.NewPage(c.column, len(c.idx), encoding.Int32Values(c.idx))
	return &binPage{Page: p, d: c.typ.d, idx: c.idx, column: c.column}
}

// binPage is parquet-go's indexed page whose bounds come from the ranks of
// its dictionary entries rather than from comparing values.
type binPage struct {
	parquet.Page
	d      *binDictionary
	idx    []int32
	column int
}

// Bounds returns the least and greatest value of the page.
func (p *binPage) Bounds() (lo, hi parquet.Value, ok bool) {
	if len(p.idx) == 0 {
		return lo, hi, false
	}
	rank := p.d.rank
	a, z := p.idx[0], p.idx[0]
	ra, rz := rank[a], rank[z]
	for _, i := range p.idx[1:] {
		switch r := rank[i]; {
		case r < ra:
			a, ra = i, r
		case r > rz:
			z, rz = i, r
		}
	}
	lo = p.d.Dictionary.Index(a).Level(0, 0, p.column)
	hi = p.d.Dictionary.Index(z).Level(0, 0, p.column)
	return lo, hi, true
}
