package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// MaxColumnSize is the largest number of cells a column's binned domain may
// have (categorical values, integers or bins, days, months or years). It
// keeps every per-column array a mechanism builds of a sane size; the
// product over the released columns is bounded separately (see
// [Spec.UniverseSize]).
const MaxColumnSize = 1 << 24

// maxExactInt bounds integer-column limits: every integer up to 2^53 is
// exact in a float64.
const maxExactInt = 1 << 53

// Load reads and validates the spec file at path. Relative paths in it
// resolve against the file's folder. A problem in the spec is returned as an
// [*Error] wrapping [ErrInvalid]; only the first problem found is reported.
// A spec file that cannot be read (missing, a folder, no permission) is
// such an error too: the spec is what the user got wrong.
func Load(path string) (*Spec, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, &Error{File: path, Err: errors.New("is a folder, not a spec file (give the YAML file itself)")}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &Error{File: path, Err: fmt.Errorf("cannot read the spec: %w", err)}
	}
	return Parse(data, path)
}

// Parse validates the spec in data. file names it in error messages and
// gives the folder that relative paths resolve against; with file "" they
// resolve against the current directory. Parse reads the SDV metadata file
// the spec names, if any, but not the table sources: it only stats them, to
// refuse two tables reading one file (see "Sources" in the package doc).
//
// Parse reports the first problem it finds, in document order, as an
// [*Error] wrapping [ErrInvalid]: the remaining problems often follow from
// the first one, and a fixed-up spec is checked again anyway.
func Parse(data []byte, file string) (s *Spec, err error) {
	base := file
	if base == "" {
		base = "."
	} else {
		base = filepath.Dir(base)
	}
	dir, err := filepath.Abs(base)
	if err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	p := &parser{file: file, dir: dir}
	defer func() {
		if r := recover(); r != nil {
			b, ok := r.(bail)
			if !ok {
				panic(r)
			}
			s, err = nil, b.err
		}
	}()
	s = p.parse(data)
	s.raw = append([]byte(nil), data...)
	return s, nil
}

// bail carries the first problem out of the recursive descent; Parse
// recovers it.
type bail struct{ err *Error }

type parser struct {
	file string // as given, for messages
	dir  string // absolute folder relative paths resolve against
	s    *Spec

	// Lines and keys of the top-level sections, for cross-section errors.
	sections map[string]*yaml.Node
	// Where each table and column was declared, for messages.
	tableNode map[string]*yaml.Node
	// listed holds the names of the tables the spec lists.
	listed map[string]bool
	// sdv is the parsed SDV metadata, or nil.
	sdv *sdvMetadata
	// released marks released columns.
	released map[ColumnRef]bool
	// sources holds the sources of the tables parsed so far, to refuse
	// two tables reading one file (see checkSource).
	sources []*sourceEntry
}

// fail stops parsing with a problem at node n (which may be nil) and key.
func (p *parser) fail(n *yaml.Node, key, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	panic(bail{&Error{File: p.file, Line: line, Key: key, Err: fmt.Errorf(format, args...)}})
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func (p *parser) yamlError(err error) {
	msg := err.Error()
	line := 0
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	panic(bail{&Error{File: p.file, Line: line, Err: errors.New("yaml: " + msg)}})
}

func (p *parser) parse(data []byte) *Spec {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			p.fail(nil, "", "empty spec")
		}
		p.yamlError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		if err != nil {
			p.yamlError(err)
		}
		p.fail(&extra, "", "more than one YAML document")
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			p.fail(root, "", "empty spec")
		}
		root = root.Content[0]
	}
	p.s = &Spec{File: p.file, Orphans: OrphansError}
	p.released = map[ColumnRef]bool{}
	p.tableNode = map[string]*yaml.Node{}
	m := p.mapping(root, "", "privacy", "sdv_metadata", "tables", "relationships", "join", "release", "workload", "pmw", "output")
	p.sections = m.vals

	p.privacy(m.required("privacy"))
	if n := m.get("sdv_metadata"); n != nil {
		p.sdvMetadata(n)
	}
	p.tables(m.required("tables"))
	p.checkPrivate(m.get("tables"))
	p.checkUnit(m.get("privacy"))
	if p.sdv != nil {
		p.sdvRelationships()
	}
	if n := m.get("relationships"); n != nil {
		p.relationships(n)
	}
	if n := m.get("join"); n != nil {
		p.join(n)
	}
	p.checkJoin()
	p.release(m.required("release"))
	if n := m.get("workload"); n != nil {
		p.workload(n)
	}
	if n := m.get("pmw"); n != nil {
		p.pmw(n)
	}
	if n := m.get("output"); n != nil {
		p.output(n)
	}
	return p.s
}

// ---- generic node helpers ----

// deref follows aliases.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "empty"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "not a value"
}

// mapping is a YAML mapping whose keys have been checked.
type mapping struct {
	p    *parser
	node *yaml.Node
	path string
	vals map[string]*yaml.Node // key -> value
	keys map[string]*yaml.Node // key -> key node
	seq  []string              // keys in document order
}

// mapping checks that n is a mapping with scalar keys, no duplicate key and
// only the allowed keys (when allowed is non-empty).
func (p *parser) mapping(n *yaml.Node, path string, allowed ...string) *mapping {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		p.fail(n, path, "must be a mapping, got %s", kindName(n))
	}
	m := &mapping{p: p, node: n, path: path, vals: map[string]*yaml.Node{}, keys: map[string]*yaml.Node{}}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		if k == nil || k.Kind != yaml.ScalarNode || k.Value == "" {
			p.fail(n.Content[i], path, "keys must be non-empty names")
		}
		if k.ShortTag() == "!!merge" {
			p.fail(k, path, "merge keys (<<) are not supported; repeat the keys or use an alias for the whole value")
		}
		if prev, ok := m.keys[k.Value]; ok {
			p.fail(k, join(path, k.Value), "duplicate key (first at line %d)", prev.Line)
		}
		if len(allowed) > 0 && !contains(allowed, k.Value) {
			where := path
			if where == "" {
				where = "top level"
			}
			p.fail(k, path, "unknown key %q (allowed at %s: %s)", k.Value, where, strings.Join(allowed, ", "))
		}
		m.keys[k.Value] = k
		m.vals[k.Value] = v
		m.seq = append(m.seq, k.Value)
	}
	return m
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// get returns the value of key, or nil when absent.
func (m *mapping) get(key string) *yaml.Node { return m.vals[key] }

