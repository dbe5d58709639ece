// Package release orchestrates a release run: it plans the run from the
// spec and charges the budget before any data is read, loads the data,
// runs the release method's mechanisms and writes and publishes the output:
// the synthetic table as one Parquet file whose columns are the released
// columns with their declared types, the privacy report in the file's
// key-value metadata (key [layout.MetadataKey]) and, beside it, the same
// report as JSON and Markdown.
//
// # Packages
//
// The dependencies point one way, from the orchestration down:
//
//   - package [github.com/synth-dp/synth/workload]: the workload (the
//     spec's queries as PMW families, the sums' grids and boxes, the true
//     answers for evaluate);
//   - [github.com/synth-dp/synth/output/synthfile]: the cells → rows
//     Decoder, the Parquet Writer and the row sampling;
//   - [github.com/synth-dp/synth/output/publish]: atomic files and the
//     staged, atomically published output folder;
//   - [github.com/synth-dp/synth/output/layout]: the names of the
//     folder's files, the metadata key and the released columns' names.
//
// None of them imports package release. Package release may be imported by
// internal/cli (and cmd) only.
//
// # Measures
//
// A spec's release.measures carries sums of integer or numeric columns of
// the join (released or not) into the file, by the numerical-queries
// mechanism of Qiu et al. (package numerical, Alg. 2 with the private α of
// §6 and, when the full universe exceeds the memory cap, the universe
// reduction of §4.1).
//
// For a measure m, the grid G is the product of the released columns that
// the workload's numeric queries on m use as conditions (none: one cell).
// numerical runs once per measure on the universe G × values of m (m in
// units of its resolution b), over the join's points (one GROUP BY over
// the join in the engine), keeping accurate m's total and the workload's
// sums of m (their boxes over G). Its output D̃ is a synthetic histogram;
// SUMhat(g) = b·Σ_v v·D̃(g, v) is the sum of m that D̃ holds in cell g.
//
// Encoding: one required float64 column per measure, named after it
// (table_column when a released column has the name), holding for every
// synthetic row the representative value SUMhat(g)/rows(g) of the row's
// cell g ∈ G, rows(g) being the number of synthetic rows written in g.
// Hence, for any conditions on the columns of G (as the workload writes
// them: on the bins' representative values),
//
//	SELECT SUM(m) FROM 'synthetic.parquet' WHERE <conditions on G>
//
// returns Σ SUMhat(g) over the cells g of the box that have rows, up to
// float rounding. A cell with rows(g) = 0 cannot carry its sum: it is lost
// from every SQL sum. The summary and the report give, per measure, the
// lost DP sum Σ_{rows(g)=0} SUMhat(g) and the number of such cells; both
// are post-processing of DP outputs. COUNT(*) queries are unaffected: the
// rows are those of the release without measures.
//
// Why D̃'s cell sums and not Alg. 2's thresholded answer to one query per
// cell: truncation sends every cell whose count is within α̃ of 0 to 0,
// and a box adds those errors up. On Adult (capital-loss over age ×
// education, 128 cells, ε = 1 with 0.2 of it for the measure, 3 runs,
// TestReleaseMeasureAdult) per-cell Alg. 2 answers gave every workload sum
// as 0 (median relative error 1.0, also at ε = 4), D̃'s cell sums with
// per-cell queries 0.64, and D̃'s cell sums with the workload's boxes as
// the queries 0.37 (0.11 at ε = 4), when the encoding was chosen;
// docs/measures.md has today's per-box errors of examples/adult/
// measures.yaml. Alg. 2's direct answers to the workload's boxes are in
// [MeasureSummary.WorkloadAnswers]; each measure's error scale
// ([MeasureErrorScale]) is in the summary and both reports.
//
// Budget: release.measures_share s (default [spec.DefaultMeasuresShare])
// of ε goes to the measures, as (s·ε, 0), before any data is read; each of
// the |M| measures gets s·ε/|M| (basic composition) and the rest of the
// release ((1 − s)·ε, δ). Sensitivity: numerical is calibrated to the Δ̃
// the release's join-as-one run publishes (1 on one table). Join-as-one
// draws Δ̃ ≥ Δ always (the truncated Laplace never lowers it), and one
// added or removed tuple changes the join by at most Δ of both neighbours
// (two tables: the degree of its key on the other side; more: by RS^β ≥
// LS), so, given the DP output Δ̃, numerical's run is (s·ε/|M|)-DP for the
// join's tuples exactly as PMW's is for its share (Ghazi et al. Alg. 1/3
// proofs with a further mechanism after Δ̃); adaptive basic composition
// adds the shares up to (ε, δ). The uniformized method publishes a Δ̃ per
// bucket of a data-dependent partition, which does not bound the whole
// join's change in the same way: measures are refused with it.
//
// Cost: the written rows are drawn first and held in memory (8 bytes a
// row, at most the row cap) so that rows(g) is known before writing.
//
// # Atomic output
//
// The output folder is staged beside its target and published by one
// rename, and every file in it is committed atomically: see
// [github.com/synth-dp/synth/output/publish].
package release
