package dp

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"
)

func TestLedgerValidation(t *testing.T) {
	bad := []struct {
		name string
		b    Budget
	}{
		{"NaN epsilon", Budget{math.NaN(), 1e-6}},
		{"+Inf epsilon", Budget{math.Inf(1), 1e-6}},
		{"-Inf epsilon", Budget{math.Inf(-1), 1e-6}},
		{"zero epsilon", Budget{0, 1e-6}},
		{"negative epsilon", Budget{-1, 1e-6}},
		{"NaN delta", Budget{1, math.NaN()}},
		{"+Inf delta", Budget{1, math.Inf(1)}},
		{"negative delta", Budget{1, -1e-9}},
		{"delta one", Budget{1, 1}},
		{"delta above one", Budget{1, 2}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewLedger(tc.b); !errors.Is(err, ErrInvalidParameter) {
				t.Errorf("NewLedger: err = %v", err)
			}
			l, _ := NewLedger(Budget{10, 0.5})
			if err := l.Charge("m", tc.b, "basic", nil); !errors.Is(err, ErrInvalidParameter) {
				t.Errorf("Charge: err = %v", err)
			}
			if _, err := l.Split("m", tc.b, "basic", nil); !errors.Is(err, ErrInvalidParameter) {
				t.Errorf("Split: err = %v", err)
			}
			if _, err := l.SplitParallel("m", tc.b, 3, "parallel", nil); !errors.Is(err, ErrInvalidParameter) {
				t.Errorf("SplitParallel: err = %v", err)
			}
			if len(l.Spends()) != 0 || l.Remaining() != l.Total() {
				t.Errorf("invalid spend changed the ledger: %+v", l.Spends())
			}
		})
	}
}

func TestLedgerRefusedSpendLeavesLedgerUnchanged(t *testing.T) {
	l, err := NewLedger(Budget{1, 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Charge("tlap: noisy size", Budget{0.5, 5e-7}, "basic composition", map[string]any{"tau": 3.2}); err != nil {
		t.Fatal(err)
	}
	l.Publish("n_hat", 1234)
	before, rem, outs := l.Spends(), l.Remaining(), l.Outputs()
	for _, b := range []Budget{{0.6, 0}, {0.1, 6e-7}, {0.51, 5e-7}} {
		if err := l.Charge("too much", b, "basic composition", nil); !errors.Is(err, ErrBudgetExceeded) {
			t.Fatalf("Charge(%+v): err = %v, want ErrBudgetExceeded", b, err)
		}
		if _, err := l.Split("too much", b, "basic composition", nil); !errors.Is(err, ErrBudgetExceeded) {
			t.Fatalf("Split(%+v): err = %v", b, err)
		}
		if _, err := l.SplitParallel("too much", b, 4, "parallel composition", nil); !errors.Is(err, ErrBudgetExceeded) {
			t.Fatalf("SplitParallel(%+v): err = %v", b, err)
		}
	}
	if !reflect.DeepEqual(before, l.Spends()) || rem != l.Remaining() || !reflect.DeepEqual(outs, l.Outputs()) {
		t.Fatal("a refused spend changed the ledger")
	}
	// Exactly the rest still fits (float slack).
	if err := l.Charge("rest", Budget{0.5, 5e-7}, "basic composition", nil); err != nil {
		t.Fatalf("exact remainder refused: %v", err)
	}
}

func TestLedgerParallel(t *testing.T) {
	l, _ := NewLedger(Budget{1, 1e-6})
	subs, err := l.SplitParallel("uniformize: sub-instances", Budget{0.5, 5e-7}, 3, "parallel composition over disjoint sub-instances", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := l.Remaining(); math.Abs(r.Epsilon-0.5) > 1e-15 {
		t.Fatalf("parallel share charged more than once: remaining %+v", r)
	}
	for i, s := range subs {
		if s.Total() != (Budget{0.5, 5e-7}) {
			t.Fatalf("sub-instance %d total %+v", i, s.Total())
		}
		if err := s.Charge("pmw", Budget{0.5, 5e-7}, "basic composition", nil); err != nil {
			t.Fatal(err)
		}
		s.Publish("bucket", float64(i))
		if err := s.Charge("more", Budget{0.01, 0}, "basic composition", nil); !errors.Is(err, ErrBudgetExceeded) {
			t.Fatalf("sub-instance overspend: %v", err)
		}
	}
	sp := l.Spends()
	if len(sp) != 1 || len(sp[0].Instances) != 3 || len(sp[0].Instances[2]) != 1 {
		t.Fatalf("spends %+v", sp)
	}
	if got := l.Outputs(); len(got) != 3 || got[2].Value != 2 {
		t.Fatalf("outputs %+v", got)
	}
	if _, err := l.SplitParallel("none", Budget{0.1, 0}, 0, "parallel", nil); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("n = 0 accepted: %v", err)
	}
}

func TestLedgerZCDP(t *testing.T) {
	l, _ := NewLedger(Budget{2, 1e-6})
	if err := l.ChargeRho("gaussian", 0.1, "zCDP", nil); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("rho spend on an (ε, δ) ledger: %v", err)
	}
	z, err := l.SplitZCDP("pmw rounds", Budget{1, 1e-6}, "zCDP composition, CKS conversion", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !z.IsZCDP() || l.IsZCDP() {
		t.Fatal("IsZCDP wrong")
	}
	rho := z.TotalRho()
	if e, _ := RhoToEpsilon(rho, 1e-6); e > 1 || rho <= 0 {
		t.Fatalf("zCDP ledger ρ = %v converts to ε = %v", rho, e)
	}
	if err := z.ChargeRho("round 1", rho/2, "zCDP", nil); err != nil {
		t.Fatal(err)
	}
	if err := z.Charge("pure step", Budget{Epsilon: math.Sqrt(rho / 2)}, "ε²/2-zCDP", nil); err != nil {
		t.Fatal(err) // ρ = ε²/2 = ρ/4
	}
	if err := z.Charge("approx step", Budget{0.01, 1e-9}, "basic", nil); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("(ε, δ>0) spend in a zCDP ledger: %v", err)
	}
	before := z.Spends()
	if err := z.ChargeRho("too much", rho/2, "zCDP", nil); !errors.Is(err, ErrBudgetExceeded) {
		t.Errorf("overspend: %v", err)
	}
	if !reflect.DeepEqual(before, z.Spends()) {
		t.Error("refused ρ spend changed the ledger")
	}
	if r := z.RemainingRho(); math.Abs(r-rho/4) > 1e-12 {
		t.Errorf("remaining ρ %v, want %v", r, rho/4)
	}
	if err := z.ChargeRho("rest", rho/4, "zCDP", nil); err != nil {
		t.Errorf("exact remainder refused: %v", err)
	}
	if _, err := z.SplitZCDP("nested", Budget{0.1, 1e-7}, "zCDP", nil); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("nested zCDP split: %v", err)
	}
	for _, bad := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if err := z.ChargeRho("bad", bad, "zCDP", nil); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("ρ = %v: %v", bad, err)
		}
	}
	sp := l.Spends()
	if len(sp) != 1 || len(sp[0].Parts) != 3 || sp[0].Parts[1].Rho == 0 {
		t.Fatalf("spends %+v", sp)
	}
}

