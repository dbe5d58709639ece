package tpchgen

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "github.com/duckdb/duckdb-go/v2" // the Parquet format's converter
	"golang.org/x/sync/errgroup"
)

// Config says what to generate. The zero value is not valid: ScaleFactor
// and Dir are required.
type Config struct {
	// ScaleFactor is TPC-H's SF: customer has 150,000·SF rows, orders
	// 1,500,000·SF and lineitem about 6,000,000·SF. Any value > 0; every
	// table has at least one row.
	ScaleFactor float64
	// Seed selects the random streams; the same Config writes the same
	// bytes.
	Seed uint64
	// Dir is the folder the CSV files are written to (created when
	// missing). Existing files of the same names are replaced.
	Dir string
	// Format is the files' format: "csv" (the default when empty) or
	// "parquet". Parquet files are the CSV files converted by embedded
	// DuckDB (COPY … TO … (FORMAT parquet), one thread so that the bytes do
	// not depend on the machine, columns typed by DuckDB's CSV sniffer
	// among BIGINT, DOUBLE, DATE and VARCHAR: BIGINT keys and integers,
	// DOUBLE prices, DATE dates, VARCHAR text; zstd, row order kept).
	Format string
	// Skew, when > 1, draws o_custkey from a Zipf law with exponent Skew
	// over the customers that may order (rank 1 the smallest key); 0 (the
	// default) draws it uniformly as TPC-H does. Values in (0, 1] are
	// invalid.
	Skew float64
}

// Validate reports a configuration that cannot be generated.
func (c Config) Validate() error {
	switch {
	case math.IsNaN(c.ScaleFactor) || math.IsInf(c.ScaleFactor, 0) || c.ScaleFactor <= 0:
		return fmt.Errorf("%w: scale factor %v (want a finite number > 0)", ErrConfig, c.ScaleFactor)
	case c.ScaleFactor > 1000:
		return fmt.Errorf("%w: scale factor %v (at most 1000)", ErrConfig, c.ScaleFactor)
	case c.Dir == "":
		return fmt.Errorf("%w: no output folder", ErrConfig)
	case c.Format != "" && c.Format != FormatCSV && c.Format != FormatParquet:
		return fmt.Errorf("%w: format %q (want %q or %q)", ErrConfig, c.Format, FormatCSV, FormatParquet)
	case math.IsNaN(c.Skew) || math.IsInf(c.Skew, 0) || c.Skew < 0 || (c.Skew > 0 && c.Skew <= 1):
		return fmt.Errorf("%w: skew %v (0 for TPC-H's uniform draw, or a Zipf exponent > 1)", ErrConfig, c.Skew)
	}
	return nil
}

// The formats of [Config.Format].
const (
	FormatCSV     = "csv"
	FormatParquet = "parquet"
)

// ErrConfig is wrapped by the errors of an invalid [Config].
var ErrConfig = errors.New("tpchgen: invalid configuration")

// Sizes are the row counts of a scale factor.
type Sizes struct {
	Customers, Orders, Parts, Suppliers, Clerks int64
}

// SizesOf returns the row counts TPC-H gives a scale factor, each at
// least 1.
func SizesOf(sf float64) Sizes {
	n := func(base float64) int64 { return max(1, int64(math.Round(base*sf))) }
	return Sizes{Customers: n(150_000), Orders: n(1_500_000), Parts: n(200_000), Suppliers: n(10_000), Clerks: n(1_000)}
}

// Result reports what [Generate] wrote.
type Result struct {
	// Files maps each table name to its file's path.
	Files map[string]string
	// Rows maps each table name to its number of data rows.
	Rows map[string]int64
}

// Tables are the tables written, in order.
var Tables = []string{"region", "nation", "customer", "orders", "lineitem"}

