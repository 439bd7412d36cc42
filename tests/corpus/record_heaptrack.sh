#!/usr/bin/env bash
# Records heaptrack's own output into tests/data/heaptrack/: tests/data/heaptrack/leaky.c and
# tests/data/massif/src/grow.c built here with gcc, run under `heaptrack -o`; beside each
# recording heaptrack_print's own output for it (<file>.print.txt: `heaptrack_print
# --disable-builtin-suppressions <file>`, the figures memdash shows), and a provenance line
# per file (tool, version, command) in tests/data/heaptrack/heaptrack.recorded.txt. Also the raw
# stream of a run (`heaptrack --raw`: the data before heaptrack_interpret), which memdash refuses
# with the reason.
# Run from anywhere: `tests/corpus/record.sh heaptrack`. Needs heaptrack, gcc, zstd.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=$repo/tests/data/heaptrack
figures=$out/heaptrack.recorded.txt
work=${TMPDIR:-/tmp}/memdash-heaptrack
rm -rf "$work" && mkdir -p "$work" && cd "$work"
cp "$out/leaky.c" "$repo/tests/data/massif/src/grow.c" .
gcc -g -O0 -rdynamic leaky.c -o leaky
gcc -O0 -g -fno-inline grow.c -o grow
version=$(heaptrack --version)
package=$(dpkg-query -W -f '${Version}' heaptrack 2>/dev/null || echo unknown)
{
  echo "# heaptrack's files recorded here (tests/corpus/record_heaptrack.sh), each with"
  echo "# heaptrack_print's output beside it (<file>.print.txt)"
  echo "# tool: $version (Debian package heaptrack $package); gcc: $(gcc -dumpfullversion)"
} >"$figures"

# record NAME PROGRAM...: heaptrack's recording as NAME.zst, heaptrack_print's beside it.
record() {
  local name=$1; shift
  heaptrack -o "$work/$name" "$@" >/dev/null 2>&1
  cp "$work/$name.zst" "$out/$name.zst"
  heaptrack_print --disable-builtin-suppressions "$name.zst" >"$out/$name.zst.print.txt"
  {
    echo "$name.zst: heaptrack -o $name $*"
    echo "$name.zst.print.txt: heaptrack_print --disable-builtin-suppressions $name.zst"
  } >>"$figures"
}

record heaptrack.leaky ./leaky
record heaptrack.grow ./grow
heaptrack --raw -o "$work/heaptrack.leaky_raw" ./leaky >/dev/null 2>&1
cp "$work/heaptrack.leaky_raw.raw.zst" "$out/heaptrack.leaky_raw.raw.zst"
echo "heaptrack.leaky_raw.raw.zst: heaptrack --raw -o heaptrack.leaky_raw ./leaky (not interpreted)" >>"$figures"
echo "recorded: heaptrack files and heaptrack_print's figures in $out"