func TestReportJSON(t *testing.T) {
	l, _ := NewLedger(Budget{1, 1e-6})
	sub, _ := l.Split("pmw", Budget{0.5, 5e-7}, "basic composition", map[string]any{"rounds": 20})
	_ = sub.Charge("pmw: n_hat", Budget{0.25, 2.5e-7}, "basic composition", nil)
	_ = l.Charge("tlap: delta tilde", Budget{0.5, 5e-7}, "basic composition", nil)
	l.Publish("delta_tilde", 17.5)
	for _, seeded := range []bool{false, true} {
		rep := l.Report(ReportMeta{
			Neighbours:      "add/remove one tuple (tuple-DP)",
			Mechanism:       "join-as-one",
			Seeded:          seeded,
			Parameters:      map[string]any{"universe": 1024.0, "columns": []any{"a", "b"}},
			SoftwareVersion: "v0.0.0-test",
			SpecDigest:      "sha256:abc",
		})
		want := PrivacyPrivate
		if seeded {
			want = PrivacySeeded
		}
		if rep.Privacy != want || rep.Seeded != seeded {
			t.Fatalf("privacy %q seeded %v", rep.Privacy, rep.Seeded)
		}
		raw, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		var back Report
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		// Numbers come back as float64 and empty lists as nil, so compare
		// the re-encoded form and a few typed fields.
		again, err := json.Marshal(back)
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != string(raw) {
			t.Fatalf("round trip differs:\n%s\n%s", again, raw)
		}
		if back.Epsilon != 1 || back.Delta != 1e-6 || len(back.Spends) != 2 || len(back.Spends[0].Parts) != 1 ||
			back.Outputs[0] != (Output{"delta_tilde", 17.5}) || back.SpecDigest != "sha256:abc" {
			t.Fatalf("round trip lost fields: %+v", back)
		}
		var keys map[string]any
		_ = json.Unmarshal(raw, &keys)
		for _, k := range []string{"epsilon", "delta", "neighbours", "mechanism", "seeded", "privacy", "spends", "outputs", "parameters", "software_version", "spec_digest"} {
			if _, ok := keys[k]; !ok {
				t.Errorf("report JSON lacks %q: %s", k, raw)
			}
		}
		if keys["privacy"] != want || keys["epsilon"] != 1.0 {
			t.Errorf("report JSON %s", raw)
		}
	}
	// An empty ledger reports empty lists, not null.
	e, _ := NewLedger(Budget{1, 0})
	raw, _ := json.Marshal(e.Report(ReportMeta{}))
	var keys map[string]any
	_ = json.Unmarshal(raw, &keys)
	if keys["spends"] == nil || keys["outputs"] == nil || keys["parameters"] == nil {
		t.Errorf("empty report has null lists: %s", raw)
	}
}

// TestSplitOverlap: the parent is charged b once; every sub-instance
// ledger holds b/k and refuses more.
func TestSplitOverlap(t *testing.T) {
	l, err := NewLedger(Budget{Epsilon: 1, Delta: 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	subs, err := l.SplitOverlap("subs", Budget{Epsilon: 0.5, Delta: 5e-7}, 4, 3, "a tuple in ≤ 3", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Remaining(); math.Abs(got.Epsilon-0.5) > 1e-12 || math.Abs(got.Delta-5e-7) > 1e-18 {
		t.Errorf("parent remaining %v, want (0.5, 5e-7)", got)
	}
	for i, c := range subs {
		if got := c.Total(); math.Abs(got.Epsilon-0.5/3) > 1e-15 || math.Abs(got.Delta-5e-7/3) > 1e-21 {
			t.Errorf("sub %d total %v, want b/3", i, got)
		}
		if err := c.Charge("too much", Budget{Epsilon: 0.5 / 2}, "r", nil); !errors.Is(err, ErrBudgetExceeded) {
			t.Errorf("sub %d accepted b/2 > b/3: %v", i, err)
		}
	}
	if _, err := l.SplitOverlap("bad", Budget{Epsilon: 0.1}, 1, 0, "r", nil); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("k = 0: %v", err)
	}
}
