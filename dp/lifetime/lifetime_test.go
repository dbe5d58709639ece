package lifetime

import (
	"bufio"
	"errors"
	"math"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/synth-dp/synth/dp"
)

// The test binary doubles as a helper process (see helperMain).
func TestMain(m *testing.M) {
	if mode := os.Getenv("LIFETIME_TEST_HELPER"); mode != "" {
		os.Exit(helperMain(mode, os.Getenv("LIFETIME_TEST_LEDGER")))
	}
	os.Exit(m.Run())
}

// helperMain is a process that charges the ledger once (exit 0 on
// success, 3 when refused) or, in mode "torn", takes the lock, writes half
// a line, says "ready" and waits to be killed.
func helperMain(mode, path string) int {
	switch mode {
	case "charge":
		_, err := Charge(path, NewEntry("release", "test", "sha256:x", dp.Budget{Epsilon: 0.3, Delta: 1e-7}, false), &dp.Budget{Epsilon: 1, Delta: 1e-6})
		if errors.Is(err, ErrExceeded) {
			return 3
		}
		if err != nil {
			os.Stderr.WriteString(err.Error())
			return 1
		}
		return 0
	case "torn":
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return 1
		}
		if err := lockFile(f, true); err != nil {
			return 1
		}
		b, _ := encodeLine(NewEntry("release", "killed", "sha256:y", dp.Budget{Epsilon: 0.5, Delta: 0}, false), genesis)
		st, _ := f.Stat()
		if _, err := f.WriteAt(b[:len(b)/2], st.Size()); err != nil {
			return 1
		}
		_ = f.Sync()
		os.Stdout.WriteString("ready\n")
		time.Sleep(time.Minute)
		return 0
	}
	return 1
}

func budget(eps, delta float64) dp.Budget { return dp.Budget{Epsilon: eps, Delta: delta} }

func TestChargeRefusesPastLifetime(t *testing.T) {
	tests := []struct {
		name     string
		runs     []dp.Budget
		lifetime dp.Budget
		pass     int // how many of runs are recorded before the first refusal
	}{
		{"basic ε", []dp.Budget{budget(0.4, 1e-7), budget(0.4, 1e-7), budget(0.4, 1e-7)}, budget(1, 1e-6), 2},
		{"basic δ", []dp.Budget{budget(0.1, 4e-7), budget(0.1, 4e-7), budget(0.1, 4e-7)}, budget(1, 1e-6), 2},
		{"exact fit with float rounding", []dp.Budget{budget(0.1, 0), budget(0.2, 0), budget(0.7, 0), budget(1e-3, 0)}, budget(1, 0), 3},
		// Pure runs of ε = 0.25 within ε = 10: basic composition affords 40,
		// zCDP (ρ = k/32, converted at δ = 1e-6) affords zcdpRuns > 40.
		{"zCDP beats basic", repeat(budget(0.25, 0), zcdpRuns+1), budget(10, 1e-6), zcdpRuns},
		{"zero lifetime δ keeps basic", repeat(budget(0.25, 0), 41), budget(10, 0), 40},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := newLedger(t)
			l := tc.lifetime
			for i, b := range tc.runs {
				_, err := Charge(path, NewEntry("release", "test", "sha256:x", b, false), &l)
				if i < tc.pass && err != nil {
					t.Fatalf("run %d refused: %v", i+1, err)
				}
				if i >= tc.pass {
					if !errors.Is(err, ErrExceeded) {
						t.Fatalf("run %d: got %v, want ErrExceeded", i+1, err)
					}
					break
				}
			}
			h, err := Read(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(h.Entries) != tc.pass {
				t.Fatalf("ledger holds %d entries, want %d (a refused run must not be recorded)", len(h.Entries), tc.pass)
			}
			if c := Compose(h.Entries, &l); !c.Fits(l) {
				t.Fatalf("recorded history %+v does not fit %+v", c, l)
			}
		})
	}
}

// zcdpRuns is the number of (0.25, 0)-DP runs that fit (10, 1e-6) by zCDP.
var zcdpRuns = func() int {
	k := 0
	for {
		e, err := dp.RhoToEpsilon(float64(k+1)*0.25*0.25/2, 1e-6)
		if err != nil || e > 10 {
			return k
		}
		k++
	}
}()

func TestZCDPAffordsMore(t *testing.T) {
	if zcdpRuns <= 40 {
		t.Fatalf("zCDP affords %d runs, basic composition 40: the test case no longer shows zCDP winning", zcdpRuns)
	}
}

func repeat(b dp.Budget, n int) []dp.Budget {
	out := make([]dp.Budget, n)
	for i := range out {
		out[i] = b
	}
	return out
}

func TestComposeRules(t *testing.T) {
	pure := NewEntry("answer", "r2t", "", budget(0.25, 0), false)
	if pure.Rho != 0.25*0.25/2 {
		t.Fatalf("rho of a pure run = %v, want ε²/2", pure.Rho)
	}
	approx := NewEntry("release", "pmw", "", budget(1, 1e-7), false)
	if approx.Rho != 0 {
		t.Fatalf("an (ε, δ) run with δ > 0 records ρ = %v, want none", approx.Rho)
	}
	l := budget(100, 1e-6)
	es := append(repeat2(pure, 100), approx)
	c := Compose(es, &l)
	rho := 100 * pure.Rho
	ez, err := dp.RhoToEpsilon(rho, 1e-6-1e-7)
	if err != nil {
		t.Fatal(err)
	}
	if c.Rule != RuleZCDP || math.Abs(c.Epsilon-(ez+1)) > 1e-12 || c.Delta != 1e-6 {
		t.Fatalf("Compose = %+v, want zCDP ε = %v + 1", c, ez)
	}
	if basic := Compose(es, nil); basic.Rule != RuleBasic || math.Abs(basic.Epsilon-26) > 1e-9 {
		t.Fatalf("without a lifetime: %+v, want basic ε = 26", basic)
	}
}

