#!/usr/bin/env bash
# Reproduces the headline comparison of docs/benchmarks.md: ScreeDB against fjall, LevelDB and
# RocksDB (Debian's 7.8.3), same flags, each on a fresh directory, one markdown table.
#
# Needs the system libraries once per machine: scripts/install-peers.sh (as root or with sudo).
# Usage: scripts/compare.sh [extra db_bench flags...]   e.g. scripts/compare.sh --num=200000
# Set ENGINES to choose the peers (default: screedb,fjall,leveldb,rocksdb) and FEATURES to match.
# ROCKSDB=bundled runs the screedb-bench-rocksdb binary instead, whose `rocksdb` is the RocksDB
# 11.8.1 bundled with the rocksdb crate 0.25 (its first build takes 12-15 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
ENGINES="${ENGINES:-screedb,fjall,leveldb,rocksdb}"
BENCHMARKS="${BENCHMARKS:-fillseq,fillrandom,overwrite,readrandom,readmissing,seekrandom,readseq,readwhilewriting,deleterandom,ycsb_load,ycsb_a,ycsb_b,ycsb_c,ycsb_d,ycsb_e,ycsb_f}"
if [ "${ROCKSDB:-system}" = bundled ]; then
    FEATURES="${FEATURES:-fjall,leveldb}"
    manifest=crates/screedb-bench-rocksdb/Cargo.toml
    cargo build --release --manifest-path "$manifest" --features "$FEATURES"
    bin="${CARGO_TARGET_DIR:-crates/screedb-bench-rocksdb/target}/release/screedb-bench-rocksdb"
else
    FEATURES="${FEATURES:-fjall,leveldb,rocksdb-system}"
    # rocksdb-system links Debian's librocksdb instead of building a bundled RocksDB.
    export ROCKSDB_LIB_DIR="${ROCKSDB_LIB_DIR:-/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)}"
    cargo build --release -p screedb-bench --features "$FEATURES"
    bin="${CARGO_TARGET_DIR:-target}/release/screedb-bench"
fi
echo "# $(date -u +%Y-%m-%d) $(nproc) cores; $(basename "$bin") compare --engines=$ENGINES $*" >&2
"$bin" compare --engines="$ENGINES" --benchmarks="$BENCHMARKS" --num=1000000 --reads=200000 "$@"
