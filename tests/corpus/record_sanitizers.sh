#!/usr/bin/env bash
# Records AddressSanitizer's and LeakSanitizer's reports, from Debian 12's GCC 12 and Clang 14,
# into tests/data/leaks/sanitizers/: each file is the program's stderr byte for byte (the
# sanitizer's report, whose SUMMARY line and `Direct/Indirect leak of …` headers are the tool's
# own figures), and tests/data/leaks/sanitizers/PROVENANCE.md gets one line per file: compiler
# and version, the build command, the environment and command of the run, the SUMMARY line.
#
# The programs are tests/data/leaks/src/four_kinds.c (a direct leak of 100 bytes, a 16-byte node
# holding 40 indirectly leaked bytes; its possibly lost and still-reachable blocks are no leak to
# LeakSanitizer), many_leaks.cc with lose_copy.c (new, new[], three objects from one site,
# std::vector, a shared library, a thread, a frame in code written at run time) and
# use_after_free.c (ASan's report of another error: the process stops before the leak check),
# leak_after_error.c (a use-after-free ASan recovers from, -fsanitize-recover=address with
# halt_on_error=0, then a leak: both reports in one log).
#
# The variants cover every frame form these runtimes print:
#   symbolized (`in fn file:line`, Clang `file:line:col`; runtime frames `in fn (module+0xoff)`),
#   ASAN_OPTIONS=symbolize=0 (` (module+0xoff)`; Clang adds `(BuildId: …)`), addr2line as the
#   symbolizer (`in malloc ??:?`), a frame in no module (`(<unknown module>)`), static and shared
#   runtimes (GCC's libasan/liblsan by default or -static-libasan/-static-liblsan; Clang's
#   static by default, -shared-libasan for libclang_rt.asan-x86_64.so), PIE and non-PIE.
# The module without a slash, `in fn (prog+0x401cb0)`, is printed when the run sets
# `strip_path_prefix` (as CI systems do to shorten paths): the runtime strips the prefix from
# module paths as from source paths. A module's offset equals the address when the program is
# not position-independent (-no-pie: loaded at its link address). Running the program by a
# relative name does not do it: the runtime names the executable by /proc/self/exe.
# llvm-symbolizer on or off PATH changes nothing here: GCC 12's libasan symbolizes with its
# built-in libbacktrace, and Debian's Clang 14 runtime falls back to /usr/bin/llvm-symbolizer-14;
# the `*_no_symbolizer_on_path` files show it.
#
# Re-run: tests/corpus/record.sh sanitizers (pids and addresses change from run to run; the
# build directory is fixed so that the paths in the reports do not).
set -euo pipefail
cd "$(dirname "$0")/../.."
src=$PWD/tests/data/leaks/src
out=$PWD/tests/data/leaks/sanitizers
build=/tmp/memdash-sanitizers
rm -rf "$build" "$out"
mkdir -p "$build/no-symbolizer" "$out"
cp "$src/four_kinds.c" "$src/many_leaks.cc" "$src/lose_copy.c" "$src/use_after_free.c" \
  "$src/leak_after_error.c" "$build/"
cd "$build"

gcc_version="$(gcc --version | head -n 1) (libasan8, liblsan0 $(dpkg-query -W -f='${Version}' libasan8))"
clang_version="$(clang --version | head -n 1) (libclang-rt-14-dev $(dpkg-query -W -f='${Version}' libclang-rt-14-dev))"
clang_runtime=$(dirname "$(clang -print-file-name=libclang_rt.asan-x86_64.so)")
manifest=$out/PROVENANCE.md
cat >"$manifest" <<'EOF'
# Sanitizer reports recorded here

Written by `tests/corpus/record_sanitizers.sh` (do not edit by hand; re-run the script). Each
file is the stderr of one run, byte for byte, built and run in `/tmp/memdash-sanitizers` on
Debian 12 (x86-64). The figures are the sanitizer's own: its `SUMMARY:` line (quoted below) and
its `Direct leak of … byte(s) in … object(s)` / `Indirect leak of …` headers in the file.

| file | compiler | build | run | SUMMARY |
|---|---|---|---|---|
EOF

declare -A compiler_of  # binary -> compiler version line
declare -A build_of     # binary -> build command

compile() {  # compile BINARY COMPILER-VERSION COMMAND...
  local binary=$1 version=$2
  shift 2
  "$@"
  compiler_of[$binary]=$version
  build_of[$binary]="$*"
}

record() {  # record FILE BINARY [VAR=VALUE…]: run ./BINARY with those variables, keep stderr
  local file=$1 binary=$2
  shift 2
  env "$@" "./$binary" >/dev/null 2>"$out/$file" || true  # the sanitizers exit non-zero
  local summary
  summary=$(grep '^SUMMARY: ' "$out/$file" | sed ':a;N;$!ba;s/\n/`; `/g' || true)
  summary=${summary:-(no SUMMARY line)}
  printf '| `%s` | %s | `%s` | `%s` | `%s` |\n' "$file" "${compiler_of[$binary]}" \
    "${build_of[$binary]}" "${*:+$* }./$binary" "$summary" >>"$manifest"
}

flags=(-O0 -g -fno-inline)
lib="-fPIC -shared lose_copy.c"
rpath=-Wl,-rpath,$build

