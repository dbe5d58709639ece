package synthfile

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/parquet-go/parquet-go"

	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/output/publish"
	"github.com/synth-dp/synth/spec"
)

// BatchRows is the number of rows the writer buffers, column by column,
// before it hands them to Parquet and checks its context again.
const BatchRows = 64 << 10

// rowGroupRows is the number of rows of one Parquet row group. parquet-go
// holds a row group's (compressed) pages in memory until the group is
// flushed, so this bounds the writer's memory together with [BatchRows].
const rowGroupRows = 1 << 20

// MaxWriterGoroutines caps the row groups a [Writer] encodes at once, and
// with them its memory (see [Writer]).
const MaxWriterGoroutines = 4

// ErrCellOrder is wrapped by the error of [Writer.Add] when a cell does not
// come after the previous one.
var ErrCellOrder = errors.New("release: cells not in increasing order")

// ErrWriterDone is returned by [Writer.Add] and [Writer.Finish] after the
// writer was finished, closed or aborted.
var ErrWriterDone = errors.New("release: writer already finished, closed or aborted")

// Writer writes the released table to a Parquet file, atomically.
//
// Rows arrive by [Writer.Add] (counts in increasing cell order; each count
// n of a cell becomes n identical rows holding the cell's representative
// values, [Decoder.Value]) or by [Writer.AddRow] (one row of a cell, in any
// order). The writer is columnar and parallel: the rows of one Parquet row
// group (at most 2^20) are collected as cells, then a goroutine encodes
// them — a row writes its bin number into a per-column buffer of
// [BatchRows] rows (a boolean column: its precomputed Parquet value), and
// a full buffer goes to Parquet column by column, where the column's
// dictionary index and page bounds come from tables of the public bins
// (see binType) — while the next row group is collected. Up to
// min(GOMAXPROCS, [MaxWriterGoroutines]) row groups are encoded at once,
// and they are committed to the file in order, so the file is the same
// whatever the number of goroutines. Memory is bounded by that many row
// groups plus the one being collected — each 8 MiB of cells, the batch
// buffers, a table of 4 bytes per bin for each column (binType) and
// parquet-go's dictionary indexes and compressed pages until the commit —
// not by the output.
//
// The file's columns are the released columns in release order, required
// (never null) but for the nullable ones, which are optional and hold NULL
// in their NULL bin ([Decoder.NullBin]; written as values, through
// parquet-go's own dictionary, like booleans), with these types:
//
//	spec type    Parquet
//	categorical  BYTE_ARRAY, STRING logical type (dictionary encoded)
//	boolean      BOOLEAN
//	integer      INT64, INTEGER(64, signed) logical type (dictionary)
//	numeric      DOUBLE (dictionary)
//	date         INT32, DATE logical type (days since 1970-01-01; dictionary)
//
// After them come the measure columns given to [NewMeasureWriter], each a
// required float64 (Parquet DOUBLE, dictionary encoded) whose value is a
// function of the row's bins (see [MeasureColumn]).
//
// Pages are compressed with zstd. Every column chunk carries its min and
// max, and the file a page index (min and max per page); data page headers
// carry no statistics. (parquet-go has no option to leave a column out of
// the page index: skipping a column's bounds writes "" as every page's
// bounds, which readers that prune pages by the index take for real and
// then miss every row — so every column's bounds are computed, by bin
// rank.) The file-level key-value metadata holds the pairs given to
// [NewWriter], among them [layout.MetadataKey].
//
// The rows written depend only on the counts (DP outputs) and the public
// domain: writing is post-processing.
//
// A Writer is used by one goroutine: Add any number of times, then Close
// (or Finish and commit the file with a [publish.Group]), and `defer w.Abort()` to
// clean up on every error path. Not safe for concurrent use.
type Writer struct {
	dec   *Decoder
	extra []MeasureColumn
	file  *publish.File
	pw    *parquet.GenericWriter[any]

	// vals[j][b] is the Parquet value of bin b of boolean column j, its
	// column index set: the only per-value work left is a copy. vals[j] is
	// nil for a column written as bin numbers (see binType).
	vals  [][]parquet.Value
	batch int // rows between two context checks, and rows per encoded batch

	cur       *rowGroupJob   // the row group being collected
	inflight  []*rowGroupJob // row groups being encoded, oldest first
	free      []*rowGroupJob // committed jobs, for reuse
	workers   int            // row groups encoded at once
	groupRows int            // rows per row group: rowGroupRows but in tests

	// stop tells the encoders to return early: the writer was aborted.
	stop atomic.Bool

	unchecked int   // rows added since the context was last checked
	last      int64 // last cell added by Add, -1 before the first
	total     int64
	err       error // sticky: the first error, after which the file is gone
	done      bool  // finished, closed or aborted
}

