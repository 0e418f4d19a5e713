#!/bin/sh
# What PostgreSQL spends its time on under the fleet benchmark's intake: a throwaway cluster of
# Debian's (fsync on) with pg_stat_statements, three daemons as hosts on it, three wrk loads of
# distinct routed alerts (16 connections each, 5 s, or ROUNDS of them), then PostgreSQL's
# costliest statements.
#
# Usage: sh crates/nightwatch/benches/fleet_statements.sh target/release/nightwatch
#        ROUNDS=14 ROUND_SECONDS=10 sh crates/nightwatch/benches/fleet_statements.sh BINARY
#        HOSTS=a sh crates/nightwatch/benches/fleet_statements.sh BINARY   # one daemon alone
# Needs Debian's postgresql and wrk; as root the cluster runs as the postgres user. Everything
# listens on 127.0.0.1 and lives in a temp directory removed at the end.
set -eu
binary=$(realpath "$1")
bindir=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_owner() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }
[ "$(id -u)" = 0 ] && chown postgres "$work"
daemons=""
cleanup() {
    [ -n "$daemons" ] && kill $daemons 2>/dev/null || true
    as_owner "$bindir/pg_ctl -D $work/data -m fast -w stop" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
# HOSTS="a" runs one daemon alone on the cluster (what one daemon of a fleet can take when the
# machine's cores are not shared with two more and their loads); default three.
hosts=${HOSTS:-a b c}
as_owner "$bindir/initdb -D $work/data -U postgres -A trust -E UTF8 --locale=C --no-sync --no-instructions" >/dev/null
as_owner "$bindir/pg_ctl -D $work/data -l $work/server.log -w start -o '-c listen_addresses=127.0.0.1 -p $port -k $work -c max_connections=200 -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all'" >/dev/null
sql() { psql -h 127.0.0.1 -p "$port" -U postgres -d fleet -X "$@"; }
psql -h 127.0.0.1 -p "$port" -U postgres -Xqc "CREATE DATABASE fleet"
sql -qc "CREATE EXTENSION pg_stat_statements"
url="postgres://postgres@127.0.0.1:$port/fleet?connect_timeout=3"
# The benchmark's wrk script (benches/support/mod.rs): every request a new alert.
sed -n '/^pub const LUA: &str = r#"/,/^"#;/p' "$(dirname "$0")/support/mod.rs" | sed '1d;$d' > "$work/post.lua"
for host in $hosts; do
    home="$work/home-$host"
    mkdir -p "$home"
    printf 'queue: { resolve_delay: 52w }\nroutes:\n  - id: disk\n    when: { labels: { alertname: DiskFull } }\n    run: ["true"]\n' > "$home/serve.yaml"
    NIGHTWATCH_HOME="$home" NIGHTWATCH_DATABASE_URL="$url" NIGHTWATCH_HOST="host-$host" \
        "$binary" serve --listen 127.0.0.1:0 > "$home/out" 2>/dev/null &
    daemons="$daemons $!"
done
for host in $hosts; do
    while ! grep -q 'listening on' "$work/home-$host/out"; do sleep 0.1; done
done
sql -qc "SELECT pg_stat_statements_reset()" >/dev/null
# ROUNDS loads one after another (default 1), each ROUND_SECONDS long (default 5), on the
# history the rounds before left: the rate per round shows whether intake holds as it grows.
for round in $(seq 1 "${ROUNDS:-1}"); do
    loads=""
    for host in $hosts; do
        address=$(sed -n 's/nightwatch serve: listening on //p' "$work/home-$host/out")
        wrk -t2 -c16 -d"${ROUND_SECONDS:-5}"s --latency -s "$work/post.lua" "$address/hooks/alertmanager" \
            -- "s$$-$round-$host" DiskFull > "$work/wrk-$host" &
        loads="$loads $!"
    done
    wait $loads
    printf 'round %s, events/s per host:' "$round"
    for host in $hosts; do printf ' %s' "$(awk '/Requests\/sec/ {print $2}' "$work/wrk-$host")"; done
    printf ', p99:'
    for host in $hosts; do printf ' %s' "$(awk '$1 == "99%" {print $2}' "$work/wrk-$host")"; done
    printf ', arrivals held: %s\n' "$(sql -tAc 'SELECT count(*) FROM alert_events')"
done
sql -c "SELECT sum(calls) AS calls, round(sum(total_exec_time)) AS exec_ms FROM pg_stat_statements"
sql -c "SELECT calls, round(total_exec_time) AS ms, round((total_exec_time / calls)::numeric, 3) AS ms_per_call,
               rows, regexp_replace(left(query, 90), '\s+', ' ', 'g') AS statement
          FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 12"
# What the intake wrote to its tables, and how many of the updates rewrote a row in its page.
sql -c "SELECT relname AS table, n_tup_ins AS inserted, n_tup_upd AS updated,
               n_tup_hot_upd AS updated_in_place, n_tup_del AS deleted
          FROM pg_stat_user_tables WHERE n_tup_ins + n_tup_upd + n_tup_del > 0 ORDER BY relname"
