package release

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/synth-dp/synth/output/layout"
	"github.com/synth-dp/synth/output/publish"
	"github.com/synth-dp/synth/output/synthfile"
	"github.com/synth-dp/synth/spec"
)

// tableBatch is the number of rows a table writer buffers.
const tableBatch = 8192

// writeTables writes tables/<table>.parquet for every table of the tree
// that has a released column or a child, into the staging folder dir:
// synthetic int64 primary keys (1…n, or for a composite key holding the
// foreign key, the parent's key and the row's number among its parent's
// children), the foreign key to the parent's synthetic key, and the
// released columns it owns, decoded as in the join file.
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
	schema := parquet.NewSchema(t.name, g)
	idx := make([]int, len(order))
	for k, n := range order {
		leaf, ok := schema.Lookup(n)
		if !ok {
			return fmt.Errorf("release: table %s: column %s missing from its schema", t.name, n)
		}
		idx[k] = leaf.ColumnIndex
	}
	f, err := files.Create(path, 0o644)
	if err != nil {
		return err
	}
	w := parquet.NewWriter(f, schema, parquet.Compression(&parquet.Zstd))
	syn := r.synth[i]
	width := len(r.levels[i].cols)
	// The parent's synthetic primary key: its row number + 1.
	keyOf := func(row int64) int64 { return row + 1 }
	// One buffer of rows, reused batch after batch (WriteRows copies the
	// values into its column buffers).
	buf := make([]parquet.Row, tableBatch)
	for k := range buf {
		buf[k] = make(parquet.Row, len(schema.Columns()))
	}
	batch := buf[:0]
	flush := func() error {
		if _, err := w.WriteRows(batch); err != nil {
			return fmt.Errorf("release: writing table %s: %w", t.name, err)
		}
		batch = batch[:0]
		return ctx.Err()
	}
	for row := int64(0); row < syn.rows; row++ {
		vals := buf[len(batch)]
		fkPart := t.fk != "" && slices.Contains(t.pk, t.fk)
		for k, n := range keyCols {
			var v int64
			switch {
			case n == t.fk:
				v = keyOf(int64(syn.parent[row]))
			case fkPart:
				v = int64(syn.seq[row]) // the row's number among its parent's children
			default:
				v = keyOf(row)
			}
			vals[idx[k]] = parquet.Int64Value(v).Level(0, 0, idx[k])
		}
		for k := range relNames {
			b := int(syn.bins[row*int64(width)+int64(at[k])])
			c := len(keyCols) + k
			if v := dec.Value(k, b); v == nil {
				vals[idx[c]] = parquet.NullValue().Level(0, 0, idx[c])
			} else {
				vals[idx[c]] = parquetValue(v).Level(0, definition(relCols[k]), idx[c])
			}
		}
		batch = append(batch, vals)
		if len(batch) == tableBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
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
