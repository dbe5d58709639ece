// Package spec reads and validates the YAML release specification of synth
// (DESIGN.md §5): the input tables and the public domains of their columns,
// the join, the privacy budget, the released columns, the workload of
// queries that must stay accurate, and the output.
//
// [Load] and [Parse] return a [*Spec] whose every value has been checked, or
// the first problem found as an [*Error] that names the file, the line and
// the key path (tables[0].columns.age.bins) and wraps [ErrInvalid].
//
// # Format
//
//	privacy: {epsilon: 1.0, delta: 1e-6}   # required; 2⁻⁴⁰ ≤ ε ≤ 650, 0 ≤ δ < 1, τ finite (see below)
//	sdv_metadata: metadata.json             # optional, see below
//	tables:                                 # required, at least one
//	  - name: orders                        # unique, no '.'
//	    source: ../data/orders.csv          # required; relative to the spec's folder
//	    format: csv                         # csv | parquet; default from the extension
//	    public: false                       # default false
//	    primary_key: o_orderkey             # a column or a list of columns
//	    columns:                            # ordered; undeclared file columns are ignored
//	      o_orderkey: {type: key}
//	      o_custkey: {type: key}
//	      o_orderpriority: {type: categorical, values: [1-URGENT, 2-HIGH, 3-MEDIUM]}
//	      o_totalprice: {type: numeric, min: 0, max: 600000, bins: 32, out_of_domain: clamp}
//	      o_shippriority: {type: integer, min: 0, max: 9}            # one bin per integer
//	      l_quantity: {type: integer, bin_edges: [1, 10, 25, 51]}   # bins [1,10) [10,25) [25,51)
//	      o_orderdate: {type: date, min: 1992-01-01, max: 1998-12-31, granularity: year}
//	      flag: {type: boolean, out_of_domain: drop}
//	join: ["orders.o_custkey = customer.c_custkey"]   # table.column = table.column
//	# or: join: {on: ["orders.o_custkey = customer.c_custkey"], orphans: drop}
//	#   orphans: error (default) refuses a release whose foreign keys do not
//	#   all resolve (see [Spec.ForeignKeys]); drop releases the join without them
//	relationships:                          # SDV style, turned into join equalities
//	  - {parent_table_name: customer, parent_primary_key: c_custkey,
//	     child_table_name: orders, child_foreign_key: o_custkey}
//	release:                                # required
//	  method: auto                          # or join-as-one, uniformized; default auto (uniformized for two relations)
//	  columns: [o_orderpriority, customer.c_mktsegment]
//	  beta: 0.1                             # optional, public; β of residual sensitivity (3+ tables), default ε/ln(1/δ)
//	  rows: 100000                          # optional: write exactly this many rows, sampled from the synthetic distribution
//	  measures: [o_totalprice]              # optional: integer/numeric columns (released or not) carried as sums, one float64 column each
//	  measures_share: 0.6                   # optional, only with measures: share of ε for the measures; default 0.6
//	  contribution_bound: 1                 # optional, only with privacy.unit: r rows per unit (1 … 2^20), or auto; default 1
//	  contribution_norm: l1                 # optional, only with privacy.unit: l1 or l2 (default on the factored model)
//	workload:                               # optional
//	  marginals: [[o_orderpriority, c_mktsegment], [l_quantity]]
//	  ranges: [{column: l_quantity, by: [o_orderpriority]}]
//	  numeric: [{sum: o_totalprice, where: {o_orderpriority: [1-URGENT], l_quantity: [1, 10]}}]
//	  one_way: true                         # default true: add every released column's 1-way marginal
//	pmw:                                    # optional
//	  variant: mwem                         # or paper (Ghazi et al. App. A as stated); default mwem
//	  noise: gaussian                       # or laplace; mwem only
//	  nhat_share: 0.05                      # share of (ε, δ) for the padded join size; mwem only
//	output: {path: out/orders}              # optional; relative to the spec's folder
//
// Column types and their keys:
//
//   - key: no other key. Identifiers for joins and primary keys; never
//     released.
//   - categorical: values (required, non-empty, distinct, no empty value;
//     matched against the data's text exactly).
//   - boolean: nothing else; two cells, false then true.
//   - integer: min and max (whole numbers, min < max) with optional bins
//     (equal-width bins over [min, max+1); without bins one bin per
//     integer), or bin_edges (whole numbers, strictly increasing, at least
//     two; bins [e_i, e_{i+1}), so max = e_k − 1).
//   - numeric: min and max (min < max) with bins (required), or bin_edges
//     (bins [e_i, e_{i+1}), the last closed, so max = e_k).
//   - date: min and max (YYYY-MM-DD, min ≤ max) and granularity (day, month
//     or year; default day). Month and year bins are calendar months and
//     years.
//
// Every non-key type takes out_of_domain: error (default), drop, or clamp
// (integer, numeric and date only), and nullable (default false): with
// nullable: true, NULL (an empty value) is one more value of the domain,
// its last cell ([Column.NullCell]; [Column.Size] counts it,
// [Column.ValueSize] does not). Key columns, join columns, primary key
// columns and release measures cannot be nullable. A column has at most [MaxColumnSize]
// cells, and the product of the released columns' sizes must not overflow
// (see [Spec.UniverseSize]).
//
// A column reference is the bare column name when exactly one table
// declares it, else table.column; join strings always use table.column.
// Join equalities relate two different tables, with columns of the same
// type; their transitive closure must not equate two columns of one table,
// and it must connect every table (no cross products). Released columns are
// distinct and not keys. Workload marginals, ranges (whose column must be
// integer, numeric or date) and numeric-query conditions use released
// columns only; a numeric query sums any declared integer or numeric
// column. A condition is [lo, hi] for integer, numeric and date columns,
// and a list of values for categorical and boolean columns.
//
// # privacy
//
// ε must lie in [2⁻⁴⁰, 650] (below 2⁻⁴⁰ ≈ 9.1e-13 every noise scale is
// beyond the exact samplers) and δ in [0, 1). With δ > 0, ln((e^ε − 1)/δ)
// must be at most 650, so that the truncation threshold
// τ = (1/ε)·ln(1 + (e^ε − 1)/δ) stays finite at every share of the budget
// a release spends: δ = 5e-324 (the smallest float64) is refused, not
// rounded to 0. ε > 10 or δ > 1e-3 is accepted but gives weak privacy;
// [Privacy.Warnings] says so and the CLI prints it on stderr. At least one
// table must be private (not public: true): with every table public there
// is nothing to protect.
//
// unit (optional) names a private table whose rows are the individuals
// (user-level DP): a unit's row and everything that references it through
// foreign keys change together between neighbours. A release with a unit
// runs the privacy-unit method (each unit's contribution bounded to
// release.contribution_bound rows; package privacyunit), and synth answer
// runs R2T or multi-query SJA under the same relation; without one, both
// are tuple-level DP.
//
// max_unit_rows (optional, with unit) is a public bound on the join rows
// one unit reaches, a whole number from 1 to 2^30: synth answer's clipped
// mechanism chooses its clip at or below it and R2T races up to it
// (default 2^20). It is never checked against the data; a unit with more
// rows is clipped to it.
//
// # workload
//
// Without a workload section (or with an empty one) a release keeps every
// 1-way and 2-way marginal of the released columns accurate. With one, it
// keeps the listed marginals, ranges and numeric queries accurate and, by
// default, also the 1-way marginal of every released column: a released
// column no query covers would otherwise come out near uniform.
// one_way: false turns that addition off (it needs at least one listed
// query); a column left out of every query then carries no information.
//
// # release.measures
//
// Each measure is an integer or numeric column of the join, released or
// not, with its declared domain [min, max] as the public bound of its sums
// (never the data). The release answers, per measure, the sums of the
// measure over the cells of the released columns that the workload's
// numeric queries on it use as conditions, by Qiu et al.'s mechanism
// (package numerical), and writes one float64 column named after the
// measure, or table_column when a released column has that name
// (lines_quantity for measure quantity of table lines beside a released
// quantity; see package release for the encoding). measures_share of ε
// goes to the measures, the rest to the synthetic rows. A measure that is
// not an integer or numeric column, or is listed twice, is an error; a
// measures_share outside (0, 1) or without measures too.
//
// # release.contribution_bound
//
// Only with privacy.unit: every unit's join rows together weigh at most r
// rows (a unit with n > r rows weighs r/n a row). A number between 1 and
// 2^20 is public and used as is (default 1). auto chooses r in the
// release, privately, with 5% of ε: the exponential mechanism picks r from
// the public ladder ⌈2^(j/2)⌉ ≤ 2^12 near the q-quantile of the units' join
// rows, q = ε/10 clamped to [0.05, 0.5] (a larger ε affords a larger r;
// see docs/privacy-units.md for the measurements). Anything else is an
// error.
//
// # release.contribution_norm
//
// Only with privacy.unit. l1 bounds each unit's rows to weigh r in all,
// the same weight in every marginal; l2 (the default on the factored
// model, pmw.model auto or factored) also clips, in each marginal a round
// measures, each unit's vector of rows over the marginal's cells to L2
// norm r (Dong–Sun–Yi's clipping), which keeps more of a unit whose rows
// spread over many cells. Selection and the 1-way marginals stay l1. On
// the dense model the default is l1 and an explicit l2 is refused.
//
// # release.beta
//
// β is the smoothing parameter of residual sensitivity (Ghazi et al. Alg. 3,
// joins of three or more tables). It is part of the mechanism and must be
// chosen WITHOUT looking at the private data (not from `synth sensitivity`
// output, which is non-private): a β picked because RS^β came out small
// leaks through the choice. The noise factor of Δ̃ grows like e^(c·β/ε);
// a β that could push it above 2⁴⁰ is refused before any data is read, with
// the largest β allowed at the spec's (ε, δ).
//
// # Sources
//
// Two tables may read one file only if both are public. Two private tables
// with one source (a self-join through one file) are refused: one
// individual's tuple would then sit in two relations, while the neighbour
// notion (DESIGN.md §3: one tuple of one private table changes) and the
// sensitivity bounds built on it (degrees, residual sensitivity) count each
// private tuple in one relation, so they would be too small. A public table
// reading a private table's file is refused too: a public table must never
// change between neighbours, and that file does. Sources are compared after
// resolving them against the spec's folder and cleaning them, and, when
// both files exist, with [os.SameFile], which also catches a second
// spelling, a symbolic link or a hard link. URLs are compared as written.
// SDV metadata names no sources, so specs that use it are checked the same
// way.
//
// # Strictness
//
// An unknown key anywhere is an error naming it and where it is; so are
// duplicate keys, keys that do not belong to a column's type, NaN and ±Inf
// (.nan, .inf), numbers written as strings and the YAML 1.1 booleans yes/no.
// Aliases (*name) are followed; merge keys (<<) are not supported. A file
// must hold exactly one YAML document.
//
// # SDV metadata
//
// sdv_metadata names an SDV multi-table metadata JSON file
// (METADATA_SPEC_VERSION "V1" or "MULTI_TABLE_V1"; its tables'
// primary_key, columns.*.sdtype, and relationships are read, everything
// else is ignored). For each table listed under tables: that the metadata
// also describes, the metadata supplies the primary key, and its id
// columns, primary keys and relationship columns are declared as keys
// unless the spec declares them; a column the spec declares must be in the
// metadata and agree with its sdtype (id → key, categorical → categorical,
// numerical → integer or numeric, datetime → date, boolean → boolean); the
// spec may omit type where the sdtype decides it. Relationships between
// listed tables become join equalities (child foreign key = parent primary
// key); tables and relationships the spec does not list are ignored. The
// spec still gives every source and every public domain: SDV metadata holds
// no domains, and domains must never be read from the data.
//
// # Not done here
//
// Parse does not open the table sources (it only stats them, see Sources
// above): a missing file or a column absent from it is reported by the
// engine when it loads the data, as are values outside the declared
// domains.
package spec
