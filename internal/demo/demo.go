// Package demo builds the instance `synth demo` releases: customers and
// their transactions, a person table and the rows that belong to each
// person, released under user-level DP with the customer as the privacy
// unit.
//
// The activity is skewed as in Example 4.2 of Ghazi, Hu, Kumar and
// Manurangsi (PODS 2023): for i = 0, 1, …, ⌊(2/3)·log₂ k⌋ there are k²/8^i
// customers with 2^i transactions each, so a few customers own many rows
// (a tuple-level release pays for the busiest one on every cell). Each
// tier has its favourite channel ([Favourite]), which 60% of its
// customers' transactions use, and busier customers spend larger amounts.
// Values are drawn from a fixed-seed generator: this is synthetic test
// data, not noise.
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

// Favourite maps each tier to the channel most of its transactions use:
// the pattern the demo's first query shows.
var Favourite = map[string]string{"basic": "branch", "silver": "mobile", "gold": "online", "platinum": "partner"}

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

// Write writes customers.csv and transactions.csv for parameter k into dir
// and returns the spec that releases tier, channel and amount of their
// join with budget (eps, delta) and privacy.unit customers.
func Write(dir string, k int, eps, delta float64) (*spec.Spec, error) {
	rng := rand.New(rand.NewPCG(42, uint64(k)))
	cf, err := os.Create(filepath.Join(dir, "customers.csv"))
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	defer cf.Close()
	tx, err := os.Create(filepath.Join(dir, "transactions.csv"))
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	defer tx.Close()
	cw, tw := csv.NewWriter(cf), csv.NewWriter(tx)
	cw.Write([]string{"customer_id", "tier"})
	tw.Write([]string{"tx_id", "customer_id", "channel", "amount"})
	custID, txID := 0, 0
	for i, count := range Degrees(k) {
		deg := 1 << i
		for c := 0; c < count; c++ {
			id := strconv.Itoa(custID)
			custID++
			tier := Tiers[rng.IntN(len(Tiers))]
			cw.Write([]string{id, tier})
			for d := 0; d < deg; d++ {
				ch := Channels[rng.IntN(len(Channels))]
				if rng.Float64() < 0.5 {
					ch = Favourite[tier] // with the uniform draw: 60% in all
				}
				amount := min(99, int(rng.ExpFloat64()*float64(10+8*i)))
				tw.Write([]string{strconv.Itoa(txID), id, ch, strconv.Itoa(amount)})
				txID++
			}
		}
	}
	cw.Flush()
	tw.Flush()
	if err := cw.Error(); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	if err := tw.Error(); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	if err := cf.Close(); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	if err := tx.Close(); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	tier := spec.ColumnRef{Table: "customers", Column: "tier"}
	channel := spec.ColumnRef{Table: "transactions", Column: "channel"}
	amount := spec.ColumnRef{Table: "transactions", Column: "amount"}
	return &spec.Spec{
		Privacy: spec.Privacy{Epsilon: eps, Delta: delta, Unit: "customers"},
		Tables: []spec.Table{
			{Name: "customers", Source: filepath.Join(dir, "customers.csv"), Format: "csv", PrimaryKey: []string{"customer_id"},
				Columns: []spec.Column{
					{Name: "customer_id", Type: spec.Key},
					{Name: "tier", Type: spec.Categorical, Values: Tiers, OutOfDomain: spec.OutOfDomainError},
				}},
			{Name: "transactions", Source: filepath.Join(dir, "transactions.csv"), Format: "csv", PrimaryKey: []string{"tx_id"},
				Columns: []spec.Column{
					{Name: "tx_id", Type: spec.Key},
					{Name: "customer_id", Type: spec.Key},
					{Name: "channel", Type: spec.Categorical, Values: Channels, OutOfDomain: spec.OutOfDomainError},
					{Name: "amount", Type: spec.Integer, Min: 0, Max: 99, Bins: 10, OutOfDomain: spec.OutOfDomainError},
				}},
		},
		Join:    []spec.JoinEq{{Left: spec.ColumnRef{Table: "transactions", Column: "customer_id"}, Right: spec.ColumnRef{Table: "customers", Column: "customer_id"}}},
		Release: spec.Release{Method: spec.Auto, Columns: []spec.ColumnRef{tier, channel, amount}},
		Workload: spec.Workload{Marginals: [][]spec.ColumnRef{
			{tier}, {channel}, {amount}, {tier, channel}, {channel, amount}, {tier, amount},
		}},
	}, nil
}

// Query is an example query over the released file, for `synth query`.
type Query struct {
	// Title says what the query shows.
	Title string
	// SQL refers to the released file as the view synthetic (and, with
	// Tables, to the release's tables by their names).
	SQL string
	// Tables: the query reads the release folder's tables (synth query
	// DIR), not the join file.
	Tables bool
}

// Queries are the example queries the demo prints. They use only the
// released columns and contain no shell metacharacters, so that they can
// be pasted inside double quotes.
func Queries() []Query {
	return []Query{
		{Title: "each tier's favourite channel (basic: branch, silver: mobile, gold: online, platinum: partner)",
			SQL: "SELECT tier, arg_max(channel, n) AS favourite, max(n) AS n FROM (SELECT tier, channel, count(*) AS n FROM synthetic GROUP BY ALL) GROUP BY tier ORDER BY tier"},
		{Title: "the amount per tier (customers in every tier spend alike)",
			SQL: "SELECT tier, count(*) AS n, round(avg(amount), 1) AS mean_amount FROM synthetic GROUP BY ALL ORDER BY tier"},
		{Title: "the distribution of amounts (bins of 10, each written as its midpoint)",
			SQL: "SELECT amount, count(*) AS n FROM synthetic GROUP BY amount ORDER BY amount"},
		{Title: "customers by their number of transactions, from the released tables (the demo's skew: about k² customers with 1, k²/8 with 2, k²/64 with 4, …)",
			SQL:    "SELECT n AS transactions, count(*) AS customers FROM (SELECT c.customer_id, count(t.tx_id) AS n FROM customers c LEFT JOIN transactions t ON t.customer_id = c.customer_id GROUP BY ALL) GROUP BY n ORDER BY n",
			Tables: true},
	}
}
