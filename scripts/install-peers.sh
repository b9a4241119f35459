#!/usr/bin/env bash
# Installs the system libraries the benchmark peers link against (Debian/Ubuntu, as root or with
# sudo): LevelDB (feature `leveldb`, and `--engine leveldb-c:` tests), RocksDB 7.x and libclang
# (feature `rocksdb-system`), and a C++ toolchain and libclang (crates/screedb-bench-rocksdb,
# which builds the RocksDB bundled with the rocksdb crate 0.25).
# Run it once per machine before building screedb-bench with any of those features; the default
# build and CI need none of it.
set -euo pipefail
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends \
    libleveldb-dev librocksdb-dev libclang-dev clang pkg-config build-essential
