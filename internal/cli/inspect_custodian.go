package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/text/unicode/norm"

	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/privacyunit"
	"github.com/synth-dp/synth/spec"
)

// custodianLabel heads the custodian section of `synth inspect`.
const custodianLabel = "NON-PRIVATE: computed from the private data, for the data custodian only; not differentially private; never publish it (it is never written to a release)"

// custodianReport is the NON-PRIVATE section of `synth inspect`: true
// counts of the data, for the custodian who checks a spec against it. It
// is printed by inspect only; nothing in it reaches a release, its report
// or its metadata (DESIGN.md §3, invariant 5).
type custodianReport struct {
	Label    string            `json:"label"`
	Tables   []tableCounts     `json:"tables"`
	JoinSize int64             `json:"join_size"`
	Warnings []string          `json:"warnings"`
	Keys     []keySpellingNote `json:"key_spellings,omitempty"`
	// UnitKeys are the keys a privacy-unit release needs unique
	// (privacyunit.KeyChecks), checked: a release refuses a duplicated
	// or NULL one before it charges any budget, and its error leaves the
	// value out; here the custodian sees which value and how many rows.
	UnitKeys []unitKeyCheck `json:"unit_keys,omitempty"`
	// Orphans counts, per declared foreign key, the rows that reference
	// no parent row.
	Orphans []orphanCount `json:"orphans,omitempty"`
	// Signal holds the public signal forecast against the true sizes.
	Signal *custodianSignal `json:"signal_forecast,omitempty"`
	// Count forecasts a privacy-unit release's row count and its
	// marginals' regime on the true per-unit rows.
	Count *custodianCount `json:"row_count_forecast,omitempty"`
}

// unitKeyCheck is one privacy-unit key check: OK, or one offending value
// (the smallest) and its rows.
type unitKeyCheck struct {
	Table   string   `json:"table"`
	Key     []string `json:"key"`
	OK      bool     `json:"ok"`
	Value   []string `json:"value,omitempty"`
	Rows    int64    `json:"rows,omitempty"`
	NullKey bool     `json:"null,omitempty"`
	// Declared marks a declared primary key that no unit check covers
	// (every declared key must be unique and non-NULL too).
	Declared bool `json:"declared_only,omitempty"`
}

// checkUnitKeys runs the privacy-unit key checks of s on the loaded tables
// (h the original join): what a release would refuse, before it charges.
func checkUnitKeys(ctx context.Context, s *spec.Spec, h *hypergraph.Hypergraph, eng privacyunit.KeyChecker) ([]unitKeyCheck, []string, error) {
	var out []unitKeyCheck
	var warnings []string
	for _, c := range privacyunit.KeyChecks(s) {
		k := unitKeyCheck{Table: c.Table, Key: c.Key, OK: true}
		err := eng.CheckPrimaryKey(ctx, h, c.Table, c.Key)
		var dk *engine.DuplicateKeyError
		switch {
		case errors.As(err, &dk):
			k.OK, k.Value, k.Rows, k.NullKey = false, dk.Value, dk.Count, dk.Null
			what := fmt.Sprintf("value %q appears in %d rows", strings.Join(dk.Value, ", "), dk.Count)
			if dk.Null {
				what = fmt.Sprintf("a NULL key in %d row(s)", dk.Count)
			}
			warnings = append(warnings, fmt.Sprintf("privacy.unit: table %s's primary key (%s) is not unique and non-NULL (%s): a release refuses it before charging any budget; fix the data or the declared primary_key",
				c.Table, strings.Join(c.Key, ", "), what))
		case err != nil:
			return nil, nil, fmt.Errorf("inspect: key check of %s: %w", c.Table, err)
		}
		out = append(out, k)
	}
	// Every other declared primary key: a release refuses a duplicated
	// or NULL one too (engine.CheckPrimaryKeys), naming neither the value
	// nor its count; here the custodian sees both.
	covered := map[string]bool{}
	for _, k := range out {
		covered[k.Table] = true
	}
	for _, t := range s.Tables {
		if len(t.PrimaryKey) == 0 || covered[t.Name] {
			continue
		}
		k := unitKeyCheck{Table: t.Name, Key: t.PrimaryKey, OK: true, Declared: true}
		err := eng.CheckPrimaryKey(ctx, h, t.Name, t.PrimaryKey)
		var dk *engine.DuplicateKeyError
		switch {
		case errors.As(err, &dk):
			k.OK, k.Value, k.Rows, k.NullKey = false, dk.Value, dk.Count, dk.Null
			what := fmt.Sprintf("value %q appears in %d rows", strings.Join(dk.Value, ", "), dk.Count)
			if dk.Null {
				what = fmt.Sprintf("a NULL key in %d row(s)", dk.Count)
			}
			warnings = append(warnings, fmt.Sprintf("table %s's primary key (%s) is not unique and non-NULL (%s): a release refuses it before charging any budget; fix the data or the declared primary_key",
				t.Name, strings.Join(t.PrimaryKey, ", "), what))
		case err != nil:
			return nil, nil, fmt.Errorf("inspect: key check of %s: %w", t.Name, err)
		}
		out = append(out, k)
	}
	return out, warnings, nil
}