// Fixed TPC-H vocabularies.
var (
	// Regions are r_name by r_regionkey.
	Regions = []string{"AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"}
	// Nations are n_name by n_nationkey, with their n_regionkey.
	Nations = []struct {
		Name   string
		Region int
	}{
		{"ALGERIA", 0}, {"ARGENTINA", 1}, {"BRAZIL", 1}, {"CANADA", 1}, {"EGYPT", 4},
		{"ETHIOPIA", 0}, {"FRANCE", 3}, {"GERMANY", 3}, {"INDIA", 2}, {"INDONESIA", 2},
		{"IRAN", 4}, {"IRAQ", 4}, {"JAPAN", 2}, {"JORDAN", 4}, {"KENYA", 0},
		{"MOROCCO", 0}, {"MOZAMBIQUE", 0}, {"PERU", 1}, {"CHINA", 2}, {"ROMANIA", 3},
		{"SAUDI ARABIA", 4}, {"VIETNAM", 2}, {"RUSSIA", 3}, {"UNITED KINGDOM", 3}, {"UNITED STATES", 1},
	}
	// Segments are the values of c_mktsegment.
	Segments = []string{"AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY"}
	// Priorities are the values of o_orderpriority.
	Priorities = []string{"1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"}
	instructs  = []string{"DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"}
	modes      = []string{"REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"}
	words      = []string{"furiously", "carefully", "quickly", "slyly", "blithely", "regular", "final", "ironic",
		"pending", "express", "special", "bold", "even", "deposits", "requests", "accounts", "packages",
		"instructions", "theodolites", "pinto", "beans", "foxes", "ideas", "dependencies", "platelets"}
)

// TPC-H's dates (§4.2.3): orders fall in [startDate, endDate−151 days];
// currentDate splits returned from open lines.
var (
	startDate   = day(1992, 1, 1)
	endDate     = day(1998, 12, 31)
	currentDate = day(1995, 6, 17)
)

// day is the number of days since 1970-01-01.
func day(y int, m time.Month, d int) int {
	return int(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400)
}

// Stream identifiers: each table draws from its own PCG stream.
const (
	streamCustomer = 0x637573746f6d6572
	streamOrders   = 0x6f7264657273
	streamText     = 0x74657874
)

// Generate writes region.csv, nation.csv, customer.csv, orders.csv and
// lineitem.csv (or .parquet, see [Config.Format]) into cfg.Dir. The files
// appear only when all of them are complete: on error or cancellation no
// file is left behind (temporary files are removed) and earlier files of
// the same names stay as they were.
func Generate(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("tpchgen: %w", err)
	}
	sz := SizesOf(cfg.ScaleFactor)
	res := &Result{Files: map[string]string{}, Rows: map[string]int64{}}
	tmp := map[string]*os.File{}
	defer func() {
		for _, f := range tmp {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	for _, t := range Tables {
		f, err := os.CreateTemp(cfg.Dir, "."+t+"-*.csv.tmp")
		if err != nil {
			return nil, fmt.Errorf("tpchgen: %w", err)
		}
		tmp[t] = f
	}
	pool := newTextPool(cfg.Seed)
	rows := map[string]*int64{}
	for _, t := range Tables {
		rows[t] = new(int64)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return writeTable(gctx, tmp["region"], func(w *rowWriter) error { return writeRegion(w, pool, rows["region"]) })
	})
	g.Go(func() error {
		return writeTable(gctx, tmp["nation"], func(w *rowWriter) error { return writeNation(w, pool, rows["nation"]) })
	})
	g.Go(func() error {
		return writeTable(gctx, tmp["customer"], func(w *rowWriter) error {
			return writeCustomer(gctx, w, cfg.Seed, sz, pool, rows["customer"])
		})
	})
	g.Go(func() error {
		// orders and lineitem are drawn together: an order's status and
		// total price follow from its lines.
		lw := newRowWriter(tmp["lineitem"])
		err := writeTable(gctx, tmp["orders"], func(w *rowWriter) error {
			return writeOrders(gctx, w, lw, cfg, sz, pool, rows["orders"], rows["lineitem"])
		})
		if err != nil {
			return err
		}
		return lw.close()
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	final := map[string]string{} // table → the temporary file renamed
	for _, t := range Tables {
		f := tmp[t]
		if err := f.Close(); err != nil {
			return nil, fmt.Errorf("tpchgen: %s: %w", t, err)
		}
		final[t] = f.Name()
		res.Files[t] = filepath.Join(cfg.Dir, t+".csv")
		res.Rows[t] = *rows[t]
	}
	if cfg.Format == FormatParquet {
		if err := toParquet(ctx, cfg.Dir, final, tmp); err != nil {
			return nil, err
		}
		for _, t := range Tables {
			res.Files[t] = filepath.Join(cfg.Dir, t+".parquet")
		}
	}
	for _, t := range Tables {
		if err := os.Chmod(final[t], 0o644); err != nil {
			return nil, fmt.Errorf("tpchgen: %s: %w", t, err)
		}
	}
	// Every table is complete: rename them all.
	for _, t := range Tables {
		if err := os.Rename(final[t], res.Files[t]); err != nil {
			return nil, fmt.Errorf("tpchgen: %s: %w", t, err)
		}
		delete(tmp, t)
	}
	return res, nil
}

// toParquet converts each table's temporary CSV file final[t] into a
// temporary Parquet file in dir with embedded DuckDB, and sets final[t] to
// it; the Parquet files join tmp (keyed by "t.parquet") so that they are
// removed on error, and the CSV files are removed.
func toParquet(ctx context.Context, dir string, final map[string]string, tmp map[string]*os.File) error {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return fmt.Errorf("tpchgen: %w", err)
	}
	defer db.Close()
	// One thread: DuckDB cuts row groups per thread, so the bytes would
	// depend on the machine's cores; one connection keeps the setting.
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, "SET threads = 1"); err != nil {
		return fmt.Errorf("tpchgen: %w", err)
	}
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	for _, t := range Tables {
		pq, err := os.CreateTemp(dir, "."+t+"-*.parquet.tmp")
		if err != nil {
			return fmt.Errorf("tpchgen: %w", err)
		}
		pq.Close()
		tmp[t+".parquet"] = pq
		// Written in place (USE_TMP_FILE false: DuckDB's own temporary
		// file would be left behind by a cancelled COPY), and typed
		// without BOOLEAN (a text column whose sample is all F or T would
		// become one).
		q := "COPY (SELECT * FROM read_csv(" + quote(final[t]) + ", header = true, auto_type_candidates = ['BIGINT', 'DOUBLE', 'DATE', 'VARCHAR'])) TO " +
			quote(pq.Name()) + " (FORMAT parquet, COMPRESSION zstd, USE_TMP_FILE false)"
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("tpchgen: %s to Parquet: %w", t, err)
		}
		if err := os.Remove(final[t]); err != nil {
			return fmt.Errorf("tpchgen: %w", err)
		}
		tmp[t], final[t] = pq, pq.Name()
		delete(tmp, t+".parquet")
	}
	return nil
}

