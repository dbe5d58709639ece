package dp

import (
	"maps"
	"slices"
)

// Values of [Report].Privacy.
const (
	// PrivacyPrivate marks a run whose noise came from [NewSource].
	PrivacyPrivate = "private"
	// PrivacySeeded marks a run whose noise came from [NewSeededSource]:
	// anybody with the seed can remove the noise, so it is not private
	// (DESIGN.md §3, invariant 4).
	PrivacySeeded = "not private (seeded)"
)

// ReportMeta carries the public fields of a [Report] that the ledger does
// not know. Everything in it is published: put only public parameters here
// (spec values, names, versions), never data or data-dependent values that
// did not go through a mechanism.
type ReportMeta struct {
	// Neighbours names the neighbour relation, e.g. "add/remove one tuple
	// of one private relation (tuple-DP)".
	Neighbours string
	// Mechanism names the top-level mechanism, e.g. "join-as-one (Alg. 3)".
	Mechanism string
	// Seeded is true when the run's Source is seeded ([Source.Seeded]).
	Seeded bool
	// Parameters are public parameters of the run (copied shallowly).
	Parameters map[string]any
	// SoftwareVersion is the synth version that produced the release.
	SoftwareVersion string
	// SpecDigest identifies the spec, e.g. "sha256:…".
	SpecDigest string
	// CreatedAt is when the release was made (RFC 3339, UTC); empty when
	// not given.
	CreatedAt string
	// Columns are the released columns as named in the output file.
	Columns []string
	// Inputs identify the run's input files (copied shallowly).
	Inputs []InputFile
}

// InputFile identifies one input file of a run. Table and File come from
// the spec and are public. SHA256 is a deterministic function of the
// private data, not a DP output: a reader who knows all but one tuple can
// test a guess about the last one against it (DESIGN.md §3, invariant 5).
// Leave it empty in a report that is published; fill it only in a report
// kept by the data custodian.
type InputFile struct {
	// Table is the relation the file holds.
	Table string `json:"table"`
	// File is the file's name as written in the spec.
	File string `json:"file"`
	// SHA256 is the hex SHA-256 of the file's bytes, or empty.
	SHA256 string `json:"sha256,omitempty"`
}

// Report is the privacy report of a run: its (ε, δ) guarantee, the
// neighbour relation, every spend with its composition rule, the DP outputs
// and the public parameters. It holds public parameters and DP outputs only
// (DESIGN.md §3, invariant 5) and marshals to JSON with the field names
// below; it is written beside the release and into its Parquet metadata.
//
// Values published with [Ledger.Publish] and details of spends must be
// finite for the report to marshal: encoding/json rejects NaN and ±Inf.
type Report struct {
	// Epsilon and Delta are the run's total budget, the guarantee it
	// claims; the spends add up to at most this.
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	// Spent is what the spends add up to by the ledger's rules.
	Spent           Budget         `json:"spent"`
	Neighbours      string         `json:"neighbours"`
	Mechanism       string         `json:"mechanism"`
	Seeded          bool           `json:"seeded"`
	Privacy         string         `json:"privacy"`
	Spends          []Spend        `json:"spends"`
	Outputs         []Output       `json:"outputs"`
	Parameters      map[string]any `json:"parameters"`
	SoftwareVersion string         `json:"software_version"`
	SpecDigest      string         `json:"spec_digest"`
	// CreatedAt, Columns and Inputs are from [ReportMeta]; they are left
	// out of the JSON when empty.
	CreatedAt string      `json:"created_at,omitempty"`
	Columns   []string    `json:"columns,omitempty"`
	Inputs    []InputFile `json:"inputs,omitempty"`
}

// Report builds the privacy report of the ledger: a snapshot of its spends
// (sub-ledgers expanded) and outputs, with the public fields of meta.
// Privacy is [PrivacySeeded] when meta.Seeded, else [PrivacyPrivate].
func (l *Ledger) Report(meta ReportMeta) Report {
	l.mu.Lock()
	spent := l.spent
	l.mu.Unlock()
	privacy := PrivacyPrivate
	if meta.Seeded {
		privacy = PrivacySeeded
	}
	params := maps.Clone(meta.Parameters)
	if params == nil {
		params = map[string]any{}
	}
	spends := l.Spends()
	if spends == nil {
		spends = []Spend{}
	}
	outputs := l.Outputs()
	if outputs == nil {
		outputs = []Output{}
	}
	return Report{
		Epsilon:         l.total.Epsilon,
		Delta:           l.total.Delta,
		Spent:           spent,
		Neighbours:      meta.Neighbours,
		Mechanism:       meta.Mechanism,
		Seeded:          meta.Seeded,
		Privacy:         privacy,
		Spends:          spends,
		Outputs:         outputs,
		Parameters:      params,
		SoftwareVersion: meta.SoftwareVersion,
		SpecDigest:      meta.SpecDigest,
		CreatedAt:       meta.CreatedAt,
		Columns:         slices.Clone(meta.Columns),
		Inputs:          slices.Clone(meta.Inputs),
	}
}
