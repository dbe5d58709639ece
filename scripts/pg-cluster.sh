#!/usr/bin/env bash
# A throwaway sharded PostgreSQL cluster for synth: a coordinator and N
# shard servers, each a throwaway server of scripts/pg-throwaway.sh on its
# own port, in a folder of their own.
#
#   scripts/pg-cluster.sh start DIR [N]   start the coordinator (DIR/coord)
#                                         and N shards (DIR/shard_1 …,
#                                         default N = 2), print the
#                                         coordinator's URL for synth
#   scripts/pg-cluster.sh stop DIR        stop them all and remove DIR
#
# On the coordinator the script creates the extensions postgres_fdw and
# dblink (both ship with PostgreSQL's contrib, in Debian's postgresql-15)
# and one foreign server per shard, shard_1 … shard_N, with async_capable
# on (PostgreSQL's asynchronous Append scans the shards in parallel) and a
# user mapping for synth. The printed URL carries synth_shards=shard_1,…:
# synth's engine then hash-partitions the loaded relations over those
# foreign servers by join key (engine/postgres_shard.go). Everything
# listens on 127.0.0.1 only and trusts user synth, as the throwaway server
# does: for tests and measurements, not for real data.
#   export SYNTH_TEST_POSTGRES_CLUSTER=$(scripts/pg-cluster.sh start /tmp/pgc)
#   go test ./engine/ -run Shard ; scripts/pg-cluster.sh stop /tmp/pgc
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
throwaway=$here/pg-throwaway.sh

cmd=${1:-}
dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then
  echo "usage: $0 start DIR [N] | stop DIR" >&2
  exit 2
fi

psql_bin() {
  if [ -x /usr/lib/postgresql/15/bin/psql ]; then echo /usr/lib/postgresql/15/bin/psql; return; fi
  if command -v psql >/dev/null 2>&1; then command -v psql; return; fi
  local d
  for d in /usr/lib/postgresql/*/bin; do
    if [ -x "$d/psql" ]; then echo "$d/psql"; return; fi
  done
  echo "pg-cluster: no psql (apt-get install postgresql-client-15)" >&2
  exit 1
}

# hostport prints "HOST PORT" of a postgres:// URL printed by pg-throwaway.sh.
hostport() {
  local rest=${1#*@}
  rest=${rest%%/*}
  echo "${rest%:*} ${rest##*:}"
}

case "$cmd" in
start)
  n=${3:-2}
  case "$n" in
  '' | *[!0-9]*) echo "pg-cluster: N must be a positive integer, not \"$n\"" >&2; exit 2 ;;
  esac
  if [ "$n" -lt 1 ]; then echo "pg-cluster: N must be at least 1" >&2; exit 2; fi
  if [ -e "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
    echo "pg-cluster: $dir is not empty (stop the cluster there first)" >&2
    exit 1
  fi
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  chmod 755 "$dir"
  # On failure, stop whatever started.
  ok=
  trap '[ -n "$ok" ] || bash "$0" stop "$dir" >/dev/null 2>&1 || true' EXIT
  coord=$(bash "$throwaway" start "$dir/coord")
  psql=$(psql_bin)
  sql="CREATE EXTENSION IF NOT EXISTS postgres_fdw; CREATE EXTENSION IF NOT EXISTS dblink;"
  shards=
  for i in $(seq 1 "$n"); do
    url=$(bash "$throwaway" start "$dir/shard_$i")
    read -r host port <<<"$(hostport "$url")"
    # fetch_size: rows per round trip when the coordinator reads a shard
    # (postgres_fdw's default, 100, costs a round trip per 100 rows);
    # batch_size: rows per INSERT when the coordinator writes one.
    sql+=" CREATE SERVER shard_$i FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '$host', port '$port', dbname 'postgres', async_capable 'true', fetch_size '10000', batch_size '1000');"
    sql+=" CREATE USER MAPPING FOR synth SERVER shard_$i OPTIONS (user 'synth');"
    shards+=${shards:+,}shard_$i
  done
  "$psql" -X -q -v ON_ERROR_STOP=1 -d "${coord}" -c "$sql" >/dev/null
  ok=1
  echo "${coord}&synth_shards=${shards}"
  ;;
stop)
  if [ -d "$dir" ]; then
    for d in "$dir"/coord "$dir"/shard_*; do
      if [ -d "$d" ]; then bash "$throwaway" stop "$d"; fi
    done
    rm -rf "$dir"
  fi
  ;;
*)
  echo "usage: $0 start DIR [N] | stop DIR" >&2
  exit 2
  ;;
esac
