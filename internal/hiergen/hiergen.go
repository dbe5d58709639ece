// Package hiergen builds a skewed hierarchical three-table instance for the
// uniformized hierarchical release (Ghazi, Hu, Kumar and Manurangsi, PODS
// 2023, §4.2): the join R1(A, B) ⋈ R2(A, B, C) ⋈ R3(A, D) with
//
//	A = store_id, B = member_id,
//	R1 = members(member_id, store_id, tier),
//	R2 = purchases(purchase_id, store_id, member_id, channel, amount),
//	R3 = staff(staff_id, store_id, role).
//
// Its attribute tree is store_id → member_id; the columns only one table
// has (C, D: channel, amount, role) are not join attributes.
//
// The degrees are skewed in the way of Example 4.2, on both levels of the
// tree: for i = 0, 1, …, ⌊(2/3)·log₂ k⌋ there are ⌈k²/8^i⌉ stores with 2^i
// members each (deg_{R1R2, store}), each such member makes 2^j purchases
// for a j drawn from {0, …, i} (deg_{R2, (store, member)}), and the store
// has 2^j′ staff for a j′ drawn from {0, …, i} (deg_{R3, store}). Large
// stores lean to higher tiers and online purchases, so the join's marginals
// differ from the tables'. Values come from a fixed-seed generator: this is
// synthetic test data, not noise.
package hiergen

import (
	"encoding/csv"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Domains of the categorical columns.
var (
	Tiers    = []string{"basic", "silver", "gold"}
	Channels = []string{"store", "online", "phone"}
	Roles    = []string{"cashier", "clerk", "manager"}
)

// Stores returns, for the given k, the number of stores of each class:
// counts[i] stores with 2^i members.
func Stores(k int) []int {
	top := int(math.Floor(2.0 / 3.0 * math.Log2(float64(max(k, 1)))))
	var counts []int
	for i := 0; i <= top; i++ {
		counts = append(counts, max(1, k*k>>(3*i)))
	}
	return counts
}

// SpecFile is the name of the spec Write writes.
const SpecFile = "synth.yaml"

// Write writes members.csv, purchases.csv, staff.csv and a spec synth.yaml
// releasing tier, channel, amount and role with budget (eps, delta) into
// dir, and returns the spec's path. The spec's sources are relative to it.
func Write(dir string, k int, eps, delta float64) (string, error) {
	if k < 1 {
		return "", fmt.Errorf("hiergen: k = %d, want ≥ 1", k)
	}
	rng := rand.New(rand.NewPCG(43, uint64(k)))
	var members, purchases, staff [][]string
	members = append(members, []string{"member_id", "store_id", "tier"})
	purchases = append(purchases, []string{"purchase_id", "store_id", "member_id", "channel", "amount"})
	staff = append(staff, []string{"staff_id", "store_id", "role"})
	store, member, purchase, staffID := 0, 0, 0, 0
	for i, count := range Stores(k) {
		for range count {
			s := strconv.Itoa(store)
			store++
			for range 1 << i {
				m := strconv.Itoa(member)
				member++
				tier := min(len(Tiers)-1, max(0, i/2+rng.IntN(2)))
				members = append(members, []string{m, s, Tiers[tier]})
				for range 1 << rng.IntN(i+1) {
					ch := rng.IntN(len(Channels))
					if rng.Float64() < 0.2*float64(i) {
						ch = 1 // online
					}
					amount := min(99, int(rng.ExpFloat64()*float64(10+6*i)))
					purchases = append(purchases, []string{strconv.Itoa(purchase), s, m, Channels[ch], strconv.Itoa(amount)})
					purchase++
				}
			}
			for range 1 << rng.IntN(i+1) {
				role := rng.IntN(len(Roles) - 1)
				if rng.IntN(4) == 0 {
					role = 2 // manager
				}
				staff = append(staff, []string{strconv.Itoa(staffID), s, Roles[role]})
				staffID++
			}
		}
	}
	for name, rows := range map[string][][]string{"members.csv": members, "purchases.csv": purchases, "staff.csv": staff} {
		if err := writeCSV(filepath.Join(dir, name), rows); err != nil {
			return "", err
		}
	}
	path := filepath.Join(dir, SpecFile)
	if err := os.WriteFile(path, []byte(SpecYAML(eps, delta, "")), 0o644); err != nil {
		return "", fmt.Errorf("hiergen: %w", err)
	}
	return path, nil
}

func writeCSV(path string, rows [][]string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("hiergen: %w", err)
	}
	w := csv.NewWriter(f)
	if err := w.WriteAll(rows); err != nil {
		f.Close()
		return fmt.Errorf("hiergen: %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("hiergen: %w", err)
	}
	return nil
}

// SpecYAML is the spec Write writes, with budget (eps, delta) and the
// CSV sources under the folder dir ("" for the spec's own folder; a
// relative dir is relative to the spec).
func SpecYAML(eps, delta float64, dir string) string {
	src := func(name string) string {
		if dir == "" {
			return name
		}
		return dir + "/" + name
	}
	return fmt.Sprintf(`# Hierarchical join members(A, B) ⋈ purchases(A, B, C) ⋈ staff(A, D),
# A = store_id, B = member_id, written by internal/hiergen: skewed degrees
# on both levels of the attribute tree store_id → member_id.
privacy: {epsilon: %s, delta: %s}

tables:
  - name: members
    source: %s
    primary_key: member_id
    columns:
      member_id: {type: key}
      store_id: {type: key}
      tier: {type: categorical, values: [%s]}

  - name: purchases
    source: %s
    primary_key: purchase_id
    columns:
      purchase_id: {type: key}
      store_id: {type: key}
      member_id: {type: key}
      channel: {type: categorical, values: [%s]}
      amount: {type: integer, min: 0, max: 99, bins: 10}

  - name: staff
    source: %s
    primary_key: staff_id
    columns:
      staff_id: {type: key}
      store_id: {type: key}
      role: {type: categorical, values: [%s]}

join:
  - purchases.store_id = members.store_id
  - purchases.member_id = members.member_id
  - staff.store_id = members.store_id

release:
  method: uniformized
  columns: [tier, channel, amount, role]

workload:
  marginals:
    - [tier]
    - [channel]
    - [amount]
    - [role]
    - [tier, channel]
    - [channel, amount]
    - [tier, role]
`, strconv.FormatFloat(eps, 'g', -1, 64), strconv.FormatFloat(delta, 'g', -1, 64),
		src("members.csv"), strings.Join(Tiers, ", "), src("purchases.csv"), strings.Join(Channels, ", "),
		src("staff.csv"), strings.Join(Roles, ", "))
}