// tableCounts are one table's true row counts.
type tableCounts struct {
	Table      string         `json:"table"`
	SourceRows int64          `json:"source_rows"`
	LoadedRows int64          `json:"loaded_rows"`
	Columns    []columnCounts `json:"columns"`
}

// columnCounts are the rows a column's out_of_domain policy dropped or
// clamped.
type columnCounts struct {
	Column  string `json:"column"`
	Policy  string `json:"out_of_domain"`
	Dropped int64  `json:"rows_dropped,omitempty"`
	Clamped int64  `json:"rows_clamped,omitempty"`
}

// keySpellingNote is a join attribute whose relations write one integer
// in different ways ("01" and "1"), so that the join misses those pairs.
type keySpellingNote struct {
	Attribute string    `json:"attribute"`
	Left      string    `json:"left"`  // table.column
	Right     string    `json:"right"` // table.column
	Example   [2]string `json:"example"`
	Values    int       `json:"values"` // integers written differently
}

// orphanCount is one declared foreign key's rows that reference no row of
// its parent table.
type orphanCount struct {
	Child     string   `json:"child"`
	Columns   []string `json:"columns"`
	Parent    string   `json:"parent"`
	Key       []string `json:"parent_key"`
	Rows      int64    `json:"rows"`
	Orphans   int64    `json:"orphans"`
	Empty     int64    `json:"empty_key"`
	Unmatched int64    `json:"unmatched"`
	Text      string   `json:"text"`
}

// statsEngine is what the NON-PRIVATE section needs of the loaded engine.
// *engine.Engine has these methods.
type statsEngine interface {
	JoinSize(ctx context.Context, h *hypergraph.Hypergraph) (int64, error)
	Degrees(ctx context.Context, h *hypergraph.Hypergraph, rel int, attrs []string) ([]engine.Degree, error)
	CountOrphans(ctx context.Context, s *spec.Spec, h *hypergraph.Hypergraph) ([]engine.Orphans, error)
}

// loadCounter returns, per table of s, the rows of its source and the rows
// each drop or clamp column removes or moves on its own. The engine offers
// no such counts; [sourceCounts] derives them with Load and JoinSize.
type loadCounter func(ctx context.Context, s *spec.Spec) ([]tableCounts, error)

