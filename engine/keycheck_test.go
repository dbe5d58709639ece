package engine

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synth-dp/synth/spec"
)

// keySpec writes customers and orders (the given CSV texts) into dir and
// parses a spec joining them on orders.o_custkey = customers.c_custkey,
// with the given primary keys and join section.
func keySpec(t *testing.T, dir, customers, orders, custPK, ordersPK, join string) *spec.Spec {
	t.Helper()
	for name, data := range map[string]string{"customers.csv": customers, "orders.csv": orders} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if join == "" {
		join = `join: ["orders.o_custkey = customers.c_custkey"]`
	}
	y := `privacy: {epsilon: 1, delta: 1e-6}
tables:
  - name: customers
    source: customers.csv
    primary_key: ` + custPK + `
    columns:
      c_custkey: {type: key}
      seg: {type: categorical, values: [A, B]}
  - name: orders
    source: orders.csv
    primary_key: ` + ordersPK + `
    columns:
      o_orderkey: {type: key}
      o_custkey: {type: key}
      prio: {type: categorical, values: [x, y]}
` + join + `
release: {columns: [seg, prio]}
`
	s, err := spec.Parse([]byte(y), filepath.Join(dir, "synth.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const (
	keyCustomers = "c_custkey,seg\n1,A\n2,B\n3,A\n"
	keyOrders    = "o_orderkey,o_custkey,prio\n10,1,x\n11,1,y\n12,2,x\n13,3,y\n"
)

// TestCheckPrimaryKeys: a duplicated or empty primary key is refused on
// every table, private or not, unit or not, single or composite, whatever
// the column's type; the error names the table, the column(s) and one
// duplicated value (the custodian's own data, as every data error does).
// Each case loaded without a word before the check existed.
func TestCheckPrimaryKeys(t *testing.T) { forEachOpener(t, testCheckPrimaryKeys) }

func testCheckPrimaryKeys(t *testing.T, openTest func(testing.TB) *Engine) {
	ctx := context.Background()
	tests := []struct {
		name              string
		customers, orders string
		custPK, ordersPK  string
		want              []string // substrings of the message; none: no error
		value             []string // the duplicated value (the error's field, not its text)
		count             int64
	}{
		{"clean", keyCustomers, keyOrders, "c_custkey", "o_orderkey", nil, nil, 0},
		{"clean composite", keyCustomers, keyOrders, "c_custkey", "[o_orderkey, o_custkey]", nil, nil, 0},
		{"duplicated key of a non-unit table", keyCustomers, keyOrders + "11,2,x\n", "c_custkey", "o_orderkey",
			[]string{"table orders", "o_orderkey", "not unique"}, []string{"11"}, 2},
		{"duplicated parent key", keyCustomers + "2,A\n", keyOrders, "c_custkey", "o_orderkey",
			[]string{"table customers", "c_custkey", "not unique"}, []string{"2"}, 2},
		{"duplicated composite key", keyCustomers, keyOrders + "12,2,y\n", "c_custkey", "[o_orderkey, o_custkey]",
			[]string{"table orders", "(o_orderkey, o_custkey)", "not unique"}, []string{"12", "2"}, 2},
		{"categorical primary key", keyCustomers, keyOrders, "seg", "o_orderkey",
			[]string{"table customers", "seg", "not unique"}, []string{"A"}, 2},
		{"empty primary key", keyCustomers, keyOrders + ",3,x\n", "c_custkey", "o_orderkey",
			[]string{"table orders", "o_orderkey", "is NULL"}, []string{"NULL"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := keySpec(t, t.TempDir(), tt.customers, tt.orders, tt.custPK, tt.ordersPK, "")
			e := openTest(t)
			if err := e.Load(ctx, s); err != nil {
				t.Fatal(err)
			}
			h, err := s.Hypergraph()
			if err != nil {
				t.Fatal(err)
			}
			err = e.CheckPrimaryKeys(ctx, s, h)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("clean keys refused: %v", err)
				}
				return
			}
			var de *DuplicateKeyError
			if !errors.As(err, &de) || !errors.Is(err, ErrData) {
				t.Fatalf("got %v, want a *DuplicateKeyError", err)
			}
			for _, w := range append(tt.want, "fix the data or the declared primary_key", "synth inspect") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
			// The value and its count are the custodian's (inspect prints
			// them); the message, which travels further, names neither.
			if !slices.Equal(de.Value, tt.value) || de.Count != tt.count {
				t.Errorf("value %q in %d rows, want %q in %d", de.Value, de.Count, tt.value, tt.count)
			}
			if tt.value[0] != "NULL" && strings.Contains(err.Error(), `"`+tt.value[0]+`"`) {
				t.Errorf("the message prints the private key value: %v", err)
			}
		})
	}
}

