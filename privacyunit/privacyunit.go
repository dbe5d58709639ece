// Package privacyunit releases synthetic data of a join under user-level
// differential privacy: a neighbour deletes one privacy unit (a tuple of
// the spec's privacy.unit table) and every private tuple that references
// it through the spec's foreign keys — the neighbour relation of R2T and of
// Dong–Sun–Yi's multi-query SJA, shared with `synth answer --unit`.
//
// Under tuple-level DP one person's tuple reaches hundreds of join rows, so
// every count of the join is noised at that scale; here each unit's rows
// are bounded instead (contribution bounding, as in PipelineDP and Tumult
// Analytics): a unit with n_u join rows weighs min(1, r/n_u) per row, so
// its rows weigh at most r in every marginal, and the marginals of the
// bounded histogram have sensitivity r whatever the data. The mwem rounds
// of package pmw (exponential-mechanism selection of whole marginals,
// discrete Gaussian measurement, annealing, one consistent fit) run on the
// bounded histogram with Δ̃ = r; the file's row count is a separate DP
// count of the join under the same neighbour relation.
//
// Which bound: every unit's rows weigh min(1, r/n_u) each (L1 over its
// rows, PipelineDP's contribution bound), the same weight in every
// marginal, for the 1-way marginals and every selection score: the
// score's L1 sensitivity is then r. With Config.L2 (the default on the
// factored model, release.contribution_norm l2), each marginal a round
// measures is read instead with every unit's vector over its cells clipped
// to L2 norm r (Dong–Sun–Yi Alg. 1's clipping, engine.UnitMarginalL2):
// its L2 sensitivity is r, the measurement's, and it keeps up to √cells
// more weight of a unit spread over the marginal. The L1 score could not
// read it (sensitivity r·√cells), nor could a smaller set's table be summed
// from it, so pmw reads it per measured set (pmw.Config.MeasureTruth).
// Measured on TPC-H and Online Retail, L2 is better at every ε
// (docs/privacy-units.md).
//
// r is public (release.contribution_bound) or chosen privately
// (Config.AutoBound): see boundQuantile.
package privacyunit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/engine"
	"github.com/synth-dp/synth/hypergraph"
	"github.com/synth-dp/synth/pmw"
	"github.com/synth-dp/synth/relational"
	"github.com/synth-dp/synth/spec"
)

// Algorithm names the mechanism in reports.
const Algorithm = "privacy-unit release: per-unit contribution bounding (L1, r rows) + mwem PMW on the bounded histogram + clipped DP row count"

// AlgorithmL2 names the mechanism with release.contribution_norm l2.
const AlgorithmL2 = "privacy-unit release: per-unit contribution bounding (L1, r rows; each measured marginal clipped per unit to L2 norm r) + mwem PMW on the bounded histogram + clipped DP row count"

// Algorithm names the plan's mechanism in reports.
func (p *Plan) Algorithm() string {
	if p.cfg.L2 {
		return AlgorithmL2
	}
	return Algorithm
}

// Neighbours is the neighbour notion of a privacy-unit release.
const Neighbours = "one privacy unit: a tuple of the privacy.unit table together with every private tuple that references it through the spec's foreign keys (user-level DP, as R2T and Dong–Sun–Yi); public tables never change"

// Grid is the number of weight steps of one row: weights are multiples of
// 1/Grid, so the bounded histogram holds integers (in units of 1/Grid) and
// the integer discrete Gaussian noise keeps it on the integers. A unit of n
// rows gets ⌊Grid·r/n⌋/Grid per row: at most n/Grid below r/n·n = r in
// all (under 1% for n ≤ 655), and nothing when n > Grid·r.
const Grid = 1 << 16

// DefaultCountShare is the share of ε spent on the row count; the rest
// (with all of δ) goes to the marginals. The row count does not enter the
// workload's marginals (they are distributions); it sets the file's size.
const DefaultCountShare = 0.1

// UnitCountShare is the share of ε spent on a DP count of the units (units
// with at least one join row), drawn first when the row count's share is
// chosen by the run (Config.CountShare 0): it sets that share (see
// countShareFor) and is part of it.
const UnitCountShare = 0.02

// MaxCountShare is the largest share of ε the row count takes: with few
// units (see countShareFor).
//
// 0.3 since issue 40's fourth session (0.5 before): the clip is now drawn
// by the monotone exponential mechanism (dp.ChooseClipPenalty), which at
// ε_Q resolves the ladder as the ordinary one did at 2ε_Q, so the count
// needs less of ε for the same file size and the marginals get the rest.
// Forecast on Retail with 100 customers at ε = 1 (ForecastCount, the
// units' true row counts): rows/true mean 0.85 at 0.5 with the ordinary
// mechanism; with the monotone one 1.05 at 0.5, 1.05 at 0.35, 1.02 at 0.3,
// 0.91 at 0.25 (below 0.1 with probability 4%, 6%, 7%, 12%). Measured
// there (docs/small-data.md, 100 seeds): mean TVD 0.317 ± 0.060 and
// rows/true 0.82 before, 0.299 ± 0.028 and 1.03 at 0.35, 0.294 ± 0.031
// and 0.99 at 0.3: the marginals' ε goes from 0.5 to 0.7 (ρ × 1.9). Joins
// of 600 units or more at ε ≥ 1 never reach the cap (countShareFor).
const MaxCountShare = 0.3