// buildCustodian computes the NON-PRIVATE section on the loaded engine.
func buildCustodian(ctx context.Context, s *spec.Spec, h *hypergraph.Hypergraph, eng statsEngine, counts loadCounter) (*custodianReport, error) {
	c := &custodianReport{Label: custodianLabel, Warnings: []string{}}
	tc, err := counts(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("inspect: counting the sources' rows: %w", err)
	}
	for i, t := range s.Tables {
		one, err := hypergraph.New([]hypergraph.Relation{{Name: t.Name}})
		if err != nil {
			return nil, err
		}
		n, err := eng.JoinSize(ctx, one)
		if err != nil {
			return nil, fmt.Errorf("inspect: rows of %s: %w", t.Name, err)
		}
		tc[i].LoadedRows = n
	}
	c.Tables = tc
	if c.JoinSize, err = eng.JoinSize(ctx, h); err != nil {
		return nil, fmt.Errorf("inspect: join size: %w", err)
	}
	if c.JoinSize == 0 {
		c.Warnings = append(c.Warnings, "the join is empty: no row of one table matches the others on the join keys (check the join equalities and the key values)")
	}
	orphans, err := eng.CountOrphans(ctx, s, h)
	if err != nil {
		return nil, fmt.Errorf("inspect: orphans: %w", err)
	}
	for _, o := range orphans {
		text := o.String()
		if o.Count() == 0 {
			text = fmt.Sprintf("%s: none (every one of the %d rows references a row)", o.Edge(), o.Rows)
		}
		c.Orphans = append(c.Orphans, orphanCount{Child: o.Key.Child, Columns: o.Key.Columns, Parent: o.Key.Parent, Key: o.Key.Key,
			Rows: o.Rows, Orphans: o.Count(), Empty: o.Null, Unmatched: o.Unmatched, Text: text})
		if o.Count() > 0 {
			policy := "synth release refuses this data unless the spec declares join.orphans: drop"
			if s.Orphans == spec.OrphansDrop {
				policy = "join.orphans: drop: the release leaves them out of the join"
			}
			c.Warnings = append(c.Warnings, fmt.Sprintf("orphans: %s; %s", o.String(), policy))
		}
	}
	for _, t := range tc {
		switch {
		case t.LoadedRows > 0:
		case t.SourceRows == 0:
			c.Warnings = append(c.Warnings, fmt.Sprintf("table %s is empty: its source has no row, so the join is empty", t.Table))
		default:
			c.Warnings = append(c.Warnings, fmt.Sprintf("table %s is empty after the load: its source has %d rows and the out_of_domain: drop columns removed them all, so the join is empty", t.Table, t.SourceRows))
		}
	}
	var disjoint []keyOverlap
	if c.Keys, disjoint, err = keySpellings(ctx, h, eng); err != nil {
		return nil, err
	}
	for _, k := range c.Keys {
		c.Warnings = append(c.Warnings, fmt.Sprintf("join keys look like the same numbers written differently (%s vs %s): %s and %s write %d key value(s) differently, and those rows do not join",
			k.Example[0], k.Example[1], k.Left, k.Right, k.Values))
	}
	unicodeNotes, err := keyNormalization(ctx, h, eng)
	if err != nil {
		return nil, err
	}
	c.Warnings = append(c.Warnings, unicodeNotes...)
	for _, k := range disjoint {
		c.Warnings = append(c.Warnings, fmt.Sprintf("join keys never match: %s (%d distinct values, e.g. %s) and %s (%d distinct values, e.g. %s) share no value, so no row of one joins a row of the other (keys compare as text: 07 is not 7, C7 is not 7)",
			k.Left, k.LeftValues, k.LeftExample, k.Right, k.RightValues, k.RightExample))
	}
	return c, nil
}

// keyOverlap is a pair of relations of one join attribute whose key
// values are both non-empty and share no value.
type keyOverlap struct {
	Left, Right               string // table.column
	LeftValues, RightValues   int    // distinct values
	LeftExample, RightExample string
}