// writeTable runs fill on a buffered writer over f and flushes it.
func writeTable(ctx context.Context, f *os.File, fill func(*rowWriter) error) error {
	w := newRowWriter(f)
	if err := fill(w); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return w.close()
}

// rowWriter builds CSV lines in a reused buffer.
type rowWriter struct {
	f    *os.File
	bw   *bufio.Writer
	line []byte
}

func newRowWriter(f *os.File) *rowWriter {
	return &rowWriter{f: f, bw: bufio.NewWriterSize(f, 1<<20), line: make([]byte, 0, 512)}
}

func (w *rowWriter) str(s string) {
	if len(w.line) > 0 {
		w.line = append(w.line, ',')
	}
	w.line = append(w.line, s...)
}

func (w *rowWriter) int(v int64) {
	if len(w.line) > 0 {
		w.line = append(w.line, ',')
	}
	w.line = strconv.AppendInt(w.line, v, 10)
}

// cents writes v/100 with two decimals.
func (w *rowWriter) cents(v int64) {
	if len(w.line) > 0 {
		w.line = append(w.line, ',')
	}
	if v < 0 {
		w.line = append(w.line, '-')
		v = -v
	}
	w.line = strconv.AppendInt(w.line, v/100, 10)
	w.line = append(w.line, '.', byte('0'+v%100/10), byte('0'+v%10))
}

// date writes a day count as YYYY-MM-DD.
func (w *rowWriter) date(d int) {
	if len(w.line) > 0 {
		w.line = append(w.line, ',')
	}
	if k := d - startDate; k >= 0 && k < len(dateText) {
		w.line = append(w.line, dateText[k]...)
		return
	}
	w.line = time.Unix(int64(d)*86400, 0).UTC().AppendFormat(w.line, time.DateOnly)
}

// dateText holds the text of every day from startDate to a year past
// endDate, the range every generated date falls in.
var dateText = func() []string {
	out := make([]string, endDate+366-startDate)
	for k := range out {
		out[k] = time.Unix(int64(startDate+k)*86400, 0).UTC().Format(time.DateOnly)
	}
	return out
}()

// padded writes prefix followed by v in 9 digits.
func (w *rowWriter) padded(prefix string, v int64) {
	if len(w.line) > 0 {
		w.line = append(w.line, ',')
	}
	w.line = append(w.line, prefix...)
	var b [20]byte
	s := strconv.AppendInt(b[:0], v, 10)
	for i := len(s); i < 9; i++ {
		w.line = append(w.line, '0')
	}
	w.line = append(w.line, s...)
}