// countShareUnits is K of the row count's share max(DefaultCountShare,
// min(MaxCountShare, K/(ε·n̂))): the count gets at least K/n̂ of ε, so
// ε_C·n̂ ≥ K units' worth of information whenever the cap allows.
//
// Why: the count's clip C is chosen by an exponential mechanism whose
// scores count units (sensitivity 1), so it can resolve the clip only when
// ε_C times the number of units is large; at DefaultCountShare with 100
// units at ε = 1 (ε_C·n = 10) the step penalty decides alone and C = 1
// wins: Retail with 100 customers got 5% of its 7,137 join rows
// (docs/small-data.md). Simulated on the units' row counts of that join
// (exponential mechanism as shipped, 300 draws a share), the mean
// rows/true at ε = 1 was 0.06 / 0.11 / 0.31 / 0.99 at the shares 0.1 /
// 0.2 / 0.3 / 0.5, and at ε = 4 0.78 / 0.97 at 0.1 / 0.2. K = 50, read against
// n̂ less two of its noise scales (unitsMargin), leaves every join of 600
// units or more at DefaultCountShare from ε = 1 up (TPC-H SF 0.01 and the
// Retail example, 1,000 and 1,103 units; at ε = 0.5 they get about 0.125
// and 0.11), and gives 100 units MaxCountShare at ε ≤ 1 and about 0.17
// at ε = 4. Public: a function of ε and of the DP unit count.
const countShareUnits = 50

// unitsMargin is how many noise scales of the DP unit count the share
// rule subtracts from it: the rule reads n̂ − unitsMargin/ε_U, a lower
// bound on the units that fails with probability e^{−2}/2 ≈ 7%. The unit
// count's noise (scale 1/ε_U = 50/ε) is as large as the count itself
// where the rule matters: with n̂ itself, Retail with 100 customers at
// ε = 1 drew n̂ between 9 and 397 over 20 seeds, and each n̂ above 200
// cut the row count's share below 0.25, where the clip's exponential
// mechanism draws C ≤ 3 (rows/true 0.03–0.06, 3 of those 20 runs).
// Erring low costs the marginals a larger share; erring high costs the
// file its size. At ε = 1 a join of 1,000 units keeps DefaultCountShare
// (n̂ − 100 ≥ 500 but with probability e^{−8}).
const unitsMargin = 2

// FullShareUnits is ε times the number of units from which the row count
// keeps DefaultCountShare (but for the unit count's noise):
// countShareUnits/DefaultCountShare + unitsMargin/UnitCountShare.
func FullShareUnits() int {
	return int(math.Round(countShareUnits/DefaultCountShare + unitsMargin/UnitCountShare))
}

// countShareFor is the row count's share of ε given the DP unit count n̂
// drawn at ε_U (a DP output, so the share is public once drawn):
// max(DefaultCountShare, min(MaxCountShare, countShareUnits/(ε·n_low)))
// with n_low = n̂ − unitsMargin/ε_U (see unitsMargin).
func countShareFor(eps, epsU float64, units int64) float64 {
	low := float64(units) - unitsMargin/epsU
	return min(MaxCountShare, max(DefaultCountShare, countShareUnits/(eps*max(low, 1))))
}

// countQuantileShare is the part of the count's ε that chooses the clip C.
// With 0.3 the clip's exponential mechanism could not tell C = 1 from the
// right clip at small ε (λ = 1/ε_Q made the ladder's penalty as large as
// the number of units), so rows/true averaged 0.62 on TPC-H at ε = 0.5
// over 10 seeds (single runs near 0.02); with 0.5 it was 1.04 (Retail at
// ε = 1: 0.75 → 0.91), at the price of √2 more noise in the count itself.
// 0.45 keeps λ away from an integer for the audit's tipping pair.
const countQuantileShare = 0.45

// clipCandidates are the public candidates of the count's clip C: ⌈2^(j/2)⌉
// for j = 0..40 (1 … 2²⁰ rows per unit), without repeats.
var clipCandidates = dp.ClipLadder(1 << 20)

// Config holds the public parameters of a privacy-unit release.
type Config struct {
	// Epsilon and Delta are the budget of the whole release.
	Epsilon, Delta float64
	// Columns are the released columns in the folded hypergraph.
	Columns []spec.ColumnRef
	// Universe and Families are PMW's universe and workload.
	Universe *pmw.Universe
	Families []pmw.Family
	// Factored runs PMW on a factored model (pmw.RunFactored) instead of
	// dense weights over Universe, which may then be nil; Names and Sizes
	// are the released columns' names and domain sizes (needed with
	// Factored).
	Factored bool
	Names    []string
	Sizes    []int
	// Bound is r ≥ 1: the rows a unit may weigh in all (ignored with
	// AutoBound).
	Bound float64
	// L2 clips, in each marginal a round measures, each unit's vector over
	// the marginal's cells to L2 norm ≤ r (engine.UnitMarginalL2) and
	// measures that table (pmw.Config.MeasureTruth); selection and the
	// 1-way marginals keep the L1-bounded histogram. Needs Factored.
	L2 bool
	// AutoBound chooses r privately: DefaultBoundShare of ε picks it from
	// a public ladder by a noisy quantile of the units' join rows (see
	// boundQuantile).
	AutoBound bool
	// CountShare is the share of ε for the row count; 0 lets the run
	// choose it from a DP count of the units (UnitCountShare of ε, part of
	// the count's share): max(DefaultCountShare, min(MaxCountShare,
	// countShareUnits/(ε·n̂))).
	CountShare float64
	// Noise, Rounds and MaxRounds configure the mwem rounds (pmw.Config).
	Noise             pmw.Noise
	Rounds, MaxRounds int
	// Progress hears of every PMW round.
	Progress func(round, rounds int)
	// NoCount skips the clipped row count: all of ε but the automatic
	// r's share goes to the marginals, and Result.Rows is the model's
	// own DP estimate of the bounded weight, in rows (for the tables
	// release's levels, whose unit level holds exactly one row per unit
	// and whose child levels take their sizes from the fan-outs).
	NoCount bool
	// KeysChecked tells Run that the caller ran [CheckKeys] on the same
	// loaded tables before charging (the release does): Run then skips
	// the key checks it makes otherwise.
	KeysChecked bool
	// Own, with Factored, are the columns the run is for (pmw.Config.Own):
	// the others are a context that only measured sets with an own column
	// teach the model.
	Own []int
	// InitLow and InitLowShare are pmw.Config's: with Own, context
	// columns whose 1-way marginals pmw's initial step measures too, at
	// this share of an own column's.
	InitLow      []int
	InitLowShare float64

	mutation mutation
}