// rowGroupJob is one row group: its rows as cells (with run lengths for
// rows added by [Writer.Add]), the Parquet row group they are encoded into,
// and the encoder's buffers.
type rowGroupJob struct {
	cells  []int64
	counts []int64 // counts[i] rows of cells[i]; nil: one row per cell
	rows   int     // rows in the job
	rg     *parquet.ConcurrentRowGroupWriter
	buf    [][]parquet.Value // per output column without bins, batch values
	binBuf []binBatch        // per output column written as bins, batch bins
	one    [1]parquet.Value  // the value that carries a binBatch
	bins   []int
	done   chan struct{} // closed when the encoder is done
	err    error         // the encoder's error, read after done
}

// NewWriter creates the temporary file for path and prepares to write the
// universe over cols (see [NewDecoder] for names and cols). metadata is
// written as file-level key-value metadata; it must hold [layout.MetadataKey]
// ("synth.privacy") with the privacy report as valid JSON, and no empty
// key.
func NewWriter(path string, names []string, cols []*spec.Column, metadata map[string]string) (*Writer, error) {
	return newWriter(path, names, cols, metadata, BatchRows)
}

// MeasureColumn is a float64 column written after the released columns:
// Value returns a row's value from its bins (one per released column), a
// post-processing of DP outputs (see package doc, "Measures").
//
// Value is called from the writer's encoding goroutines, several at once,
// and must not modify bins: it must be safe for concurrent use.
type MeasureColumn struct {
	Name  string
	Value func(bins []int) float64
}

// NewMeasureWriter is [NewWriter] with measure columns after the released
// columns. Their names must be non-empty and distinct from every other
// column's.
func NewMeasureWriter(path string, names []string, cols []*spec.Column, measures []MeasureColumn, metadata map[string]string) (*Writer, error) {
	return newWriterWith(path, names, cols, measures, metadata, BatchRows)
}

// newWriter is NewWriter with a batch size, for tests.
func newWriter(path string, names []string, cols []*spec.Column, metadata map[string]string, batch int) (*Writer, error) {
	return newWriterWith(path, names, cols, nil, metadata, batch)
}

// newWriterWith is NewMeasureWriter with a batch size.
func newWriterWith(path string, names []string, cols []*spec.Column, extra []MeasureColumn, metadata map[string]string, batch int) (*Writer, error) {
	dec, err := NewDecoder(names, cols)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, n := range names {
		seen[n] = true
	}
	for _, m := range extra {
		if m.Name == "" || seen[m.Name] || m.Value == nil {
			return nil, fmt.Errorf("release: measure column %q: empty, repeated or without values", m.Name)
		}
		seen[m.Name] = true
	}
	if err := checkDictionaries(dec); err != nil {
		return nil, err
	}
	report, ok := metadata[layout.MetadataKey]
	if !ok {
		return nil, fmt.Errorf("release: metadata lacks the privacy report %q", layout.MetadataKey)
	}
	if !json.Valid([]byte(report)) {
		return nil, fmt.Errorf("release: privacy report %q is not valid JSON", layout.MetadataKey)
	}
	opts, err := writerOptions(buildSchema(dec, extra, true), metadata)
	if err != nil {
		return nil, err
	}
	f, err := publish.CreateFile(path, 0o644)
	if err != nil {
		return nil, err
	}
	w := &Writer{
		dec:       dec,
		extra:     extra,
		file:      f,
		pw:        parquet.NewGenericWriter[any](f, opts...),
		vals:      boolValues(dec),
		batch:     batch,
		workers:   min(max(1, runtime.GOMAXPROCS(0)), MaxWriterGoroutines),
		groupRows: rowGroupRows,
		last:      -1,
	}
	return w, nil
}

