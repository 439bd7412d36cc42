#!/usr/bin/env bash
# Builds the debug files of tests/symbols from src/chat_cache.cpp and prints what addr2line and
# llvm-symbolizer say at the offsets the tests look up (recorded in PROVENANCE.md and
# expected.json). Run once by hand; the tests only read the committed files, no compiler needed.
# Needs gcc, clang, lld (ld64.lld), llvm (dsymutil, llvm-lipo, llvm-symbolizer), binutils.
set -euo pipefail
cd "$(dirname "$0")"
export PATH="/usr/lib/llvm-14/bin:$PATH"
# A fixed folder and no object timestamps: the Mach-O debug map records the objects' path and
# mtime, and ld64.lld's UUID hashes it, so this keeps the UUIDs the same from run to run.
export ZERO_AR_DATE=1
work=/tmp/memdash-symbols-build
rm -rf "$work" && mkdir "$work"
trap 'rm -rf "$work"' EXIT
ln -s "$(command -v llvm-lipo)" "$work/lipo"  # dsymutil calls `lipo` for a fat binary
cp src/chat_cache.cpp "$work/"
(
  cd "$work"
  gcc -g -O1 -fdebug-prefix-map="$work"=/src -o chat_cache.elf chat_cache.cpp
  strip --strip-debug -o chat_cache.symtab.elf chat_cache.elf
  gcc -g -O1 -shared -fPIC -Wl,-soname,libchat_cache.so -fdebug-prefix-map="$work"=/src \
    -o libchat_cache.so chat_cache.cpp
  for arch in arm64 x86_64; do
    clang -g -O1 -target "$arch-apple-macos11" -fdebug-prefix-map="$work"=/src \
      -c chat_cache.cpp -o "chat_cache.$arch.o"
    ld64.lld -arch "$arch" -platform_version macos 11.0 11.0 -dylib \
      -install_name @rpath/libchat_cache.dylib -undefined dynamic_lookup \
      -o "libchat_cache.$arch.dylib" "chat_cache.$arch.o"
  done
  llvm-lipo -create libchat_cache.arm64.dylib libchat_cache.x86_64.dylib -output libchat_cache.dylib
  PATH="$work:$PATH" dsymutil libchat_cache.dylib -o libchat_cache.dylib.dSYM
  python3 -m zipfile -c libchat_cache.dylib.dSYM.zip libchat_cache.dylib.dSYM
)
cp "$work"/chat_cache.elf "$work"/chat_cache.symtab.elf "$work"/chat_cache.arm64.o \
   "$work"/libchat_cache.dylib.dSYM.zip "$work"/libchat_cache.so \
   "$work"/libchat_cache.arm64.dylib .

ELF_OFFSETS="0x1162 0x116d 0x1176 0x117d 0x119c 0x11be"
MACHO_OFFSETS="0x20 0x28 0x2c 0x60 0x84"
DSYM_OFFSETS="0x4d8 0x4e8 0x4f0 0x4f4 0x528 0x54c"
SO_OFFSETS="0x1160 0x1197 0x11ae"
DWARF=libchat_cache.dylib.dSYM/Contents/Resources/DWARF/libchat_cache.dylib
{
  echo "## Versions"; gcc --version | head -1; clang --version | head -1
  llvm-symbolizer --version | head -2 | tail -1; addr2line --version | head -1
  echo "## chat_cache.elf: file, build id"; file chat_cache.elf
  echo "## addr2line -f -i -C -e chat_cache.elf $ELF_OFFSETS"
  addr2line -f -i -C -e chat_cache.elf $ELF_OFFSETS
  echo "## llvm-symbolizer --obj=chat_cache.elf --inlining $ELF_OFFSETS"
  llvm-symbolizer --obj=chat_cache.elf --inlining $ELF_OFFSETS
  echo "## llvm-symbolizer --obj=chat_cache.symtab.elf $ELF_OFFSETS"
  llvm-symbolizer --obj=chat_cache.symtab.elf --inlining $ELF_OFFSETS
  echo "## libchat_cache.so: file, SONAME"; file libchat_cache.so
  readelf -d libchat_cache.so | grep SONAME
  echo "## llvm-symbolizer --obj=libchat_cache.so --inlining $SO_OFFSETS"
  llvm-symbolizer --obj=libchat_cache.so --inlining $SO_OFFSETS
  echo "## libchat_cache.arm64.dylib: install name, UUID"
  llvm-objdump --macho --dylib-id libchat_cache.arm64.dylib
  llvm-dwarfdump --uuid libchat_cache.arm64.dylib
  echo "## llvm-symbolizer --obj=chat_cache.arm64.o --inlining $MACHO_OFFSETS"
  llvm-symbolizer --obj=chat_cache.arm64.o --inlining $MACHO_OFFSETS
  for arch in arm64 x86_64; do
    echo "## llvm-symbolizer --obj=$DWARF --default-arch=$arch --inlining $DSYM_OFFSETS"
    (cd "$work" && llvm-symbolizer --obj=$DWARF --default-arch=$arch --inlining $DSYM_OFFSETS)
  done
  echo "## dwarfdump --uuid"; (cd "$work" && llvm-dwarfdump --uuid $DWARF)
} > "$work/tool-output.txt"
# PROVENANCE.md keeps its text up to the marker; the tools' output is written after it.
sed '/^<!-- tool output below: written by build.sh -->$/q' PROVENANCE.md > "$work/PROVENANCE.md"
{ echo '```'; cat "$work/tool-output.txt"; echo '```'; } >> "$work/PROVENANCE.md"
cp "$work/PROVENANCE.md" PROVENANCE.md
python3 - "$work" "$ELF_OFFSETS" "$MACHO_OFFSETS" "$DSYM_OFFSETS" "$SO_OFFSETS" <<'PY'
import json, subprocess, sys
work, elf, macho, dsym, so = sys.argv[1], *[s.split() for s in sys.argv[2:]]
def symbolize(obj, offsets, *extra, cwd="."):
    out = subprocess.run(["llvm-symbolizer", "--output-style=JSON", f"--obj={obj}", "--inlining",
                          *extra, *offsets], capture_output=True, text=True, check=True, cwd=cwd)
    return {item["Address"]: [{"function": s["FunctionName"], "file": s["FileName"],
                               "line": s["Line"]} for s in item["Symbol"]]
            for item in json.loads(out.stdout)}
dwarf = "libchat_cache.dylib.dSYM/Contents/Resources/DWARF/libchat_cache.dylib"
expected = {
    "chat_cache.elf": symbolize("chat_cache.elf", elf),
    "chat_cache.symtab.elf": symbolize("chat_cache.symtab.elf", elf),
    "chat_cache.arm64.o": symbolize("chat_cache.arm64.o", macho),
    "libchat_cache.so": symbolize("libchat_cache.so", so),
    "libchat_cache.dylib.dSYM/arm64": symbolize(dwarf, dsym, "--default-arch=arm64", cwd=work),
    "libchat_cache.dylib.dSYM/x86_64": symbolize(dwarf, dsym, "--default-arch=x86_64", cwd=work),
}
with open("expected.json", "w") as f:
    json.dump({"source": "llvm-symbolizer --output-style=JSON --inlining (build.sh)",
               "innermost_first": True, "objects": expected}, f, indent=1)
PY