// TestCountOrphans: foreign keys that do not resolve are counted exactly
// (against a brute-force count in Go), split into empty keys and keys the
// parent lacks, and refused unless the spec declares join.orphans: drop.
// The error names the foreign key and the kind of orphans, neither a key
// value nor a count (inspect prints the counts).
func TestCountOrphans(t *testing.T) { forEachOpener(t, testCountOrphans) }

func testCountOrphans(t *testing.T, openTest func(testing.TB) *Engine) {
	ctx := context.Background()
	tests := []struct {
		name            string
		orders          string
		null, unmatched int64
	}{
		{"clean", keyOrders, 0, 0},
		{"half the orders point at no customer", "o_orderkey,o_custkey,prio\n10,1,x\n11,9,y\n12,2,x\n13,99,y\n", 0, 2},
		{"an empty foreign key", keyOrders + "14,,x\n", 1, 0},
		{"both", keyOrders + "14,,x\n15,4,y\n16,\"\",x\n", 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, drop := range []bool{false, true} {
				join := ""
				if drop {
					join = "join:\n  on: [\"orders.o_custkey = customers.c_custkey\"]\n  orphans: drop\n"
				}
				s := keySpec(t, t.TempDir(), keyCustomers, tt.orders, "c_custkey", "o_orderkey", join)
				e := openTest(t)
				if err := e.Load(ctx, s); err != nil {
					t.Fatal(err)
				}
				h, err := s.Hypergraph()
				if err != nil {
					t.Fatal(err)
				}
				got, err := e.CountOrphans(ctx, s, h)
				if err != nil {
					t.Fatal(err)
				}
				rows := int64(strings.Count(tt.orders, "\n") - 1)
				if len(got) != 1 || got[0].Key.Child != "orders" || got[0].Key.Parent != "customers" || got[0].Rows != rows ||
					got[0].Null != tt.null || got[0].Unmatched != tt.unmatched {
					t.Fatalf("orphans %+v, want %d rows, %d empty, %d unmatched", got, rows, tt.null, tt.unmatched)
				}
				err = e.CheckOrphans(ctx, s, h)
				switch {
				case drop || tt.null+tt.unmatched == 0:
					if err != nil {
						t.Fatalf("drop=%v: %v", drop, err)
					}
				default:
					var oe *OrphanError
					if !errors.As(err, &oe) || !errors.Is(err, ErrData) || !strings.Contains(err.Error(), "join.orphans: drop") ||
						!strings.Contains(err.Error(), "orders.o_custkey → customers.c_custkey") {
						t.Fatalf("got %v, want an *OrphanError naming the key and the fix", err)
					}
					if strings.Contains(err.Error(), "99") || strings.Contains(err.Error(), " of ") {
						t.Fatalf("the refusal prints a key value or a count: %v", err)
					}
				}
			}
		})
	}
}

// TestOrphansParquetNull: a NULL foreign key in a Parquet source is an
// orphan like an empty one in CSV.
func TestOrphansParquetNull(t *testing.T) { forEachOpener(t, testOrphansParquetNull) }

