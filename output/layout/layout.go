package layout

import "github.com/synth-dp/synth/spec"

// File names inside the output folder.
const (
	// ParquetName is the synthetic table.
	ParquetName = "synthetic.parquet"
	// ReportName is the privacy report, as JSON.
	ReportName = "privacy-report.json"
	// MarkdownName is the human-readable privacy report written beside
	// the JSON one.
	MarkdownName = "privacy-report.md"
	// MetadataKey is the Parquet key-value metadata entry holding the
	// privacy report.
	MetadataKey = "synth.privacy"
)

// TablesDir is the folder, inside a release folder, of a tables release's
// synthetic tables (release.output tables): TablesDir/<table>.parquet.
const TablesDir = "tables"

// ColumnNames returns the names of the released columns in the output
// file: the bare column name when it is unique among the released columns,
// else table_column.
func ColumnNames(s *spec.Spec) []string {
	count := map[string]int{}
	for _, r := range s.Release.Columns {
		count[r.Column]++
	}
	names := make([]string, len(s.Release.Columns))
	for i, r := range s.Release.Columns {
		names[i] = r.Column
		if count[r.Column] > 1 {
			names[i] = r.Table + "_" + r.Column
		}
	}
	return names
}

// Positions returns the position of every released column in release
// order (the order of the file's columns and of the universe's mixed
// radix).
func Positions(s *spec.Spec) map[spec.ColumnRef]int {
	pos := map[spec.ColumnRef]int{}
	for i, r := range s.Release.Columns {
		pos[r] = i
	}
	return pos
}
