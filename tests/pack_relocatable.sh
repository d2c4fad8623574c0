#!/usr/bin/env bash
# The packed folder of ./run_all.sh pack (reports/devices/pack.sh) runs where
# it is moved to, with nothing of the build tree: pack BUILD_DIR, move the
# folder, hide the build's own binaries from PATH, source its env.sh, then run
# `mare doctor`, a CLI command on generated data, and two test binaries (one of
# them runs the packed `mare` through MARE_CLI) from the moved folder.
# Usage: tests/pack_relocatable.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mare_pack_test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$root/reports/devices/pack.sh" "$build" "$tmp/first" >/dev/null
mv "$tmp/first" "$tmp/moved"
packed="$tmp/moved"
for f in PACKED env.sh bin/mare bin/test_stats bin/test_collect source/run_all.sh; do
  [ -e "$packed/$f" ] || { echo "pack_relocatable: $f is missing from the packed folder" >&2; exit 1; }
done
# A folder that is not a packed one is never overwritten.
mkdir "$tmp/other"
if "$root/reports/devices/pack.sh" "$build" "$tmp/other" 2>/dev/null; then
  echo "pack_relocatable: pack.sh overwrote a folder that was not a packed one" >&2
  exit 1
fi
(
  cd "$tmp"
  unset MARE_SOURCE_DIR MARE_CLI
  # shellcheck disable=SC1091
  source "$packed/env.sh"
  [ "$(command -v mare)" = "$packed/bin/mare" ] || { echo "pack_relocatable: mare is not the packed one" >&2; exit 1; }
  mare doctor | grep -q '^mare ' || { echo "pack_relocatable: mare doctor failed" >&2; exit 1; }
  mare data generate synth-cdr --out "$tmp/data" --docs 4 --seed 1 >/dev/null
  test_stats --gtest_brief=1 >/dev/null
  test_collect --gtest_brief=1 >/dev/null
)
echo "pack_relocatable: the packed folder ran from $packed"