// end finishes a line.
func (w *rowWriter) end() error {
	w.line = append(w.line, '\n')
	_, err := w.bw.Write(w.line)
	w.line = w.line[:0]
	return err
}

func (w *rowWriter) header(cols ...string) error {
	for _, c := range cols {
		w.str(c)
	}
	return w.end()
}

func (w *rowWriter) close() error {
	if err := w.bw.Flush(); err != nil {
		return fmt.Errorf("tpchgen: writing %s: %w", w.f.Name(), err)
	}
	return nil
}

// textPool holds precomputed comments and addresses, drawn by index.
type textPool struct {
	comments, addresses []string
}

func newTextPool(seed uint64) *textPool {
	r := rand.New(rand.NewPCG(seed, streamText))
	p := &textPool{comments: make([]string, 1024), addresses: make([]string, 1024)}
	const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	for i := range p.comments {
		n := 2 + r.IntN(5)
		var b []byte
		for k := 0; k < n; k++ {
			if k > 0 {
				b = append(b, ' ')
			}
			b = append(b, words[r.IntN(len(words))]...)
		}
		p.comments[i] = string(b)
		a := make([]byte, 10+r.IntN(31))
		for k := range a {
			a[k] = alnum[r.IntN(len(alnum))]
		}
		p.addresses[i] = string(a)
	}
	return p
}

func (p *textPool) comment(r *rand.Rand) string { return p.comments[r.IntN(len(p.comments))] }

func writeRegion(w *rowWriter, p *textPool, n *int64) error {
	if err := w.header("r_regionkey", "r_name", "r_comment"); err != nil {
		return err
	}
	for k, name := range Regions {
		w.int(int64(k))
		w.str(name)
		w.str(p.comments[k])
		if err := w.end(); err != nil {
			return err
		}
		*n++
	}
	return nil
}

func writeNation(w *rowWriter, p *textPool, n *int64) error {
	if err := w.header("n_nationkey", "n_name", "n_regionkey", "n_comment"); err != nil {
		return err
	}
	for k, nat := range Nations {
		w.int(int64(k))
		w.str(nat.Name)
		w.int(int64(nat.Region))
		w.str(p.comments[len(Regions)+k])
		if err := w.end(); err != nil {
			return err
		}
		*n++
	}
	return nil
}

// checkEvery is how many rows are written between looks at the context.
const checkEvery = 1 << 14

func writeCustomer(ctx context.Context, w *rowWriter, seed uint64, sz Sizes, p *textPool, n *int64) error {
	r := rand.New(rand.NewPCG(seed, streamCustomer))
	if err := w.header("c_custkey", "c_name", "c_address", "c_nationkey", "c_phone", "c_acctbal", "c_mktsegment", "c_comment"); err != nil {
		return err
	}
	var phone []byte
	for key := int64(1); key <= sz.Customers; key++ {
		if key%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		nation := r.IntN(len(Nations))
		w.int(key)
		w.padded("Customer#", key)
		w.str(p.addresses[r.IntN(len(p.addresses))])
		w.int(int64(nation))
		// Phone: country code (nation + 10), then 3-3-4 digits.
		phone = strconv.AppendInt(phone[:0], int64(nation+10), 10)
		for _, part := range []struct{ lo, n int }{{100, 900}, {100, 900}, {1000, 9000}} {
			phone = append(phone, '-')
			phone = strconv.AppendInt(phone, int64(part.lo+r.IntN(part.n)), 10)
		}
		w.str(string(phone))
		w.cents(int64(r.IntN(1_099_999)) - 99_999) // [−999.99, 9999.99]
		w.str(Segments[r.IntN(len(Segments))])
		w.str(p.comment(r))
		if err := w.end(); err != nil {
			return err
		}
		*n++
	}
	return nil
}

// orderKey is TPC-H's sparse key of the i-th order (0-based): the first 8
// of every 32 keys.
func orderKey(i int64) int64 { return i/8*32 + i%8 + 1 }

// eligibleCustomer is the k-th (0-based) customer key that is not a
// multiple of 3: TPC-H gives those customers no order.
func eligibleCustomer(k int64) int64 { return k/2*3 + k%2 + 1 }

// eligibleCount is the number of customer keys in 1…n that are not a
// multiple of 3.
func eligibleCount(n int64) int64 { return n - n/3 }

// retailPrice is p_retailprice of a part in cents (TPC-H §4.2.3).
func retailPrice(part int64) int64 { return 90000 + (part/10)%20001 + 100*(part%1000) }

