#!/usr/bin/env bash
# Builds mare with the CUDA backend on a GPU machine, runs the whole test suite
# and the GPU benchmarks, and writes a Markdown summary beside this script:
#   reports/devices/<gpu-name>-<date>.md   (+ the raw logs under <...>/)
# Usage (from the repository root, on the GPU machine):
#   reports/devices/gpu_report.sh [BUILD_DIR]        default build-gpu
# Environment: MARE_JOBS (default nproc), CMAKE_CUDA_ARCHITECTURES (default 75;90).
# The tests run with MARE_REQUIRE_GPU=1: on this machine a GPU test that cannot run
# (no device, a broken driver) fails with the CUDA error instead of skipping.
set -uo pipefail
export MARE_REQUIRE_GPU=1
cd "$(dirname "$0")/../.."
build="${1:-build-gpu}"
jobs="${MARE_JOBS:-$(nproc)}"
archs="${CMAKE_CUDA_ARCHITECTURES:-75;90}"

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMARE_CUDA=ON \
  "-DCMAKE_CUDA_ARCHITECTURES=$archs" >/dev/null || exit 1
cmake --build "$build" -j "$jobs" || exit 1

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mare_gpu_report.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
"$build/mare" doctor >"$tmp/doctor.txt"
gpu=$(grep -m1 '^gpu 0' "$tmp/doctor.txt" | sed 's/^gpu 0 *//; s/,.*//')
[ -n "$gpu" ] || { echo "no GPU visible: $(grep '^cuda' "$tmp/doctor.txt")" >&2; exit 1; }
slug=$(echo "$gpu" | tr 'A-Z ' 'a-z-' | tr -cd 'a-z0-9-')-$(date -u +%Y-%m-%d)
dir="reports/devices/$slug"
mkdir -p "$dir"
cp "$tmp/doctor.txt" "$dir/doctor.txt"
nvidia-smi >"$dir/nvidia-smi.txt" 2>&1 || true

# 1. the whole suite (GPU tests included), 2. the CUDA parity table on its own
ctest --test-dir "$build" --output-on-failure -j "$jobs" >"$dir/ctest.txt" 2>&1
ctest_rc=$?
"$build/tests/kernels/test_kernels" --gtest_filter='OpTableCuda*:CudaRuntime*:CudaPhilox*:*Cuda*' \
  --gtest_brief=0 >"$dir/parity.txt" 2>&1
parity_rc=$?

# 3. benchmarks
"$build/mare" bench allocation --device cuda --json "$dir/allocation_cuda.json" \
  --csv "$dir/allocation_cuda.csv" >"$dir/allocation_cuda.txt" 2>&1
"$build/mare" bench allocation --json "$dir/allocation_cpu.json" \
  --csv "$dir/allocation_cpu.csv" >"$dir/allocation_cpu.txt" 2>&1
"$build/kernels/bench/bench_ops" --device cuda --benchmark_out="$dir/ops_cuda.json" \
  --benchmark_out_format=json --benchmark_min_time=0.05 >"$dir/ops_cuda.txt" 2>&1

passed=$(grep -c '^\[       OK \]' "$dir/parity.txt")
failed=$(grep -c '^\[  FAILED  \].*(' "$dir/parity.txt")
skipped=$(grep -c '^\[  SKIPPED \].*(' "$dir/parity.txt")
{
  echo "# $gpu — $(date -u +%Y-%m-%d)"
  echo
  echo "Produced by \`reports/devices/gpu_report.sh\` at commit $(git rev-parse --short=12 HEAD)."
  echo
  echo '## Machine'
  echo
  echo '```'
  cat "$dir/doctor.txt"
  echo '```'
  echo
  echo '## Tests'
  echo
  echo "- whole suite (\`ctest\`, \`MARE_REQUIRE_GPU=1\`: a GPU test that cannot run fails): exit $ctest_rc — $(grep -E 'tests passed|tests failed' "$dir/ctest.txt" | tail -1)"
  echo "- CUDA parity table and runtime (\`test_kernels --gtest_filter='OpTableCuda*:CudaRuntime*:CudaPhilox*:*Cuda*'\`):"
  echo "  exit $parity_rc, $passed passed, $failed failed, $skipped skipped"
  if [ "$failed" -gt 0 ]; then
    echo
    echo 'Failing tests:'
    echo
    grep '^\[  FAILED  \].*(' "$dir/parity.txt" | sed 's/^/    /'
  fi
  echo
  echo '## Allocation kernels on the GPU (`mare bench allocation --device cuda`)'
  echo
  echo '```'
  cat "$dir/allocation_cuda.txt"
  echo '```'
  echo
  echo "Raw outputs: \`$dir/\` (ctest.txt, parity.txt, allocation_{cuda,cpu}.{txt,json,csv}, ops_cuda.json)."
} >"$dir.md"
echo "wrote $dir.md"
