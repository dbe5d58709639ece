package engine

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/synth-dp/synth/spec"
)

// ShardsParam is the parameter of a PostgreSQL URL naming the foreign
// servers (postgres_fdw) that the engine spreads the loaded relations over,
// comma-separated: postgres://…/db?synth_shards=shard_1,shard_2. Without it
// the engine keeps every table on the server it connects to.
// scripts/pg-cluster.sh sets up such a cluster and prints such a URL.
const ShardsParam = "synth_shards"

// shardedPostgres is the [dialect] of a PostgreSQL coordinator whose
// private relations live on other PostgreSQL servers (the shards), reached
// through postgres_fdw foreign servers: every statement is the PostgreSQL
// dialect's, and after [Engine.Load] has built the engine tables on the
// coordinator, distribute replaces each relation that has a join attribute
// by a table hash-partitioned on that attribute whose partitions are
// foreign tables, one per shard. The statistics' SQL is unchanged: the
// coordinator's planner pushes the scans down to the shards and, with
// partitionwise aggregation (set on the engine's sessions), whole
// group-bys on the partition key, scanning the shards concurrently
// (asynchronous Append; async_capable on the foreign servers); with
// partitionwise join, joins on the partition key run partition by
// partition. Other group-bys aggregate partially on the coordinator, and
// the joins run there too: PostgreSQL 15's postgres_fdw pushes down
// neither partial aggregates nor, under its cost estimates, joins.
//
// The shards need nothing but PostgreSQL: the coordinator creates the
// remote tables through dblink with the foreign servers' user mappings, in
// a schema of the same name as the engine's work schema. The coordinator
// needs the extensions postgres_fdw and dblink, and one foreign server and
// user mapping per shard; the shards must not be shared with another
// coordinator (the left-overs of crashed engines are recognised by the
// coordinator's advisory locks, see [shardedPostgres.dropStaleRemote]).
//
// Which column partitions a relation ([shardKey]): its first join
// attribute in declaration order that is part of its primary key, else its
// first join attribute. On TPC-H: customer by c_custkey, orders by
// o_orderkey, lineitem by l_orderkey, so that orders ⋈ lineitem — the
// largest join — is co-located and joins partition by partition. Public relations and relations with no join attribute stay on
// the coordinator (they are small, or have no key to co-locate by).
//
// Remote DDL is not transactional: the remote tables are created by dblink
// connections of their own, committed at once, while the rows reach them
// through postgres_fdw inside Load's transaction (committed with it). A
// Load that fails or is replaced leaves unreferenced remote tables behind:
// each distribute first empties, inside Load's transaction, the remote
// tables of the relations it replaces and drops the remote tables that no
// foreign table of the coordinator's work schema refers to (neither in
// Load's transaction nor in the committed state) — see
// [shardedPostgres.dropOrphans]; [Engine.Close] drops the remote schemas,
// and [openPostgres] drops those of crashed engines.
type shardedPostgres struct {
	postgres
	shards []string // foreign server names
	schema string   // the work schema, also the schema on the shards
	dblink string   // the schema of the dblink extension, quoted
	db     *sql.DB  // the coordinator, for the committed state
}

var (
	_ dialect     = shardedPostgres{}
	_ stager      = shardedPostgres{}
	_ distributor = shardedPostgres{}
)

// shardNameRE is what [ShardsParam] accepts as a foreign server name.
var shardNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// shardSession are the session settings of a sharded engine's
// connections, unless the URL sets them: aggregate and join partition by
// partition, so that group-bys on the partition key run on the shards and
// joins on it pair partitions instead of whole tables.
var shardSession = map[string]string{
	"enable_partitionwise_aggregate": "on",
	"enable_partitionwise_join":      "on",
}

// splitShards removes [ShardsParam] from a PostgreSQL URL (the server
// would reject an unknown parameter) and returns the URL left and the
// shard names, nil when the URL has none.
func splitShards(dsn string) (string, []string, error) {
	base, query, ok := strings.Cut(dsn, "?")
	if !ok {
		return dsn, nil, nil
	}
	var kept, shards []string
	found := false
	for _, kv := range strings.Split(query, "&") {
		k, v, _ := strings.Cut(kv, "=")
		if u, err := url.QueryUnescape(v); err == nil {
			v = u
		}
		if k != ShardsParam {
			kept = append(kept, kv)
			continue
		}
		if found {
			return "", nil, fmt.Errorf("%s given twice", ShardsParam)
		}
		found = true
		for _, s := range strings.Split(v, ",") {
			if !shardNameRE.MatchString(s) {
				return "", nil, fmt.Errorf("%s: %q is not a foreign server name (letters, digits and _, at most 63)", ShardsParam, s)
			}
			if slices.Contains(shards, s) {
				return "", nil, fmt.Errorf("%s: %q appears twice", ShardsParam, s)
			}
			shards = append(shards, s)
		}
	}
	if len(kept) > 0 {
		base += "?" + strings.Join(kept, "&")
	}
	return base, shards, nil
}

