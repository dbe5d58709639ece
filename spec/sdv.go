package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"

	"gopkg.in/yaml.v3"
)

// sdvMetadata is the part of an SDV multi-table metadata JSON file
// (METADATA_SPEC_VERSION "V1" or "MULTI_TABLE_V1") that a spec uses: table
// names, primary keys, column sdtypes and relationships. Other fields
// (regex_format, datetime_format, pii, column_relationships, …) are ignored.
type sdvMetadata struct {
	Version       string              `json:"METADATA_SPEC_VERSION"`
	Tables        map[string]sdvTable `json:"tables"`
	Relationships []sdvRelationship   `json:"relationships"`

	file string // as named in the spec, for messages
}

type sdvTable struct {
	PrimaryKey json.RawMessage      `json:"primary_key"` // a name or a list of names
	Columns    map[string]sdvColumn `json:"columns"`
}

type sdvColumn struct {
	Sdtype string `json:"sdtype"`
}

type sdvRelationship struct {
	ParentTableName  string `json:"parent_table_name"`
	ParentPrimaryKey string `json:"parent_primary_key"`
	ChildTableName   string `json:"child_table_name"`
	ChildForeignKey  string `json:"child_foreign_key"`
}

// sdtypeColumnType is the column type an SDV sdtype implies, or "" when the
// spec must say (numerical: integer or numeric) or the sdtype is not
// modelled (email, address, …).
func sdtypeColumnType(sdtype string) ColumnType {
	switch sdtype {
	case "id":
		return Key
	case "categorical":
		return Categorical
	case "boolean":
		return Boolean
	case "datetime":
		return Date
	}
	return ""
}

// sdtypeAllows reports whether a declared type agrees with an SDV sdtype.
// sdtypes that are not modelled (PII types and the like) allow any type.
func sdtypeAllows(sdtype string, t ColumnType) bool {
	switch sdtype {
	case "id", "categorical", "boolean", "datetime":
		return sdtypeColumnType(sdtype) == t
	case "numerical":
		return t == Integer || t == Numeric
	}
	return true
}

// sdvError is a problem in the SDV metadata file.
func (p *parser) sdvError(line int, key, format string, args ...any) {
	panic(bail{&Error{File: p.sdv.file, Line: line, Key: key, Err: fmt.Errorf(format, args...)}})
}

func (p *parser) sdvMetadata(n *yaml.Node) {
	name := p.str(n, "sdv_metadata")
	data, err := os.ReadFile(p.path(name))
	if err != nil {
		p.fail(deref(n), "sdv_metadata", "%w", err)
	}
	p.sdv = &sdvMetadata{file: name}
	p.s.SDVMetadata = name
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(p.sdv); err != nil {
		line := 0
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			line = lineOf(data, se.Offset)
		case errors.As(err, &te):
			line = lineOf(data, te.Offset)
		}
		p.sdvError(line, "", "not SDV metadata JSON: %v", err)
	}
	switch p.sdv.Version {
	case "", "V1", "MULTI_TABLE_V1":
	default:
		p.sdvError(0, "METADATA_SPEC_VERSION", "%q: want multi-table metadata (V1 or MULTI_TABLE_V1)", p.sdv.Version)
	}
	if len(p.sdv.Tables) == 0 {
		p.sdvError(0, "tables", "no tables")
	}
}

// lineOf is the 1-based line of byte offset off.
func lineOf(data []byte, off int64) int {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	if off < 0 {
		off = 0
	}
	return 1 + bytes.Count(data[:off], []byte("\n"))
}

// sdvColumn returns the SDV sdtype of a column, or "".
func (p *parser) sdvColumn(table, column string) string {
	if p.sdv == nil {
		return ""
	}
	return p.sdv.Tables[table].Columns[column].Sdtype
}

