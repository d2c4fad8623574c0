#!/usr/bin/env bash
# The packed folder of ./run_all.sh pack (reports/devices/pack.sh) runs where
# it is moved to, with nothing of the build tree: pack BUILD_DIR, move the
# folder, hide the build's own binaries from PATH, source its env.sh, then run
# `mare doctor`, a CLI command on generated data, and two test binaries (one of
# them runs the packed `mare` through MARE_CLI) from the moved folder. The pack is made by
# `./run_all.sh pack DIR`, and its lib/ checked against what each binary loads.
# Usage: tests/pack_relocatable.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mare_pack_test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# Through the README's command (run_all.sh pack DIR: the build is up to date, so it only
# packs), as a user makes a pack for a GPU machine.
MARE_BUILD_DIR="$build" MARE_JOBS=1 "$root/run_all.sh" pack "$tmp/first" >/dev/null
mv "$tmp/first" "$tmp/moved"
packed="$tmp/moved"
# lib/ holds the libraries the binaries load that a CUDA machine lacks (those outside the C
# and C++ runtimes, the driver and cuBLAS), and none of those it has.
# pack.sh's own list of what every Linux or CUDA machine has (one place for the pattern).
skip=$(sed -n "s/^skip='\(.*\)'$/\1/p" "$root/reports/devices/pack.sh")
[ -n "$skip" ] || { echo "pack_relocatable: no skip= pattern in reports/devices/pack.sh" >&2; exit 1; }
if ls "$packed/lib" | grep -Eq "$skip"; then
  echo "pack_relocatable: lib/ holds a library every machine has: $(ls "$packed/lib" | grep -E "$skip" | tr '\n' ' ')" >&2
  exit 1
fi
for bin in "$packed"/bin/*; do
  [ -x "$bin" ] && file -b "$bin" 2>/dev/null | grep -q ELF || continue
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    echo "$name" | grep -Eq "$skip" && continue
    case "$path" in
      "$packed/lib/"*) ;;
      *) echo "pack_relocatable: $(basename "$bin") loads $name from $path, not from lib/" >&2; exit 1 ;;
    esac
  done < <(LD_LIBRARY_PATH="$packed/lib" ldd "$bin")
done
for need in libyaml-cpp libpugixml; do
  ls "$packed/lib" | grep -q "^$need" || { echo "pack_relocatable: lib/ lacks $need (bin/mare loads it)" >&2; exit 1; }
done
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