// mutation is a planted bug for the audits (tests only).
type mutation int

const (
	mutNone       mutation = iota
	mutNoBounding          // every row weighs one row, whatever its unit's size
	mutTrueClip            // the count's clip C is the true quantile (no noise in the choice)
	mutRowSigma            // the marginals' noise is calibrated to one row instead of r
	mutExactCount          // the row count without noise
	mutTrueBound           // the automatic r is the true quantile (no noise in the choice)
	mutNoL2Clip            // the L2-clipped measurements are not clipped at all
	mutCountRow            // the row count noised for one row instead of the clip C
	mutL2Scale16           // each L2-clipped table counted 16 times (its noise 16 times too small against a unit's weight)
	mutExactUnits          // the unit count that sets the row count's share without noise
)

// Stats is what a run reads from the engine: aggregates only.
type Stats interface {
	CheckPrimaryKey(ctx context.Context, h *hypergraph.Hypergraph, table string, key []string) error
	UnitHistogram(ctx context.Context, h *hypergraph.Hypergraph, key engine.UnitKey, cols []spec.ColumnRef, sizes []int, grid, bound int64) ([]engine.Cell, []engine.UnitDegree, error)
	UnitMarginalL2(ctx context.Context, h *hypergraph.Hypergraph, key engine.UnitKey, cols []spec.ColumnRef, sizes []int, grid, bound int64) ([]engine.Cell, error)
}

var _ Stats = (*engine.Engine)(nil)

// unitRowStore is a Stats that can store the join's rows once
// (engine.Engine.StoreUnitRows): a run that clips its measured marginals
// in L2 then reads the histogram and every L2 marginal from them, the
// same statistics to the last digit, with one join instead of one per
// statistic. A nil *engine.UnitRows means the engine does not store them.
type unitRowStore interface {
	StoreUnitRows(ctx context.Context, h *hypergraph.Hypergraph, key engine.UnitKey, cols []spec.ColumnRef, sizes []int) (*engine.UnitRows, error)
}

var (
	_ unitRowStore = (*engine.Engine)(nil)
	_ Stats        = (*engine.UnitRows)(nil)
)

// Plan is a privacy-unit release prepared from public information: the
// unit's ownership structure, the bound, the budget split (charged), and
// the tables whose keys must be checked.
type Plan struct {
	cfg      Config
	s        *spec.Spec
	folding  *hypergraph.Folding
	unit     string
	key      engine.UnitKey
	checks   []KeyCheck
	bound    int64 // Grid·r, the sensitivity in grid units
	epsQ     float64
	epsN     float64
	epsR     float64 // the automatic r's choice (0 without AutoBound)
	epsU     float64 // the DP unit count's (0 when the count's share is fixed)
	share    float64 // the row count's share of ε (chosen by Run when epsU > 0)
	units    int64   // the DP unit count (when epsU > 0, once drawn)
	rootL    *dp.Ledger
	countL   *dp.Ledger
	pmwL     *dp.Ledger
	pmwCfg   pmw.Config
	ran      bool
	countSub string
}

// KeyCheck is a primary key a privacy-unit release needs unique: Table's
// declared Key.
type KeyCheck struct {
	Table string
	Key   []string
}

// KeyChecks returns the keys a release of s under s.Privacy.Unit needs
// unique, from the spec alone: the unit's, and every private table's that
// a foreign key of the join points to (the parents on the ownership
// paths): a duplicated parent key would let one child row join two parents
// of different units, and deleting one unit would then change another's
// rows. Nil when s has no unit.
func KeyChecks(s *spec.Spec) []KeyCheck {
	unit := s.Privacy.Unit
	if unit == "" {
		return nil
	}
	parents := map[string]bool{unit: true}
	for _, eq := range s.Join {
		for _, r := range []spec.ColumnRef{eq.Left, eq.Right} {
			if tb := s.Table(r.Table); tb != nil && !tb.Public && len(tb.PrimaryKey) == 1 && tb.PrimaryKey[0] == r.Column {
				parents[r.Table] = true
			}
		}
	}
	var out []KeyCheck
	for _, tb := range s.Tables {
		if parents[tb.Name] && len(tb.PrimaryKey) > 0 {
			out = append(out, KeyCheck{Table: tb.Name, Key: slices.Clone(tb.PrimaryKey)})
		}
	}
	return out
}

// KeyChecker reads a loaded table's key (engine.Engine has it).
type KeyChecker interface {
	CheckPrimaryKey(ctx context.Context, h *hypergraph.Hypergraph, table string, key []string) error
}

