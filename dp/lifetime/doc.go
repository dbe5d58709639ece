// Package lifetime keeps a privacy budget ledger that outlives runs: one
// file, append-only, that records every release and answer run on a
// dataset and refuses a run whose budget would take the total past a
// lifetime (ε, δ).
//
// # File format
//
// The ledger is JSON lines. Each line is
//
//	{"entry": {...}, "prev": "<sha256 of the line before>", "sha256": "<hex>"}
//
// where the checksum is SHA-256 of prev, a newline and the exact bytes of
// the "entry" value as they appear in the line, and prev is the previous
// line's checksum (64 zeros on the first line): a chain, so a deleted,
// inserted or reordered line breaks it and is refused as corruption
// ([ErrCorrupt]). Cutting off the last lines leaves a valid chain: that
// only an anchor kept elsewhere (the entry count, the last checksum) could
// show. Lines of the earlier format (no prev, a checksum of the entry
// alone) are accepted as a prefix of the file, each checked on its own;
// the first line written by this version chains to the last of them.
//
// # Refusals before the charge
//
// A ledger file that does not exist is refused ([ErrMissing]) unless the
// run asks to create it ([Options].Create): a mistyped path would start a
// fresh ledger with nothing spent. A lifetime above the one the ledger
// records (ε or δ larger) is refused ([ErrLifetimeRaised]) unless the run
// asks to raise it ([Options].RaiseLifetime); the entry then records the
// lifetime it replaced (RaisedFrom). A line is appended with one write followed by an
// fsync, under an exclusive flock(2) that is held from the read of the
// history through the check to the fsync, so two runs that race cannot
// both pass the check: the second reads the first's entry.
//
// # Crashes and torn lines
//
// [Charge] returns only after the entry is on disk, and the commands call
// it before they read any data. A final line without its newline is
// therefore the trace of a run that was killed while appending, before it
// read data: it spent nothing, so it is ignored when the ledger is read
// and cut off by the next [Charge] (under the lock), which reports its
// size. Any other line that does not parse or whose checksum does not
// match is corruption: the ledger is refused (the spend it recorded is
// unknown, and budget spent is never un-spent) until a person repairs it.
// A run that fails after its entry is written still counts: the entry is
// never removed.
//
// # Composition
//
// A run is charged the whole (ε, δ) it was given, whatever its mechanisms
// end up spending. An entry records ρ = ε²/2 when the run is pure ε-DP
// (δ = 0): an ε-DP mechanism is (ε²/2)-zCDP (Bun–Steinke 2016, Prop. 1.4);
// a run with δ > 0 records no ρ (an (ε, δ)-DP mechanism need not be zCDP).
// The history is composed by the better of two rules, both valid bounds
// for the same sequence of runs:
//
//   - basic composition: (Σε, Σδ) over every entry;
//   - zCDP where it applies: the entries with ρ compose to Σρ-zCDP, which
//     is (ε_z, δ_z)-DP with ε_z from [dp.RhoToEpsilon] (Canonne, Kamath,
//     Steinke 2020, Cor. 13) at δ_z = δ_L − Σδ of the other entries (δ_L
//     the lifetime δ, so the zCDP group gets whatever δ the others leave);
//     the other entries add by basic composition: (ε_z + Σε, δ_L).
//
// The zCDP rule needs δ_L > Σδ of the entries without ρ; where every entry
// has ρ it is the plain zCDP bound. A run passes when the history with its
// entry fits the lifetime under either rule.
//
// # Platforms
//
// Locking uses flock(2); on platforms without it [Charge] returns an error
// wrapping [ErrUnsupported].
package lifetime