// required returns the value of key or fails naming it.
func (m *mapping) required(key string) *yaml.Node {
	v, ok := m.vals[key]
	if !ok {
		m.p.fail(m.node, join(m.path, key), "missing (required)")
	}
	return v
}

// sequence checks that n is a list and returns its items.
func (p *parser) sequence(n *yaml.Node, path string) []*yaml.Node {
	n = deref(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		p.fail(n, path, "must be a list, got %s", kindName(n))
	}
	return n.Content
}

// str returns a non-empty scalar's text.
func (p *parser) str(n *yaml.Node, path string) string {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		p.fail(n, path, "must be a single value, got %s", kindName(n))
	}
	if n.ShortTag() == "!!null" || n.Value == "" {
		p.fail(n, path, "must not be empty")
	}
	return n.Value
}

// name returns a table or column name: non-empty, without dots.
func (p *parser) name(n *yaml.Node, path, what string) string {
	s := p.str(n, path)
	if strings.Contains(s, ".") {
		p.fail(deref(n), path, "%s name %q must not contain '.' (references use table.column)", what, s)
	}
	if strings.TrimSpace(s) != s {
		p.fail(deref(n), path, "%s name %q has leading or trailing spaces", what, s)
	}
	return s
}

// number returns a finite number.
func (p *parser) number(n *yaml.Node, path string) float64 {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		p.fail(n, path, "must be a number, got %s", kindName(n))
	}
	tag := n.ShortTag()
	if tag != "!!int" && tag != "!!float" {
		p.fail(n, path, "must be a number, got %s", kindName(n))
	}
	var f float64
	if err := n.Decode(&f); err != nil {
		p.fail(n, path, "must be a number, got %q", n.Value)
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		p.fail(n, path, "must be finite, got %s", n.Value)
	}
	return f
}

// integral returns a number that must be a whole number in [-2^53, 2^53].
func (p *parser) integral(n *yaml.Node, path string) float64 {
	f := p.number(n, path)
	if f != math.Trunc(f) {
		p.fail(deref(n), path, "must be a whole number, got %s", deref(n).Value)
	}
	if math.Abs(f) > maxExactInt {
		p.fail(deref(n), path, "must be at most 2^53 in absolute value, got %s", deref(n).Value)
	}
	return f
}

// count returns a whole number in [1, max].
func (p *parser) count(n *yaml.Node, path string, max int) int {
	f := p.number(n, path)
	if f != math.Trunc(f) {
		p.fail(deref(n), path, "must be a whole number, got %s", deref(n).Value)
	}
	if f <= 0 {
		p.fail(deref(n), path, "must be > 0, got %s", deref(n).Value)
	}
	if f > float64(max) {
		p.fail(deref(n), path, "must be at most %d, got %s", max, deref(n).Value)
	}
	return int(f)
}

// boolean returns true or false.
func (p *parser) boolean(n *yaml.Node, path string) bool {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		p.fail(n, path, "must be true or false, got %s", kindName(n))
	}
	var b bool
	if err := n.Decode(&b); err != nil {
		p.fail(n, path, "must be true or false, got %q", n.Value)
	}
	return b
}

// date returns a YYYY-MM-DD date as UTC midnight.
func (p *parser) date(n *yaml.Node, path string) time.Time {
	s := p.str(n, path)
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		p.fail(deref(n), path, "must be a date YYYY-MM-DD, got %q", s)
	}
	return d
}

// choice returns one of the allowed values.
func (p *parser) choice(n *yaml.Node, path string, allowed ...string) string {
	s := p.str(n, path)
	if !contains(allowed, s) {
		p.fail(deref(n), path, "must be one of %s, got %q", strings.Join(allowed, ", "), s)
	}
	return s
}

// path resolves a file path against the spec's folder. URLs are kept.
func (p *parser) path(s string) string {
	if strings.Contains(s, "://") || filepath.IsAbs(s) {
		return s
	}
	return filepath.Join(p.dir, s)
}

// ---- sections ----

func (p *parser) privacy(n *yaml.Node) {
	m := p.mapping(n, "privacy", "epsilon", "delta", "unit", "max_unit_rows", "ledger", "lifetime")
	eps := p.number(m.required("epsilon"), "privacy.epsilon")
	if eps <= 0 {
		p.fail(deref(m.get("epsilon")), "privacy.epsilon", "must be > 0, got %v", eps)
	}
	delta := p.number(m.required("delta"), "privacy.delta")
	if delta < 0 || delta >= 1 {
		p.fail(deref(m.get("delta")), "privacy.delta", "must be in [0, 1), got %v", delta)
	}
	if eps > MaxEpsilon {
		p.fail(deref(m.get("epsilon")), "privacy.epsilon", "%v", epsilonTooLarge(eps))
	}
	if eps < MinEpsilon {
		p.fail(deref(m.get("epsilon")), "privacy.epsilon", "%v", epsilonTooSmall(eps))
	}
	if delta > 0 && !tauFits(eps, delta) {
		p.fail(deref(m.get("delta")), "privacy.delta", "%v", tauOverflows(eps, delta))
	}
	p.s.Privacy = Privacy{Epsilon: eps, Delta: delta}
	if u := m.get("unit"); u != nil {
		p.s.Privacy.Unit = p.str(u, "privacy.unit")
	}
	if mr := m.get("max_unit_rows"); mr != nil {
		v := p.number(mr, "privacy.max_unit_rows")
		if !(v >= 1 && v <= 1<<30) || v != math.Floor(v) {
			p.fail(deref(mr), "privacy.max_unit_rows", "want a whole number of rows between 1 and 2^30, got %v", v)
		} else {
			p.s.Privacy.MaxUnitRows = int64(v)
		}
	}
	if l := m.get("ledger"); l != nil {
		path := p.str(l, "privacy.ledger")
		if path == "" || strings.Contains(path, "://") {
			p.fail(deref(l), "privacy.ledger", "want a local file path, got %q", path)
		} else {
			p.s.Privacy.Ledger = p.path(path)
		}
	}
	if l := m.get("lifetime"); l != nil {
		lm := p.mapping(l, "privacy.lifetime", "epsilon", "delta")
		le := p.number(lm.required("epsilon"), "privacy.lifetime.epsilon")
		if !(le > 0) || math.IsInf(le, 0) {
			p.fail(deref(lm.get("epsilon")), "privacy.lifetime.epsilon", "must be a finite number > 0, got %v", le)
		}
		ld := p.number(lm.required("delta"), "privacy.lifetime.delta")
		if !(ld >= 0) || ld >= 1 {
			p.fail(deref(lm.get("delta")), "privacy.lifetime.delta", "must be in [0, 1), got %v", ld)
		}
		p.s.Privacy.Lifetime = &Lifetime{Epsilon: le, Delta: ld}
	}
}

