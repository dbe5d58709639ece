package pmw

import (
	"fmt"
	"math"

	"github.com/synth-dp/synth/dp"
)

// DefaultRounds is T when [Config.Rounds] is 0. Theory asks for
// T = Θ̃(ε·n) rounds (Hardt–Ligett–McSherry 2012; Qiu et al. Lemma 2.5),
// but every round costs budget: with ε₀ from advanced composition over 2T
// steps, the noise per measurement grows like √T while the multiplicative
// weights term n·√(log|X|/T) shrinks. Qiu et al. (§6, following the PMW
// implementation they compare against) observe that a constant T = 10
// works well in practice, and use it; so do we.
const DefaultRounds = 10

// DefaultWorkers is the number of goroutines that split the dense pass when
// [Config.Workers] is 0.
const DefaultWorkers = 2

// Variant selects the algorithm [Run] executes.
type Variant string

const (
	// VariantMWEM (the default) is practical MWEM in the style of AIM
	// (McKenna et al. 2022) on the join histogram: a small share of the
	// budget pads n̂, the rest is spent in zCDP (or pure ε-DP) on the
	// noisy 1-way marginals of every released column, then rounds that
	// each select a whole workload marginal by the exponential mechanism
	// and measure all its cells with integer noise; every measurement is
	// re-fitted by multiplicative weights after every round. See [Run].
	VariantMWEM Variant = "mwem"
	// VariantPaper is PMW exactly as Ghazi et al. App. A states it (and as
	// DESIGN.md §4 spells it out): half the budget on n̂, uniform start,
	// T rounds that each select and measure ONE query with Laplace noise,
	// advanced composition. Kept bit-for-bit for reproduction and audits.
	VariantPaper Variant = "paper"
)

// Noise selects the noise and accounting of the [VariantMWEM] rounds.
type Noise string

const (
	// NoiseGaussian (the default): discrete Gaussian measurements, the
	// rounds accounted in zero-concentrated DP (ρ-zCDP, Bun–Steinke 2016)
	// and converted to (ε, δ) once (Canonne–Kamath–Steinke 2020).
	NoiseGaussian Noise = "gaussian"
	// NoiseLaplace: discrete Laplace measurements, the rounds accounted in
	// pure ε-DP by basic composition; n̂ then receives the whole δ.
	NoiseLaplace Noise = "laplace"
)

// DefaultNHatShare is the share s of (ε, δ) that [VariantMWEM] spends on
// the padded join size n̂ when [Config.NHatShare] is 0.
const DefaultNHatShare = 0.05

// DefaultMWEMMaxRounds caps the rounds of [VariantMWEM] when
// [Config.MaxRounds] is 0.
const DefaultMWEMMaxRounds = 100