// sdvTable merges the SDV metadata of table t into it: every declared column
// must be in the metadata; primary keys, id columns and relationship columns
// the spec does not declare become key columns; the primary key comes from
// the metadata.
func (p *parser) sdvTable(t *Table, m *mapping, path string) {
	st, ok := p.sdv.Tables[t.Name]
	if !ok {
		return // a table of our own, not in the metadata
	}
	for _, c := range t.Columns {
		if _, ok := st.Columns[c.Name]; !ok {
			p.fail(m.vals["columns"], join(join(path, "columns"), c.Name), "column %q of table %q is not in the SDV metadata %s", c.Name, t.Name, p.sdv.file)
		}
	}
	tkey := "tables." + t.Name
	if len(st.PrimaryKey) > 0 && string(st.PrimaryKey) != "null" {
		var one string
		var many []string
		switch {
		case json.Unmarshal(st.PrimaryKey, &one) == nil:
			many = []string{one}
		case json.Unmarshal(st.PrimaryKey, &many) == nil:
		default:
			p.sdvError(0, tkey+".primary_key", "must be a column name or a list of names")
		}
		for _, k := range many {
			if _, ok := st.Columns[k]; !ok {
				p.sdvError(0, tkey+".primary_key", "column %q is not in the table's columns", k)
			}
		}
		t.PrimaryKey = many
	}
	keys := map[string]bool{}
	for _, k := range t.PrimaryKey {
		keys[k] = true
	}
	for name, c := range st.Columns {
		if c.Sdtype == "id" {
			keys[name] = true
		}
	}
	for i, r := range p.sdv.Relationships {
		rkey := fmt.Sprintf("relationships[%d]", i)
		if r.ParentTableName == t.Name && p.listed[r.ChildTableName] {
			if _, ok := st.Columns[r.ParentPrimaryKey]; !ok {
				p.sdvError(0, rkey+".parent_primary_key", "table %q has no column %q", t.Name, r.ParentPrimaryKey)
			}
			keys[r.ParentPrimaryKey] = true
		}
		if r.ChildTableName == t.Name && p.listed[r.ParentTableName] {
			if _, ok := st.Columns[r.ChildForeignKey]; !ok {
				p.sdvError(0, rkey+".child_foreign_key", "table %q has no column %q", t.Name, r.ChildForeignKey)
			}
			keys[r.ChildForeignKey] = true
		}
	}
	var add []string
	for k := range keys {
		if t.Column(k) == nil {
			add = append(add, k)
		}
	}
	sort.Strings(add)
	for _, k := range add {
		t.Columns = append(t.Columns, Column{Name: k, Type: Key})
	}
}

// sdvRelationships turns the metadata's relationships between tables of the
// spec into join equalities. Relationships that touch a table the spec does
// not list are ignored.
func (p *parser) sdvRelationships() {
	for i, r := range p.sdv.Relationships {
		parent, child := p.s.Table(r.ParentTableName), p.s.Table(r.ChildTableName)
		if parent == nil || child == nil {
			continue
		}
		eq := JoinEq{
			Left:  ColumnRef{Table: r.ChildTableName, Column: r.ChildForeignKey},
			Right: ColumnRef{Table: r.ParentTableName, Column: r.ParentPrimaryKey},
		}
		key := fmt.Sprintf("relationships[%d]", i)
		if eq.Left.Table == eq.Right.Table {
			p.sdvError(0, key, "%s = %s: self-relationships are not supported", eq.Left, eq.Right)
		}
		if l, rr := p.s.Column(eq.Left), p.s.Column(eq.Right); l == nil || rr == nil {
			p.sdvError(0, key, "%s = %s: column not declared", eq.Left, eq.Right)
		} else if l.Type != rr.Type {
			p.sdvError(0, key, "%s (%s) = %s (%s): join columns must have the same type", eq.Left, l.Type, eq.Right, rr.Type)
		}
		dup := false
		for _, e := range p.s.Join {
			if e == eq || (e.Left == eq.Right && e.Right == eq.Left) {
				dup = true
			}
		}
		if !dup {
			p.s.Join = append(p.s.Join, eq)
		}
	}
}
