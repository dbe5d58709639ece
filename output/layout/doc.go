// Package layout names the parts of a release's output: the files of the
// output folder ([ParquetName], [ReportName], [MarkdownName]), the Parquet
// key-value metadata entry that holds the privacy report ([MetadataKey])
// and the names and positions of the released columns in the file
// ([ColumnNames], [Positions]).
//
// # Why a package of its own
//
// These names are a contract between several packages that must agree on
// them without depending on one another: the orchestration (package
// release) writes the folder; the Parquet writer and the atomic publishing
// (output/synthfile, output/publish) write and recognise its files; the
// workload (package workload) names its families after the columns; and
// the evaluation report (internal/report) and the CLI read released files
// back. Were the names kept in package release, every reader would import
// the orchestration and with it every mechanism, an arrow back up the
// graph. Kept here, in a leaf that imports only spec, they can be shared
// by all of them.
//
// # Who may import it
//
// Anything. It imports nothing of synth but spec, and must stay that way.
package layout
