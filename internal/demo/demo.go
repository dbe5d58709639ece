// Package demo builds the skewed two-table instance `synth demo` releases:
// the family of Example 4.2 of Ghazi, Hu, Kumar and Manurangsi (PODS 2023).
//
// For i = 0, 1, …, ⌊(2/3)·log₂ k⌋ there are k²/8^i join values b whose
// degree is 2^i in both relations. The instance is the one on which
// uniformized partitions beat join-as-one by a factor growing like k^{1/3};
// its maximum degree k^{2/3} dominates the sensitivity of the join.
//
// Here the join attribute is a branch, the first relation holds accounts
// (tier) and the second transactions (channel, amount). Values are drawn
// from a fixed-seed generator: this is synthetic test data, not noise.
package demo

import (
	"encoding/csv"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"github.com/synth-dp/synth/spec"
)

// Tiers and Channels are the categorical domains of the demo.
var (
	Tiers    = []string{"basic", "silver", "gold", "platinum"}
	Channels = []string{"branch", "online", "mobile", "phone", "partner"}
)

// Degrees returns, for the given k, the number of join values of each
// degree: counts[i] values of degree 2^i.
func Degrees(k int) []int {
	top := int(math.Floor(2.0 / 3.0 * math.Log2(float64(k))))
	var counts []int
	for i := 0; i <= top; i++ {
		c := k * k >> (3 * i)
		if c < 1 {
			break
		}
		counts = append(counts, c)
	}
	return counts
}

// Write writes accounts.csv and transactions.csv for parameter k into dir
// and returns the spec that releases tier, channel and amount with budget
// (eps, delta). Branches with high degree lean towards higher tiers and
// online channels, so the join's marginals differ from the tables'.
func Write(dir string, k int, eps, delta float64) (*spec.Spec, error) {
	rng := rand.New(rand.NewPCG(42, uint64(k)))
	acc, err := os.Create(filepath.Join(dir, "accounts.csv"))
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	defer acc.Close()
	tx, err := os.Create(filepath.Join(dir, "transactions.csv"))
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	defer tx.Close()
	aw, tw := csv.NewWriter(acc), csv.NewWriter(tx)
	aw.Write([]string{"account_id", "branch_id", "tier"})
	tw.Write([]string{"tx_id", "branch_id", "channel", "amount"})
	branch, accID, txID := 0, 0, 0
	for i, count := range Degrees(k) {
		deg := 1 << i
		for c := 0; c < count; c++ {
			b := strconv.Itoa(branch)
			branch++
			for d := 0; d < deg; d++ {
				tier := min(len(Tiers)-1, max(0, i/2+rng.IntN(3)-1))
				aw.Write([]string{strconv.Itoa(accID), b, Tiers[tier]})
				accID++
				ch := rng.IntN(len(Channels))
				if rng.Float64() < 0.15*float64(i) {
					ch = 1 // online
				}
				amount := min(99, int(rng.ExpFloat64()*float64(10+8*i)))
				tw.Write([]string{strconv.Itoa(txID), b, Channels[ch], strconv.Itoa(amount)})
				txID++
			}
		}
	}
	aw.Flush()
	tw.Flush()
	if err := aw.Error(); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	if err := tw.Error(); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	if err := acc.Close(); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	if err := tx.Close(); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	tier := spec.ColumnRef{Table: "accounts", Column: "tier"}
	channel := spec.ColumnRef{Table: "transactions", Column: "channel"}
	amount := spec.ColumnRef{Table: "transactions", Column: "amount"}
	return &spec.Spec{
		Privacy: spec.Privacy{Epsilon: eps, Delta: delta},
		Tables: []spec.Table{
			{Name: "accounts", Source: filepath.Join(dir, "accounts.csv"), Format: "csv", PrimaryKey: []string{"account_id"},
				Columns: []spec.Column{
					{Name: "account_id", Type: spec.Key},
					{Name: "branch_id", Type: spec.Key},
					{Name: "tier", Type: spec.Categorical, Values: Tiers, OutOfDomain: spec.OutOfDomainError},
				}},
			{Name: "transactions", Source: filepath.Join(dir, "transactions.csv"), Format: "csv", PrimaryKey: []string{"tx_id"},
				Columns: []spec.Column{
					{Name: "tx_id", Type: spec.Key},
					{Name: "branch_id", Type: spec.Key},
					{Name: "channel", Type: spec.Categorical, Values: Channels, OutOfDomain: spec.OutOfDomainError},
					{Name: "amount", Type: spec.Integer, Min: 0, Max: 99, Bins: 10, OutOfDomain: spec.OutOfDomainError},
				}},
		},
		Join:    []spec.JoinEq{{Left: spec.ColumnRef{Table: "accounts", Column: "branch_id"}, Right: spec.ColumnRef{Table: "transactions", Column: "branch_id"}}},
		Release: spec.Release{Method: spec.JoinAsOne, Columns: []spec.ColumnRef{tier, channel, amount}},
		Workload: spec.Workload{Marginals: [][]spec.ColumnRef{
			{tier}, {channel}, {amount}, {tier, channel}, {channel, amount}, {tier, amount},
		}},
	}, nil
}

// Query is an example query over the released file, for `synth query`.
type Query struct {
	// Title says what the query shows.
	Title string
	// SQL refers to the released file as the view synthetic.
	SQL string
}

// Queries are the example queries the demo prints. They use only the
// released columns and contain no shell metacharacters, so that they can
// be pasted inside double quotes.
func Queries() []Query {
	return []Query{
		{"the most frequent tier and channel pairs",
			"SELECT tier, channel, count(*) AS n FROM synthetic GROUP BY ALL ORDER BY n DESC LIMIT 10"},
		{"the amount per channel (online leans to the busy branches)",
			"SELECT channel, count(*) AS n, round(avg(amount), 1) AS mean_amount FROM synthetic GROUP BY ALL ORDER BY channel"},
		{"the distribution of amounts (bins of 10, each written as its midpoint)",
			"SELECT amount, count(*) AS n FROM synthetic GROUP BY amount ORDER BY amount"},
	}
}
