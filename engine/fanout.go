package engine

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/synth-dp/synth/spec"
)

// Hop is one foreign-key edge of an ownership path: the rows of Child
// whose column FK equals the primary key column PK of Parent belong to
// that parent row. Both are loaded private tables.
type Hop struct {
	Parent, PK string
	Child, FK  string
}

// keyEq is the SQL equality of two key columns, compared as text when
// their stored types differ (as the join plans compare mixed attributes).
func (e *Engine) keyEq(ctx context.Context, ta, a, tb, b string, aliasA, aliasB string) (string, error) {
	d := e.d
	typesA, err := e.columnTypes(ctx, ta)
	if err != nil {
		return "", err
	}
	typesB, err := e.columnTypes(ctx, tb)
	if err != nil {
		return "", err
	}
	x, y := aliasA+"."+d.ident(a), aliasB+"."+d.ident(b)
	if typesA[a] != typesB[b] {
		x, y = keyText(d, x), keyText(d, y)
	}
	return x + " = " + y, nil
}

// childCounts is the subquery of every parent key's number of children:
// columns k (the key) and n (the count), for the non-NULL keys.
func (e *Engine) childCounts(h Hop) string {
	d := e.d
	fk := d.ident(h.FK)
	return "(SELECT " + fk + " AS k, COUNT(*) AS n FROM " + d.ident(h.Child) + " WHERE " + fk + " IS NOT NULL GROUP BY " + fk + ")"
}

// childCountTable returns the name of a table of the engine's schema
// holding [Engine.childCounts] of h (columns k and n), stored the first
// time a statistic of h asks for it: [Engine.UnitMaxFanout] and
// [Engine.AddFanout] on the same edge (what the tables release runs, in
// that order) then group the child table by its foreign key once instead
// of twice (on TPC-H SF 1, 6 M line items grouped by order). AddFanout,
// the last reader, drops it. The counts depend on the child's rows only:
// [Engine.forget] of the child drops the entry (the table itself goes
// with the engine's schema at Close), and adding columns to a parent
// leaves them valid.
func (e *Engine) childCountTable(ctx context.Context, h Hop) (string, error) {
	e.mu.Lock()
	name, ok := e.counts[h]
	e.mu.Unlock()
	if ok {
		return name, nil
	}
	name = e.tempName("child_counts")
	if _, err := e.db.ExecContext(ctx, e.d.replaceTable(name, "SELECT k, n FROM "+e.childCounts(h)+" AS c", false)); err != nil {
		return "", statError(ctx, "child counts of "+h.Parent+" in "+h.Child, err)
	}
	e.mu.Lock()
	if e.counts == nil {
		e.counts = map[Hop]string{}
	}
	e.counts[h] = name
	e.mu.Unlock()
	return name, nil
}

// dropChildCounts drops h's stored child counts, if any.
func (e *Engine) dropChildCounts(ctx context.Context, h Hop) {
	e.mu.Lock()
	name, ok := e.counts[h]
	delete(e.counts, h)
	e.mu.Unlock()
	if ok {
		e.db.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+e.d.ident(name))
	}
}

// countsOn is the join condition of h's parent rows (alias parent) with
// [Engine.childCounts] (alias f), compared as text when the key columns'
// stored types differ.
func (e *Engine) countsOn(ctx context.Context, h Hop, parent string) (string, error) {
	d := e.d
	typesP, err := e.columnTypes(ctx, h.Parent)
	if err != nil {
		return "", err
	}
	typesC, err := e.columnTypes(ctx, h.Child)
	if err != nil {
		return "", err
	}
	pk, fk := parent+"."+d.ident(h.PK), "f.k"
	if typesP[h.PK] != typesC[h.FK] {
		pk, fk = keyText(d, pk), keyText(d, fk)
	}
	return pk + " = " + fk, nil
}

// binCase is the SQL bin of the count x in the half-open bins of lows
// (lows[0] = 0 < lows[1] < …): the last bin takes every count at or
// above its low end (the clip).
func binCase(x string, lows []int64) string {
	var b strings.Builder
	b.WriteString("CASE")
	for i := len(lows) - 1; i >= 1; i-- {
		fmt.Fprintf(&b, " WHEN %s >= %d THEN %d", x, lows[i], i)
	}
	b.WriteString(" ELSE 0 END")
	return b.String()
}

// FanoutColumn is one binned fan-out column [Engine.AddFanout] adds: its
// declared name and the low ends of its bins (Lows[0] = 0 < Lows[1] < …;
// the last bin takes every larger count).
type FanoutColumn struct {
	Name string
	Lows []int64
}

