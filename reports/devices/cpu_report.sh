#!/usr/bin/env bash
# shellcheck disable=SC2016  # backquotes in single-quoted Markdown are literal on purpose
# Runs the CPU performance benchmarks on this machine and writes a
# Markdown summary beside this script:
#   reports/devices/cpu-<cpu>-<cores>c-<date>.md   (+ the raw outputs under <...>/)
# Usage (from the repository root, on a quiet machine: the numbers are only as
# good as the machine is idle; the load average is recorded before and after):
#   reports/devices/cpu_report.sh [BUILD_DIR]          default build (built if missing)
# Environment:
#   MARE_JOBS           build jobs (default nproc)
#   MARE_PORTABLE=0     skip the portable build (-DMARE_NATIVE=OFF, CPU only, only
#                       the `mare` target) and its allocation benchmark (default 1)
#   MARE_ITER_SHAPE     `mare bench iteration --shape` (default semeval; cdr/both
#                       take minutes per row at the paper size)
# What runs, each at 1 thread and at every core (the speedup beside):
#   1. bench_ops: matmul, attention, conv, norms, softmax (Google Benchmark JSON)
#   2. `mare bench allocation`: every variant over seq x memory size, forward and
#      forward+backward, beside the copy floor (and on the portable build)
#   3. `mare bench iteration --size paper`: one training iteration of every model
#      with its GEMM flops, the GEMM bound and the ratio to it
#   4. Table 4.15's NTCRE-CPD / UTRE-CPD at both shapes (and NTCRE-CPD at W = 64)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
build="${1:-build}"
jobs="${MARE_JOBS:-$(nproc)}"
portable="${MARE_PORTABLE:-1}"
shape="${MARE_ITER_SHAPE:-semeval}"

if [ ! -x "$build/mare" ] || [ ! -x "$build/kernels/bench/bench_ops" ]; then
  MARE_BUILD_DIR="$build" ./run_all.sh build >/dev/null || exit 1
fi
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
cpu=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/.*: *//')
cores=$(nproc)
slug=cpu-$(echo "$cpu" | tr 'A-Z ' 'a-z-' | tr -cd 'a-z0-9-' | cut -c1-40)-${cores}c-$(date -u +%Y-%m-%d)
dir="reports/devices/$slug"
mkdir -p "$dir"
"$build/mare" doctor >"$dir/doctor.txt" 2>&1
lscpu >"$dir/lscpu.txt" 2>&1 || true
t0=$(date +%s)

# 1. ops
"$build/kernels/bench/bench_ops" --benchmark_out="$dir/ops.json" --benchmark_out_format=json \
  --benchmark_min_time=0.1 >"$dir/ops.txt" 2>&1
ops_rc=$?
# 2. allocation (native build)
"$build/mare" bench allocation --json "$dir/allocation.json" --csv "$dir/allocation.csv" \
  >"$dir/allocation.txt" 2>&1
alloc_rc=$?
# 3. training iterations at the paper size
models=UTRE,UTRE-CPD,NTCRE,NTCRE-CPD,cnn,bran
"$build/mare" bench iteration --size paper --shape "$shape" --models "$models" --grpu \
  --iterations 3 --speedup --json "$dir/iteration.json" >"$dir/iteration.txt" 2>&1
iter_rc=$?
# 4. Table 4.15's memory rows at both shapes: NTCRE-CPD over UTRE-CPD, and at W = 64
"$build/mare" bench iteration --size paper --shape both --iterations 2 \
  --models UTRE-CPD,NTCRE-CPD,NTCRE-CPD+word=64 --json "$dir/iteration_ntcre.json" \
  >"$dir/iteration_ntcre.txt" 2>&1
ntcre_rc=$?
# 5. the portable build's allocation sweep
port_rc=skipped
if [ "$portable" = 1 ]; then
  pbuild="$build-portable"
  launcher=()
  command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  if cmake -S . -B "$pbuild" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMARE_NATIVE=OFF -DMARE_CUDA=OFF \
    -DMARE_BUILD_TESTS=OFF -DMARE_BUILD_BENCHMARKS=OFF "${launcher[@]}" >/dev/null &&
    cmake --build "$pbuild" -j "$jobs" --target mare >"$dir/portable_build.txt" 2>&1; then
    "$pbuild/mare" bench allocation --json "$dir/allocation_portable.json" \
      --csv "$dir/allocation_portable.csv" >"$dir/allocation_portable.txt" 2>&1
    port_rc=$?
  else
    port_rc="build failed (see portable_build.txt)"
  fi
fi
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
elapsed=$(($(date +%s) - t0))

section() {  # title, file
  echo
  echo "## $1"
  echo
  echo '```'
  cat "$2"
  echo '```'
}
{
  echo "# CPU benchmarks: $cpu, $cores cores — $(date -u +%Y-%m-%d)"
  echo
  echo "Produced by \`reports/devices/cpu_report.sh\` at commit $(git rev-parse --short=12 HEAD)"
  echo "($(git status --porcelain -- . ":(exclude)$dir" ":(exclude)$dir.md" | grep -c .) uncommitted paths besides this report's own files), build \`$build\`."
  echo "Load average (1, 5, 15 min) before: $load_start; after: $load_end. Benchmarks took ${elapsed} s."
  echo "Exit codes: bench_ops $ops_rc, allocation $alloc_rc, iteration $iter_rc, NTCRE rows $ntcre_rc, portable allocation $port_rc."
  section 'Machine (`mare doctor`)' "$dir/doctor.txt"
  echo
  echo '## Ops, 1 thread and all (`bench_ops`; the speedup table is at the end)'
  echo
  echo '```'
  sed -n '/^benchmark (ms per iteration)/,$p' "$dir/ops.txt"
  echo '```'
  section 'Allocation kernels, native build (`mare bench allocation`)' "$dir/allocation.txt"
  section "Training iterations at the paper size, $shape shape (\`mare bench iteration\`)" "$dir/iteration.txt"
  section 'NTCRE-CPD against UTRE-CPD at both shapes, and at W = 64 (`mare bench iteration`)' "$dir/iteration_ntcre.txt"
  if [ "$portable" = 1 ] && [ -f "$dir/allocation_portable.txt" ]; then
    section 'Allocation kernels, portable build (`-DMARE_NATIVE=OFF`)' "$dir/allocation_portable.txt"
  fi
  echo
  echo "Raw outputs: \`$dir/\` (ops.json, allocation*.{json,csv,txt}, iteration.{json,txt}, doctor.txt, lscpu.txt)."
} >"$dir.md"
echo "wrote $dir.md"