// Config parameterises [Run]. The zero value is not usable: Epsilon, Delta
// and Sensitivity must be set.
type Config struct {
	// Epsilon and Delta are the total budget (ε, δ) of the run, ε > 0
	// finite and 0 < δ < 1 (the truncated Laplace mechanism for n̂ needs
	// δ > 0). How it is split depends on the Variant (see [Run]).
	Epsilon, Delta float64
	// Sensitivity is Δ̃ ≥ 1: the public (or DP-estimated) bound on how many
	// tuples of the join a neighbouring instance adds or removes. Every
	// query answer q(J) changes by at most Δ̃ between neighbours, and every
	// marginal of J by at most Δ̃ in L1 and in L2.
	Sensitivity float64
	// Variant is the algorithm: "" or [VariantMWEM] (the default), or
	// [VariantPaper].
	Variant Variant
	// Noise is the measurement noise of [VariantMWEM]: "" or
	// [NoiseGaussian] (the default), or [NoiseLaplace]. Ignored by
	// [VariantPaper] (always Laplace).
	Noise Noise
	// NHatShare is the share s of (ε, δ) that [VariantMWEM] spends on the
	// padded join size n̂, 0 < s < 1; 0 means [DefaultNHatShare]. (With
	// [NoiseLaplace], n̂ receives (s·ε, δ).) [VariantPaper] always spends
	// half.
	NHatShare float64
	// Rounds is T. [VariantPaper]: 0 means [DefaultRounds], or the
	// automatic choice when MaxRounds is set. [VariantMWEM]: 0 means
	// adaptive rounds (budget annealing, at most MaxRounds); T > 0 runs
	// exactly T rounds of equal budget, fixed before any data is read.
	Rounds int
	// MaxRounds: [VariantPaper]: when > 0 and Rounds is 0, makes T
	// automatic: chosen after n̂ is drawn by [AutoRounds], at most
	// MaxRounds. T is then a function of the DP output n̂ and public
	// parameters, so choosing it is post-processing; the rounds still spend
	// exactly (ε/2, δ/2). [VariantMWEM]: caps the adaptive rounds (0 means
	// [DefaultMWEMMaxRounds]); the round that reaches the cap spends what
	// remains.
	MaxRounds int
	// Reapply ([VariantPaper] only) makes every round update with all
	// measurements so far, in order (MWEM-style; post-processing of DP
	// outputs), instead of only the newest one. Each re-application costs a
	// pass over that query's support. [VariantMWEM] always re-fits every
	// measurement.
	Reapply bool
	// Ledger, when not nil, is charged for the budget split before any data
	// is read, and receives the published outputs (n̂, and for
	// [VariantMWEM] the row count and the number of rounds).
	Ledger *dp.Ledger
	// Progress, when not nil, is called after every round with the round
	// number t and T ([VariantMWEM], whose T is adaptive: the rounds the
	// remaining budget pays at the current cost, at most the cap, and t
	// after the last round). It sees public values only.
	Progress func(round, rounds int)
	// Workers is the number of goroutines of the dense pass; 0 means
	// [DefaultWorkers].
	Workers int
	// NoRowsFloor ([VariantMWEM]) keeps a row estimate below its own
	// standard deviation as it is (clamped at 0) instead of raising it to
	// that deviation: for callers that add up many runs (the buckets of a
	// uniformized release), where the floor would add a deviation's worth
	// of rows per empty run.
	NoRowsFloor bool
	// MergeCounts tells the memory plan ([PlanMemory], [CheckMemory])
	// that the caller adds the integer counts of several runs into one
	// dense int64 array over the universe (8 bytes a cell), as the
	// uniformized releases do with their sub-instances. Run ignores it.
	MergeCounts bool
	// NoNHat ([VariantMWEM] only) draws no n̂: the whole (ε, δ) goes to the
	// initial marginals and the rounds, and [Result.NHat] is 0. For callers
	// that count the rows themselves (the privacy-unit release, whose
	// histogram holds bounded weights rather than join rows).
	NoNHat bool
	// MeasureTruth, when set ([RunFactored] only), is what the rounds'
	// measurements read instead of the truth: the table of each measured
	// set comes from one call for that set (never summed from a larger
	// set's table), and each count must move by at most Sensitivity in L2
	// between neighbours (a privacy-unit release clipping each unit's
	// vector per marginal). The initial 1-way marginals and every
	// selection score keep reading the truth, whose L1 sensitivity the
	// scores need; the model's total comes from those 1-way marginals, and
	// each round's measurement is rescaled to it by its own noisy total
	// (post-processing), since a measured table's total may exceed the
	// truth's (see factored.measure).
	MeasureTruth Truth
	// MeasureWorkload ([RunFactored] only) lets the run measure the
	// workload once instead of running adaptive rounds when the init's
	// DP total is large against its noise (see [FactoredResult.WorkloadOnce]).
	// For callers whose tables count rows (the join-as-one release: a flat
	// table or a join at tuple level); the privacy-unit releases leave it
	// unset (their unit examples lost with it, docs/small-data.md).
	MeasureWorkload bool
	// Own, when set ([RunFactored] only), lists the columns the run is
	// for: the initial 1-way marginals are those of Own alone (their
	// noise scales with √|Own|, not √d), and a round selects only
	// candidate sets holding an Own column. The other columns are a
	// context the caller conditions on: the model learns them only
	// through measured sets with an Own column (the tables release's
	// levels). Empty: every column.
	Own []int
	// InitLow, with Own, lists columns whose 1-way marginals the initial
	// step measures at InitLowShare times the zCDP share of an own
	// column's: a context column (not in Own) is measured there only if
	// listed; an own column listed is measured at the lower share. None:
	// as before. Without the context columns' 1-ways the model holds them
	// uniform until a measured set holds them, so a round's selection
	// scores a (context, own) pair by how far the context's own marginal
	// is from uniform, not by how the own column depends on it, and spends
	// rounds (and their noise) on what the caller conditions on anyway. A
	// context 1-way is never selected in a round.
	InitLow []int
	// InitLowShare is the share of InitLow's columns (see there).
	InitLowShare float64
	// SensitivityNote, when set, says in the ledger what Sensitivity bounds
	// under the caller's neighbour relation (the default text speaks of
	// join tuples).
	SensitivityNote string

	// Mutation knobs for the privacy audits. Unexported so that only this
	// package's tests can set them: no production path sets any. Each
	// breaks one step of a proof on purpose, so that an audit that cannot
	// tell the broken mechanism from the right one is known to be blind.
	//
	// testExactN makes n̂ = |J| (no TLap noise), both variants.
	testExactN bool
	// testNHat ([VariantPaper]), when > 0, sets n̂ to this public value on
	// every input, so that an audit of the rounds compares them under the
	// same n̂ (their guarantee is conditional on n̂, App. A). Not a bug: a
	// lens on one component.
	testNHat float64
	// testSelSens1 runs the exponential mechanism with score sensitivity 1
	// instead of Δ̃, both variants.
	testSelSens1 bool
	// testNoiseless ([VariantPaper]) selects the query of largest score
	// (the first on ties) and measures its exact answer: PMW without
	// noise, for the tests of the multiplicative-weights dynamics (the
	// exact samplers are rejection samplers that a constant fake source
	// would never let finish).
	testNoiseless bool
	// testMeasSens1 ([VariantPaper]) draws the measurement noise
	// Lap(1/ε₀) instead of Lap(Δ̃/ε₀).
	testMeasSens1 bool
	// testNoiseSens1 ([VariantMWEM]) calibrates every measurement (the
	// initial 1-way marginals and the rounds) to sensitivity 1 instead of
	// Δ̃: σ = 1/√(2ρ) (Laplace: scale 1/ε).
	testNoiseSens1 bool
	// testWholeBudget ([VariantMWEM], and [RunFactored]'s rounds)
	// calibrates every measurement to the WHOLE ρ of the rounds (Laplace:
	// the whole ε) instead of its share.
	testWholeBudget bool
	// testRhoFromEps ([VariantMWEM], Gaussian) calibrates every
	// measurement as if the rounds' ρ were their ε_R = (1−s)·ε, skipping
	// the zCDP conversion dp.RhoForBudget (every σ shrinks by
	// √(ε_R/ρ), about 8 at ε = 1, δ = 1e-6). The ledger is charged as
	// usual.
	testRhoFromEps bool
	// testInitNoSqrtD ([VariantMWEM]) calibrates the initial 1-way
	// marginals to the sensitivity of ONE marginal, Δ̃, instead of their
	// concatenation's Δ̃·√d (Laplace: Δ̃·d): the init then spends d times
	// its ρ share (Laplace: d times its ε share).
	testInitNoSqrtD bool
	// testSelEpsFactor ([VariantMWEM]), when > 0, multiplies every
	// selection's ε by this factor (the review planted √90 ≈ 9.5: the
	// selection's ρ 90 times its share).
	testSelEpsFactor float64
	// testInitHist ([VariantMWEM]), when not nil, is a public histogram
	// whose exact 1-way marginals replace the noisy ones of the data, so
	// that A₀ is the same on every input: a lens on the rounds' selection
	// (the first selection is then the only use of the data before it,
	// besides n̂), not a bug.
	testInitHist []Cell
	// testFixedN ([RunFactored]), when > 0, sets the model's total n to
	// this public value on every input after the initial 1-way marginals,
	// so that an audit of the rounds compares them under the same n
	// (their guarantee is conditional on n, a DP output). A lens, not a
	// bug.
	testFixedN float64
	// testInitTruth ([RunFactored]), when not nil, is a public table the
	// initial 1-way marginals are measured from instead of the data, so
	// that the first model is the same in distribution on every input: a
	// lens on the first selection, not a bug.
	testInitTruth Truth
	// testSelSensHalf ([RunFactored]) runs the exponential mechanism with
	// half the score's sensitivity (the selection then spends 4 times its
	// ρ share).
	testSelSensHalf bool
	// testL2TrueTotal ([RunFactored], MeasureTruth) rescales a round's
	// measured table by its true total instead of its noisy one.
	testL2TrueTotal bool
	// testAgainTrueN ([RunFactored]) decides the init's small-data
	// regimes (poolRatio, againRatio) on the true total of the first
	// init column instead of the DP n̂: a data-dependent branch without
	// noise, which the regime's flag then publishes.
	testAgainTrueN bool
	// testAgainSens1 ([RunFactored]) calibrates the second measurement
	// of the 1-ways between poolRatio·σ₀ and againRatio·σ₀ to one row
	// instead of Δ̃ (its ρ Δ̃² times what the ledger charges).
	testAgainSens1 bool
	// testAverage ([VariantMWEM]) outputs the average of the iterates
	// A_1..A_T instead of the final one (for the comparison in
	// TestMWEMFinalVersusAverage; not a privacy knob).
	testAverage bool
	// exp* are accuracy-experiment knobs (tests only; not privacy knobs).
	expNoShrink    bool
	expRoundSweeps int
	expFinalSweeps int
	expT0          int
}

