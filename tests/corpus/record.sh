#!/usr/bin/env bash
# Records the test corpus from the real tools that install on this machine (Debian 12): each
# tests/corpus/record_<tool>.sh builds its programs in a temporary directory, runs the tool,
# and writes the tool's output into tests/data/<format>/ beside the tool's own figures for it
# and a provenance line (tool, version, command). Not run by CI (the files are committed);
# re-run by anyone: `tests/corpus/record.sh` (all) or `tests/corpus/record.sh go valgrind`.
set -euo pipefail
cd "$(dirname "$0")/../.."
wanted=("$@")
for script in tests/corpus/record_*.sh; do
  name=$(basename "$script" .sh); name=${name#record_}
  if [ ${#wanted[@]} -gt 0 ] && [[ ! " ${wanted[*]} " =~ " $name " ]]; then continue; fi
  printf '\n==> recording %s\n' "$name"
  bash "$script"
done