// writerOptions returns parquet-go's options for a file of the given
// schema and key-value metadata, validated.
func writerOptions(schema *parquet.Schema, metadata map[string]string) ([]parquet.WriterOption, error) {
	opts := []parquet.WriterOption{
		schema,
		parquet.Compression(&parquet.Zstd),
		parquet.MaxRowsPerRowGroup(rowGroupRows),
		// Min and max per page go to the page index and, merged, to the
		// column chunk's statistics (what readers prune with); repeating
		// them in every data page header, a deprecated place readers skip,
		// cost a quarter of the writer's CPU on shuffled rows (two bounds
		// scans of every page instead of one).
		parquet.DataPageStatistics(false),
	}
	keys := make([]string, 0, len(metadata))
	for k := range metadata {
		if k == "" {
			return nil, errors.New("release: empty metadata key")
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		opts = append(opts, parquet.KeyValueMetadata(k, metadata[k]))
	}
	// Validated here because NewGenericWriter panics on a bad option. The
	// options, not the config, go to NewGenericWriter: a *WriterConfig
	// passed as an option is merged with the defaults and cannot turn
	// DataPageStatistics off.
	if _, err := parquet.NewWriterConfig(opts...); err != nil {
		return nil, fmt.Errorf("release: parquet writer configuration: %w", err)
	}
	return opts, nil
}

// columnValues returns the Parquet value of every bin of released column
// j (a flat column: repetition level 0, definition level 0 for a required
// column, 1 for a value of an optional one and 0 for its NULL; column
// index j), in the physical types of [Writer].
func columnValues(dec *Decoder, j int) []parquet.Value {
	c := &dec.cols[j]
	v := make([]parquet.Value, c.n)
	def := 0
	if c.null >= 0 {
		def = 1
	}
	for b := range v {
		if b == c.null {
			v[b] = parquet.NullValue().Level(0, 0, j)
			continue
		}
		var x parquet.Value
		switch c.typ {
		case spec.Categorical:
			x = parquet.ByteArrayValue([]byte(c.strs[b]))
		case spec.Boolean:
			x = parquet.BooleanValue(b == 1)
		case spec.Integer:
			x = parquet.Int64Value(c.ints[b])
		case spec.Numeric:
			x = parquet.DoubleValue(c.floats[b])
		case spec.Date:
			x = parquet.Int32Value(c.days[b])
		}
		v[b] = x.Level(0, def, j)
	}
	return v
}

// boolValues returns the Parquet value of every bin of every boolean or
// nullable released column, and nil for the other columns: they are
// written as bin numbers (see [binType], which writes required values
// only).
func boolValues(dec *Decoder) [][]parquet.Value {
	out := make([][]parquet.Value, dec.NumColumns())
	for j := range out {
		if !binned(dec, j) {
			out[j] = columnValues(dec, j)
		}
	}
	return out
}

// binned tells whether released column j is written as bin numbers
// ([binType]): every column but booleans and nullable columns, which are
// written as their Parquet values.
func binned(dec *Decoder, j int) bool {
	return dec.Type(j) != spec.Boolean && dec.NullBin(j) < 0
}

// Schema returns the Parquet schema of the file the writer of names and
// cols produces (see [Writer] for the types), named "synth", for callers
// that check a file against its spec (the golden schema test does) or
// write such a file themselves.
func Schema(names []string, cols []*spec.Column) (*parquet.Schema, error) {
	dec, err := NewDecoder(names, cols)
	if err != nil {
		return nil, err
	}
	return buildSchema(dec, nil, false), nil
}

// buildSchema is the Parquet schema of the released table followed by the
// measure columns. With bins, the columns with a dictionary have a
// [binType] (the writer's, which takes bin numbers); without, parquet-go's
// own types, which take the real values — the same file schema.
func buildSchema(dec *Decoder, extra []MeasureColumn, bins bool) *parquet.Schema {
	g := parquet.Group{}
	order := make([]string, dec.NumColumns(), dec.NumColumns()+len(extra))
	for _, m := range extra {
		order = append(order, m.Name)
		g[m.Name] = parquet.Required(parquet.Encoded(parquet.Leaf(parquet.DoubleType), &parquet.RLEDictionary))
	}
	for j := range dec.NumColumns() {
		n := leafNode(dec.Type(j))
		if dec.Type(j) != spec.Boolean {
			if bins && binned(dec, j) {
				n = binNode{Node: n, typ: newBinType(n.Type(), columnValues(dec, j))}
			}
			n = parquet.Encoded(n, &parquet.RLEDictionary)
		}
		order[j] = dec.Name(j)
		if dec.NullBin(j) >= 0 {
			g[order[j]] = parquet.Optional(n)
		} else {
			g[order[j]] = parquet.Required(n)
		}
	}
	return parquet.NewSchema("synth", newOrderedGroup(g, order))
}

// leafNode returns the Parquet leaf of a released column of type typ (see
// [Writer] for the types), before its encoding.
func leafNode(typ spec.ColumnType) parquet.Node {
	switch typ {
	case spec.Categorical:
		return parquet.String()
	case spec.Boolean:
		return parquet.Leaf(parquet.BooleanType)
	case spec.Integer:
		return parquet.Int(64)
	case spec.Numeric:
		return parquet.Leaf(parquet.DoubleType)
	default: // spec.Date
		return parquet.Date()
	}
}

// orderedGroup is a Parquet group whose fields keep the release order;
// [parquet.Group] sorts them by name. The Parquet column index of a field is
// its position in Fields, which is the release order.
type orderedGroup struct {
	parquet.Group
	fields []parquet.Field
}

func newOrderedGroup(g parquet.Group, order []string) orderedGroup {
	fields := g.Fields()
	rank := make(map[string]int, len(order))
	for i, name := range order {
		rank[name] = i
	}
	slices.SortFunc(fields, func(a, b parquet.Field) int { return rank[a.Name()] - rank[b.Name()] })
	return orderedGroup{Group: g, fields: fields}
}

// Fields returns the fields in release order.
func (g orderedGroup) Fields() []parquet.Field { return g.fields }

// String prints the group in release order.
func (g orderedGroup) String() string {
	var b strings.Builder
	parquet.PrintSchema(&b, "", g)
	return b.String()
}

// Add appends count rows of cell. Cells must come in strictly increasing
// order; a count of 0 writes nothing. Add checks ctx before it starts and
// after every [BatchRows] rows, so a cancelled context stops it within
// that many rows.
//
// On error (ctx done, a cell out of range or out of order, a negative
// count, an I/O error) the writer is aborted: the temporary file is
// removed, and this and every later call of Add, Finish and Close return
// the same error.
func (w *Writer) Add(ctx context.Context, cell, count int64) error {
	if w.err != nil {
		return w.err
	}
	if w.done {
		return ErrWriterDone
	}
	if err := ctx.Err(); err != nil {
		return w.fail(fmt.Errorf("release: writing %s: %w", w.file.Path(), err))
	}
	if count < 0 {
		return w.fail(fmt.Errorf("release: cell %d has a negative count %d", cell, count))
	}
	if err := w.checkCell(cell); err != nil {
		return w.fail(err)
	}
	if cell <= w.last {
		return w.fail(fmt.Errorf("%w: cell %d after cell %d", ErrCellOrder, cell, w.last))
	}
	w.last = cell
	for count > 0 {
		j, err := w.job()
		if err != nil {
			return err
		}
		n := min(count, int64(w.batch-w.unchecked), int64(w.groupRows-j.rows))
		if j.counts == nil {
			j.counts = make([]int64, len(j.cells), cap(j.cells))
			for i := range j.counts {
				j.counts[i] = 1
			}
		}
		j.cells = append(j.cells, cell)
		j.counts = append(j.counts, n)
		count -= n
		if err := w.added(ctx, int(n)); err != nil {
			return err
		}
	}
	return nil
}

// checkCell returns an error wrapping [ErrCellRange] if cell is not a cell
// of the universe.
func (w *Writer) checkCell(cell int64) error {
	if cell < 0 || cell >= w.dec.Size() {
		return fmt.Errorf("%w: cell %d, universe of %d cells", ErrCellRange, cell, w.dec.Size())
	}
	return nil
}

// job returns the row group being collected, after handing a full one to
// an encoder.
func (w *Writer) job() (*rowGroupJob, error) {
	if w.cur != nil && w.cur.rows == w.groupRows {
		if err := w.dispatch(); err != nil {
			return nil, w.fail(err)
		}
	}
	if w.cur == nil {
		if n := len(w.free); n > 0 {
			w.cur, w.free = w.free[n-1], w.free[:n-1]
		} else {
			w.cur = w.newJob()
		}
	}
	return w.cur, nil
}

// newJob returns an empty row group with its encoder's buffers.
func (w *Writer) newJob() *rowGroupJob {
	m := w.dec.NumColumns() + len(w.extra)
	j := &rowGroupJob{rg: w.pw.BeginRowGroup(), buf: make([][]parquet.Value, m), binBuf: make([]binBatch, m)}
	for k := range m {
		if k < len(w.vals) && w.vals[k] == nil {
			j.binBuf[k] = make(binBatch, 4*w.batch)
		} else {
			j.buf[k] = make([]parquet.Value, w.batch)
		}
	}
	return j
}

// added counts n rows just added and checks ctx after every batch.
func (w *Writer) added(ctx context.Context, n int) error {
	w.cur.rows += n
	w.total += int64(n)
	w.unchecked += n
	if w.unchecked < w.batch {
		return nil
	}
	w.unchecked = 0
	if err := ctx.Err(); err != nil {
		return w.fail(fmt.Errorf("release: writing %s: %w", w.file.Path(), err))
	}
	return nil
}

// dispatch hands the collected row group to a new encoder goroutine,
// after committing the oldest one if as many are in flight as there are
// workers.
func (w *Writer) dispatch() error {
	j := w.cur
	w.cur = nil
	if j == nil || j.rows == 0 {
		return nil
	}
	if len(w.inflight) == w.workers {
		if err := w.commitOldest(); err != nil {
			return err
		}
	}
	j.done = make(chan struct{})
	w.inflight = append(w.inflight, j)
	go func() {
		defer close(j.done)
		j.err = w.encode(j)
	}()
	return nil
}

// commitOldest waits for the oldest row group in flight and commits it to
// the file.
func (w *Writer) commitOldest() error {
	j := w.inflight[0]
	w.inflight = w.inflight[1:]
	<-j.done
	if j.err != nil {
		return j.err
	}
	if _, err := j.rg.Commit(); err != nil {
		return fmt.Errorf("release: writing %s: %w", w.file.Path(), err)
	}
	j.cells, j.counts, j.rows, j.err = j.cells[:0], nil, 0, nil
	w.free = append(w.free, j)
	return nil
}

// errStopped is an encoder's error after an abort (never returned to a
// caller: the writer's own error is).
var errStopped = errors.New("release: writer aborted")

// encode writes the rows of j to its Parquet row group in batches, column
// by column, and flushes the row group's last pages. It runs on its own
// goroutine and reads only j, the writer's immutable fields (decoder,
// values, measures) and its stop flag, which it checks after every batch.
func (w *Writer) encode(j *rowGroupJob) error {
	pending := 0
	flush := func() error {
		for k, cw := range j.rg.ColumnWriters() {
			var vals []parquet.Value
			if p := j.binBuf[k]; p != nil {
				j.one[0] = p.value(pending)
				vals = j.one[:]
			} else {
				vals = j.buf[k][:pending]
			}
			if _, err := cw.WriteRowValues(vals); err != nil {
				return fmt.Errorf("release: writing %s: column %q: %w", w.file.Path(), w.columnName(k), err)
			}
		}
		pending = 0
		return nil
	}
	for i, cell := range j.cells {
		j.bins, _ = w.dec.Bins(cell, j.bins) // checked by Add and AddRow
		n := int64(1)
		if j.counts != nil {
			n = j.counts[i]
		}
		for n > 0 {
			m := int(min(n, int64(w.batch-pending)))
			w.appendRows(j, pending, m)
			pending += m
			n -= int64(m)
			if pending == w.batch {
				if err := flush(); err != nil {
					return err
				}
				if w.stop.Load() {
					return errStopped
				}
			}
		}
	}
	if pending > 0 {
		if err := flush(); err != nil {
			return err
		}
	}
	// The last pages are compressed here, in parallel, rather than by
	// Commit.
	if err := j.rg.Flush(); err != nil {
		return fmt.Errorf("release: writing %s: %w", w.file.Path(), err)
	}
	return nil
}

// appendRows sets rows lo to lo+n-1 of j's column buffers to the row of
// j.bins.
func (w *Writer) appendRows(j *rowGroupJob, lo, n int) {
	hi := lo + n
	// One row (every row of a shuffled release) is copied directly: through
	// fill the writer was 20% slower on one core (BenchmarkWriterTPCH).
	if n == 1 {
		for k, b := range j.bins {
			if p := j.binBuf[k]; p != nil {
				binary.LittleEndian.PutUint32(p[4*lo:], uint32(b))
			} else {
				j.buf[k][lo] = w.vals[k][b]
			}
		}
	} else {
		for k, b := range j.bins {
			if p := j.binBuf[k]; p != nil {
				p.set(lo, hi, b)
			} else {
				fill(j.buf[k][lo:hi], w.vals[k][b])
			}
		}
	}
	for e, m := range w.extra {
		k := len(j.bins) + e
		fill(j.buf[k][lo:hi], parquet.DoubleValue(m.Value(j.bins)).Level(0, 0, k))
	}
}

// fill sets every element of dst to v.
func fill(dst []parquet.Value, v parquet.Value) {
	if len(dst) == 0 {
		return
	}
	dst[0] = v
	for k := 1; k < len(dst); k *= 2 {
		copy(dst[k:], dst[:k])
	}
}

// columnName returns the name of output column j (released, then
// measures).
func (w *Writer) columnName(j int) string {
	if j < w.dec.NumColumns() {
		return w.dec.Name(j)
	}
	return w.extra[j-w.dec.NumColumns()].Name
}

// fail records err, aborts and returns err.
func (w *Writer) fail(err error) error {
	w.err = err
	w.abort()
	return err
}

// Rows returns the number of rows added so far.
func (w *Writer) Rows() int64 { return w.total }

// Finish encodes the pending rows, writes the Parquet footer and syncs the
// temporary file, without making it visible: the returned [publish.File] is then
// committed with [publish.File.Commit] or, together with the sidecar report, by a
// [publish.Group]. After Finish, Add fails, Close commits and Abort removes the
// file.
func (w *Writer) Finish() (*publish.File, error) {
	if w.err != nil {
		return nil, w.err
	}
	if w.done {
		return nil, ErrWriterDone
	}
	if err := w.dispatch(); err != nil {
		return nil, w.fail(err)
	}
	for len(w.inflight) > 0 {
		if err := w.commitOldest(); err != nil {
			return nil, w.fail(err)
		}
	}
	if err := w.pw.Close(); err != nil {
		return nil, w.fail(fmt.Errorf("release: writing %s: %w", w.file.Path(), err))
	}
	if err := w.file.Finish(); err != nil {
		return nil, w.fail(err)
	}
	w.done = true
	w.release()
	return w.file, nil
}

// Close finishes the file (see [Writer.Finish]) if needed and renames it
// onto its final path. On error nothing appears under the final path and
// the temporary file is removed. Close returns the writer's earlier error,
// if any, [ErrWriterDone] after Abort, and nil when called again after
// success.
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	switch {
	case w.file.Committed():
		return nil
	case w.file.Aborted():
		return ErrWriterDone
	}
	if !w.done {
		if _, err := w.Finish(); err != nil {
			return err
		}
	}
	if err := w.file.Commit(); err != nil {
		return w.fail(err)
	}
	return nil
}