func epsilonTooLarge(eps float64) error {
	return fmt.Errorf("%s is too large: e^ε overflows the arithmetic of the mechanisms (τ = (1/ε)·ln(1 + (e^ε − 1)/δ)); use ε ≤ %d", formatFloat(eps), MaxEpsilon)
}

func epsilonTooSmall(eps float64) error {
	return fmt.Errorf("%s is too small: every mechanism adds noise of scale at least 1/ε (%s) to a count, "+
		"more than synth's exact samplers draw (at most 2^40 ≈ 1.1e12), so the release would be noise alone; "+
		"use ε ≥ 2^-40 ≈ 9.1e-13 (a useful release needs ε of about 0.1 or more)", formatFloat(eps), formatFloat(1/eps))
}

func tauOverflows(eps, delta float64) error {
	return fmt.Errorf("δ = %s with ε = %s makes the truncation threshold τ = (1/ε)·ln(1 + (e^ε − 1)/δ) overflow at the budget shares a release spends (raise δ or lower ε)", formatFloat(delta), formatFloat(eps))
}

// CheckOverflow checks a budget given outside a spec (a command-line
// override) as the spec's privacy section is checked beyond its ranges:
// ε ≤ [MaxEpsilon] and, for δ > 0, a finite τ at every budget share (see
// the package doc). It assumes ε > 0 and 0 ≤ δ < 1, checked by the caller.
func CheckOverflow(eps, delta float64) error {
	if eps > MaxEpsilon {
		return fmt.Errorf("ε = %w", epsilonTooLarge(eps))
	}
	if eps < MinEpsilon {
		return fmt.Errorf("ε = %w", epsilonTooSmall(eps))
	}
	if delta > 0 && !tauFits(eps, delta) {
		return tauOverflows(eps, delta)
	}
	return nil
}

// MaxEpsilon is the largest ε a spec may give: above it e^ε comes too
// close to the float64 range for the mechanisms' arithmetic (ε = 650 is
// already no privacy at all).
const MaxEpsilon = 650

// MinEpsilon is the smallest ε a spec may give, 2⁻⁴⁰: every mechanism's
// noise has a scale of at least (sensitivity ≥ 1)/ε, and the exact
// discrete samplers draw scales up to 2⁴⁰ only (dp.MaxDiscreteScale).
// Below it no release can run; at ε = 5e-324 the scale overflows.
const MinEpsilon = 0x1p-40

// maxLogTauRatio bounds ln((e^ε − 1)/δ): the mechanisms compute
// ln(1 + (e^ε' − 1)/δ') on shares ε' ≤ ε, δ' ≥ δ·10⁻¹⁸ of the budget, which
// stays finite (< e^709) with this bound.
const maxLogTauRatio = 650

// tauFits reports whether τ(ε, δ, 1) and its values at the budget shares
// a release spends stay finite: ln(e^ε − 1) − ln δ ≤ maxLogTauRatio,
// computed in log space so that it cannot overflow itself.
func tauFits(eps, delta float64) bool {
	var logExpm1 float64
	if eps > 30 {
		logExpm1 = eps + math.Log1p(-math.Exp(-eps))
	} else {
		logExpm1 = math.Log(math.Expm1(eps))
	}
	return logExpm1-math.Log(delta) <= maxLogTauRatio
}

// formatFloat prints a float64 exactly enough to tell it from 0 and from
// its neighbours (5e-324 stays 5e-324).
func formatFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// checkPrivate refuses a spec whose every table is public: no neighbouring
// instance differs from it, so there is nothing for the mechanisms to
// protect and no sensitivity to calibrate them with.
func (p *parser) checkPrivate(n *yaml.Node) {
	for _, t := range p.s.Tables {
		if !t.Public {
			return
		}
	}
	p.fail(deref(n), "tables", "every table is public: there is nothing private to protect (a release needs at least one private table; leave public: true off the tables that hold individuals' data)")
}

// checkUnit refuses a privacy.unit that is not a private table of the spec.
func (p *parser) checkUnit(n *yaml.Node) {
	u := p.s.Privacy.Unit
	if u == "" {
		return
	}
	var un *yaml.Node
	if m := deref(n); m != nil && m.Kind == yaml.MappingNode {
		for j := 0; j+1 < len(m.Content); j += 2 {
			if deref(m.Content[j]).Value == "unit" {
				un = deref(m.Content[j+1])
			}
		}
	}
	t := p.s.Table(u)
	switch {
	case t == nil:
		p.fail(un, "privacy.unit", "%q is not a table of the spec (the unit is the private relation whose rows are the individuals)", u)
	case t.Public:
		p.fail(un, "privacy.unit", "%q is public: the unit must be a private table", u)
	}
}

func (p *parser) tables(n *yaml.Node) {
	items := p.sequence(n, "tables")
	if len(items) == 0 {
		p.fail(deref(n), "tables", "must list at least one table")
	}
	// The SDV merge needs to know every listed table before it reads the
	// first one; names are validated when each table is parsed.
	p.listed = map[string]bool{}
	for _, tn := range items {
		if d := deref(tn); d != nil && d.Kind == yaml.MappingNode {
			for j := 0; j+1 < len(d.Content); j += 2 {
				if k, v := deref(d.Content[j]), deref(d.Content[j+1]); k != nil && v != nil && k.Value == "name" && v.Kind == yaml.ScalarNode {
					p.listed[v.Value] = true
				}
			}
		}
	}
	for i, tn := range items {
		p.table(tn, index("tables", i))
	}
}

