#!/usr/bin/env bash
# Benchmarks `screedb serve` against redis-server in one run (docs/server.md):
#   1. redis-benchmark -t set,get -n N -r 1000000 -c 50 -P 16 -q, then the same with -P 1;
#   2. go-ycsb's redis driver (hash data type), workloads A-F, if go-ycsb is installed or can be
#      built from the Go module proxy.
# redis-server runs with appendonly yes, appendfsync everysec, no RDB snapshots, its files in a
# temporary directory; screedb serve runs with --sync everysec, a 16 MiB memtable (so the
# 1,000,000-key data set is larger than its write buffer) and --memory flodb (the default,
# docs/server.md; `--memory skiplist` for the skiplist alone).
# The redis-benchmark rows run --rounds times (default 3), each round on freshly started servers,
# and the table gives each server's median and the ratio of the medians, with every round's
# ratio beside it: single runs on a small machine spread by a tenth.
# go-ycsb's redis driver has no Scan: workload E fails every scan on both servers.
#
# Usage: scripts/bench-server.sh [--requests N] [--rounds N] [--ycsb-records N] [--ycsb-ops N]
#                                [--no-ycsb] [--memory flodb|skiplist]
# Needs: cargo, apt-get (as root) for redis-server/redis-tools when missing, go for go-ycsb.
set -euo pipefail

REQUESTS=1000000
ROUNDS=3
YCSB_RECORDS=50000
YCSB_OPS=50000
YCSB=1
MEMORY=flodb
while [ $# -gt 0 ]; do
    case "$1" in
        --requests) REQUESTS="$2"; shift 2 ;;
        --rounds) ROUNDS="$2"; shift 2 ;;
        --ycsb-records) YCSB_RECORDS="$2"; shift 2 ;;
        --ycsb-ops) YCSB_OPS="$2"; shift 2 ;;
        --no-ycsb) YCSB=0; shift ;;
        --memory) MEMORY="$2"; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
# Every count is a whole number >= 1 (0 rounds printed empty medians).
for pair in "--requests:$REQUESTS" "--rounds:$ROUNDS" "--ycsb-records:$YCSB_RECORDS" \
    "--ycsb-ops:$YCSB_OPS"; do
    if ! [[ "${pair#*:}" =~ ^[1-9][0-9]*$ ]]; then
        echo "${pair%%:*} must be a whole number >= 1, not '${pair#*:}'" >&2
        exit 2
    fi
done

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
REDIS_PORT=7380
SCREEDB_PORT=7381

if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
    echo "installing redis-server and redis-tools from Debian" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null
fi

# go-ycsb's go.mod has replace directives, so `go install ...@latest` refuses it: download the
# module through the Go module proxy, keep only the redis driver, and build that.
install_go_ycsb() {
    command -v go >/dev/null || return 1
    local version dir src
    dir="$(go mod download -json github.com/pingcap/go-ycsb@latest | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
    [ -n "$dir" ] || return 1
    src="$(mktemp -d)"
    cp -r "$dir/." "$src" && chmod -R u+w "$src"
    sed -i -E '/_ "github.com\/pingcap\/go-ycsb\/db\//{/db\/(basic|redis)"/!d}' "$src/cmd/go-ycsb/main.go"
    (cd "$src" && GOFLAGS=-mod=mod go build -o "$(go env GOPATH)/bin/go-ycsb" ./cmd/go-ycsb)
    rm -rf "$src"
}
GO_YCSB="$(command -v go-ycsb || true)"
if [ "$YCSB" = 1 ] && [ -z "$GO_YCSB" ]; then
    if [ -x "$(go env GOPATH 2>/dev/null)/bin/go-ycsb" ] || install_go_ycsb; then
        GO_YCSB="$(go env GOPATH)/bin/go-ycsb"
    else
        echo "go-ycsb unavailable: skipping the YCSB workloads" >&2
    fi
fi

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
(cd "$ROOT" && cargo build --release -q -p screedb-cli)
SCREEDB="$CARGO_TARGET_DIR/release/screedb"

WORK="$(mktemp -d)"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

start_servers() {
    rm -rf "$WORK/redis" "$WORK/screedb"
    mkdir -p "$WORK/redis"
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$WORK/redis" --appendonly yes \
        --appendfsync everysec --save '' --daemonize no --logfile "$WORK/redis.log" &
    PIDS+=($!)
    "$SCREEDB" serve --db "$WORK/screedb" --bind "127.0.0.1:$SCREEDB_PORT" --sync everysec \
        --write-buffer-mib 16 --memory "$MEMORY" 2>"$WORK/screedb.log" &
    PIDS+=($!)
    for port in "$REDIS_PORT" "$SCREEDB_PORT"; do
        for _ in $(seq 100); do
            redis-cli -p "$port" ping >/dev/null 2>&1 && break
            sleep 0.1
        done
    done
}

stop_servers() {
    redis-cli -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
    redis-cli -p "$SCREEDB_PORT" shutdown >/dev/null 2>&1 || true
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    PIDS=()
}

