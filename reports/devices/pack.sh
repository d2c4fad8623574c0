#!/usr/bin/env bash
# Packs a built tree into a relocatable folder, to build on one machine and run
# on another (a cluster's GPU node has the driver and the CUDA toolkit, rarely
# the Debian packages the build used):
#   reports/devices/pack.sh BUILD_DIR OUT_DIR      (or: ./run_all.sh pack OUT_DIR)
# OUT_DIR then holds
#   bin/      mare, every test binary and every benchmark binary of BUILD_DIR
#   lib/      the shared libraries they load that a CUDA machine lacks: every
#             library ldd resolves except the C and C++ runtimes (libc, libm,
#             libstdc++, libgcc_s, …), the CUDA driver (libcuda) and cuBLAS
#             (it comes with CUDA); so yaml-cpp, Google Benchmark and cudart
#   source/   the committed source files (the tests read specs, headers and
#             reports from it: MARE_SOURCE_DIR)
#   env.sh    sourced there: PATH, LD_LIBRARY_PATH, MARE_SOURCE_DIR and MARE_CLI
#             (the `mare` the CLI tests run)
#   PACKED    what was packed, from which commit and build
# On the other machine: `source OUT_DIR/env.sh`, then run the binaries, or
# `OUT_DIR/source/reports/devices/gpu_report.sh OUT_DIR` (no configure, no build).
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 BUILD_DIR OUT_DIR" >&2; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
out=$2
[ -x "$build/mare" ] || { echo "pack: $build/mare is missing: build first (./run_all.sh build)" >&2; exit 1; }
if [ -e "$out" ] && [ ! -f "$out/PACKED" ]; then
  echo "pack: $out exists and is not a packed folder; give a new or a packed one" >&2
  exit 1
fi
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/source"

# Binaries: mare, then every executable file under tests/ and */bench/ of the build.
bins=("$build/mare")
while IFS= read -r -d '' f; do bins+=("$f"); done < <(
  find "$build/tests" "$build/kernels/bench" "$build/models/bench" -type f -perm -u+x \
    ! -path '*/CMakeFiles/*' ! -name '*.sh' -print0 2>/dev/null | sort -z)
for f in "${bins[@]}"; do
  head -c 4 "$f" | grep -q 'ELF' || continue
  cp "$f" "$out/bin/"
done

# Shared libraries: what ldd resolves, less what every Linux or CUDA machine has.
skip='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|libpthread\.|librt\.|libstdc\+\+|libgcc_s|libcuda\.|libcublas|libcublasLt)'
for f in "$out"/bin/*; do
  ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ $name =~ $skip ]] && continue
  cp -L "$path" "$out/lib/$name"
done

# The committed sources (the tests' data, headers and scripts).
(cd "$root" && git ls-files -z | tar --null -T - -cf -) | tar -xf - -C "$out/source"

cat >"$out/env.sh" <<'EOF'
# Source this on the machine that runs the packed binaries.
_mare_pack=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PATH="$_mare_pack/bin:$PATH"
export LD_LIBRARY_PATH="$_mare_pack/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export MARE_SOURCE_DIR="$_mare_pack/source"
export MARE_CLI="$_mare_pack/bin/mare"
unset _mare_pack
EOF
{
  echo "mare pack of $(git -C "$root" rev-parse --short=12 HEAD)$(git -C "$root" diff --quiet HEAD -- 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "build: $build ($(grep -m1 '^CMAKE_BUILD_TYPE' "$build/CMakeCache.txt" 2>/dev/null | cut -d= -f2))"
  echo "cuda: $(grep -m1 '^MARE_CUDA:' "$build/CMakeCache.txt" 2>/dev/null | cut -d= -f2), architectures $(grep -m1 '^CMAKE_CUDA_ARCHITECTURES' "$build/CMakeCache.txt" 2>/dev/null | cut -d= -f2)"
  echo "binaries: $(ls "$out/bin" | tr '\n' ' ')"
  echo "libraries: $(ls "$out/lib" | tr '\n' ' ')"
} >"$out/PACKED"
echo "packed $(ls "$out/bin" | wc -l) binaries and $(ls "$out/lib" | wc -l) libraries into $out ($(du -sh "$out" | cut -f1))"