func (p *parser) table(n *yaml.Node, path string) {
	m := p.mapping(n, path, "name", "source", "format", "public", "primary_key", "columns")
	t := Table{Name: p.name(m.required("name"), join(path, "name"), "table")}
	if prev, ok := p.tableNode[t.Name]; ok {
		p.fail(deref(m.get("name")), join(path, "name"), "duplicate table name %q (first at line %d)", t.Name, prev.Line)
	}
	p.tableNode[t.Name] = deref(m.get("name"))
	src := p.str(m.required("source"), join(path, "source"))
	t.Source = p.path(src)
	if f := m.get("format"); f != nil {
		t.Format = p.choice(f, join(path, "format"), "csv", "parquet")
	} else {
		t.Format = FormatOf(src)
		if t.Format == "" {
			p.fail(deref(m.get("source")), join(path, "source"), "cannot tell the format of %q from its extension; add format: csv or format: parquet", src)
		}
	}
	if v := m.get("public"); v != nil {
		t.Public = p.boolean(v, join(path, "public"))
	}
	p.checkSource(&t, src, deref(m.get("source")), join(path, "source"))
	if cn := m.get("columns"); cn != nil {
		cm := p.mapping(cn, join(path, "columns"))
		for _, name := range cm.seq {
			cpath := join(join(path, "columns"), name)
			p.name(cm.keys[name], cpath, "column")
			t.Columns = append(t.Columns, p.column(cm.vals[name], cpath, name, p.sdvColumn(t.Name, name)))
		}
	}
	if p.sdv != nil {
		p.sdvTable(&t, m, path)
	}
	if len(t.Columns) == 0 {
		p.fail(m.node, join(path, "columns"), "table %q declares no columns", t.Name)
	}
	if pk := m.get("primary_key"); pk != nil {
		keys := p.stringList(pk, join(path, "primary_key"), true)
		if len(t.PrimaryKey) > 0 && !equalStrings(t.PrimaryKey, keys) {
			p.fail(deref(pk), join(path, "primary_key"), "%v differs from the SDV metadata's primary key %v", keys, t.PrimaryKey)
		}
		t.PrimaryKey = keys
	}
	seen := map[string]bool{}
	for i, k := range t.PrimaryKey {
		kpath := join(path, "primary_key")
		if pk := deref(m.get("primary_key")); pk != nil && pk.Kind == yaml.SequenceNode {
			kpath = index(kpath, i)
		}
		if t.Column(k) == nil {
			p.fail(deref(m.get("primary_key")), kpath, "column %q is not declared in table %q", k, t.Name)
		}
		if seen[k] {
			p.fail(deref(m.get("primary_key")), kpath, "column %q appears twice", k)
		}
		if t.Column(k).Nullable {
			p.fail(deref(m.get("primary_key")), kpath, "column %q is nullable: a primary key column cannot be (a NULL identifies no row); drop nullable: true or the column from primary_key", k)
		}
		seen[k] = true
	}
	p.s.Tables = append(p.s.Tables, t)
}