// CheckKeys runs [KeyChecks] of s on the loaded tables (h the original,
// unfolded join) and returns the first failure (an
// *engine.DuplicateKeyError for a duplicated or NULL key). It reads the
// data and refuses the run on a property of it: callers run it before
// they charge any budget, so that a refused run spends nothing (the
// refusal is seen by the custodian, who holds the data).
func CheckKeys(ctx context.Context, s *spec.Spec, h *hypergraph.Hypergraph, stats KeyChecker) error {
	for _, c := range KeyChecks(s) {
		if err := stats.CheckPrimaryKey(ctx, h, c.Table, c.Key); err != nil {
			return err
		}
	}
	return nil
}

// ErrOwnership wraps every refusal of a spec whose tables do not all belong
// to the unit.
var ErrOwnership = errors.New("privacyunit: the privacy unit does not own every private table")

// Prepare checks the spec's unit structure and charges the whole budget to
// ledger, before any data is read. It refuses (wrapping ErrOwnership) a
// private table that does not reach the unit through the join's foreign
// keys (child column = the parent's one-column primary_key), along exactly
// one path.
func Prepare(s *spec.Spec, folding *hypergraph.Folding, cfg Config, ledger *dp.Ledger) (*Plan, error) {
	unit := s.Privacy.Unit
	t := s.Table(unit)
	if t == nil || t.Public {
		return nil, fmt.Errorf("%w: privacy.unit %q is not a private table of the spec", ErrOwnership, unit)
	}
	if len(t.PrimaryKey) != 1 {
		return nil, fmt.Errorf("%w: privacy.unit %s needs a one-column primary_key (its rows' ids; it declares %d column(s))", ErrOwnership, unit, len(t.PrimaryKey))
	}
	q := &relational.Query{Text: "the release's join", Agg: relational.Count, Joins: s.Join}
	for _, tb := range s.Tables {
		q.Tables = append(q.Tables, tb.Name)
	}
	if _, _, err := relational.UnitColumns(s, q, []string{unit}); err != nil {
		return nil, fmt.Errorf("%w: %w (a private table belongs to the unit through join edges child.column = parent.primary_key leading to %s; declare the missing edge and primary_key, or mark a table that holds no one's data public: true)", ErrOwnership, err, unit)
	}
	if cfg.AutoBound {
		cfg.Bound = float64(boundLadder[len(boundLadder)-1]) // checked below as the largest r it may choose
	}
	if cfg.L2 && !cfg.Factored {
		return nil, fmt.Errorf("privacyunit: release.contribution_norm l2 needs the factored model (pmw.model auto or factored)")
	}
	if !(cfg.Bound >= 1) || cfg.Bound > 1<<20 {
		return nil, fmt.Errorf("privacyunit: contribution bound r = %v, want 1 ≤ r ≤ 2²⁰", cfg.Bound)
	}
	p := &Plan{cfg: cfg, s: s, folding: folding, unit: unit, bound: int64(math.Floor(Grid * cfg.Bound))}
	rel, col, ok := folding.Locate(unit, t.PrimaryKey[0])
	if !ok {
		return nil, fmt.Errorf("privacyunit: unit %s is not in the join", unit)
	}
	p.key = engine.UnitKey{Relation: rel, Column: col}
	p.checks = KeyChecks(s)

	share := cfg.CountShare
	if share == 0 {
		share = DefaultCountShare
		if !cfg.NoCount {
			p.epsU = UnitCountShare * cfg.Epsilon
		}
	}
	if !(share > 0 && share < 1) {
		return nil, fmt.Errorf("privacyunit: count share %v, want 0 < s < 1", share)
	}
	if cfg.AutoBound {
		p.epsR = DefaultBoundShare * cfg.Epsilon
	}
	// The count's largest noise scale is public: check it now, at the
	// smallest share the run may choose (the largest scale).
	p.setCountShare(share)
	if !cfg.NoCount {
		if _, err := dp.NewDiscreteLaplace(dp.NoiseScale(float64(clipCandidates[len(clipCandidates)-1]), p.epsN)); err != nil {
			return nil, fmt.Errorf("privacyunit: row count noise: %w", err)
		}
		if _, err := dp.NewDiscreteLaplace(dp.NoiseScale(1, p.epsN)); err != nil {
			return nil, fmt.Errorf("privacyunit: row count noise: %w", err)
		}
		if p.epsU > 0 {
			if _, err := dp.NewDiscreteLaplace(dp.NoiseScale(1, p.epsU)); err != nil {
				return nil, fmt.Errorf("privacyunit: unit count noise: %w", err)
			}
			// The marginals' smallest budget must be valid too.
			p.setCountShare(MaxCountShare)
			c := p.pmwConfig()
			if err := c.Validate(); err != nil {
				return nil, fmt.Errorf("privacyunit: %w", err)
			}
			p.setCountShare(share)
		}
	}
	p.pmwCfg = p.pmwConfig()
	p.pmwCfg.SensitivityNote = p.sensitivityNote()
	if cfg.mutation == mutRowSigma {
		p.pmwCfg.Sensitivity = Grid // planted bug: one row's weight, not r's
	}
	if err := p.pmwCfg.Validate(); err != nil {
		return nil, fmt.Errorf("privacyunit: %w", err)
	}
	details := map[string]any{"unit": unit, "contribution_bound": cfg.Bound, "grid": Grid, "neighbours": Neighbours}
	if cfg.AutoBound {
		// Not the ladder's top (cfg.Bound until the run chooses): the
		// chosen r is published as contribution_bound once drawn.
		details["contribution_bound"] = "auto"
		details["contribution_bound_max"] = MaxAutoBound
	}
	rule := "basic composition of the row count and the marginals; every part is DP under the unit neighbour relation"
	if p.epsU > 0 {
		rule += "; the row count's share (and so the marginals' budget) is a function of the DP unit count drawn first, " +
			"and the parts' budgets add up to the total for every value of it: basic composition with adaptively chosen " +
			"budgets (Rogers, Roth, Ullman, Vadhan 2016, the basic composition filter)"
	}
	root, err := ledger.Split("privacy-unit release", dp.Budget{Epsilon: cfg.Epsilon, Delta: cfg.Delta}, rule, details)
	if err != nil {
		return nil, err
	}
	p.rootL = root
	if err := p.chargeBound(root); err != nil {
		return nil, err
	}
	switch {
	case cfg.NoCount:
		p.countL = root
	case p.epsU > 0:
		// The count's share and the marginals' budget are charged by Run
		// once the unit count is drawn.
		if err := root.Charge("row count: DP unit count n̂ (sets the row count's share of ε)", dp.Budget{Epsilon: p.epsU},
			fmt.Sprintf("#{units with at least one join row} + discrete Laplace of scale 1/ε: deleting a unit changes it by at most 1 "+
				"(ε-DP, the geometric mechanism); the row count then takes max(%g, min(%g, %d/(ε·n̂))) of ε, this part included",
				DefaultCountShare, MaxCountShare, countShareUnits), nil); err != nil {
			return nil, err
		}
		return p, nil
	default:
		if err := p.chargeCount(root); err != nil {
			return nil, err
		}
	}
	if err := p.splitPMW(root); err != nil {
		return nil, err
	}
	return p, nil
}

