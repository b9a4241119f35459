#!/usr/bin/env bash
# The scale ladder of docs/benchmarks.md: ScreeDB against the bundled RocksDB 11.8.1 at 10M, 50M
# and 100M keys (16-byte keys, 128-byte values), one compare per size, each engine on a fresh
# directory: the fill, its write amplification, then point reads and passes of seeks (10 nexts;
# the later passes show what seek compaction made of the store).
#
# 100M keys are about 14 GB of user data per engine: the ladder takes hours and needs about
# 40 GB free where the databases go. The harness prints progress as it goes.
#
# Needs scripts/install-peers.sh once per machine (a C++ toolchain and libclang for the bundled
# RocksDB, whose first build takes 12-15 minutes on 2 cores).
# Usage: scripts/scale.sh [DB_DIR] [OUT_DIR]
#   SIZES="10000000 50000000" scripts/scale.sh   to run part of the ladder;
#   ENGINES=screedb,screedb:memory=skiplist,rocksdb  to compare more engines;
#   READS=300000                                   point reads and seeks per size;
#   SEEK_PASSES=2                                  seekrandom passes after the reads (>= 1);
#   FEATURES=fjall,leveldb                         to build the binary with those peers too
#                                                  (ENGINES=...,leveldb needs it; without it a
#                                                  binary built with them is rebuilt without).
set -euo pipefail
cd "$(dirname "$0")/.."
DB_DIR="${1:-/tmp/screedb-scale}"
OUT_DIR="${2:-scale-results}"
SIZES="${SIZES:-10000000 50000000 100000000}"
ENGINES="${ENGINES:-screedb,rocksdb}"
READS="${READS:-300000}"
FEATURES="${FEATURES:-}"
SEEK_PASSES="${SEEK_PASSES:-2}"
if ! [[ "$SEEK_PASSES" =~ ^[1-9][0-9]*$ ]]; then
    echo "SEEK_PASSES must be a whole number >= 1, not '$SEEK_PASSES'" >&2
    exit 2
fi
benchmarks=fillrandom,readrandom
for _ in $(seq "$SEEK_PASSES"); do benchmarks="$benchmarks,seekrandom"; done

manifest=crates/screedb-bench-rocksdb/Cargo.toml
cargo build --release --manifest-path "$manifest" ${FEATURES:+--features "$FEATURES"}
bin="${CARGO_TARGET_DIR:-crates/screedb-bench-rocksdb/target}/release/screedb-bench-rocksdb"

mkdir -p "$DB_DIR" "$OUT_DIR"
for num in $SIZES; do
    out="$OUT_DIR/scale-$num.md"
    echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores; $num keys; engines $ENGINES" | tee "$out"
    "$bin" compare --engines="$ENGINES" --benchmarks="$benchmarks" \
        --num="$num" --reads="$READS" --value_size=128 --seek_nexts=10 \
        --db "$DB_DIR/db-$num" | tee -a "$out"
    rm -rf "$DB_DIR/db-$num"
done
echo "results in $OUT_DIR/" >&2
