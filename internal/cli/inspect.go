package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/joinasone"
	"github.com/synth-dp/synth/pmw"
	"github.com/synth-dp/synth/release"
	"github.com/synth-dp/synth/spec"
	"github.com/synth-dp/synth/uniformize"
	"github.com/synth-dp/synth/workload"
)

type inspectOptions struct {
	config    string
	format    string
	memCapMiB int64
}

// inspectReport is what `synth inspect` prints: the spec's public facts,
// then, in NonPrivate, the custodian's NON-PRIVATE statistics of the data.
type inspectReport struct {
	Spec               string          `json:"spec"`
	Relations          []string        `json:"relations"`
	PublicRelations    []string        `json:"public_relations"`
	JoinAttributes     []joinAttribute `json:"join_attributes"`
	Acyclic            bool            `json:"acyclic"`
	Hierarchical       bool            `json:"hierarchical"`
	HierarchicalReason string          `json:"hierarchical_reason,omitempty"`
	// AttributeTree is the attribute tree of the folded join (Ghazi et al.
	// §4.2), one node a line, when that join is hierarchical: the tree the
	// uniformized hierarchical release partitions on.
	AttributeTree  []string        `json:"attribute_tree,omitempty"`
	FoldedJoin     foldedJoin      `json:"folded_join"`
	Method         string          `json:"method"`
	ReleaseColumns []releaseColumn `json:"release_columns"`
	UniverseSize   int64           `json:"universe_size"`
	// Model is PMW's model for this release and why (dense weights or
	// the factored model), decided from the spec alone.
	Model    string          `json:"pmw_model"`
	Budget   budget          `json:"budget"`
	Workload workloadSummary `json:"workload"`
	// Forecast says, from public parameters only, which measured
	// marginals can carry signal and what would help.
	Forecast *signalForecast `json:"signal_forecast,omitempty"`
	// Warnings are drawn from the spec alone (public).
	Warnings      []string `json:"warnings"`
	DataValidated bool     `json:"data_validated"`
	// NonPrivate holds true counts of the data: for the custodian only.
	NonPrivate *custodianReport `json:"non_private,omitempty"`
}

// foldedJoin is the join the statistics run on after the public lookups
// are folded into their private neighbours (hypergraph.Fold).
type foldedJoin struct {
	Relations     []string   `json:"relations"`
	RelationCount int        `json:"relation_count"`
	Algorithm     string     `json:"algorithm"`
	Folds         []foldStep `json:"folds"`
}

// foldStep is one public table folded into a private one.
type foldStep struct {
	Public   string   `json:"public"`
	Into     string   `json:"into"`
	Relation string   `json:"relation"`
	Key      []string `json:"key"`
	On       []string `json:"on"`
	Lossless bool     `json:"lossless"`
}

type joinAttribute struct {
	Name    string   `json:"name"`
	Columns []string `json:"columns"`
}

type releaseColumn struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// Size counts the NULL cell of a nullable column.
	Size     int  `json:"size"`
	Nullable bool `json:"nullable,omitempty"`
}

type budget struct {
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
}

// workloadSummary is the effective workload: the query families a release
// keeps accurate, including the default marginals of an empty workload and
// the 1-way marginals added to a listed one.
type workloadSummary struct {
	Marginals int             `json:"marginals"`
	Ranges    int             `json:"ranges"`
	Numeric   int             `json:"numeric"`
	Default   bool            `json:"default"`
	OneWay    bool            `json:"one_way"`
	Added     int             `json:"added"`
	Families  []workloadEntry `json:"families"`
}

type workloadEntry struct {
	Name    string   `json:"name"`
	Kind    string   `json:"kind"`
	Columns []string `json:"columns"`
	Added   bool     `json:"added,omitempty"`
}