# rps <port> <test> <pipeline>: requests per second redis-benchmark reports.
rps() {
    redis-benchmark -p "$1" -t "$2" -n "$REQUESTS" -r 1000000 -c 50 -P "$3" -q 2>/dev/null \
        | tr '\r' '\n' | sed -n 's/^[A-Z]*: \([0-9.]*\) requests per second.*/\1/p' | tail -1
}

echo "# screedb serve vs redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/')" \
    "on $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ)"
# ratio <screedb> <redis>: "0.83" (or "n/a" when redis-server reported nothing).
ratio() {
    awk -v s="$1" -v r="$2" 'BEGIN { if (r > 0) printf "%.2f", s / r; else print "n/a" }'
}

# median <numbers...>
median() {
    printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 }
        END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.2f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

declare -A REDIS_RPS SCREEDB_RPS ROUND_RATIOS
for _ in $(seq "$ROUNDS"); do
    start_servers
    for pipeline in 16 1; do
        for t in set get; do
            r="$(rps "$REDIS_PORT" "$t" "$pipeline")"
            s="$(rps "$SCREEDB_PORT" "$t" "$pipeline")"
            REDIS_RPS[$t$pipeline]+=" ${r:-0}"
            SCREEDB_RPS[$t$pipeline]+=" ${s:-0}"
            ROUND_RATIOS[$t$pipeline]+=" $(ratio "${s:-0}" "${r:-0}")x"
        done
    done
    keys="$(redis-cli -p "$SCREEDB_PORT" dbsize)"
    stop_servers
done
echo
echo "| redis-benchmark | redis-server rps (median of $ROUNDS) | screedb rps (median) | ratio of medians | each round |"
echo "|---|---:|---:|---:|---|"
for pipeline in 16 1; do
    for t in set get; do
        # shellcheck disable=SC2086
        r="$(median ${REDIS_RPS[$t$pipeline]})"
        # shellcheck disable=SC2086
        s="$(median ${SCREEDB_RPS[$t$pipeline]})"
        echo "| -t $t -n $REQUESTS -r 1000000 -c 50 -P $pipeline | $r | $s |" \
            "$(ratio "$s" "$r")x |${ROUND_RATIOS[$t$pipeline]} |"
    done
done
echo
echo "screedb held $keys keys after the last round (16 MiB memtable, --memory $MEMORY)."

if [ "$YCSB" = 1 ] && [ -n "$GO_YCSB" ]; then
    echo
    echo "| go-ycsb (redis, hash), $YCSB_RECORDS records, $YCSB_OPS ops, 16 threads | redis-server ops/s | screedb ops/s | ratio | errors (redis / screedb) |"
    echo "|---|---:|---:|---:|---|"
    common=(-p redis.datatype=hash -p recordcount="$YCSB_RECORDS" -p operationcount="$YCSB_OPS"
        -p threadcount=16 -p fieldcount=10 -p fieldlength=100 -p workload=core)
    # Every proportion explicit: go-ycsb's core workload defaults to 0.95 read / 0.05 update.
    p() { echo "-p readproportion=$1 -p updateproportion=$2 -p insertproportion=$3 -p scanproportion=$4 -p readmodifywriteproportion=$5"; }
    declare -A mix=(
        [a]="$(p 0.5 0.5 0 0 0)"
        [b]="$(p 0.95 0.05 0 0 0)"
        [c]="$(p 1 0 0 0 0)"
        [d]="$(p 0.95 0 0.05 0 0) -p requestdistribution=latest"
        [e]="$(p 0 0 0.05 0.95 0) -p maxscanlength=100"
        [f]="$(p 0.5 0 0 0 0.5)"
    )
    # ycsb <port> <workload>: "ops/s errors" of the run phase.
    ycsb() {
        local out ops errs
        # shellcheck disable=SC2086
        out="$("$GO_YCSB" run redis "${common[@]}" ${mix[$2]} \
            -p redis.addr="127.0.0.1:$1" 2>&1 | tr '\r' '\n')"
        echo "$out" >>"$WORK/ycsb-$1.log"
        ops="$(echo "$out" | sed -n 's/^TOTAL .*OPS: \([0-9.]*\).*/\1/p' | tail -1)"
        errs="$(echo "$out" | sed -n 's/^[A-Z_]*_ERROR .*Count: \([0-9]*\).*/\1/p' | awk '{ n += $1 } END { print n + 0 }')"
        echo "${ops:-0} ${errs:-0}"
    }
    for w in a b c d e f; do
        start_servers
        for port in "$REDIS_PORT" "$SCREEDB_PORT"; do
            "$GO_YCSB" load redis "${common[@]}" -p redis.addr="127.0.0.1:$port" >>"$WORK/ycsb-load.log" 2>&1
        done
        read -r r rerr < <(ycsb "$REDIS_PORT" "$w")
        read -r s serr < <(ycsb "$SCREEDB_PORT" "$w")
        stop_servers
        echo "| workload $w | $r | $s | $(ratio "$s" "$r")x | $rerr / $serr |"
    done
fi