// setCountShare sets the row count's share and its parts: the clip's
// ε_Q and the sum's ε_N split what the unit count leaves of share·ε.
func (p *Plan) setCountShare(share float64) {
	p.share = share
	epsC := share*p.cfg.Epsilon - p.epsU
	if p.cfg.NoCount {
		epsC = 0
	}
	p.epsQ, p.epsN = countQuantileShare*epsC, (1-countQuantileShare)*epsC
}

// pmwConfig is the marginals' configuration for the current count share.
func (p *Plan) pmwConfig() pmw.Config {
	cfg := p.cfg
	epsC := p.share * cfg.Epsilon
	if cfg.NoCount {
		epsC = 0
	}
	return pmw.Config{
		Epsilon:     cfg.Epsilon - epsC - p.epsR,
		Delta:       cfg.Delta,
		Sensitivity: float64(p.bound),
		Variant:     pmw.VariantMWEM,
		Noise:       cfg.Noise,
		Rounds:      cfg.Rounds,
		MaxRounds:   cfg.MaxRounds,
		Progress:    cfg.Progress,
		NoNHat:      true,
		Own:         cfg.Own,
		InitLow:     cfg.InitLow, InitLowShare: cfg.InitLowShare,
	}
}

// chargeBound charges the automatic r's choice under root (nothing
// without AutoBound).
func (p *Plan) chargeBound(root *dp.Ledger) error {
	if !p.cfg.AutoBound {
		return nil
	}
	a := boundQuantile(p.cfg.Epsilon)
	return root.Charge("contribution bound r (exponential mechanism over a public ladder: a noisy quantile of the units' join rows)",
		dp.Budget{Epsilon: p.epsR},
		fmt.Sprintf("score −|(20 − a)·#{units with n_u ≤ r_j} − a·#{units with n_u > r_j}| for the quantile q = a/20 = %g (a = round(2ε) in 1…10, public) "+
			"over r_j ∈ {⌈2^(j/2)⌉} ≤ 2¹²; deleting a unit lowers one count by 1 and no other unit's n_u changes: sensitivity max(a, 20 − a) = %g "+
			"(dp.ExponentialGrid, exact); the marginals' Δ̃ is then the chosen r, a DP output, so the parts compose",
			float64(a)/quantileSteps, boundSensitivity(a)),
		map[string]any{"candidates": len(boundLadder), "quantile": float64(a) / quantileSteps})
}

// splitPMW splits the marginals' budget (p.pmwCfg's) under root.
func (p *Plan) splitPMW(root *dp.Ledger) error {
	var err error
	if p.pmwL, err = root.Split("pmw on the bounded histogram", dp.Budget{Epsilon: p.pmwCfg.Epsilon, Delta: p.pmwCfg.Delta},
		"mwem PMW with Δ̃ = the bounded weight of one unit", nil); err != nil {
		return err
	}
	p.pmwCfg.Ledger = p.pmwL
	return nil
}

// chooseCountShare draws the DP unit count n̂ (units with at least one
// join row, plus discrete Laplace noise of scale 1/ε_U: deleting a unit
// changes that count by at most one), sets the row count's share from it
// (countShareFor) and charges the count's two parts and the marginals
// under the root ledger. The parts' budgets are functions of n̂, a DP
// output, and add up to the release's total whatever n̂ is; conditioned on
// n̂ the rest is a fixed mechanism, so the release is (ε, δ)-DP by basic
// composition with adaptively chosen budgets (Rogers, Roth, Ullman, Vadhan
// 2016: Σ_n P(n)·P(S_n | n) ≤ Σ_n e^{ε_U}P′(n)·(e^{ε−ε_U}P′(S_n | n) + δ)
// ≤ e^ε·P′(S) + δ). n̂ is an integer from the exact sampler: published as
// is.
func (p *Plan) chooseCountShare(src dp.Source, degs []engine.UnitDegree) error {
	var units int64
	for _, d := range degs {
		if d.Rows > 0 {
			units += d.Units
		}
	}
	smp, err := dp.NewDiscreteLaplace(dp.NoiseScale(1, p.epsU))
	if err != nil {
		return fmt.Errorf("privacyunit: unit count noise: %w", err)
	}
	if p.cfg.mutation != mutExactUnits {
		units += smp.Sample(src)
	}
	units = max(units, 0)
	p.units = units
	p.setCountShare(countShareFor(p.cfg.Epsilon, p.epsU, units))
	p.pmwCfg.Epsilon = p.pmwConfig().Epsilon
	p.rootL.Publish("unit_count", float64(units))
	p.rootL.Publish("row_count_share_permille", math.Round(p.share*1000))
	if err := p.chargeCount(p.rootL); err != nil {
		return err
	}
	return p.splitPMW(p.rootL)
}

