package release

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/output/publish"
	"github.com/synth-dp/synth/output/synthfile"
	"github.com/synth-dp/synth/spec"
)

// tableBatch is the number of values a table writer hands parquet-go at
// a time.
const tableBatch = 8192

// writeTables writes tables/<table>.parquet for every table of the tree
// that has a released column or a child, into the staging folder dir:
// synthetic int64 primary keys (1…n, or for a composite key holding the
// foreign key, the parent's key and the row's number among its parent's
// children), the foreign key to the parent's synthetic key, the released
// columns it owns, decoded as in the join file, and its foreign keys into
// public tables, holding real keys of those tables ([publicFK]).
func (r *tablesRun) writeTables(ctx context.Context, dir string, files *publish.Group) ([]string, error) {
	if err := os.MkdirAll(filepath.Join(dir, layout.TablesDir), 0o755); err != nil {
		return nil, fmt.Errorf("release: %w", err)
	}
	var names []string
	for i, t := range r.tree.tables {
		if len(t.released) == 0 && len(t.children) == 0 {
			continue
		}
		if err := r.writeTable(ctx, i, filepath.Join(dir, layout.TablesDir, t.name+".parquet"), files); err != nil {
			return nil, err
		}
		names = append(names, t.name)
	}
	return names, nil
}

// tableRowGroup is the number of rows of one row group of a table file:
// parquet-go holds a row group's compressed pages in memory until it is
// committed, so this and the number of row groups in flight (one per
// core) bound the writer's memory.
const tableRowGroup = 1 << 20