// supplier is the i-th (0…3) supplier of a part (TPC-H's partsupp rule).
func supplier(part, i, s int64) int64 { return (part+i*(s/4+(part-1)/s))%s + 1 }

type line struct {
	part, supp, qty, price, disc, tax int64
	ship, commit, receipt             int
	flag, status                      byte
	instruct, mode                    string
	comment                           string
}

func writeOrders(ctx context.Context, ow, lw *rowWriter, cfg Config, sz Sizes, p *textPool, nOrders, nLines *int64) error {
	r := rand.New(rand.NewPCG(cfg.Seed, streamOrders))
	if err := ow.header("o_orderkey", "o_custkey", "o_orderstatus", "o_totalprice", "o_orderdate",
		"o_orderpriority", "o_clerk", "o_shippriority", "o_comment"); err != nil {
		return err
	}
	if err := lw.header("l_orderkey", "l_partkey", "l_suppkey", "l_linenumber", "l_quantity", "l_extendedprice",
		"l_discount", "l_tax", "l_returnflag", "l_linestatus", "l_shipdate", "l_commitdate", "l_receiptdate",
		"l_shipinstruct", "l_shipmode", "l_comment"); err != nil {
		return err
	}
	eligible := eligibleCount(sz.Customers)
	var zipf *rand.Zipf
	if cfg.Skew > 1 {
		zipf = rand.NewZipf(r, cfg.Skew, 1, uint64(eligible-1))
	}
	lastOrder := endDate - 151 - startDate
	var lines [7]line
	for i := int64(0); i < sz.Orders; i++ {
		if i%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		key := orderKey(i)
		var cust int64
		if zipf != nil {
			cust = eligibleCustomer(int64(zipf.Uint64()))
		} else {
			cust = eligibleCustomer(r.Int64N(eligible))
		}
		odate := startDate + r.IntN(lastOrder+1)
		prio := Priorities[r.IntN(len(Priorities))]
		clerk := 1 + r.Int64N(sz.Clerks)
		ocomment := p.comment(r)
		n := 1 + r.IntN(7)
		var total int64
		nF, nO := 0, 0
		for k := 0; k < n; k++ {
			l := &lines[k]
			l.part = 1 + r.Int64N(sz.Parts)
			l.supp = supplier(l.part, int64(r.IntN(4)), sz.Suppliers)
			l.qty = 1 + int64(r.IntN(50))
			l.price = l.qty * retailPrice(l.part)
			l.disc = int64(r.IntN(11))
			l.tax = int64(r.IntN(9))
			l.ship = odate + 1 + r.IntN(121)
			l.commit = odate + 30 + r.IntN(61)
			l.receipt = l.ship + 1 + r.IntN(30)
			if l.receipt <= currentDate {
				l.flag = "RA"[r.IntN(2)]
			} else {
				l.flag = 'N'
			}
			if l.ship > currentDate {
				l.status = 'O'
				nO++
			} else {
				l.status = 'F'
				nF++
			}
			l.instruct = instructs[r.IntN(len(instructs))]
			l.mode = modes[r.IntN(len(modes))]
			l.comment = p.comment(r)
			// price·(1+tax)·(1−discount), rounded to the cent.
			total += (l.price*(100+l.tax)*(100-l.disc) + 5000) / 10000
		}
		status := "P"
		switch {
		case nF == n:
			status = "F"
		case nO == n:
			status = "O"
		}
		ow.int(key)
		ow.int(cust)
		ow.str(status)
		ow.cents(total)
		ow.date(odate)
		ow.str(prio)
		ow.padded("Clerk#", clerk)
		ow.int(0)
		ow.str(ocomment)
		if err := ow.end(); err != nil {
			return err
		}
		*nOrders++
		for k := 0; k < n; k++ {
			l := &lines[k]
			lw.int(key)
			lw.int(l.part)
			lw.int(l.supp)
			lw.int(int64(k + 1))
			lw.int(l.qty)
			lw.cents(l.price)
			lw.cents(l.disc)
			lw.cents(l.tax)
			lw.str(string(l.flag))
			lw.str(string(l.status))
			lw.date(l.ship)
			lw.date(l.commit)
			lw.date(l.receipt)
			lw.str(l.instruct)
			lw.str(l.mode)
			lw.str(l.comment)
			if err := lw.end(); err != nil {
				return err
			}
			*nLines++
		}
	}
	return nil
}