func testOrphansParquetNull(t *testing.T, openTest func(testing.TB) *Engine) {
	ctx := context.Background()
	dir := t.TempDir()
	s := keySpec(t, dir, keyCustomers, keyOrders, "c_custkey", "o_orderkey", "")
	pq := filepath.Join(dir, "orders.parquet")
	if _, err := duckTest(t).Exec(`COPY (SELECT * FROM (VALUES (10, 1, 'x'), (11, NULL, 'y'), (12, 2, 'x')) AS t(o_orderkey, o_custkey, prio)) TO '` +
		pq + `' (FORMAT parquet)`); err != nil {
		t.Fatal(err)
	}
	s.Tables[1].Source, s.Tables[1].Format = pq, "parquet"
	e := openTest(t)
	if err := e.Load(ctx, s); err != nil {
		t.Fatal(err)
	}
	h, _ := s.Hypergraph()
	got, err := e.CountOrphans(ctx, s, h)
	if err != nil || len(got) != 1 || got[0].Null != 1 || got[0].Unmatched != 0 || got[0].Rows != 3 {
		t.Fatalf("orphans %+v, %v; want 1 NULL of 3", got, err)
	}
	if err := e.CheckOrphans(ctx, s, h); !errors.Is(err, ErrData) {
		t.Fatalf("a NULL foreign key in Parquet: got %v, want a refusal", err)
	}
}

// TestForeignKeys: which equalities declare a foreign key.
func TestForeignKeys(t *testing.T) {
	s := keySpec(t, t.TempDir(), keyCustomers, keyOrders, "c_custkey", "o_orderkey", "")
	fks := s.ForeignKeys()
	if len(fks) != 1 || fks[0].Child != "orders" || fks[0].Columns[0] != "o_custkey" || fks[0].Parent != "customers" || fks[0].Key[0] != "c_custkey" {
		t.Fatalf("foreign keys %+v", fks)
	}
	// Written the other way round: the same key.
	s = keySpec(t, t.TempDir(), keyCustomers, keyOrders, "c_custkey", "o_orderkey", `join: ["customers.c_custkey = orders.o_custkey"]`)
	if fks := s.ForeignKeys(); len(fks) != 1 || fks[0].Child != "orders" {
		t.Fatalf("reversed equality: %+v", fks)
	}
	// No primary key on either side: nothing to resolve.
	s = keySpec(t, t.TempDir(), keyCustomers, keyOrders, "[c_custkey, seg]", "o_orderkey", "")
	if fks := s.ForeignKeys(); len(fks) != 0 {
		t.Fatalf("a partial key declared a foreign key: %+v", fks)
	}
}

// TestLoadDamagedCompressed: a truncated .csv.gz and one whose CRC does not
// verify fail the load naming the file; both loaded silently (the
// truncated one as a shorter table) before.
func TestLoadDamagedCompressed(t *testing.T) { forEachOpener(t, testLoadDamagedCompressed) }

func testLoadDamagedCompressed(t *testing.T, openTest func(testing.TB) *Engine) {
	ctx := context.Background()
	var plain bytes.Buffer
	plain.WriteString(strings.Join(ordersHeader, ",") + "\n")
	for i := range 2000 {
		plain.WriteString(strings.Join([]string{strconv.Itoa(i + 1), "c" + strconv.Itoa(i*7919%1000), "100.5", "1", "1-URGENT", "2020-01-01", "true"}, ",") + "\n")
	}
	var gz bytes.Buffer
	z := gzip.NewWriter(&gz)
	z.Write(plain.Bytes())
	z.Close()
	whole := gz.Bytes()
	crc := bytes.Clone(whole)
	crc[len(crc)-6] ^= 0xff // inside the CRC-32 of the trailer
	for _, tc := range []struct {
		name, want string
		data       []byte
	}{
		{"truncated", "truncated", whole[:len(whole)*2/3]},
		{"truncated trailer", "truncated", whole[:len(whole)-3]},
		{"bad crc", "damaged", crc},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := filepath.Join(t.TempDir(), "orders.csv.gz")
			if err := os.WriteFile(src, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			err := openTest(t).Load(ctx, ordersSpec(src, nil))
			if !errors.Is(err, ErrData) || !strings.Contains(err.Error(), src) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error naming %s and %q", err, src, tc.want)
			}
		})
	}
}

// TestLoadRefusesFIFO: a named pipe as a source is refused at once (it
// hung with no output before: nothing ever writes to it).
func TestLoadRefusesFIFO(t *testing.T) {
	src := filepath.Join(t.TempDir(), "orders.csv")
	if err := syscall.Mkfifo(src, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang fails, it does not block the suite
	defer cancel()
	err := openTest(t).Load(ctx, ordersSpec(src, nil))
	if !errors.Is(err, ErrData) || !strings.Contains(err.Error(), src) || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("got %v, want a refusal naming the FIFO", err)
	}
}