// AddFanout adds to the loaded table h.Parent the binned columns cols
// (declared-column names; stored as [BinColumn](name)) holding, for every
// parent row, the bin of its number of h.Child rows (0 children for a row
// no child references), and declares their sizes for the folds and
// statistics that follow: one pass over both tables whatever the number
// of columns. Fold the tables again after it. It reads private data only
// to store a per-row count inside the engine; nothing leaves it.
func (e *Engine) AddFanout(ctx context.Context, h Hop, cols ...FanoutColumn) error {
	d := e.d
	var sel []string
	for _, c := range cols {
		if len(c.Lows) == 0 || c.Lows[0] != 0 {
			return fmt.Errorf("%w: fan-out bins %v of %s: want lows starting at 0", ErrInvalid, c.Lows, c.Name)
		}
		sel = append(sel, binCase("COALESCE(f.n, 0)", c.Lows)+" AS "+d.ident(BinColumn(c.Name)))
	}
	if len(sel) == 0 {
		return nil
	}
	on, err := e.countsOn(ctx, h, "p")
	if err != nil {
		return err
	}
	counts, err := e.childCountTable(ctx, h)
	if err != nil {
		return err
	}
	defer e.dropChildCounts(ctx, h)
	if err := e.rebuild(ctx, h.Parent, strings.Join(sel, ", "), d.ident(counts), on, "fan-out of "+h.Parent+" in "+h.Child); err != nil {
		return err
	}
	for _, c := range cols {
		e.declareSize(h.Parent, c.Name, len(c.Lows))
	}
	return nil
}

// declareSize records the number of bins of a column added to table.
func (e *Engine) declareSize(table, column string, size int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.sizes[table] == nil {
		e.sizes[table] = map[string]int{}
	}
	e.sizes[table][column] = size
}

// UnitMaxFanout returns, for the ownership path path (path[0].Parent is
// the unit table, path[i].Child = path[i+1].Parent) and the last hop's
// edge, how many units have each largest fan-out: for every unit, the
// largest number of path[len−1].Child rows that one of its
// path[len−1].Parent rows has (0 for a unit without such rows), counted
// by that largest value. f hears (largest fan-out, units) pairs. An
// aggregate over units: the input of a DP clip choice.
func (e *Engine) UnitMaxFanout(ctx context.Context, unitKey string, path []Hop, f func(fanout, units int64) error) error {
	if len(path) == 0 {
		return fmt.Errorf("%w: unit max fan-out: empty path", ErrInvalid)
	}
	d := e.d
	var from strings.Builder
	from.WriteString(d.ident(path[0].Parent) + " AS t0")
	for i := 0; i+1 < len(path); i++ {
		a := "t" + strconv.Itoa(i+1)
		eq, err := e.keyEq(ctx, path[i].Child, path[i].FK, path[i].Parent, path[i].PK, a, "t"+strconv.Itoa(i))
		if err != nil {
			return err
		}
		from.WriteString(" LEFT JOIN " + d.ident(path[i].Child) + " AS " + a + " ON " + eq)
	}
	last := path[len(path)-1]
	la := "t" + strconv.Itoa(len(path)-1)
	on, err := e.countsOn(ctx, last, la)
	if err != nil {
		return err
	}
	counts, err := e.childCountTable(ctx, last)
	if err != nil {
		return err
	}
	from.WriteString(" LEFT JOIN " + d.ident(counts) + " AS f ON " + on)
	q := "SELECT m, COUNT(*) FROM (SELECT t0." + d.ident(unitKey) + " AS u, COALESCE(MAX(f.n), 0) AS m FROM " + from.String() +
		" GROUP BY t0." + d.ident(unitKey) + ") AS per_unit GROUP BY m ORDER BY m"
	return e.scanPairs(ctx, q, "largest fan-out per unit", f)
}

// AddMode adds to the loaded table h.Parent the column name (declared;
// stored as [BinColumn](name)) holding, for every parent row, the most
// frequent bin of the declared column col among its h.Child rows (the
// smallest such bin on a tie; bin 0 for a row without children), and
// declares its size (col's number of bins) for the folds and statistics
// that follow. Fold the tables again after it. It reads private data only
// to store a per-row value inside the engine; nothing leaves it.
func (e *Engine) AddMode(ctx context.Context, h Hop, name, col string, size int) error {
	d := e.d
	if size < 1 {
		return fmt.Errorf("%w: mode column %s: %d bins", ErrInvalid, name, size)
	}
	fk, b := d.ident(h.FK), d.ident(BinColumn(col))
	modes := "(SELECT k, MIN(b) AS b FROM (SELECT " + fk + " AS k, " + b + " AS b, COUNT(*) AS c, MAX(COUNT(*)) OVER (PARTITION BY " + fk + ") AS mx FROM " +
		d.ident(h.Child) + " WHERE " + fk + " IS NOT NULL GROUP BY " + fk + ", " + b + ") AS t WHERE c = mx GROUP BY k)"
	on, err := e.countsOn(ctx, h, "p")
	if err != nil {
		return err
	}
	if err := e.rebuild(ctx, h.Parent, "COALESCE(f.b, 0) AS "+d.ident(BinColumn(name)), modes, on, "mode of "+col+" of "+h.Child+" per "+h.Parent); err != nil {
		return err
	}
	e.declareSize(h.Parent, name, size)
	return nil
}