// chargeCount charges the clipped row count's two parts under root.
func (p *Plan) chargeCount(root *dp.Ledger) error {
	var err error
	if p.countL, err = root.Split("row count (clipped count of the join)", dp.Budget{Epsilon: p.epsQ + p.epsN},
		"basic composition of the clip's choice and the count", map[string]any{"share": p.share}); err != nil {
		return err
	}
	if err := p.countL.Charge("row count: clip C (exponential mechanism over public candidates)", dp.Budget{Epsilon: p.epsQ},
		"score −#{units with more than C_j join rows} − λ·j over the public ladder C_j ∈ {⌈2^(j/2)⌉}, 1 … 2²⁰, "+
			"λ = max(1/(2ε_C), min(1/ε_C, (DP unit count − 2/ε_U)/40)), public given the DP unit count; "+
			"deleting a unit lowers the count of units above C_j by 1 or leaves it, for every j at once, and the penalty not at all: "+
			"sensitivity 1 and monotone, so the exponential mechanism at weights exp(ε_C·score) is ε_C-DP "+
			"(McSherry–Talwar 2007, the monotone case; dp.ChooseClipPenalty, exact)",
		map[string]any{"candidates": len(clipCandidates), "step_penalty": p.stepPenalty()}); err != nil {
		return err
	}
	if err := p.countL.Charge("row count: Σ_u min(n_u, C) + discrete Laplace", dp.Budget{Epsilon: p.epsN},
		"deleting a unit removes its n_u join rows, which count min(n_u, C) ≤ C: sensitivity C; discrete Laplace of scale C/ε "+
			"on the integer sum is ε-DP (the geometric mechanism); C is a DP output, so the two compose", nil); err != nil {
		return err
	}
	return nil
}

// sensitivityNote states Δ̃ of the marginals for the current bound.
func (p *Plan) sensitivityNote() string {
	auto := ""
	if p.cfg.AutoBound {
		auto = ", chosen privately"
	}
	l2 := ""
	if p.cfg.L2 {
		l2 = "; each round's measured marginal is read with each unit's vector over its cells clipped to L2 norm ≤ Δ̃ instead " +
			"(weight min(1, Δ̃/‖v_u‖₂), on the same grid): deleting a unit removes its clipped vector and changes no other unit's, " +
			"so that table moves by at most Δ̃ in L2, the measurement's sensitivity; selections and the 1-way marginals read the " +
			"L1-bounded histogram"
	}
	return fmt.Sprintf("the bounded weight of one unit, %d = %d·r grid steps (r = %v rows%s): deleting a unit removes its rows, "+
		"each weighing min(%d, ⌊%d/n_u⌋) steps, n_u its rows, and changes no other unit's weight; so every marginal moves by "+
		"at most Δ̃ in L1 and in L2%s", p.bound, Grid, p.cfg.Bound, auto, Grid, p.bound, l2)
}

// stepPenalty is λ of the clip's score −#{units above C_j} − λ·j: a step
// up the ladder (√2 times the count's noise) must bring at least λ units
// under the clip to pay. It is [ClipPenalty] of ε_Q, ε_U and the DP unit
// count. Public.
func (p *Plan) stepPenalty() float64 { return ClipPenalty(p.epsQ, p.epsU, p.units) }

// ClipPenalty is the step penalty λ of the row count's clip at ε_Q when
// the unit count got ε_U and came out units: 1/(2ε_Q), raised towards
// 1/ε_Q when the units are many, λ = max(1/(2ε_Q), min(1/ε_Q, (units −
// unitsMargin/ε_U)/40)).
//
// On the plateau of clips above every unit the monotone exponential
// mechanism's weights (exp(ε_Q·score), dp.ChooseClipPenalty) fall by
// e^{−ε_Q·λ} a step. At λ = 1/(2ε_Q) (e^{−1/2}) the clip landed at four
// times the right one or more often enough that Retail's DP row count
// (1,103 customers, ε = 1, ε_Q = 0.045) was off by more than half in 4
// of 40 runs (seed 5 drew C = 4,096 for a join of 98,750 rows whose
// largest customer has 5,128: noise of standard deviation 131,651 rows);
// at 1/ε_Q (e^{−1}) in about 1 of 50 (simulated from its units' row
// counts, 20,000 draws). But every step also costs λ while the clip
// climbs through the bulk of the row counts, where the count of units
// above falls from all of them, so a steep λ makes C = 1 win on few
// units (Retail with 100 customers: rows/true 1.04 → 0.18 at λ =
// 1/ε_Q, simulated). Capping λ at a fortieth of the units keeps the
// penalty of the ladder's first 20 steps (C ≤ 1,024) at half the units
// or less; the units are read less unitsMargin of the unit count's noise
// scales (as countShareFor reads them: their noise, scale 50/ε, is as
// large as 100 units), so few units keep 1/(2ε_Q). Below 1/(2ε_Q) λ is
// never lowered: a plateau falling by less than e^{−1/2} a step outweighs
// the right clip on a long ladder. units is a DP output released before
// the clip is drawn, so λ is public to the clip's mechanism.
func ClipPenalty(epsQ, epsU float64, units int64) float64 {
	l0 := 1 / (2 * epsQ)
	low := float64(units) - unitsMargin/epsU
	return max(l0, min(2*l0, low/40))
}