func newInspectCmd(g *globalOptions) *cobra.Command {
	o := &inspectOptions{}
	cmd := &cobra.Command{
		Use:   "inspect --config FILE",
		Short: "Validate a spec and its data and print the join's structure",
		Long: `inspect validates the spec and every value of the data against its declared
public domain, then prints the relations, the join attributes, whether the
join is acyclic and hierarchical, the folded join (public tables joined on
their primary key folded into a private neighbour, whose keys it checks for
uniqueness) with the algorithm a join-as-one release runs on it, the
universe size of the released columns, the budget and the effective
workload (the query families a release keeps accurate). A spec a release
would refuse before reading data (release.measures it cannot run, a
budget too small for its samplers, a universe above the memory cap) is
refused the same way, with the same exit code, before any data is read.

A signal forecast, from public parameters only (the budget, the method's
split of it, the sensitivity where it is public, the workload and the
declared domain sizes; no data), gives the noise per cell of the
release's measured marginals and, per marginal, how far from uniform its
cells must be to carry signal rather than fall back to uniform, with what
would help (more ε, fewer cells, a privacy unit).

It ends with a NON-PRIVATE section for the data custodian: the rows of each
source and of each loaded table, the rows each out_of_domain policy dropped
or clamped, the true join size, warnings about the data (an empty join, an
empty table, join keys that never match or write one number differently,
such as 01 and 1, key columns stored or typed differently across a join
edge) and the signal forecast held against the true sizes. These are true
counts, not differentially private: never publish them. A release never
contains them.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlag("config", o.config); err != nil {
				return err
			}
			if err := checkFormat(o.format); err != nil {
				return err
			}
			if err := checkMemoryCap(o.memCapMiB); err != nil {
				return err
			}
			return runInspect(cmd.Context(), g, o)
		},
	}
	cmd.Flags().StringVar(&o.config, "config", "", "the spec file (YAML)")
	cmd.Flags().StringVar(&o.format, "format", "text", "output format: text or json")
	cmd.Flags().Int64Var(&o.memCapMiB, "memory-cap", pmw.DefaultMemoryCap>>20, "the memory cap (MiB) of the release to check against, as release --memory-cap")
	return cmd
}

// loadAll reads the spec, builds the join hypergraph, opens the engine and
// loads (and checks) the data. The caller closes the engine.
func loadAll(ctx context.Context, g *globalOptions, config string) (*spec.Spec, *hypergraph.Hypergraph, *engine.Engine, error) {
	s, err := spec.Load(config)
	if err != nil {
		return nil, nil, nil, err
	}
	h, eng, err := loadData(ctx, g, s)
	return s, h, eng, err
}

// loadData builds the join hypergraph of a loaded spec, opens the engine and
// loads (and checks) the data. The caller closes the engine.
func loadData(ctx context.Context, g *globalOptions, s *spec.Spec) (*hypergraph.Hypergraph, *engine.Engine, error) {
	h, err := s.Hypergraph()
	if err != nil {
		return nil, nil, err
	}
	g.logger.Info("opening engine", "engine", engine.Redact(g.engine))
	eng, err := engine.Open(ctx, g.engine)
	if err != nil {
		return nil, nil, err
	}
	for _, t := range s.Tables {
		g.logger.Info("loading table", "table", t.Name, "source", t.Source)
	}
	if err := eng.Load(ctx, s); err != nil {
		eng.Close()
		return nil, nil, err
	}
	g.logger.Info("data checked against the declared domains")
	return h, eng, nil
}

func runInspect(ctx context.Context, g *globalOptions, o *inspectOptions) error {
	s, err := spec.Load(o.config)
	if err != nil {
		return err
	}
	// What a release would refuse, inspect refuses, before reading data.
	plan, err := refuseLikeRelease(s, o.memCapMiB<<20)
	if err != nil {
		return err
	}
	forecast, err := buildForecast(plan)
	if err != nil {
		return err
	}
	h, eng, err := loadData(ctx, g, s)
	if err != nil {
		return err
	}
	defer eng.Close()
	f, err := s.Folding()
	if err != nil {
		return err
	}
	// Building the folded relations checks the folded public tables' keys
	// (every other declared key is reported below, NON-PRIVATE).
	if err := eng.Fold(ctx, f); err != nil {
		return err
	}
	rep := buildInspectReport(o.config, s, h)
	rep.FoldedJoin = buildFoldedJoin(s, f)
	rep.DataValidated = true
	if rep.NonPrivate, err = buildCustodian(ctx, s, h, eng, sourceCounts()); err != nil {
		return err
	}
	var keyWarnings []string
	if rep.NonPrivate.UnitKeys, keyWarnings, err = checkUnitKeys(ctx, s, h, eng); err != nil {
		return err
	}
	rep.NonPrivate.Warnings = append(rep.NonPrivate.Warnings, keyWarnings...)
	types, err := eng.KeyColumnTypes(ctx, s)
	if err != nil {
		return err
	}
	rep.NonPrivate.Warnings = append(rep.NonPrivate.Warnings, engine.KeyTypeWarnings(s, types)...)
	rep.Forecast = forecast
	rep.NonPrivate.Signal = buildCustodianSignal(s, forecast, rep.NonPrivate)
	if rep.NonPrivate.Count, err = buildCustodianCount(ctx, s, f, eng, forecast); err != nil {
		return err
	}
	if o.format == "json" {
		return writeJSON(g.stdout, rep)
	}
	return writeInspectText(g.stdout, rep)
}

func buildInspectReport(path string, s *spec.Spec, h *hypergraph.Hypergraph) inspectReport {
	rep := inspectReport{
		Spec:            path,
		Relations:       h.Names(h.All()),
		PublicRelations: h.Names(h.All() &^ h.Private()),
		Acyclic:         h.Acyclic(),
		Method: func() string {
			m, why, err := release.ChooseMethod(s)
			if err != nil {
				return fmt.Sprintf("%s → refused: %v", s.Release.Method, err)
			}
			return fmt.Sprintf("%s → %s (%s)", s.Release.Method, m.Name(), why)
		}(),
		Budget:   budget{Epsilon: s.Privacy.Epsilon, Delta: s.Privacy.Delta},
		Warnings: []string{},
	}
	rep.Workload, rep.Warnings = effectiveWorkload(s)
	if rep.PublicRelations == nil {
		rep.PublicRelations = []string{}
	}
	rep.Hierarchical, rep.HierarchicalReason = h.Hierarchical()
	if f, err := s.Folding(); err == nil {
		if tr, err := uniformize.NewTree(f.Folded()); err == nil {
			rep.AttributeTree = strings.Split(strings.TrimSuffix(tr.String(), "\n"), "\n")
		}
	}
	for _, a := range h.Attributes() {
		ja := joinAttribute{Name: a}
		for _, i := range h.Atom(a).Members() {
			r := h.Relation(i)
			ja.Columns = append(ja.Columns, r.Name+"."+r.Attrs[a])
		}
		rep.JoinAttributes = append(rep.JoinAttributes, ja)
	}
	if rep.JoinAttributes == nil {
		rep.JoinAttributes = []joinAttribute{}
	}
	cols := s.ReleaseColumns()
	for i, ref := range s.Release.Columns {
		c := cols[i]
		rep.ReleaseColumns = append(rep.ReleaseColumns, releaseColumn{Name: ref.String(), Type: string(c.Type), Size: c.Size(), Nullable: c.Nullable})
	}
	rep.UniverseSize, _ = s.UniverseSize()
	rep.Model = pmwModel(s)
	return rep
}

// buildFoldedJoin describes the folded join and the algorithm join-as-one
// picks for it (by the number of relations, as joinasone.Prepare does).
func buildFoldedJoin(s *spec.Spec, f *hypergraph.Folding) foldedJoin {
	fh := f.Folded()
	fj := foldedJoin{Relations: fh.Names(fh.All()), RelationCount: fh.Len(), Folds: []foldStep{}}
	switch {
	case s.Privacy.Unit != "":
		fj.Algorithm = "not join-as-one (privacy.unit " + s.Privacy.Unit + ": the privacy-unit release)"
	case s.Release.Method == spec.Uniformized:
		fj.Algorithm = "not join-as-one (method " + string(s.Release.Method) + ")"
	case fh.Private() == 0:
		fj.Algorithm = "none: every relation is public"
	case fh.Len() == 1:
		fj.Algorithm = string(joinasone.OneTable)
	case fh.Len() == 2:
		fj.Algorithm = string(joinasone.TwoTable)
	default:
		fj.Algorithm = string(joinasone.General)
	}
	for _, g := range f.Groups() {
		for _, st := range g.Steps {
			fj.Folds = append(fj.Folds, foldStep{Public: st.Public, Into: g.Members[0], Relation: g.Name,
				Key: st.Key, On: st.On, Lossless: st.Lossless})
		}
	}
	return fj
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func writeInspectText(w io.Writer, r inspectReport) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "spec:\t%s\n", r.Spec)
	fmt.Fprintf(tw, "relations:\t%s\n", strings.Join(r.Relations, ", "))
	if len(r.PublicRelations) > 0 {
		fmt.Fprintf(tw, "public relations:\t%s\n", strings.Join(r.PublicRelations, ", "))
	}
	for _, a := range r.JoinAttributes {
		fmt.Fprintf(tw, "join attribute:\t%s\n", strings.Join(a.Columns, " = "))
	}
	fmt.Fprintf(tw, "acyclic:\t%v\n", r.Acyclic)
	if r.Hierarchical {
		fmt.Fprintf(tw, "hierarchical:\ttrue\n")
	} else {
		fmt.Fprintf(tw, "hierarchical:\tfalse (%s)\n", r.HierarchicalReason)
	}
	for _, line := range r.AttributeTree {
		fmt.Fprintf(tw, "attribute tree:\t%s\n", line)
	}
	fj := r.FoldedJoin
	if len(fj.Folds) == 0 {
		fmt.Fprintf(tw, "folded join:\tnothing to fold (no public table joined on its primary key); %d relations: %s\n", fj.RelationCount, fj.Algorithm)
	} else {
		fmt.Fprintf(tw, "folded join:\t%s (%d relations: %s)\n", strings.Join(fj.Relations, ", "), fj.RelationCount, fj.Algorithm)
	}
	for _, st := range fj.Folds {
		how := "a lookup: residual sensitivity unchanged"
		if !st.Lossless {
			how = "it also joins other tables: the folded sensitivity bound may be looser"
		}
		fmt.Fprintf(tw, "fold:\t%s into %s on %s (primary key %s; %s)\n", st.Public, st.Into, strings.Join(st.On, ", "), strings.Join(st.Key, ", "), how)
	}
	fmt.Fprintf(tw, "method:\t%s\n", r.Method)
	for _, c := range r.ReleaseColumns {
		if c.Nullable {
			fmt.Fprintf(tw, "release column:\t%s (%s, %d cells: %d values and NULL)\n", c.Name, c.Type, c.Size, c.Size-1)
			continue
		}
		fmt.Fprintf(tw, "release column:\t%s (%s, %d cells)\n", c.Name, c.Type, c.Size)
	}
	fmt.Fprintf(tw, "universe size:\t%d\n", r.UniverseSize)
	fmt.Fprintf(tw, "pmw model:\t%s\n", r.Model)
	fmt.Fprintf(tw, "budget:\tε = %s, δ = %s\n", strconv.FormatFloat(r.Budget.Epsilon, 'g', -1, 64), strconv.FormatFloat(r.Budget.Delta, 'g', -1, 64))
	wl := r.Workload
	switch {
	case wl.Default:
		fmt.Fprintf(tw, "workload:\tnone listed: every 1-way and 2-way marginal of the released columns (%d marginals)\n", wl.Marginals)
	case wl.Added > 0:
		fmt.Fprintf(tw, "workload:\t%d marginals (%d of them the added 1-way marginals of released columns the listed queries leave out), %d range families, %d numeric queries\n", wl.Marginals, wl.Added, wl.Ranges, wl.Numeric)
	default:
		fmt.Fprintf(tw, "workload:\t%d marginals, %d range families, %d numeric queries\n", wl.Marginals, wl.Ranges, wl.Numeric)
	}
	for _, f := range wl.Families {
		how := ""
		if f.Added && !wl.Default {
			how = " (added: 1-way marginal)"
		}
		fmt.Fprintf(tw, "workload family:\t%s%s\n", f.Name, how)
	}
	writeForecastText(tw, r.Forecast)
	for _, w := range r.Warnings {
		fmt.Fprintf(tw, "warning:\t%s\n", w)
	}
	fmt.Fprintf(tw, "data:\tevery value inside its declared domain (after the out_of_domain policies)\n")
	if c := r.NonPrivate; c != nil {
		writeCustodianText(tw, c)
	}
	return tw.Flush()
}

// effectiveWorkload summarizes the query families a release of s keeps
// accurate ([workload.Effective]) and warns about released columns
// none of them covers. Both come from the spec alone.
func effectiveWorkload(s *spec.Spec) (workloadSummary, []string) {
	names := make([]string, len(s.Release.Columns))
	for i, r := range s.Release.Columns {
		names[i] = r.String()
	}
	w := workloadSummary{Default: s.Workload.Empty(), OneWay: !s.Workload.NoOneWay, Families: []workloadEntry{}}
	covered := make([]bool, len(names))
	for _, f := range workload.Effective(s) {
		e := workloadEntry{Name: f.Name, Kind: f.Kind, Columns: []string{}, Added: f.Added}
		for _, c := range f.Columns {
			e.Columns = append(e.Columns, names[c])
			covered[c] = true
		}
		switch f.Kind {
		case "marginal":
			w.Marginals++
		case "ranges":
			w.Ranges++
		default:
			w.Numeric++
		}
		if f.Added && !w.Default {
			w.Added++
		}
		w.Families = append(w.Families, e)
	}
	warnings := []string{}
	for i, ok := range covered {
		if !ok {
			warnings = append(warnings, fmt.Sprintf("release column %s is not covered by the workload (it will come out near uniform): add a marginal or range over it, or drop workload.one_way: false", names[i]))
		}
	}
	return w, warnings
}

// writeCustodianText prints the NON-PRIVATE section; every line's key says
// NON-PRIVATE.
func writeCustodianText(tw io.Writer, c *custodianReport) {
	fmt.Fprintf(tw, "NON-PRIVATE:\t%s\n", strings.TrimPrefix(c.Label, "NON-PRIVATE: "))
	for _, t := range c.Tables {
		fmt.Fprintf(tw, "NON-PRIVATE rows:\t%s: %d in the source, %d loaded\n", t.Table, t.SourceRows, t.LoadedRows)
		for _, col := range t.Columns {
			if col.Policy == string(spec.OutOfDomainClamp) {
				fmt.Fprintf(tw, "NON-PRIVATE clamped:\t%s.%s: %d rows (out_of_domain: clamp)\n", t.Table, col.Column, col.Clamped)
			} else {
				fmt.Fprintf(tw, "NON-PRIVATE dropped:\t%s.%s: %d rows (out_of_domain: drop)\n", t.Table, col.Column, col.Dropped)
			}
		}
	}
	fmt.Fprintf(tw, "NON-PRIVATE join size:\t%d\n", c.JoinSize)
	for _, k := range c.UnitKeys {
		status := "unique, no NULL"
		switch {
		case k.NullKey:
			status = fmt.Sprintf("NULL in %d row(s)", k.Rows)
		case !k.OK:
			status = fmt.Sprintf("NOT unique: value %q in %d rows", strings.Join(k.Value, ", "), k.Rows)
		}
		label := "unit key"
		if k.Declared {
			label = "primary key"
		}
		fmt.Fprintf(tw, "NON-PRIVATE %s:\t%s (%s): %s\n", label, k.Table, strings.Join(k.Key, ", "), status)
	}
	for _, o := range c.Orphans {
		fmt.Fprintf(tw, "NON-PRIVATE orphans:\t%s\n", o.Text)
	}
	for _, w := range c.Warnings {
		fmt.Fprintf(tw, "NON-PRIVATE warning:\t%s\n", w)
	}
	writeCustodianSignal(tw, c.Signal)
	writeCustodianCount(tw, c.Count)
}

// pmwModel says which PMW model a release of s would use and why (the
// release's own plan, from the spec alone), or why it would be refused.
func pmwModel(s *spec.Spec) string {
	p, err := release.NewPlan(s, 0, 0, 0)
	switch {
	case err != nil:
		return "refused: " + err.Error()
	case p.Factored && s.PMW.Model == spec.PMWModelFactored:
		return "factored (pmw.model: factored): a graphical model on the measured column sets, junction-tree inference"
	case p.Factored:
		cells, _ := s.UniverseSize()
		return fmt.Sprintf("factored: the dense universe (%d cells) does not fit the memory cap, so PMW keeps a graphical model "+
			"on the measured column sets (junction tree of at most %d cells)", cells, pmw.DefaultFactoredCells)
	}
	return fmt.Sprintf("dense: %d bytes of PMW arrays for the whole universe (pmw.model: factored keeps a graphical model instead)", p.Memory)
}