// openShards checks that the coordinator has the extensions and foreign
// servers the sharded dialect needs and returns the dialect.
func openShards(ctx context.Context, db *sql.DB, schema string, shards []string) (shardedPostgres, error) {
	d := shardedPostgres{shards: shards, schema: schema, db: db}
	var ext []string
	rows, err := db.QueryContext(ctx, "SELECT extname, quote_ident(n.nspname) FROM pg_catalog.pg_extension x JOIN pg_catalog.pg_namespace n ON n.oid = x.extnamespace WHERE extname IN ('postgres_fdw', 'dblink')")
	if err != nil {
		return d, fmt.Errorf("sharded engine: listing extensions: %w", err)
	}
	for rows.Next() {
		var name, nsp string
		if err := rows.Scan(&name, &nsp); err != nil {
			rows.Close()
			return d, fmt.Errorf("sharded engine: listing extensions: %w", err)
		}
		ext = append(ext, name)
		if name == "dblink" {
			d.dblink = nsp
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return d, fmt.Errorf("sharded engine: listing extensions: %w", err)
	}
	for _, x := range []string{"postgres_fdw", "dblink"} {
		if !slices.Contains(ext, x) {
			return d, fmt.Errorf("sharded engine (%s): the coordinator lacks the extension %s (CREATE EXTENSION %s; see scripts/pg-cluster.sh)", ShardsParam, x, x)
		}
	}
	for _, s := range shards {
		var wrapper string
		err := db.QueryRowContext(ctx, "SELECT w.fdwname FROM pg_catalog.pg_foreign_server s JOIN pg_catalog.pg_foreign_data_wrapper w ON w.oid = s.srvfdw WHERE s.srvname = $1", s).Scan(&wrapper)
		if errors.Is(err, sql.ErrNoRows) {
			return d, fmt.Errorf("sharded engine (%s): no foreign server %q on the coordinator (CREATE SERVER %s FOREIGN DATA WRAPPER postgres_fdw …; see scripts/pg-cluster.sh)", ShardsParam, s, s)
		}
		if err != nil {
			return d, fmt.Errorf("sharded engine: foreign server %q: %w", s, err)
		}
		if wrapper != "postgres_fdw" {
			return d, fmt.Errorf("sharded engine (%s): foreign server %q uses %s, not postgres_fdw", ShardsParam, s, wrapper)
		}
	}
	return d, nil
}

// remote runs a statement on shard s through dblink (a connection of its
// own, committed at once).
func (d shardedPostgres) remote(ctx context.Context, q querier, s, stmt string) error {
	if _, err := q.ExecContext(ctx, "SELECT "+d.dblink+".dblink_exec("+d.str(s)+", "+d.str(stmt)+")"); err != nil {
		return fmt.Errorf("shard %s: %w", s, err)
	}
	return nil
}

// remoteStrings runs a query returning one text column on shard s.
func (d shardedPostgres) remoteStrings(ctx context.Context, q querier, s, query string) ([]string, error) {
	rows, err := q.QueryContext(ctx, "SELECT v FROM "+d.dblink+".dblink("+d.str(s)+", "+d.str(query)+") AS r(v TEXT)")
	if err != nil {
		return nil, fmt.Errorf("shard %s: %w", s, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("shard %s: %w", s, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("shard %s: %w", s, err)
	}
	return out, nil
}

// shardKey is the column that partitions relation t, "" when t stays on
// the coordinator: see [shardedPostgres].
func shardKey(s *spec.Spec, t *spec.Table) string {
	if t.Public {
		return ""
	}
	joined := map[string]bool{}
	for _, j := range s.Join {
		for _, r := range []spec.ColumnRef{j.Left, j.Right} {
			if r.Table == t.Name {
				joined[r.Column] = true
			}
		}
	}
	first := ""
	for _, c := range t.Columns {
		if !joined[c.Name] {
			continue
		}
		if slices.Contains(t.PrimaryKey, c.Name) {
			return c.Name
		}
		if first == "" {
			first = c.Name
		}
	}
	return first
}

// foreignTablesSQL lists the foreign servers and remote tables the foreign
// tables of the work schema refer to.
const foreignTablesSQL = `SELECT v.srvname, o.option_value FROM pg_catalog.pg_foreign_table f
JOIN pg_catalog.pg_class c ON c.oid = f.ftrelid
JOIN pg_catalog.pg_foreign_server v ON v.oid = f.ftserver,
LATERAL pg_catalog.pg_options_to_table(f.ftoptions) o
WHERE c.relnamespace = pg_catalog.to_regnamespace(pg_catalog.current_schema()) AND o.option_name = 'table_name'`

// distribute replaces every relation of s with a join attribute by a table
// hash-partitioned over the shards (see [shardedPostgres]); it runs in
// Load's transaction tx.
func (d shardedPostgres) distribute(ctx context.Context, tx querier, s *spec.Spec) error {
	// One dblink connection per shard for all the remote DDL of the load
	// (plus one listing its tables): the left-overs dropped, the new
	// tables created.
	remote, err := d.dropOrphans(ctx, tx)
	if err != nil {
		return err
	}
	type move struct{ name, key, def, token string }
	var moves []move
	for i := range s.Tables {
		t := &s.Tables[i]
		key := shardKey(s, t)
		if key == "" {
			continue
		}
		def, err := d.columnDefs(ctx, tx, t.Name)
		if err != nil {
			return fmt.Errorf("table %s: %w", t.Name, err)
		}
		var rnd [6]byte
		if _, err := rand.Read(rnd[:]); err != nil {
			return err
		}
		moves = append(moves, move{t.Name, key, def, hex.EncodeToString(rnd[:])})
	}
	for i, srv := range d.shards {
		ddl := remote[srv]
		if len(moves) > 0 {
			ddl = append(ddl, "CREATE SCHEMA IF NOT EXISTS "+d.ident(d.schema))
		}
		for _, m := range moves {
			ddl = append(ddl, "CREATE TABLE "+d.ident(d.schema)+"."+d.ident(partName(m.token, i))+" ("+m.def+")")
		}
		if len(ddl) == 0 {
			continue
		}
		if err := d.remote(ctx, tx, srv, strings.Join(ddl, "; ")); err != nil {
			return err
		}
	}
	for _, m := range moves {
		if err := d.distributeTable(ctx, tx, m.name, m.key, m.def, m.token); err != nil {
			return fmt.Errorf("table %s: %w", m.name, err)
		}
	}
	return nil
}

// partName is the name of the foreign table of the i-th shard's partition
// of a distributed relation, and of its remote table: names of the
// engine's own, as the relation's name may be long or odd.
func partName(token string, i int) string {
	return fmt.Sprintf("%spart_%s_%d", ReservedPrefix, token, i)
}

// columnDefs returns the column definitions of the engine table name as
// the coordinator has them, collations included.
func (d shardedPostgres) columnDefs(ctx context.Context, tx querier, name string) (string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT quote_ident(a.attname) || ' ' || pg_catalog.format_type(a.atttypid, a.atttypmod) ||
  CASE WHEN a.attcollation <> 0 AND a.attcollation <> t.typcollation THEN ' COLLATE ' || quote_ident(k.collname) ELSE '' END
FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
LEFT JOIN pg_catalog.pg_collation k ON k.oid = a.attcollation
WHERE a.attrelid = pg_catalog.to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
		d.ident(d.schema)+"."+d.ident(name))
	if err != nil {
		return "", fmt.Errorf("columns: %w", err)
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return "", fmt.Errorf("columns: %w", err)
		}
		cols = append(cols, c)
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("columns: %w", err)
	}
	if len(cols) == 0 {
		return "", fmt.Errorf("no engine table %q", name)
	}
	return strings.Join(cols, ", "), nil
}

// distributeTable replaces the engine table name by a table partitioned
// by hash of column key whose partitions are foreign tables on the
// shards, on the remote tables distribute created, and moves the rows.
func (d shardedPostgres) distributeTable(ctx context.Context, tx querier, name, key, def, token string) error {
	parent := ReservedPrefix + "dist_" + token
	n := len(d.shards)
	stmts := []string{"CREATE TABLE " + d.ident(parent) + " (" + def + ") PARTITION BY HASH (" + d.ident(key) + ")"}
	for i, srv := range d.shards {
		stmts = append(stmts, fmt.Sprintf("CREATE FOREIGN TABLE %s PARTITION OF %s FOR VALUES WITH (MODULUS %d, REMAINDER %d) SERVER %s OPTIONS (schema_name %s, table_name %s, use_remote_estimate 'true')",
			d.ident(partName(token, i)), d.ident(parent), n, i, d.ident(srv), d.str(d.schema), d.str(partName(token, i))))
	}
	// The foreign tables have no statistics on the coordinator (ANALYZE
	// would fetch every row once more), and the remote tables are not
	// analysed before the load commits: use_remote_estimate asks the shard
	// to estimate each scan, which PostgreSQL bases on the table's actual
	// size, instead of the coordinator assuming a few hundred rows (which
	// chooses sorts that spill).
	stmts = append(stmts,
		"INSERT INTO "+d.ident(parent)+" SELECT * FROM "+d.ident(name),
		"DROP TABLE "+d.ident(name),
		"ALTER TABLE "+d.ident(parent)+" RENAME TO "+d.ident(name),
	)
	for _, q := range stmts {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// dropOrphans drops the remote tables that no foreign table of the work
// schema refers to, neither in tx nor in the committed state: those of
// failed or replaced loads. The remote tables of the relations this load
// replaces (referred to in the committed state, no longer in tx) are
// emptied with TRUNCATE through postgres_fdw, in the remote transaction
// that commits or rolls back with tx: once the load commits no private
// row of a replaced relation stays on a shard, and a failed load leaves
// the old ones in place. They are dropped by the next load or by Close.
// dropOrphans returns, per shard, the statements dropping the orphans, for
// distribute to run with its own remote DDL.
func (d shardedPostgres) dropOrphans(ctx context.Context, tx querier) (map[string][]string, error) {
	var refs [2]map[[2]string]bool
	for k, q := range []querier{tx, d.db} {
		refs[k] = map[[2]string]bool{}
		rows, err := q.QueryContext(ctx, foreignTablesSQL)
		if err != nil {
			return nil, fmt.Errorf("listing foreign tables: %w", err)
		}
		for rows.Next() {
			var srv, table string
			if err := rows.Scan(&srv, &table); err != nil {
				rows.Close()
				return nil, fmt.Errorf("listing foreign tables: %w", err)
			}
			refs[k][[2]string{srv, table}] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("listing foreign tables: %w", err)
		}
	}
	out := map[string][]string{}
	for _, srv := range d.shards {
		names, err := d.remoteStrings(ctx, tx, srv, "SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = "+d.str(d.schema))
		if err != nil {
			return nil, err
		}
		var drop []string
		for _, n := range names {
			ref := [2]string{srv, n}
			switch {
			case !strings.HasPrefix(n, ReservedPrefix+"part_") || refs[0][ref]:
			case refs[1][ref]:
				// Replaced by this load: emptied in tx.
				ft := d.ident(ReservedPrefix + "trunc_" + n)
				for _, q := range []string{
					"CREATE FOREIGN TABLE " + ft + " () SERVER " + d.ident(srv) + " OPTIONS (schema_name " + d.str(d.schema) + ", table_name " + d.str(n) + ")",
					"TRUNCATE " + ft,
					"DROP FOREIGN TABLE " + ft,
				} {
					if _, err := tx.ExecContext(ctx, q); err != nil {
						return nil, fmt.Errorf("shard %s: emptying the replaced table %s: %w", srv, n, err)
					}
				}
			default:
				drop = append(drop, d.ident(d.schema)+"."+d.ident(n))
			}
		}
		if len(drop) > 0 {
			out[srv] = []string{"DROP TABLE IF EXISTS " + strings.Join(drop, ", ")}
		}
	}
	return out, nil
}

// dropRemote drops the engine's schema on every shard (at Close).
func (d shardedPostgres) dropRemote(ctx context.Context) error {
	var errs []error
	for _, srv := range d.shards {
		errs = append(errs, d.remote(ctx, d.db, srv, "DROP SCHEMA IF EXISTS "+d.ident(d.schema)+" CASCADE"))
	}
	return errors.Join(errs...)
}

// dropStaleRemote drops the work schemas that crashed engines left on the
// shards: those named like a work schema, not of a live engine of this
// process, whose advisory lock on the coordinator is free (held meanwhile
// as [Engine.dropIfUnlocked] does).
func (d shardedPostgres) dropStaleRemote(ctx context.Context) error {
	for _, srv := range d.shards {
		names, err := d.remoteStrings(ctx, d.db, srv, "SELECT nspname FROM pg_catalog.pg_namespace")
		if err != nil {
			return err
		}
		for _, s := range names {
			if !workSchemaRE.MatchString(s) || s == d.schema {
				continue
			}
			liveSchemas.Lock()
			live := liveSchemas.m[s]
			liveSchemas.Unlock()
			if live {
				continue
			}
			var rnd [8]byte
			if _, err := hex.Decode(rnd[:], []byte(strings.TrimPrefix(s, WorkSchemaPrefix))); err != nil {
				continue
			}
			if err := d.dropRemoteIfUnlocked(ctx, srv, s, schemaLockKey(rnd)); err != nil {
				return fmt.Errorf("dropping the left-over work schema %s on shard %s: %w", s, srv, err)
			}
		}
	}
	return nil
}

// dropRemoteIfUnlocked drops schema s on shard srv when no session of the
// coordinator holds its lock, holding the lock meanwhile.
func (d shardedPostgres) dropRemoteIfUnlocked(ctx context.Context, srv, s string, key int64) error {
	return withAdvisoryLock(ctx, d.db, key, func(conn *sql.Conn) error {
		return d.remote(ctx, conn, srv, "DROP SCHEMA IF EXISTS "+d.ident(s)+" CASCADE")
	})
}