// Validate reports the first problem with c as an error wrapping
// [ErrInvalidConfig]: NaN, ±Inf, ε ≤ 0, δ outside (0, 1), Δ̃ < 1, an
// unknown variant or noise, a share s outside (0, 1), negative rounds or
// workers.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	switch {
	case math.IsNaN(c.Epsilon) || math.IsInf(c.Epsilon, 0) || c.Epsilon <= 0:
		return bad("epsilon = %v, want a finite number > 0", c.Epsilon)
	case math.IsNaN(c.Delta) || c.Delta <= 0 || c.Delta >= 1:
		return bad("delta = %v, want 0 < delta < 1", c.Delta)
	case math.IsNaN(c.Sensitivity) || math.IsInf(c.Sensitivity, 0) || c.Sensitivity < 1:
		return bad("sensitivity = %v, want a finite number ≥ 1", c.Sensitivity)
	case c.Variant != "" && c.Variant != VariantMWEM && c.Variant != VariantPaper:
		return bad("variant = %q, want %q or %q", c.Variant, VariantMWEM, VariantPaper)
	case c.Noise != "" && c.Noise != NoiseGaussian && c.Noise != NoiseLaplace:
		return bad("noise = %q, want %q or %q", c.Noise, NoiseGaussian, NoiseLaplace)
	case math.IsNaN(c.NHatShare) || c.NHatShare < 0 || c.NHatShare >= 1:
		return bad("n̂ share = %v, want 0 < s < 1 (0 means %v)", c.NHatShare, DefaultNHatShare)
	case c.Rounds < 0:
		return bad("rounds = %d, want ≥ 0 (0 means %d)", c.Rounds, DefaultRounds)
	case c.MaxRounds < 0:
		return bad("max rounds = %d, want ≥ 0", c.MaxRounds)
	case c.Workers < 0:
		return bad("workers = %d, want ≥ 0 (0 means %d)", c.Workers, DefaultWorkers)
	case c.NoNHat && c.variant() != VariantMWEM:
		return bad("no n̂ needs variant %q (the %q variant spends half its budget on n̂)", VariantMWEM, VariantPaper)
	}
	return nil
}