// keySpellings finds, for every join attribute, pairs of relations that
// hold one integer written differently ("01" in one, "1" in the other):
// the join compares such values as text, so they do not join.
func keySpellings(ctx context.Context, h *hypergraph.Hypergraph, eng statsEngine) ([]keySpellingNote, []keyOverlap, error) {
	var out []keySpellingNote
	var disjoint []keyOverlap
	for _, a := range h.Attributes() {
		members := h.Atom(a).Members()
		if len(members) < 2 {
			continue
		}
		// spellings[k][n] is the set of texts relation members[k] writes the
		// integer n as; values[k] is the set of its values.
		spellings := make([]map[int64][]string, len(members))
		values := make([]map[string]bool, len(members))
		for k, i := range members {
			dg, err := eng.Degrees(ctx, h, i, []string{a})
			if err != nil {
				return nil, nil, fmt.Errorf("inspect: key values of %s: %w", h.Relation(i).Name, err)
			}
			m := map[int64][]string{}
			values[k] = map[string]bool{}
			for _, d := range dg {
				values[k][d.Values[0]] = true
				n, err := strconv.ParseInt(strings.TrimSpace(d.Values[0]), 10, 64)
				if err != nil {
					continue
				}
				m[n] = append(m[n], d.Values[0])
			}
			spellings[k] = m
		}
		for x := 0; x < len(members); x++ {
			for y := x + 1; y < len(members); y++ {
				if o, ok := overlap(values[x], values[y]); !ok {
					o.Left = h.Relation(members[x]).Name + "." + h.Relation(members[x]).Attrs[a]
					o.Right = h.Relation(members[y]).Name + "." + h.Relation(members[y]).Attrs[a]
					disjoint = append(disjoint, o)
				}
				note := keySpellingNote{Attribute: a,
					Left:  h.Relation(members[x]).Name + "." + h.Relation(members[x]).Attrs[a],
					Right: h.Relation(members[y]).Name + "." + h.Relation(members[y]).Attrs[a]}
				ns := make([]int64, 0, len(spellings[x]))
				for n := range spellings[x] {
					ns = append(ns, n)
				}
				slices.Sort(ns)
				for _, n := range ns {
					sx, sy := spellings[x][n], spellings[y][n]
					if len(sy) == 0 {
						continue
					}
					// A spelling of one side missing on the other side.
					var ex [2]string
					found := false
					for _, v := range sx {
						if !slices.Contains(sy, v) {
							ex, found = [2]string{v, sy[0]}, true
							break
						}
					}
					if !found {
						for _, v := range sy {
							if !slices.Contains(sx, v) {
								ex, found = [2]string{sx[0], v}, true
								break
							}
						}
					}
					if found {
						if note.Values == 0 {
							note.Example = ex
						}
						note.Values++
					}
				}
				if note.Values > 0 {
					out = append(out, note)
				}
			}
		}
	}
	return out, disjoint, nil
}

// keyNormalization warns, for every join attribute, of pairs of relations
// that write one key text in different Unicode normalization forms (é as
// one code point, NFC, in one file and as e plus a combining accent, NFD,
// in the other): the join compares bytes, so those rows do not join. The
// examples are the custodian's own key values, as the other key notes
// print them.
func keyNormalization(ctx context.Context, h *hypergraph.Hypergraph, eng statsEngine) ([]string, error) {
	var out []string
	for _, a := range h.Attributes() {
		members := h.Atom(a).Members()
		if len(members) < 2 {
			continue
		}
		// forms[k] maps the NFC form of each value of members[k] to the
		// value as written.
		forms := make([]map[string]string, len(members))
		for k, i := range members {
			dg, err := eng.Degrees(ctx, h, i, []string{a})
			if err != nil {
				return nil, fmt.Errorf("inspect: key values of %s: %w", h.Relation(i).Name, err)
			}
			forms[k] = map[string]string{}
			for _, d := range dg {
				forms[k][norm.NFC.String(d.Values[0])] = d.Values[0]
			}
		}
		for x := 0; x < len(members); x++ {
			for y := x + 1; y < len(members); y++ {
				n := 0
				var ex [2]string
				keys := slices.Sorted(maps.Keys(forms[x]))
				for _, nfc := range keys {
					vx := forms[x][nfc]
					if vy, ok := forms[y][nfc]; ok && vy != vx {
						if n == 0 {
							ex = [2]string{vx, vy}
						}
						n++
					}
				}
				if n > 0 {
					rx, ry := h.Relation(members[x]), h.Relation(members[y])
					out = append(out, fmt.Sprintf("join keys are the same text in different Unicode normalization forms (NFC: é as one code point; NFD: e and a combining accent): "+
						"%s.%s and %s.%s write %d key value(s) differently, e.g. %q and %q, and those rows do not join: normalize both sources to NFC (e.g. uconv -x any-nfc, or Python's unicodedata.normalize(\"NFC\", s))",
						rx.Name, rx.Attrs[a], ry.Name, ry.Attrs[a], n, ex[0], ex[1]))
				}
			}
		}
	}
	return out, nil
}

