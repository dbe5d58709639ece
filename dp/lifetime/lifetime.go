package lifetime

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/synth-dp/synth/dp"
)

var (
	// ErrExceeded is wrapped when a run's budget would take the ledger past
	// its lifetime budget; the run was not recorded.
	ErrExceeded = errors.New("lifetime: budget exceeded")
	// ErrCorrupt is wrapped when a ledger line other than a torn final one
	// does not parse or fails its checksum.
	ErrCorrupt = errors.New("lifetime: ledger is corrupt")
	// ErrInvalid is wrapped when an entry or a lifetime budget is out of
	// range.
	ErrInvalid = errors.New("lifetime: invalid budget")
	// ErrUnsupported is wrapped on platforms without flock(2).
	ErrUnsupported = errors.New("lifetime: file locking is not supported on this platform")
	// ErrLifetimeRaised is wrapped when a run passes a lifetime budget
	// above the one the ledger records (ε or δ larger) without asking to
	// raise it ([Options].RaiseLifetime); the run was not recorded.
	ErrLifetimeRaised = errors.New("lifetime: the lifetime budget is above the one the ledger records")
	// ErrMissing is wrapped when the ledger file does not exist and the
	// run did not ask to create it ([Options].Create): a mistyped path
	// would otherwise start a fresh ledger with nothing spent.
	ErrMissing = errors.New("lifetime: the ledger file does not exist")
)

// Entry is one run recorded in a ledger.
type Entry struct {
	// Time is when the run was charged (UTC).
	Time time.Time `json:"time"`
	// Command is the synth command, "release" or "answer".
	Command string `json:"command"`
	// Mechanism names the release method or the answer mechanism.
	Mechanism string `json:"mechanism"`
	// SpecDigest is the spec's digest, "sha256:<hex>".
	SpecDigest string `json:"spec_digest"`
	// Epsilon and Delta are the run's whole budget.
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	// Rho is the run's zCDP cost; 0 when the run is not known to be zCDP.
	Rho float64 `json:"rho,omitempty"`
	// Seeded marks a --seed run (not private, charged all the same).
	Seeded bool `json:"seeded,omitempty"`
	// Lifetime is the lifetime budget the run was checked against; nil
	// when it had none.
	Lifetime *dp.Budget `json:"lifetime,omitempty"`
	// RaisedFrom is the lifetime the ledger recorded before this run
	// raised it ([Options].RaiseLifetime); nil when the run raised
	// nothing.
	RaisedFrom *dp.Budget `json:"raised_from,omitempty"`
}

// NewEntry returns the entry of a run with budget b, stamped now. A pure
// ε-DP run (δ = 0) records ρ = ε²/2 (Bun–Steinke 2016, Prop. 1.4).
func NewEntry(command, mechanism, specDigest string, b dp.Budget, seeded bool) Entry {
	e := Entry{Time: time.Now().UTC(), Command: command, Mechanism: mechanism, SpecDigest: specDigest,
		Epsilon: b.Epsilon, Delta: b.Delta, Seeded: seeded}
	if b.Delta == 0 {
		e.Rho = b.Epsilon * b.Epsilon / 2
	}
	return e
}

func (e Entry) validate() error {
	if err := (dp.Budget{Epsilon: e.Epsilon, Delta: e.Delta}).Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if math.IsNaN(e.Rho) || math.IsInf(e.Rho, 0) || e.Rho < 0 {
		return fmt.Errorf("%w: rho = %v", ErrInvalid, e.Rho)
	}
	if e.Rho > 0 && e.Delta != 0 {
		return fmt.Errorf("%w: rho = %v with delta = %v (only pure ε-DP runs record ρ)", ErrInvalid, e.Rho, e.Delta)
	}
	return nil
}

// History is what a ledger holds.
type History struct {
	// Path is the ledger file.
	Path string `json:"ledger"`
	// Entries are the recorded runs, oldest first.
	Entries []Entry `json:"entries"`
	// TornBytes is the size of a torn final line that was ignored (a run
	// killed while appending, which read no data); 0 when there is none.
	TornBytes int `json:"torn_bytes,omitempty"`

	tornAt int64  // offset of the torn line, or the file size
	head   string // checksum of the last line (genesis when there is none): the next line's prev
}

// Lifetime returns the lifetime budget recorded by the latest entry that
// has one, or nil.
func (h *History) Lifetime() *dp.Budget {
	for i := len(h.Entries) - 1; i >= 0; i-- {
		if l := h.Entries[i].Lifetime; l != nil {
			return l
		}
	}
	return nil
}

