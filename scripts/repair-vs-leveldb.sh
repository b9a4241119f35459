#!/usr/bin/env bash
# Repair salvage against LevelDB, side by side (docs/repair.md): the same C program
# (scripts/c/repair_salvage.c) linked against Debian's libleveldb and against libscreedb writes N
# keys into one table, flips the table's middle byte, repairs and counts the keys that came back
# with their value intact; once with blocks stored plain, once compressed (Snappy / LZ4).
#
# Usage: scripts/repair-vs-leveldb.sh [N...]   (default: 20000 200000)
# Needs libleveldb-dev (scripts/install-peers.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-capi.sh target/capi-install >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -std=c99 -O2 -Wall -Wextra -Werror scripts/c/repair_salvage.c -o "$work/with-leveldb" -lleveldb
cc -std=c99 -O2 -Wall -Wextra -Werror -I target/capi-install/include scripts/c/repair_salvage.c \
    -o "$work/with-screedb" -L target/capi-install/lib -lscreedb \
    -Wl,-rpath,"$PWD/target/capi-install/lib"
for n in ${@:-20000 200000}; do
    for compress in "" compress; do
        for engine in leveldb screedb; do
            printf '%-8s %-9s ' "$engine" "${compress:-plain}"
            "$work/with-$engine" "$work/db-$engine-$n${compress:+-c}" "$n" $compress 2>&1 \
                || echo "failed (exit status $?)"
        done
    done
done