// rebuild replaces the loaded relation table by table ⋈ sub (alias f,
// left join on on) with the new columns sel beside its own. The relation
// may be a view over the loaded file: build the new table beside it, drop
// the old relation, and give the new table its name.
func (e *Engine) rebuild(ctx context.Context, table, sel, sub, on, what string) error {
	d := e.d
	var kind string
	if err := e.db.QueryRowContext(ctx, "SELECT table_type FROM information_schema.tables WHERE table_name = $1 AND table_schema = current_schema()", table).Scan(&kind); err != nil {
		return statError(ctx, what, err)
	}
	drop := "DROP TABLE "
	if strings.Contains(strings.ToUpper(kind), "VIEW") {
		drop = "DROP VIEW "
	}
	cascade := ""
	switch d.(type) {
	case postgres, shardedPostgres:
		// PostgreSQL keeps views bound to the relation they read and
		// refuses to drop it under them ("cannot drop table customer
		// because other objects depend on it": the fold view of customer ⋈
		// nation ⋈ region). They go with it, as replaceTable and
		// replaceView drop theirs: the caller folds again after the
		// rebuild (AddFanout and AddMode say so), which builds them anew
		// on the new table.
		cascade = " CASCADE"
	}
	tmp := d.ident(ReservedPrefix + "fan_" + table)
	stmts := []string{
		"DROP TABLE IF EXISTS " + tmp,
		"CREATE TABLE " + tmp + " AS SELECT p.*, " + sel + " FROM " + d.ident(table) + " AS p LEFT JOIN " + sub + " AS f ON " + on,
		drop + d.ident(table) + cascade,
		"ALTER TABLE " + tmp + " RENAME TO " + d.ident(table),
	}
	for _, q := range stmts {
		if _, err := e.db.ExecContext(ctx, q); err != nil {
			return statError(ctx, what, err)
		}
	}
	e.forget(table)
	return nil
}

// LookupRows reads a public lookup table root joined to the public tables
// it reaches (edges[k] = {a column of an earlier table, the primary key
// of the table it adds}): for every row, in the order of root's key, the
// key (an int64 when stored as an integer, else its text) and the stored
// bins of the declared columns bins (NULL when a row's value has no bin).
// It reads public tables only.
func (e *Engine) LookupRows(ctx context.Context, root, key string, edges [][2]spec.ColumnRef, bins []spec.ColumnRef, f func(key any, bins []sql.NullInt64) error) error {
	d := e.d
	isInt, err := e.StoredAsInteger(ctx, root, key)
	if err != nil {
		return err
	}
	alias := map[string]string{root: "t0"}
	for k, ed := range edges {
		alias[ed[1].Table] = "t" + strconv.Itoa(k+1)
	}
	k := "t0." + d.ident(key)
	if !isInt {
		k = keyText(d, k)
	}
	var q strings.Builder
	q.WriteString("SELECT " + k)
	for _, b := range bins {
		a, ok := alias[b.Table]
		if !ok {
			return fmt.Errorf("%w: lookup rows of %s: column %s is in no joined table", ErrInvalid, root, b)
		}
		q.WriteString(", " + a + "." + d.ident(BinColumn(b.Column)))
	}
	q.WriteString(" FROM " + d.ident(root) + " AS t0")
	for _, ed := range edges {
		a, ok := alias[ed[0].Table]
		if !ok {
			return fmt.Errorf("%w: lookup rows of %s: edge %s = %s leaves the joined tables", ErrInvalid, root, ed[0], ed[1])
		}
		q.WriteString(" JOIN " + d.ident(ed[1].Table) + " AS " + alias[ed[1].Table] + " ON " +
			keyText(d, a+"."+d.ident(ed[0].Column)) + " = " + keyText(d, alias[ed[1].Table]+"."+d.ident(ed[1].Column)))
	}
	q.WriteString(" ORDER BY 1")
	return e.Aggregate(ctx, q.String(), nil, func(rows *sql.Rows) error {
		vals := make([]sql.NullInt64, len(bins))
		dst := make([]any, 0, len(bins)+1)
		var ik int64
		var sk string
		if isInt {
			dst = append(dst, &ik)
		} else {
			dst = append(dst, &sk)
		}
		for b := range vals {
			dst = append(dst, &vals[b])
		}
		if err := rows.Scan(dst...); err != nil {
			return err
		}
		if isInt {
			return f(ik, vals)
		}
		return f(sk, vals)
	})
}
