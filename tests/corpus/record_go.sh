#!/usr/bin/env bash
# Records Go heap profiles as the Go toolchain writes them (runtime/pprof, net/http/pprof,
# `go test -memprofile`, `go tool pprof -proto`) into tests/data/pprof/go/, each beside
# `go tool pprof`'s own figures for it (`<file>.raw.txt`: `-raw`; `<file>.top.txt`: `-top -unit=B`
# for each sample type) and its provenance (tests/data/pprof/go/PROVENANCE.md).
# The program is tests/corpus/go/heapdemo (8 goroutines, 4 kinds of work, an inlined helper);
# tests/corpus/go/onetype merges profiles of one sample type as profile stores export them.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=$repo/tests/data/pprof/go
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
cp -r "$repo/tests/corpus/go/heapdemo/." "$work/"
cd "$work"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0
version=$(go version)

go build -o heapdemo .
./heapdemo
# go test's own memory profile (it writes runtime/pprof's "allocs" profile, debug=0)
go test -run TestWorkers -bench BenchmarkReport -benchtime 200x -memprofilerate 4096 \
  -memprofile gotest_mem.pprof -o heapdemo.test . > /dev/null
# pprof's merge of two heap profiles of one program at two times (what profile stores do)
go tool pprof -proto runtime_heap.pb.gz http_heap.pb.gz > merged_heap.pb.gz 2> /dev/null
# a profile store's export of one series (inuse_space) over an hour's window: made by pprof's own
# profile package (as vendored in Go's source tree) from the two heap profiles above
cp -r "$repo/tests/corpus/go/onetype" onetype
mkdir onetype/pprof && cp -r "$(go env GOROOT)/src/cmd/vendor/github.com/google/pprof/profile" onetype/pprof/
printf 'module github.com/google/pprof\n\ngo 1.19\n' > onetype/pprof/go.mod
(cd onetype && GOPROXY=off go build -o ../onetype_bin .)
./onetype_bin inuse_space 3600 store_inuse_space_1h.pb.gz runtime_heap.pb.gz http_heap.pb.gz

declare -A how=(
  [runtime_heap.pb.gz]='pprof.Lookup("heap").WriteTo(f, 0) after runtime.GC()'
  [runtime_heap_debug1.txt]='pprof.Lookup("heap").WriteTo(f, 1) (the legacy text form)'
  [runtime_allocs.pb.gz]='pprof.Lookup("allocs").WriteTo(f, 0)'
  [http_heap.pb.gz]='GET /debug/pprof/heap (net/http/pprof handler)'
  [http_allocs.pb.gz]='GET /debug/pprof/allocs (net/http/pprof handler)'
  [http_heap_delta.pb.gz]='GET /debug/pprof/heap?seconds=2 (net/http/pprof serveDeltaProfile) while work goes on'
  [gotest_mem.pprof]='go test -run TestWorkers -bench BenchmarkReport -benchtime 200x -memprofilerate 4096 -memprofile gotest_mem.pprof'
  [merged_heap.pb.gz]='go tool pprof -proto runtime_heap.pb.gz http_heap.pb.gz'
  [store_inuse_space_1h.pb.gz]='tests/corpus/go/onetype (pprof'"'"'s profile package: Parse, one sample type kept, Merge, DurationNanos = 3600 s, Write) of runtime_heap.pb.gz and http_heap.pb.gz: the shape of a profile store'"'"'s one-series export, not written by a store'
)
{
  echo "# Go heap profiles, recorded by tests/corpus/record_go.sh"
  echo
  echo "Written by $version (Debian 12's golang-1.19), runtime.MemProfileRate = 4096, from"
  echo "tests/corpus/go/heapdemo; figures by that Go's \`go tool pprof\` (\`-raw\` in \`<file>.raw.txt\`,"
  echo "\`-top -unit=B -sample_index=<type>\` for each sample type in \`<file>.top.txt\`)."
  echo
  echo "| file | bytes | written by | the tool's figures |"
  echo "|---|---:|---|---|"
} > PROVENANCE.md
for file in runtime_heap.pb.gz runtime_heap_debug1.txt runtime_allocs.pb.gz http_heap.pb.gz \
  http_allocs.pb.gz http_heap_delta.pb.gz gotest_mem.pprof merged_heap.pb.gz \
  store_inuse_space_1h.pb.gz; do
  cp "$file" "$out/$file"
  binary=heapdemo
  [ "$file" = gotest_mem.pprof ] && binary=heapdemo.test
  go tool pprof -raw "$binary" "$file" > "$out/$file.raw.txt" 2> /dev/null
  : > "$out/$file.top.txt"
  types=$(sed -n '/^Samples:/{n;p;q}' "$out/$file.raw.txt")
  for type in $types; do
    go tool pprof -top -nodecount=12 -unit=B -sample_index="${type%%/*}" "$binary" "$file" \
      >> "$out/$file.top.txt" 2> /dev/null
  done
  echo "| \`$file\` | $(stat -c %s "$file") | ${how[$file]} | \`$file.raw.txt\` (go tool pprof -raw), \`$file.top.txt\` (go tool pprof -top) |" >> PROVENANCE.md
done
cp PROVENANCE.md "$out/PROVENANCE.md"
echo "recorded $(ls "$out" | wc -l) files into $out"