// stringList reads a single name or a list of names.
func (p *parser) stringList(n *yaml.Node, path string, allowScalar bool) []string {
	d := deref(n)
	if allowScalar && d != nil && d.Kind == yaml.ScalarNode {
		return []string{p.str(d, path)}
	}
	items := p.sequence(n, path)
	if len(items) == 0 {
		p.fail(d, path, "must not be empty")
	}
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = p.str(it, index(path, i))
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FormatOf infers a source's format from its extension: "csv" for .csv
// (also compressed, .csv.gz or .csv.zst), "parquet" for .parquet or .pq
// (Parquet compresses inside the file), or "" when the extension says
// neither.
func FormatOf(src string) string {
	s := strings.ToLower(src)
	for _, ext := range []string{".gz", ".zst"} {
		if t := strings.TrimSuffix(s, ext); t != s {
			if strings.HasSuffix(t, ".csv") {
				return "csv"
			}
			return ""
		}
	}
	switch {
	case strings.HasSuffix(s, ".csv"):
		return "csv"
	case strings.HasSuffix(s, ".parquet"), strings.HasSuffix(s, ".pq"):
		return "parquet"
	}
	return ""
}

// columnKeys lists the keys a column of each type accepts (besides type).
var columnKeys = map[ColumnType][]string{
	Key:         {},
	Categorical: {"values", "out_of_domain", "nullable"},
	Boolean:     {"out_of_domain", "nullable"},
	Integer:     {"min", "max", "bins", "bin_edges", "out_of_domain", "nullable"},
	Numeric:     {"min", "max", "bins", "bin_edges", "out_of_domain", "nullable"},
	Date:        {"min", "max", "granularity", "out_of_domain", "nullable"},
}

// column parses one column declaration. sdtype is the column's SDV sdtype,
// or "" without SDV metadata.
func (p *parser) column(n *yaml.Node, path, name, sdtype string) Column {
	m := p.mapping(n, path, "type", "values", "min", "max", "bins", "bin_edges", "granularity", "out_of_domain", "nullable")
	c := Column{Name: name}
	if tn := m.get("type"); tn != nil {
		c.Type = ColumnType(p.choice(tn, join(path, "type"), "key", "categorical", "integer", "numeric", "date", "boolean"))
		if sdtype != "" && !sdtypeAllows(sdtype, c.Type) {
			p.fail(deref(tn), join(path, "type"), "%s contradicts the SDV metadata's sdtype %q", c.Type, sdtype)
		}
	} else {
		c.Type = sdtypeColumnType(sdtype)
		if c.Type == "" {
			if sdtype != "" {
				p.fail(m.node, join(path, "type"), "missing (required; the SDV sdtype %q does not say which)", sdtype)
			}
			p.fail(m.node, join(path, "type"), "missing (required)")
		}
	}
	if v := m.get("nullable"); v != nil && c.Type == Key {
		if p.boolean(v, join(path, "nullable")) {
			p.fail(m.keys["nullable"], join(path, "nullable"), "a key column cannot be nullable: a NULL key joins nothing and identifies no row "+
				"(keys join tables and identify units; leave the rows with a missing key out of the source, or declare the column with a domain if it is not a key)")
		}
	}
	for _, k := range m.seq {
		if k == "nullable" && c.Type == Key {
			continue
		}
		if k != "type" && !contains(columnKeys[c.Type], k) {
			p.fail(m.keys[k], join(path, k), "not allowed for a %s column", c.Type)
		}
	}
	if c.Type != Key {
		c.OutOfDomain = OutOfDomainError
		if v := m.get("out_of_domain"); v != nil {
			allowed := []string{"error", "clamp", "drop"}
			if c.Type == Categorical || c.Type == Boolean {
				allowed = []string{"error", "drop"}
			}
			c.OutOfDomain = OutOfDomain(p.choice(v, join(path, "out_of_domain"), allowed...))
		}
		if v := m.get("nullable"); v != nil {
			c.Nullable = p.boolean(v, join(path, "nullable"))
		}
	}
	switch c.Type {
	case Categorical:
		p.categorical(&c, m, path)
	case Integer, Numeric:
		p.ranged(&c, m, path)
	case Date:
		p.dateColumn(&c, m, path)
	}
	return c
}

func (p *parser) categorical(c *Column, m *mapping, path string) {
	vpath := join(path, "values")
	items := p.sequence(m.required("values"), vpath)
	if len(items) == 0 {
		p.fail(deref(m.get("values")), vpath, "must list at least one value")
	}
	if len(items) > MaxColumnSize {
		p.fail(deref(m.get("values")), vpath, "%d values, at most %d", len(items), MaxColumnSize)
	}
	first := map[string]int{}
	for i, it := range items {
		d := deref(it)
		if d == nil || d.Kind != yaml.ScalarNode {
			p.fail(d, index(vpath, i), "must be a single value, got %s", kindName(d))
		}
		if d.ShortTag() == "!!null" || d.Value == "" {
			p.fail(d, index(vpath, i), "must not be empty (missing values cannot be a category: declare nullable: true to keep them as NULL, or quote a placeholder such as \"?\")")
		}
		if j, ok := first[d.Value]; ok {
			p.fail(d, index(vpath, i), "duplicate value %q (also %s)", d.Value, index(vpath, j))
		}
		first[d.Value] = i
		c.Values = append(c.Values, d.Value)
	}
}

func (p *parser) ranged(c *Column, m *mapping, path string) {
	num := p.number
	if c.Type == Integer {
		num = p.integral
	}
	if en := m.get("bin_edges"); en != nil {
		epath := join(path, "bin_edges")
		for _, k := range []string{"min", "max", "bins"} {
			if m.get(k) != nil {
				p.fail(m.keys[k], join(path, k), "not allowed with bin_edges (the edges give the range and the bins)")
			}
		}
		items := p.sequence(en, epath)
		if len(items) < 2 {
			p.fail(deref(en), epath, "must list at least 2 edges, got %d", len(items))
		}
		if len(items)-1 > MaxColumnSize {
			p.fail(deref(en), epath, "%d bins, at most %d", len(items)-1, MaxColumnSize)
		}
		for i, it := range items {
			e := num(it, index(epath, i))
			if i > 0 && e <= c.BinEdges[i-1] {
				p.fail(deref(it), index(epath, i), "edges must be strictly increasing: %v after %v", e, c.BinEdges[i-1])
			}
			c.BinEdges = append(c.BinEdges, e)
		}
		c.Min = c.BinEdges[0]
		c.Max = c.BinEdges[len(c.BinEdges)-1]
		if c.Type == Integer {
			// Integer bins are [e_i, e_{i+1}) over whole numbers, so the
			// largest value is e_k - 1.
			c.Max--
		}
		return
	}
	c.Min = num(m.required("min"), join(path, "min"))
	c.Max = num(m.required("max"), join(path, "max"))
	if c.Min >= c.Max {
		p.fail(deref(m.get("max")), join(path, "max"), "must be > min (%v), got %v", c.Min, c.Max)
	}
	width := c.Max - c.Min + 1 // number of integers, for integer columns
	if bn := m.get("bins"); bn != nil {
		max := MaxColumnSize
		if c.Type == Integer && width < float64(max) {
			max = int(width)
		}
		c.Bins = p.count(bn, join(path, "bins"), max)
		p.finiteEdges(c, m, path)
		return
	}
	if c.Type == Numeric {
		p.fail(m.node, join(path, "bins"), "missing: a numeric column needs bins or bin_edges")
	}
	if width > MaxColumnSize {
		p.fail(deref(m.get("max")), path, "%.0f integers from min to max, at most %d without bins; add bins or bin_edges", width, MaxColumnSize)
	}
}

// finiteEdges refuses a range whose equal-width bin edges, as
// [Column.Edges] computes them (min + (max − min)·i/bins), are not all
// finite and strictly increasing: max − min overflows float64 beyond
// about 1.8e308 (max: 1.7e308 with min: 0 already overflows at the second
// edge), and a range narrower than float64's resolution gives equal
// edges. Either failed only when the release binned its first value.
func (p *parser) finiteEdges(c *Column, m *mapping, path string) {
	e := c.Edges()
	for i, x := range e {
		if math.IsInf(x, 0) || math.IsNaN(x) {
			p.fail(deref(m.get("max")), join(path, "max"), "the range [%v, %v] is too wide for float64: bin edge %d, min + (max − min)·%d/%d, is %v; "+
				"give a public bound of the values small enough for arithmetic (|min| and |max| well below 1e308), or bin_edges", c.Min, c.Max, i, i, c.Bins, x)
		}
		if i > 0 && !(x > e[i-1]) {
			p.fail(deref(m.get("bins")), join(path, "bins"), "%d bins over [%v, %v] are narrower than float64 can tell apart (edges %d and %d are both %v); use fewer bins or a wider range",
				c.Bins, c.Min, c.Max, i-1, i, x)
		}
	}
}

func (p *parser) dateColumn(c *Column, m *mapping, path string) {
	c.DateMin = p.date(m.required("min"), join(path, "min"))
	c.DateMax = p.date(m.required("max"), join(path, "max"))
	if c.DateMin.After(c.DateMax) {
		p.fail(deref(m.get("max")), join(path, "max"), "must not be before min (%s), got %s", c.DateMin.Format(time.DateOnly), c.DateMax.Format(time.DateOnly))
	}
	c.Granularity = Day
	if g := m.get("granularity"); g != nil {
		c.Granularity = Granularity(p.choice(g, join(path, "granularity"), "day", "month", "year"))
	}
	if c.Size() > MaxColumnSize {
		p.fail(deref(m.get("max")), path, "%d %ss from min to max, at most %d", c.Size(), c.Granularity, MaxColumnSize)
	}
}

// ref resolves a column reference: "column" when the name is declared in
// exactly one table, else "table.column".
func (p *parser) ref(n *yaml.Node, path string) ColumnRef {
	s := p.str(n, path)
	d := deref(n)
	if t, c, ok := strings.Cut(s, "."); ok {
		tab := p.s.Table(t)
		if tab == nil {
			p.fail(d, path, "%q: no table %q", s, t)
		}
		if tab.Column(c) == nil {
			p.fail(d, path, "%q: table %q declares no column %q", s, t, c)
		}
		return ColumnRef{Table: t, Column: c}
	}
	var found []ColumnRef
	for _, t := range p.s.Tables {
		if t.Column(s) != nil {
			found = append(found, ColumnRef{Table: t.Name, Column: s})
		}
	}
	switch len(found) {
	case 0:
		p.fail(d, path, "no table declares a column %q", s)
	case 1:
		return found[0]
	}
	names := make([]string, len(found))
	for i, r := range found {
		names[i] = r.String()
	}
	p.fail(d, path, "column %q is ambiguous: write one of %s", s, strings.Join(names, ", "))
	return ColumnRef{}
}

// addJoin records an equality, checking that it joins two tables with
// columns of one type. Exact repeats are dropped.
func (p *parser) addJoin(eq JoinEq, n *yaml.Node, path string) {
	if eq.Left.Table == eq.Right.Table {
		p.fail(n, path, "%s = %s joins table %q with itself; a join equality must relate two tables", eq.Left, eq.Right, eq.Left.Table)
	}
	l, r := p.s.Column(eq.Left), p.s.Column(eq.Right)
	if l.Type != r.Type {
		p.fail(n, path, "%s (%s) = %s (%s): join columns must have the same type", eq.Left, l.Type, eq.Right, r.Type)
	}
	for _, ref := range []ColumnRef{eq.Left, eq.Right} {
		if p.s.Column(ref).Nullable {
			p.fail(n, path, "%s is nullable: a join column cannot be (NULL joins nothing, so a NULL cell would hold rows the join never reaches); drop nullable: true from it", ref)
		}
	}
	for _, e := range p.s.Join {
		if e == eq || (e.Left == eq.Right && e.Right == eq.Left) {
			return
		}
	}
	p.s.Join = append(p.s.Join, eq)
}

// join reads the join section: a list of equalities, or a mapping with
// the list under on and the orphan policy under orphans.
func (p *parser) join(n *yaml.Node) {
	list, key := n, "join"
	if d := deref(n); d != nil && d.Kind == yaml.MappingNode {
		m := p.mapping(n, "join", "on", "orphans")
		if v := m.get("orphans"); v != nil {
			p.s.Orphans = Orphans(p.choice(v, "join.orphans", string(OrphansError), string(OrphansDrop)))
		}
		list, key = m.get("on"), "join.on"
		if list == nil {
			return
		}
	}
	for i, it := range p.sequence(list, key) {
		path := index(key, i)
		s := p.str(it, path)
		l, r, ok := strings.Cut(s, "=")
		if !ok || strings.Contains(r, "=") {
			p.fail(deref(it), path, "must read table.column = table.column, got %q", s)
		}
		eq := JoinEq{Left: p.qualified(deref(it), path, l), Right: p.qualified(deref(it), path, r)}
		p.addJoin(eq, deref(it), path)
	}
}

// qualified resolves one side of a join string, which must be table.column.
func (p *parser) qualified(n *yaml.Node, path, side string) ColumnRef {
	side = strings.TrimSpace(side)
	if !strings.Contains(side, ".") {
		p.fail(n, path, "%q: join columns must be written table.column", side)
	}
	return p.ref(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: side, Line: n.Line, Column: n.Column}, path)
}

