package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// sourceEntry is a table's source as seen by [parser.checkSource].
type sourceEntry struct {
	table   string
	public  bool
	written string      // as written in the spec, for messages
	key     string      // the resolved, cleaned path, or the URL as written
	info    os.FileInfo // nil when the file cannot be stat'ed (or a URL)
	line    int         // line of the source value
}

// sourceKey returns the form of a resolved source that two spellings of one
// path share: URLs as written, paths cleaned ([parser.path] makes relative
// paths absolute and clean but keeps absolute ones as written).
func sourceKey(resolved string) string {
	if strings.Contains(resolved, "://") {
		return resolved
	}
	return filepath.Clean(resolved)
}

// sameSource reports whether two sources name one file: the same cleaned
// path, or, when both exist, the same file reached by two spellings, a
// symbolic link or a hard link ([os.SameFile]).
func sameSource(a, b *sourceEntry) bool {
	if a.key == b.key {
		return true
	}
	return a.info != nil && b.info != nil && os.SameFile(a.info, b.info)
}

// checkSource refuses table t when its source is the source of an earlier
// table and one of the two is private. n is the source's value node.
//
// Private–private is a self-join through one file: one individual's tuple
// would sit in two relations, while the neighbour notion (one tuple of one
// private table changes) and the sensitivity bounds built on it — degrees,
// residual sensitivity — count each private tuple in one relation only, so
// they would be too small. Public–private is refused too: a public table
// must never change between neighbours, but this one is a private table's
// file and changes with it. Two public tables may share a file.
func (p *parser) checkSource(t *Table, written string, n *yaml.Node, path string) {
	e := &sourceEntry{table: t.Name, public: t.Public, written: written, key: sourceKey(t.Source), line: n.Line}
	if !strings.Contains(t.Source, "://") {
		if st, err := os.Stat(t.Source); err == nil {
			e.info = st
		}
	}
	for _, prev := range p.sources {
		if !sameSource(prev, e) || (prev.public && e.public) {
			continue
		}
		same := "is also the source"
		if prev.written != written {
			same = fmt.Sprintf("is the same file as the source %q", prev.written)
		}
		kind := "private"
		if prev.public {
			kind = "public"
		}
		where := fmt.Sprintf("of %s table %q (line %d)", kind, prev.table, prev.line)
		switch {
		case !prev.public && !e.public:
			p.fail(n, path, "%q %s %s: self-joins (two private tables read from one file) are not supported: "+
				"one individual's tuple would appear in two relations, while the sensitivity bounds (degrees, residual sensitivity) "+
				"assume each private tuple lives in one relation, so they would be too small and the release would not be differentially private",
				written, same, where)
		default:
			pub, priv := t.Name, prev.table
			if prev.public {
				pub, priv = prev.table, t.Name
			}
			p.fail(n, path, "%q %s %s: public table %q and private table %q read the same file; "+
				"a public table must never change between neighbouring instances, but this file holds the private table's tuples "+
				"and changes with them, so treating it as public would not be differentially private",
				written, same, where, pub, priv)
		}
	}
	p.sources = append(p.sources, e)
}
