#!/usr/bin/env bash
# A throwaway PostgreSQL server for synth's tests, in a folder of its own.
#
#   scripts/pg-throwaway.sh start DIR [PORT]   initdb DIR, start the server on
#                                              127.0.0.1:PORT (default: the first
#                                              free port from 55432), print its URL
#   scripts/pg-throwaway.sh stop DIR           stop it (immediate) and remove DIR
#
# The server trusts local connections as user synth, keeps no fsync, and
# listens on the loopback only. As root the server runs as the postgres
# user (PostgreSQL refuses to run as root). Needs PostgreSQL's server
# binaries (Debian: apt-get install postgresql-15).
#   export SYNTH_TEST_POSTGRES=$(scripts/pg-throwaway.sh start /tmp/pg)
#   go test ./engine/ ; scripts/pg-throwaway.sh stop /tmp/pg
set -euo pipefail

bindir() {
  if [ -x /usr/lib/postgresql/15/bin/pg_ctl ]; then echo /usr/lib/postgresql/15/bin; return; fi
  if command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/pg_ctl" ]; then pg_config --bindir; return; fi
  local d
  for d in /usr/lib/postgresql/*/bin; do
    if [ -x "$d/pg_ctl" ]; then echo "$d"; return; fi
  done
  if command -v pg_ctl >/dev/null 2>&1; then dirname "$(command -v pg_ctl)"; return; fi
  echo "pg-throwaway: no PostgreSQL server binaries (apt-get install postgresql-15)" >&2
  exit 1
}

# as runs a command as the server's owner: postgres when we are root.
as() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# free_port prints the first port from $1 (default 55432) to 55532 that
# nothing listens on.
free_port() {
  local p
  for p in $(seq "${1:-55432}" 55532); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  echo "pg-throwaway: no free port in 55432-55532" >&2
  exit 1
}

cmd=${1:-}
dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then
  echo "usage: $0 start DIR [PORT] | stop DIR" >&2
  exit 2
fi
bin=$(bindir)
case "$cmd" in
start)
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; fi
  as "$bin/initdb" -U synth -A trust -E UTF8 --locale=C --no-sync -D "$dir/data" >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; exit 1; }
  # A port free when probed can be taken before this server binds it (two
  # CI runs or test setups starting at once on one machine): without a
  # PORT argument, a start that could not bind its port tries the next
  # free one.
  from=55432
  while :; do
    port=${3:-$(free_port "$from")}
    seen=0
    [ -f "$dir/server.log" ] && seen=$(wc -l <"$dir/server.log")
    if as "$bin/pg_ctl" -w -D "$dir/data" -l "$dir/server.log" start \
      -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" >/dev/null; then
      break
    fi
    if [ -z "${3:-}" ] && [ "$port" -lt 55532 ] && tail -n "+$((seen + 1))" "$dir/server.log" | grep -q "could not bind\|could not create any TCP/IP sockets"; then
      echo "pg-throwaway: port $port was taken meanwhile; trying the next free port" >&2
      from=$((port + 1))
      continue
    fi
    cat "$dir/server.log" >&2
    exit 1
  done
  echo "postgres://synth@127.0.0.1:$port/postgres?sslmode=disable"
  ;;
stop)
  if [ -d "$dir/data" ]; then
    as "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
  ;;
*)
  echo "usage: $0 start DIR [PORT] | stop DIR" >&2
  exit 2
  ;;
esac