func (p *parser) relationships(n *yaml.Node) {
	for i, it := range p.sequence(n, "relationships") {
		path := index("relationships", i)
		m := p.mapping(it, path, "parent_table_name", "parent_primary_key", "child_table_name", "child_foreign_key")
		parent := ColumnRef{Table: p.str(m.required("parent_table_name"), join(path, "parent_table_name")), Column: p.str(m.required("parent_primary_key"), join(path, "parent_primary_key"))}
		child := ColumnRef{Table: p.str(m.required("child_table_name"), join(path, "child_table_name")), Column: p.str(m.required("child_foreign_key"), join(path, "child_foreign_key"))}
		for _, r := range []struct {
			ref       ColumnRef
			tkey, key string
		}{{parent, "parent_table_name", "parent_primary_key"}, {child, "child_table_name", "child_foreign_key"}} {
			t := p.s.Table(r.ref.Table)
			if t == nil {
				p.fail(deref(m.get(r.tkey)), join(path, r.tkey), "no table %q", r.ref.Table)
			}
			if t.Column(r.ref.Column) == nil {
				p.fail(deref(m.get(r.key)), join(path, r.key), "table %q declares no column %q", r.ref.Table, r.ref.Column)
			}
		}
		p.addJoin(JoinEq{Left: child, Right: parent}, m.node, path)
	}
}

// checkJoin builds the hypergraph once, so that a spec whose join cannot be
// built fails here, with a line.
func (p *parser) checkJoin() {
	if _, err := p.s.buildHypergraph(); err != nil {
		n, key := p.sections["join"], "join"
		if n == nil {
			n, key = p.sections["relationships"], "relationships"
		}
		if n == nil {
			n, key = p.sections["tables"], "tables"
		}
		panic(bail{&Error{File: p.file, Line: deref(n).Line, Key: key, Err: err}})
	}
}