// overlap reports whether two non-empty value sets share a value (true
// when either is empty: an empty table has its own warning), with each
// side's size and smallest value as examples when they do not.
func overlap(a, b map[string]bool) (keyOverlap, bool) {
	if len(a) == 0 || len(b) == 0 {
		return keyOverlap{}, true
	}
	for v := range a {
		if b[v] {
			return keyOverlap{}, true
		}
	}
	first := func(m map[string]bool) string {
		vs := make([]string, 0, len(m))
		for v := range m {
			vs = append(vs, v)
		}
		slices.Sort(vs)
		return vs[0]
	}
	return keyOverlap{LeftValues: len(a), RightValues: len(b), LeftExample: first(a), RightExample: first(b)}, false
}

// sourceCounts is the [loadCounter] built on the engine's exported
// methods only: it loads every source a second time, into a separate
// in-memory engine, as tables whose columns are all keys (never checked,
// so every row stays: the source's row count), and once more per drop or
// clamp column with only that column checked, under drop (the rows it
// removes; for a clamp column the rows it moves, since a value clamp cannot
// move fails the real load). It reads each such source 1 + k times; an
// engine method returning the counts of [engine.Engine.Load] would save
// that.
func sourceCounts() loadCounter {
	return func(ctx context.Context, s *spec.Spec) ([]tableCounts, error) {
		eng, err := engine.Open(ctx, "duckdb")
		if err != nil {
			return nil, err
		}
		defer eng.Close()
		type probe struct {
			table, col int // col −1: every column a key
			name       string
		}
		var probes []probe
		diag := &spec.Spec{}
		for i := range s.Tables {
			t := &s.Tables[i]
			add := func(col int) {
				d := spec.Table{Name: fmt.Sprintf("inspect_%d_%d", i, col+1), Source: t.Source, Format: t.Format}
				for j, c := range t.Columns {
					if j == col {
						cc := c
						cc.OutOfDomain = spec.OutOfDomainDrop
						d.Columns = append(d.Columns, cc)
					} else {
						d.Columns = append(d.Columns, spec.Column{Name: c.Name, Type: spec.Key})
					}
				}
				diag.Tables = append(diag.Tables, d)
				probes = append(probes, probe{table: i, col: col, name: d.Name})
			}
			add(-1)
			for j, c := range t.Columns {
				if c.Type != spec.Key && (c.OutOfDomain == spec.OutOfDomainDrop || c.OutOfDomain == spec.OutOfDomainClamp) {
					add(j)
				}
			}
		}
		if err := eng.Load(ctx, diag); err != nil {
			return nil, err
		}
		out := make([]tableCounts, len(s.Tables))
		for i, t := range s.Tables {
			out[i] = tableCounts{Table: t.Name, Columns: []columnCounts{}}
		}
		for _, p := range probes {
			one, err := hypergraph.New([]hypergraph.Relation{{Name: p.name}})
			if err != nil {
				return nil, err
			}
			n, err := eng.JoinSize(ctx, one)
			if err != nil {
				return nil, err
			}
			tc := &out[p.table]
			if p.col < 0 {
				tc.SourceRows = n
				continue
			}
			c := s.Tables[p.table].Columns[p.col]
			cc := columnCounts{Column: c.Name, Policy: string(c.OutOfDomain)}
			if c.OutOfDomain == spec.OutOfDomainClamp {
				cc.Clamped = tc.SourceRows - n
			} else {
				cc.Dropped = tc.SourceRows - n
			}
			tc.Columns = append(tc.Columns, cc)
		}
		return out, nil
	}
}