// Abort stops the writer and removes its temporary file; nothing appears
// under the final path and an earlier file there is left untouched. Later
// calls of Add, Finish and Close fail. Abort does nothing after a
// successful Close, so `defer w.Abort()` is safe.
func (w *Writer) Abort() { w.abort() }

// abort waits for the encoders (they write only to memory), removes the
// temporary file and releases the buffers.
func (w *Writer) abort() {
	if !w.done {
		w.done = true
		w.stop.Store(true)
		for _, j := range w.inflight {
			<-j.done
		}
		w.release()
	}
	w.file.Abort()
}

// release drops the writer's buffers.
func (w *Writer) release() {
	w.cur, w.inflight, w.free, w.vals = nil, nil, nil, nil
}

// AddRow appends one row of cell, in any cell order (the rows of a
// shuffled release, see [Shuffle]). It checks ctx after every [BatchRows]
// rows; on error the writer is aborted as with [Writer.Add]. Add and
// AddRow may not be mixed: Add checks the order against the cells Add saw
// only.
func (w *Writer) AddRow(ctx context.Context, cell int64) error {
	if w.err != nil {
		return w.err
	}
	if w.done {
		return ErrWriterDone
	}
	if err := w.checkCell(cell); err != nil {
		return w.fail(err)
	}
	j, err := w.job()
	if err != nil {
		return err
	}
	j.cells = append(j.cells, cell)
	if j.counts != nil {
		j.counts = append(j.counts, 1)
	}
	return w.added(ctx, 1)
}