// Norm returns the contribution norm of the measured marginals.
func (p *Plan) Norm() spec.Norm {
	if p.cfg.L2 {
		return spec.NormL2
	}
	return spec.NormL1
}

// Bound returns r, the rows a unit may weigh in all (with AutoBound, the
// privately chosen r once the plan has run).
func (p *Plan) Bound() float64 { return p.cfg.Bound }

// Unit returns the unit's table and its key's place in the folded join.
func (p *Plan) Unit() (string, engine.UnitKey) { return p.unit, p.key }

// Result is the output of a run: DP outputs and public parameters only.
type Result struct {
	// PMW is the mwem run on the bounded histogram, with Rows set to the
	// DP row count (nil with Config.Factored).
	PMW *pmw.Result
	// Factored is the same on a factored model (with Config.Factored).
	Factored *pmw.FactoredResult
	// Rows is the DP row count of the join (≥ 0).
	Rows int64
	// Clip is C, the DP-chosen clip of the row count.
	Clip int64
	// CountScale is the discrete Laplace scale of the row count (public
	// given Clip).
	CountScale float64
	// Units is the DP unit count that set the row count's share (0 when
	// the share is fixed: Config.CountShare or NoCount).
	Units int64
	// CountShare is the row count's share of ε.
	CountShare float64
	// BoundedShare is a DP estimate of the share of the join's row weight
	// that bounding removed: 1 − (bounded weight)/(rows), post-processing
	// of the marginals' total and Rows, clamped to [0, 1].
	BoundedShare float64
}

// ErrPlanUsed is returned by a second [Plan.Run]: its budget was spent.
var ErrPlanUsed = errors.New("privacyunit: plan already ran; its budget is spent")

// Run checks the keys, reads the bounded histogram and the units' row
// counts (aggregates), and runs the mechanisms whose budget Prepare
// charged.
func (p *Plan) Run(ctx context.Context, src dp.Source, stats Stats) (*Result, error) {
	if p.ran {
		return nil, ErrPlanUsed
	}
	p.ran = true
	orig := p.folding.Original()
	for _, c := range p.checks {
		if p.cfg.KeysChecked {
			break
		}
		if err := stats.CheckPrimaryKey(ctx, orig, c.Table, c.Key); err != nil {
			return nil, err
		}
	}
	h := p.folding.Folded()
	if p.cfg.AutoBound {
		// The units' row counts first (a degrees-only query), then r from
		// them; every later step sees r as a public parameter.
		_, degs, err := stats.UnitHistogram(ctx, h, p.key, nil, nil, Grid, Grid)
		if err != nil {
			return nil, err
		}
		r := p.chooseBound(src, degs)
		p.cfg.Bound, p.bound = float64(r), Grid*r
		if p.cfg.mutation != mutRowSigma {
			p.pmwCfg.Sensitivity = float64(p.bound)
		}
		p.pmwCfg.SensitivityNote = p.sensitivityNote()
		p.rootL.Publish("contribution_bound", float64(r))
	}
	grid, bound := int64(Grid), p.bound
	if p.cfg.mutation == mutNoBounding {
		bound = 1 << 40 // planted bug: no unit is ever bounded (min(Grid, ⌊2⁴⁰/n_u⌋) = Grid)
	}
	sizes := p.cfg.Sizes
	if !p.cfg.Factored {
		sizes = p.cfg.Universe.Sizes()
	}
	if rs, ok := stats.(unitRowStore); ok && p.cfg.L2 && p.cfg.Factored {
		// The histogram and the L2 marginals of the rounds from the join's
		// rows stored once: the same values, one join.
		stored, err := rs.StoreUnitRows(ctx, h, p.key, p.cfg.Columns, sizes)
		if err != nil {
			return nil, err
		}
		if stored != nil {
			defer stored.Close(ctx)
			stats = stored
		}
	}
	cells, degs, err := stats.UnitHistogram(ctx, h, p.key, p.cfg.Columns, sizes, grid, bound)
	if err != nil {
		return nil, err
	}
	var rows, clip int64
	var scale float64
	if !p.cfg.NoCount && p.epsU > 0 {
		if err := p.chooseCountShare(src, degs); err != nil {
			return nil, err
		}
	}
	if !p.cfg.NoCount {
		if rows, clip, scale, err = p.count(src, degs); err != nil {
			return nil, err
		}
		// Every unit that n̂ counts owns at least one join row, so the join
		// has at least as many rows as units: the DP unit count is a floor
		// of the row count (post-processing of two DP outputs). A large
		// clip's noise could otherwise clamp the count at 0 and write an
		// empty file (the Retail example at ε = 0.5, one seed in five).
		rows = max(rows, p.units)
	}
	out := &Result{Rows: rows, Clip: clip, CountScale: scale, Units: p.units, CountShare: p.share}
	if p.cfg.NoCount {
		out.CountShare = 0
	}
	// weight is the marginals' total (in grid steps: an unbiased DP
	// estimate of the bounded weight).
	var weight int64
	if p.cfg.Factored {
		if p.cfg.L2 {
			p.pmwCfg.MeasureTruth = p.l2Truth(stats, h, sizes, grid, bound)
		}
		res, err := pmw.RunFactored(ctx, src, p.cfg.Names, sizes, p.cfg.Families, histogramTruth(sizes, cells), p.pmwCfg)
		if err != nil {
			return nil, err
		}
		weight, res.Rows = res.Rows, rows
		out.Factored = res
	} else {
		hist := make([]pmw.Cell, len(cells))
		for i, c := range cells {
			hist[i] = pmw.Cell{Index: c.Index, Count: c.Count}
		}
		res, err := pmw.Run(ctx, src, p.cfg.Universe, p.cfg.Families, hist, p.pmwCfg)
		if err != nil {
			return nil, err
		}
		weight, res.Rows = res.Rows, rows
		out.PMW = res
	}
	if p.cfg.NoCount {
		// The model's own estimate of the bounded weight, in rows (a DP
		// output: post-processing).
		rows = max(0, (weight+Grid/2)/Grid)
		if out.Factored != nil {
			out.Factored.Rows = rows
		} else {
			out.PMW.Rows = rows
		}
		out.Rows = rows
	}
	// The marginals' total against the DP row count: the share bounding
	// removed. Post-processing.
	share := 0.0
	if rows > 0 {
		share = math.Min(1, math.Max(0, 1-float64(weight)/float64(Grid)/float64(rows)))
	}
	// The share is published in permille, an integer: a rounded function
	// of DP outputs (no raw float leaves the run, DESIGN.md §3 inv. 6).
	share = math.Round(share*1000) / 1000
	p.countL.Publish("pmw_rows", float64(rows))
	if !p.cfg.NoCount {
		p.countL.Publish("row_count_clip", float64(clip))
	}
	p.pmwL.Publish("bounded_share_permille", share*1000)
	out.BoundedShare = share
	return out, nil
}

