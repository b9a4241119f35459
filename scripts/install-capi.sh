#!/usr/bin/env bash
# Builds libscreedb (the LevelDB C API over ScreeDB) in release mode and installs it:
#
#   PREFIX/lib/libscreedb.so.1.0.0                the library (SONAME libscreedb.so.1)
#   PREFIX/lib/libscreedb.so.1 -> ...so.1.0.0     what programs linked against it load
#   PREFIX/lib/libscreedb.so   -> libscreedb.so.1 so `-lscreedb` links against it
#   PREFIX/lib/libscreedb.a                       the static library
#   PREFIX/lib/libleveldb.so.1 -> libscreedb.so.1 what programs linked against upstream LevelDB load
#   PREFIX/lib/libleveldb.so.1d -> libscreedb.so.1 (the same on Debian, whose soname is .1d)
#   PREFIX/lib/libleveldb.so   -> libscreedb.so.1 so `-lleveldb` links against ScreeDB (the
#                                                 program then records libscreedb.so.1)
#   PREFIX/include/screedb/c.h                    our header
#   PREFIX/include/leveldb/c.h                    the same header under LevelDB's name
#
# Usage: scripts/install-capi.sh [PREFIX]   (default: ./target/capi-install)
# Swap ScreeDB in for LevelDB at run time: LD_LIBRARY_PATH=PREFIX/lib ./program
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="${1:-target/capi-install}"
target_dir="${CARGO_TARGET_DIR:-target}"

cargo build --release --locked -p screedb-capi
mkdir -p "$prefix/lib" "$prefix/include/screedb" "$prefix/include/leveldb"
install -m 0755 "$target_dir/release/libscreedb_capi.so" "$prefix/lib/libscreedb.so.1.0.0"
install -m 0644 "$target_dir/release/libscreedb_capi.a" "$prefix/lib/libscreedb.a"
ln -sf libscreedb.so.1.0.0 "$prefix/lib/libscreedb.so.1"
ln -sf libscreedb.so.1 "$prefix/lib/libscreedb.so"
ln -sf libscreedb.so.1 "$prefix/lib/libleveldb.so.1"
ln -sf libscreedb.so.1 "$prefix/lib/libleveldb.so.1d" # Debian's soname
ln -sf libscreedb.so.1 "$prefix/lib/libleveldb.so"
install -m 0644 include/screedb/c.h "$prefix/include/screedb/c.h"
install -m 0644 include/screedb/c.h "$prefix/include/leveldb/c.h"
echo "installed libscreedb into $prefix (LD_LIBRARY_PATH=$prefix/lib swaps it in for libleveldb.so.1)"
