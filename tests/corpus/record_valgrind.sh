#!/usr/bin/env bash
# Records valgrind memcheck's own output (text log, `-v`, `--xml=yes`) into tests/data/leaks/,
# from the programs in tests/data/leaks/src/ built here with gcc, and writes valgrind's own
# figures for each file (its HEAP SUMMARY, LEAK SUMMARY, ERROR SUMMARY and signal lines) with a
# provenance line (tool, version, command) into tests/data/leaks/valgrind-3.19.recorded.txt.
# valgrind 3.19's XML (protocol 4) states no totals: an XML file's figures are those of the same
# program and options run again without --xml (the programs are deterministic).
# Run from anywhere: `tests/corpus/record.sh valgrind`. Needs valgrind and gcc.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
src=$repo/tests/data/leaks/src
out=$repo/tests/data/leaks
figures=$out/valgrind-3.19.recorded.txt
# A fixed directory: the paths valgrind prints (XML <dir>) are the same at each recording.
work=${TMPDIR:-/tmp}/memdash-leaks
rm -rf "$work" && mkdir -p "$work" && cd "$work"
cp "$src"/*.c .
for program in four_kinds added_check parent_child every_kind crash; do
  gcc -O0 -g -fno-inline "$program.c" -o "$program"
done
version=$(valgrind --version)
package=$(dpkg-query -W -f '${Version}' valgrind 2>/dev/null || echo unknown)
{
  echo "# valgrind's own figures for the files it wrote here (tests/corpus/record_valgrind.sh)"
  echo "# tool: $version (Debian package valgrind $package), memcheck; gcc: $(gcc -dumpfullversion)"
} >"$figures"

# The lines of a text log that state valgrind's figures.
summary_lines() {
  grep -E '== (HEAP SUMMARY|    in use at exit|  total heap usage|LEAK SUMMARY|  +(definitely|indirectly|possibly) lost:|  +still reachable:|  +suppressed:|ERROR SUMMARY|All heap blocks were freed|Process terminating|Command:)' "$1" || true
}

# text NAME VALGRIND-OPTIONS... -- PROGRAM ARGS...: valgrind's stderr into NAME, byte for byte.
text() {
  local name=$1; shift
  local options=() program=()
  while [ "$1" != -- ]; do options+=("$1"); shift; done; shift
  program=("$@")
  valgrind "${options[@]}" "${program[@]}" >/dev/null 2>"$out/$name" || true
  {
    echo
    echo "## $name"
    echo "# command: valgrind ${options[*]} ${program[*]}  (its stderr)"
    summary_lines "$out/$name"
  } >>"$figures"
}

# xml NAME VALGRIND-OPTIONS... -- PROGRAM ARGS...: valgrind's --xml-file into NAME; its figures
# from the same run without --xml.
xml() {
  local name=$1; shift
  local options=() program=()
  while [ "$1" != -- ]; do options+=("$1"); shift; done; shift
  program=("$@")
  valgrind "${options[@]}" --xml=yes --xml-file="$work/$name" "${program[@]}" >/dev/null 2>&1 || true
  cp "$work/$name" "$out/$name"
  valgrind "${options[@]}" "${program[@]}" >/dev/null 2>"$work/$name.log" || true
  {
    echo
    echo "## $name"
    echo "# command: valgrind ${options[*]} --xml=yes --xml-file=$name ${program[*]}"
    echo "# figures: the same run without --xml=yes (valgrind ${options[*]} ${program[*]})"
    summary_lines "$work/$name.log"
  } >>"$figures"
}

# One block of each kind (four_kinds.c), by leak-check level.
text valgrind-3.19_summary.txt -- ./four_kinds
text valgrind-3.19_full.txt --leak-check=full -- ./four_kinds
text valgrind-3.19_full_all.txt --leak-check=full --show-leak-kinds=all -- ./four_kinds
text valgrind-3.19_full_all_verbose.txt -v --leak-check=full --show-leak-kinds=all -- ./four_kinds
xml valgrind-3.19_protocol4.xml --leak-check=full --show-leak-kinds=all -- ./four_kinds
text valgrind-3.19_clean.txt --leak-check=full -- ./four_kinds clean
xml valgrind-3.19_clean_protocol4.xml --leak-check=full -- ./four_kinds clean
text valgrind-3.19_no_leak_check.txt --leak-check=no -- ./four_kinds
text valgrind-3.19_helgrind.txt --tool=helgrind -- ./four_kinds clean
# Client requests: a leak check, then an added one, before the one at exit (added_check.c).
text valgrind-3.19_added_leak_check.txt --leak-check=full --show-leak-kinds=all -- ./added_check
# Every kind in thousands (every_kind.c): counts printed with separators.
text valgrind-3.19_every_kind.txt --leak-check=full --show-leak-kinds=all -- ./every_kind
text valgrind-3.19_every_kind_verbose.txt -v --leak-check=full --show-leak-kinds=all -- ./every_kind
xml valgrind-3.19_every_kind_protocol4.xml --leak-check=full --show-leak-kinds=all -- ./every_kind
# A program that dies of SIGSEGV (crash.c): valgrind's leak check runs as it dies; with
# --leak-check=no none runs. `crash kept` leaves only still-reachable blocks, which the default
# --show-leak-kinds does not list: its XML holds a <fatal_signal> and no leak record.
text valgrind-3.19_crash.txt --leak-check=full -- ./crash
xml valgrind-3.19_crash_protocol4.xml --leak-check=full -- ./crash
xml valgrind-3.19_crash_kept_protocol4.xml --leak-check=full -- ./crash kept
text valgrind-3.19_crash_no_leak_check.txt --leak-check=no -- ./crash
xml valgrind-3.19_crash_no_leak_check_protocol4.xml --leak-check=no -- ./crash
# --trace-children=yes (parent_child.c forks and execs itself as `child`): two processes.
text valgrind-3.19_trace_children.txt --trace-children=yes --leak-check=full -- ./parent_child

echo "recorded: $(cd "$out" && ls valgrind-3.19_* | wc -l) valgrind files in $out; figures in $figures"
