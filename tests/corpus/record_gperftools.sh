#!/usr/bin/env bash
# Records gperftools heap profiles (the legacy `heap profile: … @ heapprofile` text) into
# tests/data/pprof/gperftools/, each beside `google-pprof --text --show_bytes`'s own figures
# for it (`<file>.text.txt`: --inuse_space, --inuse_objects, --alloc_space, --alloc_objects),
# `go tool pprof -top`'s (`<file>.top.txt`) and its provenance (tests/data/pprof/gperftools/PROVENANCE.md). The program is
# tests/corpus/c/heapdemo.c, built with symbols so that google-pprof names its functions.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=$repo/tests/data/pprof/gperftools
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
cd "$work"
lib=/usr/lib/x86_64-linux-gnu
version=$(dpkg-query -W -f '${Package} ${Version}' libgoogle-perftools4)
cflags=(-g -O1 -fno-omit-frame-pointer -pthread)
gcc "${cflags[@]}" "$repo/tests/corpus/c/heapdemo.c" -o heapdemo
gcc "${cflags[@]}" "$repo/tests/corpus/c/heapdemo.c" -o heapdemo_linked -ltcmalloc
gcc "${cflags[@]}" -DHEAPDEMO_AS_LIBRARY -c "$repo/tests/corpus/c/heapdemo.c" -o heapdemo.o
g++ "${cflags[@]}" "$repo/tests/corpus/c/heapsample.cc" heapdemo.o -o heapsample -ltcmalloc

# at exit, the profiler preloaded
HEAPPROFILE=$work/preload LD_PRELOAD=$lib/libtcmalloc.so.4 ./heapdemo > /dev/null 2>&1
mv preload.0001.heap heapdemo_preload.0001.heap
# linked with -ltcmalloc, a dump every 1 MiB allocated and one at exit: the first and the last
HEAPPROFILE=$work/linked HEAP_PROFILE_ALLOCATION_INTERVAL=1048576 ./heapdemo_linked > /dev/null 2>&1
dumps=(linked.*.heap)
mv "${dumps[0]}" "heapdemo_linked.${dumps[0]#linked.}"
mv "${dumps[-1]}" "heapdemo_linked.${dumps[-1]#linked.}"
# tcmalloc's own sampled heap and growth stacks, as a C++ server's /pprof/heap and /pprof/growth
TCMALLOC_SAMPLE_PARAMETER=4096 ./heapsample heapsample_v2.heap heapsample_growthz.heap > /dev/null

{
  echo "# gperftools heap profiles, recorded by tests/corpus/record_gperftools.sh"
  echo
  echo "Written by gperftools' heap profiler ($version, Debian 12) on tests/corpus/c/heapdemo.c"
  echo "(gcc $(gcc -dumpfullversion) ${cflags[*]}); figures by \`google-pprof --text --show_bytes\`"
  echo "(the pprof perl script of the same package) in \`<file>.text.txt\`, and by Go's pprof"
  echo "($(go version | cut -d' ' -f3)'s \`go tool pprof -top -unit=B -sample_index=<type>\`) in \`<file>.top.txt\`."
  echo
  echo "| file | bytes | written by | the tools' figures of it |"
  echo "|---|---:|---|---|"
} > PROVENANCE.md
record() { # file, binary, how
  cp "$1" "$out/$1"
  : > "$out/$1.text.txt"
  for type in inuse_space inuse_objects alloc_space alloc_objects; do
    echo "## google-pprof --text --show_bytes --$type" >> "$out/$1.text.txt"
    google-pprof --text --show_bytes --$type "$2" "$1" >> "$out/$1.text.txt" 2> /dev/null || true
  done
  # pprof's successor (Go's), which unsamples each stack and truncates it, as memdash does
  : > "$out/$1.top.txt"
  types=$(go tool pprof -raw "$2" "$1" 2> /dev/null | sed -n '/^Samples:/{n;p;q}')
  for type in $types; do
    go tool pprof -top -nodecount=12 -unit=B -sample_index="${type%%/*}" "$2" "$1" \
      >> "$out/$1.top.txt" 2> /dev/null
  done
  echo "| \`$1\` | $(stat -c %s "$1") | $3 | \`$1.text.txt\` (google-pprof), \`$1.top.txt\` (go tool pprof) |" >> PROVENANCE.md
}
record heapdemo_preload.0001.heap heapdemo \
  "\`HEAPPROFILE=…/preload LD_PRELOAD=libtcmalloc.so.4 ./heapdemo\` (the dump at exit)"
for f in heapdemo_linked.*.heap; do
  record "$f" heapdemo_linked \
    "\`gcc … -ltcmalloc\`, \`HEAPPROFILE=…/linked HEAP_PROFILE_ALLOCATION_INTERVAL=1048576 ./heapdemo_linked\` (${#dumps[@]} dumps; the first and the last kept)"
done
record heapsample_v2.heap heapsample \
  "\`TCMALLOC_SAMPLE_PARAMETER=4096 ./heapsample\` (tests/corpus/c/heapsample.cc, \`-ltcmalloc\`): \`MallocExtension::GetHeapSample\`, \`heap_v2/4096\`"
record heapsample_growthz.heap heapsample \
  "the same run: \`MallocExtension::GetHeapGrowthStacks\` (\`@ growth\`)"
cp PROVENANCE.md "$out/PROVENANCE.md"
echo "recorded $(ls "$out" | wc -l) files into $out"
