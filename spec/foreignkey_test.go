package spec

import "testing"

// TestJoinOrphans: join is a list (orphans: error) or a mapping with on
// and orphans.
func TestJoinOrphans(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Orphans
		eqs  int
	}{
		{`join: ["orders.o_custkey = customer.c_custkey"]`, OrphansError, 1},
		{`join: {on: ["orders.o_custkey = customer.c_custkey"], orphans: drop}`, OrphansDrop, 1},
		{`join: {on: ["orders.o_custkey = customer.c_custkey"], orphans: error}`, OrphansError, 1},
	} {
		s, err := Parse([]byte(withLine(17, tc.line)), "s.yaml")
		if err != nil {
			t.Fatalf("%s: %v", tc.line, err)
		}
		if s.Orphans != tc.want || len(s.Join) != tc.eqs {
			t.Errorf("%s: orphans %q, %d equalities; want %q, %d", tc.line, s.Orphans, len(s.Join), tc.want, tc.eqs)
		}
	}
}
