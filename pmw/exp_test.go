package pmw

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestExpAdult is an accuracy experiment, not a check: PMW_EXP names a
// comma-separated list of configurations (base, nonhat, noshrink,
// sweeps, t0=N) whose mean model TVD on Adult (5 seeds, ε 0.5 / 1 / 4) it
// logs. It backs the constants' choices in mwem.go.
func TestExpAdult(t *testing.T) {
	if os.Getenv("PMW_EXP") == "" {
		t.Skip("set PMW_EXP=base,t0=8,… to log the experiment")
	}
	a := loadAdult(t)
	for _, name := range strings.Split(os.Getenv("PMW_EXP"), ",") {
		var c Config
		switch {
		case name == "base":
		case name == "nonhat":
			c.NoNHat = true
		case name == "noshrink":
			c.expNoShrink = true
		case name == "sweeps":
			c.expRoundSweeps, c.expFinalSweeps = 30, 300
		case strings.HasPrefix(name, "t0="):
			c.expT0, _ = strconv.Atoi(strings.TrimPrefix(name, "t0="))
		default:
			t.Fatalf("unknown configuration %q", name)
		}
		for _, eps := range []float64{0.5, 1, 4} {
			var m float64
			rounds := 0
			const S = 5
			for seed := range uint64(S) {
				cc := c
				cc.Epsilon = eps
				v, res := adultTVD(t, a, 100+seed, cc)
				m += v / S
				rounds += res.Rounds
			}
			t.Logf("%-9s ε=%v: TVD %.4f rounds %.1f", name, eps, m, float64(rounds)/S)
		}
	}
}