// Composition is what a list of entries spends under one rule.
type Composition struct {
	// Rule names the composition rule.
	Rule string `json:"rule"`
	// Epsilon and Delta are the (ε, δ) guarantee of all the runs together.
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	// Rho is Σρ of the entries that record ρ.
	Rho float64 `json:"rho,omitempty"`
}

// Rule names.
const (
	RuleBasic = "basic composition"
	RuleZCDP  = "zCDP for the pure ε-DP runs (Σρ, converted at the δ the others leave) + basic composition for the others"
)

// relTol absorbs the rounding of a sum of floats (0.1 + 0.2 > 0.3) when a
// composition is compared with the lifetime budget.
const relTol = 1e-9

// Fits reports whether c stays within the lifetime budget l.
func (c Composition) Fits(l dp.Budget) bool {
	return c.Epsilon <= l.Epsilon*(1+relTol) && c.Delta <= l.Delta*(1+relTol)
}

// Compose returns the composition of entries under the best rule that
// applies (see the package doc): basic composition, or zCDP for the
// entries with ρ when a lifetime budget with δ left for them is given.
// Among the rules whose result fits the lifetime, the one with the
// smallest ε wins; when none fits, the one with the smallest ε.
func Compose(entries []Entry, lifetime *dp.Budget) Composition {
	basic := Composition{Rule: RuleBasic}
	var otherE, otherD float64
	for _, e := range entries {
		basic.Epsilon += e.Epsilon
		basic.Delta += e.Delta
		basic.Rho += e.Rho
		if e.Rho == 0 {
			otherE += e.Epsilon
			otherD += e.Delta
		}
	}
	if lifetime == nil || basic.Rho == 0 {
		return basic
	}
	dz := lifetime.Delta - otherD
	if !(dz > 0 && dz < 1) {
		return basic
	}
	ez, err := dp.RhoToEpsilon(basic.Rho, dz)
	if err != nil {
		return basic
	}
	z := Composition{Rule: RuleZCDP, Epsilon: ez + otherE, Delta: lifetime.Delta, Rho: basic.Rho}
	bf, zf := basic.Fits(*lifetime), z.Fits(*lifetime)
	switch {
	case zf && !bf:
		return z
	case bf && !zf:
		return basic
	case z.Epsilon < basic.Epsilon:
		return z
	}
	return basic
}

// Remaining returns what is left of the lifetime budget l after c: ε
// under c's rule, δ under basic composition of the entries' δ (the zCDP
// rule hands the pure runs whatever δ is left, so that is the δ a run
// with δ > 0 may still take).
func Remaining(entries []Entry, l dp.Budget) dp.Budget {
	c := Compose(entries, &l)
	var d float64
	for _, e := range entries {
		d += e.Delta
	}
	return dp.Budget{Epsilon: math.Max(0, l.Epsilon-c.Epsilon), Delta: math.Max(0, l.Delta-d)}
}

// line is one ledger line. Prev is the previous line's SHA256 (genesis
// on the first line); SHA256 covers Prev, a newline and the exact bytes of
// Entry, so each line's checksum depends on every line before it. Lines
// written before the chain (no prev) are checked on their own, and only
// as a prefix of the file: see the package doc.
type line struct {
	Entry  json.RawMessage `json:"entry"`
	Prev   string          `json:"prev,omitempty"`
	SHA256 string          `json:"sha256"`
}

// genesis is the prev of a ledger's first chained line.
const genesis = "0000000000000000000000000000000000000000000000000000000000000000"

// chainSum is the checksum of an entry's bytes after the line prev.
func chainSum(prev string, raw []byte) string {
	h := sha256.New()
	h.Write([]byte(prev))
	h.Write([]byte{'\n'})
	h.Write(raw)
	return hex.EncodeToString(h.Sum(nil))
}