func repeat2(e Entry, n int) []Entry {
	out := make([]Entry, n)
	for i := range out {
		out[i] = e
	}
	return out
}

// Many goroutines race for a lifetime that affords exactly 3 runs.
func TestChargeConcurrentGoroutines(t *testing.T) {
	path := newLedger(t)
	l := budget(1, 1e-6)
	var wg sync.WaitGroup
	var mu sync.Mutex
	passed, refused := 0, 0
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := Charge(path, NewEntry("release", "test", "sha256:x", budget(0.3, 1e-7), false), &l)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				passed++
			case errors.Is(err, ErrExceeded):
				refused++
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	h, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if passed != 3 || refused != 29 || len(h.Entries) != 3 {
		t.Fatalf("passed %d, refused %d, recorded %d; want 3, 29, 3", passed, refused, len(h.Entries))
	}
}

// Processes race the same way: flock serialises them across processes.
func TestChargeConcurrentProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := newLedger(t)
	const n = 8
	cmds := make([]*exec.Cmd, n)
	for i := range cmds {
		cmds[i] = exec.Command(os.Args[0], "-test.run=^$")
		cmds[i].Env = append(os.Environ(), "LIFETIME_TEST_HELPER=charge", "LIFETIME_TEST_LEDGER="+path)
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	passed, refused := 0, 0
	for _, c := range cmds {
		err := c.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
			passed++
		case errors.As(err, &ee) && ee.ExitCode() == 3:
			refused++
		default:
			t.Fatalf("helper: %v", err)
		}
	}
	h, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if passed != 3 || refused != n-3 || len(h.Entries) != 3 {
		t.Fatalf("passed %d, refused %d, recorded %d; want 3, %d, 3", passed, refused, len(h.Entries), n-3)
	}
}

// A process killed with SIGKILL in the middle of an append leaves a torn
// line: readers ignore it, its lock dies with it, and the next charge cuts
// it off and appends a whole line.
func TestTornWriteKilledProcess(t *testing.T) {
	path := newLedger(t)
	l := budget(1, 1e-6)
	if _, err := Charge(path, NewEntry("release", "first", "sha256:a", budget(0.2, 1e-7), false), &l); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LIFETIME_TEST_HELPER=torn", "LIFETIME_TEST_LEDGER="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if s, err := bufio.NewReader(out).ReadString('\n'); err != nil || s != "ready\n" {
		t.Fatalf("helper said %q, %v", s, err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	torn, _ := os.ReadFile(path)
	if len(torn) <= len(before) || torn[len(torn)-1] == '\n' {
		t.Fatalf("the helper left no torn line (%d → %d bytes)", len(before), len(torn))
	}
	h, err := Read(path)
	if err != nil {
		t.Fatalf("a torn final line made the ledger unreadable: %v", err)
	}
	if len(h.Entries) != 1 || h.TornBytes != len(torn)-len(before) {
		t.Fatalf("read %d entries, torn %d bytes; want 1 and %d", len(h.Entries), h.TornBytes, len(torn)-len(before))
	}
	h, err = Charge(path, NewEntry("release", "second", "sha256:b", budget(0.2, 1e-7), false), nil)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(after), string(before)) || strings.Count(string(after), "\n") != 2 {
		t.Fatalf("after repair the ledger is\n%s", after)
	}
	h, err = Read(path)
	if err != nil || len(h.Entries) != 2 || h.TornBytes != 0 || h.Entries[1].Mechanism != "second" {
		t.Fatalf("after repair: %+v, %v", h, err)
	}
	// The lifetime recorded by the first entry still applies to a run
	// that gives none: 0.2 + 0.2 + 0.7 > 1.
	if _, err := Charge(path, NewEntry("release", "third", "sha256:c", budget(0.7, 0), false), nil); !errors.Is(err, ErrExceeded) {
		t.Fatalf("got %v, want ErrExceeded from the recorded lifetime", err)
	}
}

// Truncating the last line anywhere leaves a readable ledger that keeps
// every whole entry; altering a byte of a whole line is corruption.
func TestTruncatedAndCorruptLines(t *testing.T) {
	path := newLedger(t)
	for i := range 3 {
		if _, err := Charge(path, NewEntry("answer", "m", "sha256:x", budget(0.1*float64(i+1), 0), false), nil); err != nil {
			t.Fatal(err)
		}
	}
	full, _ := os.ReadFile(path)
	lastStart := strings.LastIndex(strings.TrimSuffix(string(full), "\n"), "\n") + 1
	for cut := lastStart + 1; cut < len(full); cut++ {
		if err := os.WriteFile(path, full[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		h, err := Read(path)
		if err != nil || len(h.Entries) != 2 || h.TornBytes != cut-lastStart {
			t.Fatalf("cut at %d: %v entries, torn %v, err %v", cut, len(h.Entries), h.TornBytes, err)
		}
	}
	bad := []byte(string(full))
	i := strings.Index(string(bad), `"epsilon":0.2`)
	bad[i+len(`"epsilon":0.`)] = '9'
	if err := os.WriteFile(path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("altered line: got %v, want ErrCorrupt naming line 2", err)
	}
	if _, err := Charge(path, NewEntry("answer", "m", "sha256:x", budget(0.1, 0), false), nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("charge on a corrupt ledger: got %v, want ErrCorrupt", err)
	}
}