# GCC 12: libasan.so.8 and liblsan.so.0 unless linked statically; symbolized by libbacktrace.
compile gcc_asan "$gcc_version" gcc "${flags[@]}" -fsanitize=address four_kinds.c -o gcc_asan
record gcc12-asan.txt gcc_asan
record gcc12-asan_symbolize0.txt gcc_asan ASAN_OPTIONS=symbolize=0
record gcc12-asan_no_symbolizer_on_path.txt gcc_asan PATH="$build/no-symbolizer"
# The slow unwinder: the stacks go on past __libc_start_call_main to `_start (prog+0x…)`.
record gcc12-asan_slow_unwind.txt gcc_asan ASAN_OPTIONS=fast_unwind_on_malloc=0
compile gcc_asan_static "$gcc_version" \
  gcc "${flags[@]}" -fsanitize=address -static-libasan four_kinds.c -o gcc_asan_static
record gcc12-asan_static.txt gcc_asan_static
record gcc12-asan_static_symbolize0.txt gcc_asan_static ASAN_OPTIONS=symbolize=0
compile gcc_asan_nopie "$gcc_version" \
  gcc -O0 -fno-inline -fsanitize=address -no-pie four_kinds.c -o gcc_asan_nopie
record gcc12-asan_nopie_strip_prefix.txt gcc_asan_nopie ASAN_OPTIONS=strip_path_prefix="$build/"
record gcc12-asan_nopie_strip_prefix_symbolize0.txt gcc_asan_nopie \
  ASAN_OPTIONS=symbolize=0:strip_path_prefix="$build/"
compile gcc_lsan "$gcc_version" gcc "${flags[@]}" -fsanitize=leak four_kinds.c -o gcc_lsan
record gcc12-lsan.txt gcc_lsan
compile gcc_lsan_static "$gcc_version" \
  gcc "${flags[@]}" -fsanitize=leak -static-liblsan four_kinds.c -o gcc_lsan_static
# GCC 12's static LeakSanitizer stops at start-up on Debian 12 ("LeakSanitizer: CHECK failed:
# lsan_interceptors.cpp:82 …", a failed assertion of the runtime, exit 23): kept as the tool's
# output that holds no leak check.
record gcc12-lsan_static.txt gcc_lsan_static
# shellcheck disable=SC2086
gcc "${flags[@]}" -fsanitize=address $lib -o libgcc_lose_copy.so
compile gcc_cxx "$gcc_version" g++ "${flags[@]}" -fsanitize=address many_leaks.cc \
  -L. -lgcc_lose_copy "$rpath" -pthread -o gcc_cxx
record gcc12-asan_cxx.txt gcc_cxx
record gcc12-asan_cxx_symbolize0.txt gcc_cxx ASAN_OPTIONS=symbolize=0
printf 'leak:lose_copy\nleak:lose_in_thread\n' >suppressions.txt
record gcc12-asan_cxx_suppressions_max_leaks.txt gcc_cxx \
  LSAN_OPTIONS=suppressions=suppressions.txt:max_leaks=2:report_objects=1
compile gcc_uaf "$gcc_version" gcc -O0 -g -fsanitize=address use_after_free.c -o gcc_uaf
record gcc12-asan_use_after_free.txt gcc_uaf
compile gcc_recover "$gcc_version" \
  gcc "${flags[@]}" -fsanitize=address -fsanitize-recover=address leak_after_error.c -o gcc_recover
record gcc12-asan_recover_then_leak.txt gcc_recover ASAN_OPTIONS=halt_on_error=0

# Clang 14: the runtime linked statically unless -shared-libasan; BuildIds printed.
compile clang_asan "$clang_version" clang "${flags[@]}" -fsanitize=address four_kinds.c -o clang_asan
record clang14-asan.txt clang_asan
record clang14-asan_symbolize0.txt clang_asan ASAN_OPTIONS=symbolize=0
record clang14-asan_no_symbolizer_on_path.txt clang_asan PATH="$build/no-symbolizer"
record clang14-asan_addr2line.txt clang_asan ASAN_OPTIONS=external_symbolizer_path=/usr/bin/addr2line
record clang14-asan_slow_unwind.txt clang_asan ASAN_OPTIONS=fast_unwind_on_malloc=0
compile clang_asan_shared "$clang_version" clang "${flags[@]}" -fsanitize=address -shared-libasan \
  four_kinds.c -Wl,-rpath,"$clang_runtime" -o clang_asan_shared
record clang14-asan_shared.txt clang_asan_shared
record clang14-asan_shared_symbolize0.txt clang_asan_shared ASAN_OPTIONS=symbolize=0
compile clang_asan_nopie "$clang_version" \
  clang -O0 -fno-inline -fsanitize=address -no-pie four_kinds.c -o clang_asan_nopie
record clang14-asan_nopie_strip_prefix.txt clang_asan_nopie ASAN_OPTIONS=strip_path_prefix="$build/"
record clang14-asan_nopie_strip_prefix_symbolize0.txt clang_asan_nopie \
  ASAN_OPTIONS=symbolize=0:strip_path_prefix="$build/"
compile clang_lsan "$clang_version" clang "${flags[@]}" -fsanitize=leak four_kinds.c -o clang_lsan
record clang14-lsan.txt clang_lsan
record clang14-lsan_symbolize0.txt clang_lsan LSAN_OPTIONS=symbolize=0
# shellcheck disable=SC2086
clang "${flags[@]}" -fsanitize=address $lib -o libclang_lose_copy.so
compile clang_cxx "$clang_version" clang++ "${flags[@]}" -fsanitize=address many_leaks.cc \
  -L. -lclang_lose_copy "$rpath" -pthread -o clang_cxx
record clang14-asan_cxx.txt clang_cxx
record clang14-asan_cxx_symbolize0.txt clang_cxx ASAN_OPTIONS=symbolize=0
compile clang_uaf "$clang_version" clang -O0 -g -fsanitize=address use_after_free.c -o clang_uaf
record clang14-asan_use_after_free.txt clang_uaf

printf 'recorded %s files into %s\n' "$(find "$out" -name '*.txt' | wc -l)" "$out"