// encodeLine is the line of e after the line whose checksum is prev.
func encodeLine(e Entry, prev string) ([]byte, error) {
	raw, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(line{Entry: raw, Prev: prev, SHA256: chainSum(prev, raw)})
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// parse reads a ledger's bytes. A final line without its newline is torn:
// it is left out and reported in TornBytes.
func parse(path string, data []byte) (*History, error) {
	h := &History{Path: path, tornAt: int64(len(data)), head: genesis}
	chained := false
	if i := bytes.LastIndexByte(data, '\n'); i+1 < len(data) {
		h.TornBytes = len(data) - (i + 1)
		h.tornAt = int64(i + 1)
		data = data[:i+1]
	}
	for n := 1; len(data) > 0; n++ {
		i := bytes.IndexByte(data, '\n')
		text := data[:i]
		data = data[i+1:]
		if len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		var l line
		if err := json.Unmarshal(text, &l); err != nil {
			return nil, fmt.Errorf("%w: %s line %d: %v", ErrCorrupt, path, n, err)
		}
		switch {
		case l.Prev == "" && chained:
			return nil, fmt.Errorf("%w: %s line %d: a line without a chain after chained lines (moved or inserted; the spends recorded are unknown, so no run is allowed until it is repaired)", ErrCorrupt, path, n)
		case l.Prev == "":
			// A line of the format before the chain: its own checksum.
			sum := sha256.Sum256(l.Entry)
			if hex.EncodeToString(sum[:]) != l.SHA256 {
				return nil, fmt.Errorf("%w: %s line %d: checksum mismatch (the line was altered; the spend it records is unknown, so no run is allowed until it is repaired)", ErrCorrupt, path, n)
			}
		case l.Prev != h.head:
			return nil, fmt.Errorf("%w: %s line %d: it does not follow the line before it (a line was deleted, inserted or moved; the spends recorded are unknown, so no run is allowed until it is repaired)", ErrCorrupt, path, n)
		case chainSum(l.Prev, l.Entry) != l.SHA256:
			return nil, fmt.Errorf("%w: %s line %d: checksum mismatch (the line was altered; the spend it records is unknown, so no run is allowed until it is repaired)", ErrCorrupt, path, n)
		default:
			chained = true
		}
		h.head = l.SHA256
		var e Entry
		if err := json.Unmarshal(l.Entry, &e); err != nil {
			return nil, fmt.Errorf("%w: %s line %d: %v", ErrCorrupt, path, n, err)
		}
		if err := e.validate(); err != nil {
			return nil, fmt.Errorf("%w: %s line %d: %v", ErrCorrupt, path, n, err)
		}
		h.Entries = append(h.Entries, e)
	}
	return h, nil
}

// Read returns the history of the ledger at path, under a shared lock. A
// ledger that does not exist has an empty history.
func Read(path string) (*History, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return &History{Path: path}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lifetime: %w", err)
	}
	defer f.Close()
	if err := lockFile(f, false); err != nil {
		return nil, fmt.Errorf("lifetime: lock %s: %w", path, err)
	}
	defer unlockFile(f) //nolint:errcheck // closing releases it too
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("lifetime: read %s: %w", path, err)
	}
	return parse(path, data)
}

// Options are the choices of [ChargeWith]. The zero value refuses a
// missing ledger and a raised lifetime.
type Options struct {
	// Lifetime is the run's lifetime budget; nil means the one recorded
	// by the latest entry that has one.
	Lifetime *dp.Budget
	// RaiseLifetime allows a Lifetime above the recorded one (ε or δ
	// larger); the entry records the lifetime it replaced (RaisedFrom).
	RaiseLifetime bool
	// Create creates the ledger file when it does not exist.
	Create bool
	// DryRun makes every check of a charge (a missing file, a raised
	// lifetime, the lifetime itself, corruption) and writes nothing: a
	// command checks its run early with it, before it reads any data,
	// and charges once its own checks pass (see the release command). A
	// missing file with Create reads as an empty ledger.
	DryRun bool
}

// Charge is [ChargeWith] with Options{Lifetime: lifetime}: it refuses a
// missing ledger ([ErrMissing]) and a lifetime above the recorded one
// ([ErrLifetimeRaised]).
func Charge(path string, e Entry, lifetime *dp.Budget) (*History, error) {
	return ChargeWith(path, e, Options{Lifetime: lifetime})
}

