package release

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/synth-dp/synth/dp"
	"github.com/synth-dp/synth/pmw"
	"github.com/synth-dp/synth/spec"
)

// TestProgressPhases: Options.Progress hears every phase of a run, in
// order; the load ends at 1 of 1, PMW's bar ends full at the rounds that
// ran (its plan, not its cap), the writer's count ends at the rows
// written, and the uniformized method counts its buckets up to the number
// that run.
func TestProgressPhases(t *testing.T) {
	for _, m := range []spec.Method{spec.JoinAsOne, spec.Uniformized} {
		t.Run(string(m), func(t *testing.T) {
			s := demoSpec(t, 128)
			if m != spec.Auto {
				s.Privacy.Unit = "" // a tuple-level method: the demo's unit off
			}
			s.Release.Method = m
			type call struct {
				phase       Phase
				done, total int64
			}
			var calls []call
			sum, err := Run(context.Background(), Options{Spec: s, OutDir: filepath.Join(t.TempDir(), "out"), Source: dp.NewSeededSource(5),
				Progress: func(p Phase, done, total int64) { calls = append(calls, call{p, done, total}) }})
			if err != nil {
				t.Fatal(err)
			}
			last := map[Phase]call{}
			order := []Phase{}
			for _, c := range calls {
				if len(order) == 0 || order[len(order)-1] != c.phase {
					order = append(order, c.phase)
				}
				last[c.phase] = c
			}
			// The load bar counts the tables one by one, then the folding.
			n := int64(len(s.Tables)) + 1
			var loads []int64
			for _, c := range calls {
				if c.phase == PhaseLoad {
					if c.total != n {
						t.Errorf("load step %+v, want a total of %d (tables + folding)", c, n)
					}
					loads = append(loads, c.done)
				}
			}
			if want := seqTo(n); !slices.Equal(loads, want) {
				t.Errorf("load steps %v, want %v", loads, want)
			}
			// The adaptive variant's bar ends full at the rounds it ran,
			// not at its cap (DefaultMWEMMaxRounds).
			if p := last[PhasePMW]; p.done < 1 || p.done != p.total || p.total >= pmw.DefaultMWEMMaxRounds {
				t.Errorf("PMW ends at %+v", p)
			}
			if sum.Rows == 0 {
				t.Fatal("no rows released: the write phase is not tested")
			}
			if w := last[PhaseWrite]; w.done != sum.Rows || w.total != sum.Rows {
				t.Errorf("write ends at %+v, %d rows written", w, sum.Rows)
			}
			if order[0] != PhaseLoad || order[len(order)-1] != PhaseWrite {
				t.Errorf("phases in order %v", order)
			}
			// The partition knows how many buckets run once it is drawn
			// (a DP output): the bar ends full.
			if p, ok := last[PhasePartitions]; (m == spec.Uniformized) != ok || ok && (p.done < 1 || p.total != p.done) {
				t.Errorf("method %s: partitions %+v (reported %v)", m, p, ok)
			}
		})
	}
}

// TestDebugLog: a run whose logger is at the debug level logs its progress
// there (the load, PMW's rounds, the writer's start and end), and the
// info lines print counts as integers.
func TestDebugLog(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := demoSpec(t, 128)
	s.Privacy.Unit = ""
	s.Release.Method = spec.JoinAsOne
	if _, err := Run(context.Background(), Options{Spec: s, OutDir: filepath.Join(t.TempDir(), "out"), Source: dp.NewSeededSource(5), Logger: log}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, p := range []Phase{PhaseLoad, PhasePMW, PhaseWrite} {
		if !strings.Contains(out, "level=DEBUG msg=progress phase=\""+string(p)+"\"") {
			t.Errorf("no debug line for %q in\n%s", p, out)
		}
	}
	if n := strings.Count(out, "phase=\""+string(PhaseWrite)+"\""); n > 2 {
		t.Errorf("%d debug lines for the writer, want its start and end", n)
	}
	if !regexp.MustCompile(`msg="mechanism done" .*delta_tilde=\d+ n_hat=\d+ `).MatchString(out) {
		t.Errorf("mechanism line without integer counts in\n%s", out)
	}
}

// TestCountValue: integral counts log as integers (6547108, not
// 6.547108e+06); fractions and values beyond 2⁵³ stay floats.
func TestCountValue(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{6547108, "n=6547108"},
		{1 << 53, "n=9007199254740992"},
		{-3, "n=-3"},
		{0, "n=0"},
		{2.5, "n=2.5"},
		{1 << 60, "n=1.152921504606847e+18"},
	} {
		var buf bytes.Buffer
		slog.New(slog.NewTextHandler(&buf, nil)).Info("x", "n", countValue(tc.v))
		if got := strings.TrimSpace(buf.String()); !strings.HasSuffix(got, tc.want) {
			t.Errorf("%v logs as %q, want …%s", tc.v, got, tc.want)
		}
	}
}

// seqTo returns 0, 1, …, n.
func seqTo(n int64) []int64 {
	out := make([]int64, 0, n+1)
	for i := int64(0); i <= n; i++ {
		out = append(out, i)
	}
	return out
}
