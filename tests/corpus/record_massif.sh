#!/usr/bin/env bash
# Records valgrind massif's own output into tests/data/massif/: the programs in
# tests/data/massif/src/ (and tests/data/heaptrack/leaky.c) built here with gcc, run under
# `valgrind --tool=massif`; beside each massif.out.X, ms_print's own output for it
# (massif.out.X.ms_print.txt), and a provenance line per file (tool, version, command) in
# tests/data/massif/massif.recorded.txt. massif.out.grow_bytes is also kept compressed, as
# massif-visualizer opens it: .gz (gzip -9 -n), .bz2 (bzip2 -9) and .xz (xz -9), each made by
# that compressor from massif's own bytes.
# Run from anywhere: `tests/corpus/record.sh massif`. Needs valgrind, gcc, gzip, bzip2, xz.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=$repo/tests/data/massif
figures=$out/massif.recorded.txt
work=${TMPDIR:-/tmp}/memdash-massif
rm -rf "$work" && mkdir -p "$work" && cd "$work"
cp "$out/src/grow.c" "$repo/tests/data/heaptrack/leaky.c" .
gcc -O0 -g -fno-inline grow.c -o grow
gcc -g -O0 -rdynamic leaky.c -o leaky
version=$(valgrind --version)
package=$(dpkg-query -W -f '${Version}' valgrind 2>/dev/null || echo unknown)
{
  echo "# massif's files recorded here (tests/corpus/record_massif.sh), each with ms_print's output"
  echo "# beside it (<file>.ms_print.txt: \`ms_print <file>\`, $version's ms_print)"
  echo "# tool: $version (Debian package valgrind $package), massif; gcc: $(gcc -dumpfullversion)"
} >"$figures"

# massif NAME OPTIONS... -- PROGRAM: massif's output file as NAME, ms_print's beside it.
massif() {
  local name=$1; shift
  local options=()
  while [ "$1" != -- ]; do options+=("$1"); shift; done; shift
  valgrind --tool=massif "${options[@]}" --massif-out-file="$name" "$@" >/dev/null 2>&1
  cp "$name" "$out/$name"
  ms_print "$name" >"$out/$name.ms_print.txt"
  echo "$name: valgrind --tool=massif ${options[*]} --massif-out-file=$name $*" >>"$figures"
}

massif massif.out.grow -- ./grow
massif massif.out.grow_bytes --time-unit=B -- ./grow
massif massif.out.grow_stacks --stacks=yes --time-unit=B -- ./grow
massif massif.out.grow_pages --pages-as-heap=yes -- ./grow
massif massif.out.leaky_bytes --time-unit=B -- ./leaky
massif massif.out.leaky --time-unit=ms --detailed-freq=1 -- ./leaky

gzip -9 -n -c massif.out.grow_bytes >"$out/massif.out.grow_bytes.gz"
bzip2 -9 -c massif.out.grow_bytes >"$out/massif.out.grow_bytes.bz2"
xz -9 -c massif.out.grow_bytes >"$out/massif.out.grow_bytes.xz"
{
  echo "massif.out.grow_bytes.gz: gzip -9 -n (gzip $(gzip --version | head -1 | awk '{print $2}')) of massif.out.grow_bytes"
  echo "massif.out.grow_bytes.bz2: bzip2 -9 (bzip2 $(bzip2 --help 2>&1 | head -1 | sed 's/.*Version \([^,]*\),.*/\1/')) of massif.out.grow_bytes"
  echo "massif.out.grow_bytes.xz: xz -9 ($(xz --version | head -1)) of massif.out.grow_bytes"
} >>"$figures"
echo "recorded: massif files and ms_print's figures in $out"