func (p *parser) release(n *yaml.Node) {
	m := p.mapping(n, "release", "method", "columns", "beta", "rows", "measures", "measures_share", "contribution_bound", "contribution_norm", "output", "sibling_classes")
	if v := m.get("rows"); v != nil {
		x := p.number(v, "release.rows")
		if !(x >= 1 && x <= 1<<53) || x != math.Trunc(x) {
			p.fail(deref(v), "release.rows", "must be a whole number of rows ≥ 1, got %v", x)
		}
		p.s.Release.Rows = int64(x)
	}
	p.s.Release.Method = Auto
	if v := m.get("method"); v != nil {
		p.s.Release.Method = Method(p.choice(v, "release.method", string(Auto), string(JoinAsOne), string(Uniformized), string(PrivacyUnit)))
		if p.s.Release.Method == PrivacyUnit && p.s.Privacy.Unit == "" {
			p.fail(deref(v), "release.method", "privacy-unit needs privacy.unit: the table whose rows are the individuals to protect")
		}
	}
	if v := m.get("contribution_bound"); v != nil && deref(v).Kind == yaml.ScalarNode && deref(v).Value == "auto" {
		if p.s.Privacy.Unit == "" {
			p.fail(deref(v), "release.contribution_bound", "needs privacy.unit: the bound applies to each unit's rows")
		}
		p.s.Release.ContributionBoundAuto = true
	} else if v != nil {
		x := p.number(v, "release.contribution_bound")
		if !(x >= 1 && x <= 1<<20) {
			p.fail(deref(v), "release.contribution_bound", "must be a number of rows between 1 and 2^20, got %v (every unit's rows together weigh at most this many rows)", x)
		}
		if p.s.Privacy.Unit == "" {
			p.fail(deref(v), "release.contribution_bound", "needs privacy.unit: the bound applies to each unit's rows")
		}
		p.s.Release.ContributionBound = x
	}
	if v := m.get("contribution_norm"); v != nil {
		p.s.Release.ContributionNorm = Norm(p.choice(v, "release.contribution_norm", string(NormL1), string(NormL2)))
		if p.s.Privacy.Unit == "" {
			p.fail(deref(v), "release.contribution_norm", "needs privacy.unit: the norm bounds each unit's rows")
		}
	}
	if v := m.get("output"); v != nil {
		p.s.Release.Output = OutputKind(p.choice(v, "release.output", string(OutputJoin), string(OutputTables)))
		if p.s.Release.Output == OutputTables && p.s.Privacy.Unit == "" {
			p.fail(deref(v), "release.output", "tables needs privacy.unit: the synthetic tables are drawn unit by unit down the unit's ownership tree")
		}
	}
	if v := m.get("sibling_classes"); v != nil {
		p.s.Release.SiblingClasses = p.boolean(v, "release.sibling_classes")
		if p.s.Release.SiblingClasses && p.s.Release.Output != OutputTables {
			p.fail(deref(v), "release.sibling_classes", "needs release.output: tables (a sibling class is a column of a parent table)")
		}
	}
	if v := m.get("beta"); v != nil {
		if b := p.number(v, "release.beta"); b > 0 {
			p.s.Release.Beta = b
		} else {
			p.fail(deref(v), "release.beta", "must be > 0, got %v", b)
		}
	}
	items := p.sequence(m.required("columns"), "release.columns")
	if len(items) == 0 {
		p.fail(deref(m.get("columns")), "release.columns", "must list at least one column")
	}
	for i, it := range items {
		path := index("release.columns", i)
		r := p.ref(it, path)
		if c := p.s.Column(r); c.Type == Key {
			p.fail(deref(it), path, "%s is a key column; keys are never released", r)
		}
		if p.released[r] {
			p.fail(deref(it), path, "%s is listed twice", r)
		}
		p.released[r] = true
		p.s.Release.Columns = append(p.s.Release.Columns, r)
	}
	if _, ok := p.s.UniverseSize(); !ok {
		var parts []string
		for _, c := range p.s.ReleaseColumns() {
			parts = append(parts, strconv.Itoa(c.Size()))
		}
		p.fail(deref(m.get("columns")), "release.columns", "the universe (%s cells) overflows: release fewer columns or coarser bins", strings.Join(parts, " × "))
	}
	p.measures(m)
}

// measures reads release.measures (integer or numeric columns, released or
// not, each listed once) and release.measures_share (in (0, 1), only with
// measures; DefaultMeasuresShare when absent).
func (p *parser) measures(m *mapping) {
	if v := m.get("measures"); v != nil {
		seen := map[ColumnRef]bool{}
		for i, it := range p.sequence(v, "release.measures") {
			path := index("release.measures", i)
			r := p.ref(it, path)
			if t := p.s.Column(r).Type; t != Integer && t != Numeric {
				p.fail(deref(it), path, "%s is %s; a measure needs an integer or numeric column", r, t)
			}
			if p.s.Column(r).Nullable {
				p.fail(deref(it), path, "%s is nullable: a measure cannot be (its sums have no value for NULL); release it as a column instead, or drop nullable: true", r)
			}
			if seen[r] {
				p.fail(deref(it), path, "%s is listed twice", r)
			}
			seen[r] = true
			p.s.Release.Measures = append(p.s.Release.Measures, r)
		}
	}
	if v := m.get("measures_share"); v != nil {
		x := p.number(v, "release.measures_share")
		if !(x > 0 && x < 1) {
			p.fail(deref(v), "release.measures_share", "must lie strictly between 0 and 1, got %v", x)
		}
		if len(p.s.Release.Measures) == 0 {
			p.fail(deref(v), "release.measures_share", "needs release.measures (no measure to spend it on)")
		}
		p.s.Release.MeasuresShare = x
	}
	if len(p.s.Release.Measures) > 0 && p.s.Release.MeasuresShare == 0 {
		p.s.Release.MeasuresShare = DefaultMeasuresShare
	}
}

// releasedRef resolves a reference that must name a released column.
func (p *parser) releasedRef(n *yaml.Node, path string) ColumnRef {
	r := p.ref(n, path)
	if !p.released[r] {
		p.fail(deref(n), path, "%s is not released (add it to release.columns)", r)
	}
	return r
}

// refSet reads a list of distinct released columns.
func (p *parser) refSet(n *yaml.Node, path string, allowEmpty bool) []ColumnRef {
	items := p.sequence(n, path)
	if len(items) == 0 && !allowEmpty {
		p.fail(deref(n), path, "must list at least one column")
	}
	var out []ColumnRef
	seen := map[ColumnRef]bool{}
	for i, it := range items {
		r := p.releasedRef(it, index(path, i))
		if seen[r] {
			p.fail(deref(it), index(path, i), "%s is listed twice", r)
		}
		seen[r] = true
		out = append(out, r)
	}
	return out
}