// l2Truth reads a measured set's marginal with each unit's vector over its
// cells clipped to L2 norm ≤ bound grid steps (engine.UnitMarginalL2): one
// aggregate query per measured set, as a dense table (mixed radix over
// the set, the first column most significant, as pmw.Truth wants).
func (p *Plan) l2Truth(stats Stats, h *hypergraph.Hypergraph, sizes []int, grid, bound int64) pmw.Truth {
	if p.cfg.mutation == mutNoL2Clip {
		bound = 1 << 40 // planted bug: the measured tables are not clipped
	}
	return func(ctx context.Context, set []int) ([]int64, error) {
		cols := make([]spec.ColumnRef, len(set))
		sz := make([]int, len(set))
		n := 1
		for i, c := range set {
			cols[i], sz[i] = p.cfg.Columns[c], sizes[c]
			n *= sizes[c]
		}
		cells, err := stats.UnitMarginalL2(ctx, h, p.key, cols, sz, grid, bound)
		if err != nil {
			return nil, err
		}
		if p.cfg.mutation == mutL2Scale16 {
			for i := range cells {
				cells[i].Count *= 16 // planted bug: the table noised as if r were 16 times smaller
			}
		}
		tab := make([]int64, n)
		for _, c := range cells {
			if c.Index < 0 || c.Index >= int64(n) {
				return nil, fmt.Errorf("privacyunit: L2 marginal %v: cell %d outside its %d cells", set, c.Index, n)
			}
			tab[c.Index] += c.Count
		}
		return tab, nil
	}
}

// histogramTruth is the factored model's access to the bounded histogram:
// the table of a column set, summed from the histogram's cells (mixed
// radix over sizes, the first column most significant). Each cell's bins
// are decoded once.
func histogramTruth(sizes []int, cells []engine.Cell) pmw.Truth {
	d := len(sizes)
	bins := make([]int32, len(cells)*d)
	for i, c := range cells {
		x := c.Index
		for col := d - 1; col >= 0; col-- {
			bins[i*d+col] = int32(x % int64(sizes[col]))
			x /= int64(sizes[col])
		}
	}
	return func(_ context.Context, set []int) ([]int64, error) {
		n := 1
		for _, c := range set {
			n *= sizes[c]
		}
		tab := make([]int64, n)
		for i, c := range cells {
			k := 0
			for _, col := range set {
				k = k*sizes[col] + int(bins[i*d+col])
			}
			tab[k] += c.Count
		}
		return tab, nil
	}
}

// count draws the DP row count: the clip C by the exponential mechanism,
// then Σ_u min(n_u, C) plus discrete Laplace noise of scale C/ε_N, clamped
// at 0 (post-processing).
func (p *Plan) count(src dp.Source, degs []engine.UnitDegree) (rows, clip int64, scale float64, err error) {
	k := dp.ChooseClipPenalty(src, clipCandidates, func(c int64) float64 {
		var above int64
		for _, d := range degs {
			if d.Rows > c {
				above += d.Units
			}
		}
		return float64(above)
	}, p.epsQ, p.stepPenalty(), p.cfg.mutation == mutTrueClip)
	clip = clipCandidates[k]
	var sum int64
	for _, d := range degs {
		sum += min(d.Rows, clip) * d.Units
	}
	scale = dp.NoiseScale(float64(clip), p.epsN)
	if p.cfg.mutation == mutCountRow {
		scale = dp.NoiseScale(1, p.epsN) // planted bug: one row's sensitivity, not C's
	}
	if p.cfg.mutation != mutExactCount {
		smp, err := dp.NewDiscreteLaplace(scale)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("privacyunit: row count noise: %w", err)
		}
		sum += smp.Sample(src)
	}
	return max(sum, 0), clip, scale, nil
}
