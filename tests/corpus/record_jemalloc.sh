#!/usr/bin/env bash
# Records jemalloc heap profiles (the `heap_v2/<rate>` text) into tests/data/pprof/jemalloc/,
# each beside `jeprof --text --show_bytes`'s own figures for it (`<file>.text.txt`:
# --inuse_space, --inuse_objects, --alloc_space, --alloc_objects) and its provenance
# (tests/data/pprof/jemalloc/PROVENANCE.md). The program is tests/corpus/c/heapdemo.c.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=$repo/tests/data/pprof/jemalloc
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
cd "$work"
lib=/usr/lib/x86_64-linux-gnu
version=$(dpkg-query -W -f '${Package} ${Version}' libjemalloc2)
cflags=(-g -O1 -fno-omit-frame-pointer -pthread)
gcc "${cflags[@]}" "$repo/tests/corpus/c/heapdemo.c" -o heapdemo

run() { # name, MALLOC_CONF
  mkdir "$1" && (cd "$1" && MALLOC_CONF="$2,prof_prefix:$work/$1/jeprof" \
    LD_PRELOAD=$lib/libjemalloc.so.2 ../heapdemo > /dev/null)
}
run exact prof:true,prof_final:true,prof_accum:true,lg_prof_sample:0
run sampled prof:true,prof_final:true,prof_accum:true,lg_prof_sample:12
run no_accum prof:true,prof_final:true,lg_prof_sample:0
run interval prof:true,prof_accum:true,lg_prof_sample:0,lg_prof_interval:20
mv exact/jeprof.*.f.heap heapdemo_exact.f.heap
mv sampled/jeprof.*.f.heap heapdemo_sampled.f.heap
mv no_accum/jeprof.*.f.heap heapdemo_no_accum.f.heap
dumps=(interval/jeprof.*.i*.heap)
mv "${dumps[0]}" heapdemo_interval.i0.heap

{
  echo "# jemalloc heap profiles, recorded by tests/corpus/record_jemalloc.sh"
  echo
  echo "Written by jemalloc's profiler ($version, Debian 12, \`LD_PRELOAD=libjemalloc.so.2\`) on"
  echo "tests/corpus/c/heapdemo.c (gcc $(gcc -dumpfullversion) ${cflags[*]}); figures by"
  echo "\`jeprof --text --show_bytes\` ($(jeprof --version 2>&1 | head -1)) in \`<file>.text.txt\`."
  echo "The file names are the tool's \`jeprof.<pid>.<seq>.<f|i<n>>.heap\` without the pid."
  echo
  echo "| file | bytes | MALLOC_CONF (with prof_prefix) | the tool's figures |"
  echo "|---|---:|---|---|"
} > PROVENANCE.md
record() { # file, how
  cp "$1" "$out/$1"
  : > "$out/$1.text.txt"
  for type in inuse_space inuse_objects alloc_space alloc_objects; do
    echo "## jeprof --text --show_bytes --$type" >> "$out/$1.text.txt"
    jeprof --text --show_bytes --$type heapdemo "$1" >> "$out/$1.text.txt" 2> /dev/null || true
  done
  echo "| \`$1\` | $(stat -c %s "$1") | $2 | \`$1.text.txt\` (jeprof --text --show_bytes, four sample indexes) |" >> PROVENANCE.md
}
record heapdemo_exact.f.heap "\`prof:true,prof_final:true,prof_accum:true,lg_prof_sample:0\`: every allocation, the dump at exit"
record heapdemo_sampled.f.heap "\`prof:true,prof_final:true,prof_accum:true,lg_prof_sample:12\`: sampled every 4 KiB on average, the dump at exit"
record heapdemo_no_accum.f.heap "\`prof:true,prof_final:true,lg_prof_sample:0\`: without \`prof_accum\`, every allocated pair \`[0: 0]\` (jeprof prints no allocation figures)"
record heapdemo_interval.i0.heap "\`prof:true,prof_accum:true,lg_prof_sample:0,lg_prof_interval:20\`: the first of ${#dumps[@]} dumps, one per MiB allocated"
cp PROVENANCE.md "$out/PROVENANCE.md"
echo "recorded $(ls "$out" | wc -l) files into $out"