func (p *parser) workload(n *yaml.Node) {
	m := p.mapping(n, "workload", "marginals", "ranges", "numeric", "one_way")
	if v := m.get("marginals"); v != nil {
		for i, it := range p.sequence(v, "workload.marginals") {
			p.s.Workload.Marginals = append(p.s.Workload.Marginals, p.refSet(it, index("workload.marginals", i), false))
		}
	}
	if v := m.get("ranges"); v != nil {
		for i, it := range p.sequence(v, "workload.ranges") {
			path := index("workload.ranges", i)
			rm := p.mapping(it, path, "column", "by")
			q := RangeQuery{Column: p.releasedRef(rm.required("column"), join(path, "column"))}
			if !p.s.Column(q.Column).Ordered() {
				p.fail(deref(rm.get("column")), join(path, "column"), "%s is %s; range queries need an integer, numeric or date column", q.Column, p.s.Column(q.Column).Type)
			}
			if b := rm.get("by"); b != nil {
				q.By = p.refSet(b, join(path, "by"), true)
				for j, r := range q.By {
					if r == q.Column {
						p.fail(deref(p.sequence(b, "")[j]), index(join(path, "by"), j), "%s is the range column itself", r)
					}
				}
			}
			p.s.Workload.Ranges = append(p.s.Workload.Ranges, q)
		}
	}
	if v := m.get("numeric"); v != nil {
		for i, it := range p.sequence(v, "workload.numeric") {
			p.s.Workload.Numeric = append(p.s.Workload.Numeric, p.numericQuery(it, index("workload.numeric", i)))
		}
	}
	if v := m.get("one_way"); v != nil {
		p.s.Workload.NoOneWay = !p.boolean(v, "workload.one_way")
		if p.s.Workload.NoOneWay && p.s.Workload.Empty() {
			p.fail(deref(v), "workload.one_way", "false needs at least one marginal, range or numeric query (an empty workload means every 1-way and 2-way marginal)")
		}
	}
}

func (p *parser) numericQuery(n *yaml.Node, path string) NumericQuery {
	m := p.mapping(n, path, "sum", "where")
	q := NumericQuery{Sum: p.ref(m.required("sum"), join(path, "sum"))}
	if t := p.s.Column(q.Sum).Type; t != Integer && t != Numeric {
		p.fail(deref(m.get("sum")), join(path, "sum"), "%s is %s; a sum needs an integer or numeric column", q.Sum, t)
	}
	if w := m.get("where"); w != nil {
		wpath := join(path, "where")
		wm := p.mapping(w, wpath)
		seen := map[ColumnRef]bool{}
		for _, k := range wm.seq {
			cpath := join(wpath, k)
			cond := Condition{Column: p.releasedRef(wm.keys[k], cpath)}
			if seen[cond.Column] {
				p.fail(wm.keys[k], cpath, "%s has two conditions", cond.Column)
			}
			seen[cond.Column] = true
			p.condition(&cond, wm.vals[k], cpath)
			q.Where = append(q.Where, cond)
		}
	}
	return q
}

func (p *parser) condition(cond *Condition, n *yaml.Node, path string) {
	c := p.s.Column(cond.Column)
	items := p.sequence(n, path)
	switch c.Type {
	case Integer, Numeric, Date:
		if len(items) != 2 {
			p.fail(deref(n), path, "must be [lo, hi] for the %s column %s, got %d values", c.Type, cond.Column, len(items))
		}
		if c.Type == Date {
			cond.DateLo, cond.DateHi = p.date(items[0], index(path, 0)), p.date(items[1], index(path, 1))
			if cond.DateLo.After(cond.DateHi) {
				p.fail(deref(items[1]), index(path, 1), "hi must not be before lo")
			}
			return
		}
		cond.Lo, cond.Hi = p.number(items[0], index(path, 0)), p.number(items[1], index(path, 1))
		if cond.Lo > cond.Hi {
			p.fail(deref(items[1]), index(path, 1), "hi (%v) must not be below lo (%v)", cond.Hi, cond.Lo)
		}
	case Categorical, Boolean:
		if len(items) == 0 {
			p.fail(deref(n), path, "must list at least one value")
		}
		seen := map[string]bool{}
		for i, it := range items {
			var v string
			if c.Type == Boolean {
				v = strconv.FormatBool(p.boolean(it, index(path, i)))
			} else {
				v = p.str(it, index(path, i))
				if !contains(c.Values, v) {
					p.fail(deref(it), index(path, i), "%q is not a declared value of %s", v, cond.Column)
				}
			}
			if seen[v] {
				p.fail(deref(it), index(path, i), "%q is listed twice", v)
			}
			seen[v] = true
			cond.Values = append(cond.Values, v)
		}
	}
}

func (p *parser) pmw(n *yaml.Node) {
	m := p.mapping(n, "pmw", "variant", "noise", "nhat_share", "model")
	if v := m.get("model"); v != nil {
		p.s.PMW.Model = p.choice(v, "pmw.model", PMWModelAuto, PMWModelDense, PMWModelFactored)
	}
	if v := m.get("variant"); v != nil {
		p.s.PMW.Variant = p.choice(v, "pmw.variant", PMWVariantMWEM, PMWVariantPaper)
	}
	if v := m.get("noise"); v != nil {
		p.s.PMW.Noise = p.choice(v, "pmw.noise", PMWNoiseGauss, PMWNoiseLaplace)
		if p.s.PMW.Variant == PMWVariantPaper {
			p.fail(deref(v), "pmw.noise", "applies to the mwem variant only (the paper variant always uses Laplace noise)")
		}
	}
	if v := m.get("nhat_share"); v != nil {
		x := p.number(v, "pmw.nhat_share")
		if !(x > 0 && x < 1) {
			p.fail(deref(v), "pmw.nhat_share", "must lie strictly between 0 and 1, got %v", x)
		}
		if p.s.PMW.Variant == PMWVariantPaper {
			p.fail(deref(v), "pmw.nhat_share", "applies to the mwem variant only (the paper variant spends half on n̂)")
		}
		p.s.PMW.NHatShare = x
	}
}

func (p *parser) output(n *yaml.Node) {
	m := p.mapping(n, "output", "path")
	p.s.Output.Path = p.path(p.str(m.required("path"), "output.path"))
}
