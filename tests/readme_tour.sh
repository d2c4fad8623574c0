#!/usr/bin/env bash
# The README's tour runs as written: every command between the `<!-- tour:begin -->` and
# `<!-- tour:end -->` markers of README.md, in order, in a scratch folder where `build`
# is the build directory under test and `experiments` the source tree's (the paths the
# tour uses). The first failing command fails the test, printed with its output. The
# tour is CPU only (the README gives the GPU commands after it), so it runs anywhere.
#
#   tests/readme_tour.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$(cd "${1:?usage: readme_tour.sh SOURCE_DIR BUILD_DIR}" && pwd)
build=$(cd "${2:?usage: readme_tour.sh SOURCE_DIR BUILD_DIR}" && pwd)
readme="$src/README.md"

# The tour's commands: the fenced block between the markers, comments and blank lines
# dropped, a line ending in a backslash joined to the next.
mapfile -t commands < <(awk '
  /<!-- tour:begin -->/ { on = 1; next }
  /<!-- tour:end -->/ { on = 0 }
  !on || /^[[:space:]]*```/ || /^[[:space:]]*#/ || /^[[:space:]]*$/ { next }
  { line = line $0
    if (sub(/\\$/, "", line)) next
    print line; line = "" }' "$readme")
if [ "${#commands[@]}" -eq 0 ]; then
  echo "readme_tour.sh: $readme has no commands between <!-- tour:begin --> and <!-- tour:end -->" >&2
  exit 1
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/mare-tour.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
ln -s "$build" "$scratch/build"
ln -s "$src/experiments" "$scratch/experiments"
cd "$scratch"
for cmd in "${commands[@]}"; do
  echo "\$ $cmd"
  start=$SECONDS
  if ! bash -c "$cmd" >out.log 2>&1; then
    echo "readme_tour.sh: README.md's tour command failed: $cmd" >&2
    cat out.log >&2
    exit 1
  fi
  echo "  ok ($((SECONDS - start)) s)"
done
echo "readme_tour.sh: ${#commands[@]} commands of the README's tour ran"