func (c Config) variant() Variant {
	if c.Variant == "" {
		return VariantMWEM
	}
	return c.Variant
}

func (c Config) noise() Noise {
	if c.Noise == "" {
		return NoiseGaussian
	}
	return c.Noise
}

func (c Config) nhatShare() float64 {
	if c.NHatShare == 0 {
		return DefaultNHatShare
	}
	return c.NHatShare
}

func (c Config) autoRounds() bool { return c.Rounds == 0 && c.MaxRounds > 0 }

// AutoRounds returns the number of rounds T that balances the two error
// terms of PMW's utility bound (Ghazi et al. App. A, "by taking k = …"):
//
//	T = n̂·ε·√(ln|X|) / (Δ̃·ln|Q|·√(ln(1/δ)))
//
// with (ε, δ) the budget of the rounds, clamped to [DefaultRounds,
// maxRounds] (maxRounds ≥ DefaultRounds; a smaller value is raised). Large
// joins with small Δ̃ get many rounds; a heavy sensitivity bound gets
// DefaultRounds. n̂ must be a DP output.
func AutoRounds(nhat, eps, delta, sens float64, cells int64, queries int, maxRounds int) int {
	maxRounds = max(maxRounds, DefaultRounds)
	lnQ := math.Max(math.Log(float64(queries)), 1)
	lnX := math.Max(math.Log(float64(cells)), 1)
	t := math.Max(nhat, 0) * eps * math.Sqrt(lnX) / (sens * lnQ * math.Sqrt(math.Log(1/delta)))
	if !(t > DefaultRounds) {
		return DefaultRounds
	}
	if t > float64(maxRounds) {
		return maxRounds
	}
	return int(math.Ceil(t))
}

func (c Config) rounds() int {
	if c.Rounds == 0 {
		return DefaultRounds
	}
	return c.Rounds
}

func (c Config) workers() int {
	if c.Workers == 0 {
		return DefaultWorkers
	}
	return c.Workers
}