// writeTable writes table i column by column: every row group's columns
// are handed to parquet-go's column writers a batch of values at a time
// (the values of a released column's bins made once, not per row), and
// the row groups are encoded in parallel, one per core, and committed in
// order. The rows, the schema and the values are those of the row-wise
// writer it replaces (parquet-go's Writer.WriteRows: 3.2 s of CPU of a
// TPC-H SF 1 tables release).
func (r *tablesRun) writeTable(ctx context.Context, i int, path string, files *publish.Group) error {
	t := r.tree.tables[i]
	relNames, relCols, at := r.tableColumns(i)
	dec, err := synthfile.NewDecoder(relNames, relCols)
	if err != nil && len(relNames) > 0 {
		return err
	}
	g := parquet.Group{}
	var order []string
	keyCols := slices.Clone(t.pk)
	if t.fk != "" && !slices.Contains(keyCols, t.fk) {
		keyCols = append(keyCols, t.fk)
	}
	for _, k := range keyCols {
		g[k] = parquet.Int(64)
		order = append(order, k)
	}
	for k, n := range relNames {
		if _, dup := g[n]; dup {
			return fmt.Errorf("%w: release.output tables: table %s: released column %s has the name of a key column", ErrUnsupported, t.name, n)
		}
		g[n] = leafOf(relCols[k])
		order = append(order, n)
	}
	var pubs []*publicFK
	if i < len(r.public) {
		pubs = r.public[i]
	}
	for _, fk := range pubs {
		if _, dup := g[fk.column]; dup {
			return fmt.Errorf("%w: release.output tables: table %s: foreign key %s has the name of another column", ErrUnsupported, t.name, fk.column)
		}
		g[fk.column] = parquet.String()
		if fk.isInt {
			g[fk.column] = parquet.Int(64)
		}
		order = append(order, fk.column)
	}
	schema := parquet.NewSchema(t.name, g)
	syn := r.synth[i]
	width := int64(r.levels[i].ownWidth())
	fkPart := t.fk != "" && slices.Contains(t.pk, t.fk)
	// fill[c] writes column c's values of rows lo … lo+len(dst)−1 into dst
	// (leveled for the column's index in the schema).
	fill := make([]func(dst []parquet.Value, lo int64), len(schema.Columns()))
	for k, n := range order {
		leaf, ok := schema.Lookup(n)
		if !ok {
			return fmt.Errorf("release: table %s: column %s missing from its schema", t.name, n)
		}
		col := leaf.ColumnIndex
		switch {
		case k >= len(keyCols)+len(relNames):
			// A foreign key into a public table: the chosen real keys.
			fk := pubs[k-len(keyCols)-len(relNames)]
			fill[col] = func(dst []parquet.Value, lo int64) {
				for d := range dst {
					if fk.isInt {
						dst[d] = parquet.Int64Value(fk.ints[lo+int64(d)]).Level(0, 0, col)
					} else {
						dst[d] = parquet.ByteArrayValue([]byte(fk.strs[lo+int64(d)])).Level(0, 0, col)
					}
				}
			}
		case k >= len(keyCols):
			// A released column: its bins' values, made once.
			rel := k - len(keyCols)
			vals := make([]parquet.Value, dec.NumBins(rel))
			for b := range vals {
				if v := dec.Value(rel, b); v == nil {
					vals[b] = parquet.NullValue().Level(0, 0, col)
				} else {
					vals[b] = parquetValue(v).Level(0, definition(relCols[rel]), col)
				}
			}
			pos := int64(at[rel])
			fill[col] = func(dst []parquet.Value, lo int64) {
				for d := range dst {
					dst[d] = vals[syn.bins[(lo+int64(d))*width+pos]]
				}
			}
		case n == t.fk:
			// The parent's synthetic primary key: its row number + 1.
			fill[col] = func(dst []parquet.Value, lo int64) {
				for d := range dst {
					dst[d] = parquet.Int64Value(int64(syn.parent[lo+int64(d)])+1).Level(0, 0, col)
				}
			}
		case fkPart:
			// The row's number among its parent's children.
			fill[col] = func(dst []parquet.Value, lo int64) {
				for d := range dst {
					dst[d] = parquet.Int64Value(int64(syn.seq[lo+int64(d)])).Level(0, 0, col)
				}
			}
		default:
			// The row's own synthetic key: its row number + 1.
			fill[col] = func(dst []parquet.Value, lo int64) {
				for d := range dst {
					dst[d] = parquet.Int64Value(lo+int64(d)+1).Level(0, 0, col)
				}
			}
		}
	}
	f, err := files.Create(path, 0o644)
	if err != nil {
		return err
	}
	w := parquet.NewWriter(f, schema, parquet.Compression(&parquet.Zstd), parquet.MaxRowsPerRowGroup(tableRowGroup),
		// As the join file's writer: bounds in the page index and the
		// column chunk's statistics, not repeated in every page header.
		parquet.DataPageStatistics(false))
	type job struct {
		rg   *parquet.ConcurrentRowGroupWriter
		err  error
		done chan struct{}
	}
	encode := func(j *job, lo, hi int64) {
		defer close(j.done)
		buf := make([]parquet.Value, tableBatch)
		for c, cw := range j.rg.ColumnWriters() {
			for b := lo; b < hi; b += tableBatch {
				if err := ctx.Err(); err != nil {
					j.err = err
					return
				}
				dst := buf[:min(tableBatch, hi-b)]
				fill[c](dst, b)
				if _, err := cw.WriteRowValues(dst); err != nil {
					j.err = fmt.Errorf("release: writing table %s: %w", t.name, err)
					return
				}
			}
		}
		if err := j.rg.Flush(); err != nil {
			j.err = fmt.Errorf("release: writing table %s: %w", t.name, err)
		}
	}
	var inFlight []*job
	commit := func() error {
		j := inFlight[0]
		inFlight = inFlight[1:]
		<-j.done
		if j.err != nil {
			return j.err
		}
		if _, err := j.rg.Commit(); err != nil {
			return fmt.Errorf("release: writing table %s: %w", t.name, err)
		}
		return nil
	}
	fail := func(err error) error {
		for _, j := range inFlight {
			<-j.done
		}
		return err
	}
	for lo := int64(0); lo < syn.rows; lo += tableRowGroup {
		j := &job{rg: w.BeginRowGroup(), done: make(chan struct{})}
		inFlight = append(inFlight, j)
		go encode(j, lo, min(lo+tableRowGroup, syn.rows))
		if len(inFlight) >= runtime.GOMAXPROCS(0) {
			if err := commit(); err != nil {
				return fail(err)
			}
		}
	}
	for len(inFlight) > 0 {
		if err := commit(); err != nil {
			return fail(err)
		}
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("release: writing table %s: %w", t.name, err)
	}
	return nil
}

// leafOf is the Parquet leaf of a released column, as the join file's.
func leafOf(c *spec.Column) parquet.Node {
	n := parquet.Node(parquet.Int(64))
	switch c.Type {
	case spec.Categorical:
		n = parquet.String()
	case spec.Boolean:
		n = parquet.Leaf(parquet.BooleanType)
	case spec.Numeric:
		n = parquet.Leaf(parquet.DoubleType)
	case spec.Date:
		n = parquet.Date()
	}
	if c.Nullable {
		return parquet.Optional(n)
	}
	return parquet.Required(n)
}

// definition is the Parquet definition level of a value of column c: 1 in
// an optional (nullable) column, 0 in a required one.
func definition(c *spec.Column) int {
	if c.Nullable {
		return 1
	}
	return 0
}

// parquetValue converts a decoded value.
func parquetValue(v any) parquet.Value {
	switch x := v.(type) {
	case string:
		return parquet.ByteArrayValue([]byte(x))
	case bool:
		return parquet.BooleanValue(x)
	case int64:
		return parquet.Int64Value(x)
	case float64:
		return parquet.DoubleValue(x)
	case time.Time:
		return parquet.Int32Value(int32(x.Unix() / 86400))
	}
	panic(fmt.Sprintf("release: value %v of type %T", v, v))
}