// ChargeWith records e in the ledger at path when the history with e fits
// the lifetime budget: o.Lifetime, or when it is nil the one recorded by
// the latest entry that has one (no lifetime at all: every run is
// recorded, none refused). A ledger file that does not exist is refused
// ([ErrMissing], nothing created) unless o.Create; a lifetime above the
// recorded one is refused ([ErrLifetimeRaised]) unless o.RaiseLifetime,
// and a raise is recorded in the entry (RaisedFrom). A lower lifetime is
// always accepted (it only tightens) and becomes the recorded one. An exclusive lock is held from
// reading the history to the fsync of the new line, so concurrent runs
// are charged one after the other and cannot both pass. A refused run
// returns an error wrapping [ErrExceeded] and leaves the file unchanged
// (but for a torn final line, which is cut off). On success the history
// returned includes e.
func ChargeWith(path string, e Entry, o Options) (*History, error) {
	lifetime := o.Lifetime
	if err := e.validate(); err != nil {
		return nil, err
	}
	if lifetime != nil {
		if err := lifetime.Validate(); err != nil {
			return nil, fmt.Errorf("%w: lifetime %v", ErrInvalid, err)
		}
	}
	if o.DryRun {
		h, err := Read(path)
		if err != nil {
			return nil, err
		}
		if _, statErr := os.Stat(path); errors.Is(statErr, os.ErrNotExist) && !o.Create {
			return nil, fmt.Errorf("%w: %s (a mistyped path would start a fresh ledger with nothing spent; to start a new ledger there, ask to create it: synth's --create-ledger)", ErrMissing, path)
		}
		if _, err := h.admit(path, &e, o); err != nil {
			return nil, err
		}
		h.Entries = append(h.Entries, e)
		return h, nil
	}
	_, statErr := os.Stat(path)
	flags := os.O_RDWR
	if o.Create {
		flags |= os.O_CREATE
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s (a mistyped path would start a fresh ledger with nothing spent; to start a new ledger there, ask to create it: synth's --create-ledger)", ErrMissing, path)
	}
	if err != nil {
		return nil, fmt.Errorf("lifetime: %w", err)
	}
	defer f.Close()
	if errors.Is(statErr, os.ErrNotExist) {
		// Make the new file's name durable before anything relies on it.
		if d, err := os.Open(filepath.Dir(path)); err == nil {
			_ = d.Sync()
			d.Close()
		}
	}
	if err := lockFile(f, true); err != nil {
		return nil, fmt.Errorf("lifetime: lock %s: %w", path, err)
	}
	defer unlockFile(f) //nolint:errcheck // closing releases it too
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("lifetime: read %s: %w", path, err)
	}
	h, err := parse(path, data)
	if err != nil {
		return nil, err
	}
	if h.TornBytes > 0 {
		if err := f.Truncate(h.tornAt); err != nil {
			return nil, fmt.Errorf("lifetime: cut the torn final line of %s: %w", path, err)
		}
	}
	if _, err := h.admit(path, &e, o); err != nil {
		return nil, err
	}
	b, err := encodeLine(e, h.head)
	if err != nil {
		return nil, fmt.Errorf("lifetime: %w", err)
	}
	if _, err := f.WriteAt(b, h.tornAt); err != nil {
		return nil, fmt.Errorf("lifetime: append to %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("lifetime: sync %s: %w", path, err)
	}
	h.Entries = append(h.Entries, e)
	return h, nil
}

// admit checks that e may be appended to h under o (the raise of the
// lifetime, then the lifetime itself) and sets e's Lifetime and
// RaisedFrom; it returns the lifetime applied (nil when none).
func (h *History) admit(path string, e *Entry, o Options) (*dp.Budget, error) {
	lifetime := o.Lifetime
	recorded := h.Lifetime()
	if lifetime != nil && recorded != nil && (lifetime.Epsilon > recorded.Epsilon || lifetime.Delta > recorded.Delta) {
		if !o.RaiseLifetime {
			return nil, fmt.Errorf("%w: %s records the lifetime (ε = %g, δ = %g); this run passes (ε = %g, δ = %g) (to raise it, ask to: synth's --raise-lifetime; the raise is recorded)",
				ErrLifetimeRaised, path, recorded.Epsilon, recorded.Delta, lifetime.Epsilon, lifetime.Delta)
		}
		r := *recorded
		e.RaisedFrom = &r
	}
	if lifetime == nil {
		lifetime = recorded
	}
	if lifetime != nil {
		all := append(h.Entries[:len(h.Entries):len(h.Entries)], *e)
		if c := Compose(all, lifetime); !c.Fits(*lifetime) {
			spent := Compose(h.Entries, lifetime)
			left := Remaining(h.Entries, *lifetime)
			return nil, fmt.Errorf("%w: %s records %d run(s) spending (ε = %.6g, δ = %.3g) by %s; this run asks for (ε = %g, δ = %g) and would bring the total to (ε = %.6g, δ = %.3g) > the lifetime (ε = %g, δ = %g); left: (ε = %.6g, δ = %.3g)",
				ErrExceeded, path, len(h.Entries), spent.Epsilon, spent.Delta, spent.Rule, e.Epsilon, e.Delta, c.Epsilon, c.Delta,
				lifetime.Epsilon, lifetime.Delta, left.Epsilon, left.Delta)
		}
		l := *lifetime
		e.Lifetime = &l
	}
	return lifetime, nil
}
