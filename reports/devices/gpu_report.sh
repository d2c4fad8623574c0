#!/usr/bin/env bash
# The GPU report: mare's whole test suite on the GPU, compute-sanitizer on every
# GPU test, the GPU benchmarks, and PyTorch's numbers beside them when a peer
# is at hand; writes a Markdown summary and the raw logs.
#
# Usage (on the GPU machine):
#   reports/devices/gpu_report.sh [TREE] [OUT_DIR]
# TREE is either
#   - a build directory of this checkout (default build-gpu): configured with
#     MARE_CUDA=ON and built here when needed, or
#   - a packed folder (./run_all.sh pack DIR on any machine, reports/devices/pack.sh):
#     run as it is, nothing configured or built: `DIR/source/reports/devices/gpu_report.sh DIR`.
# OUT_DIR (default reports/devices/<gpu>-<date> of the source tree) gets the raw
# logs; the summary is OUT_DIR.md beside it.
# Environment: MARE_JOBS (default nproc), CMAKE_CUDA_ARCHITECTURES (default
# 75;90, for a build), MARE_PEERS (a folder holding the PyTorch peers:
# bench_iteration.py, torch_alloc_gpu.py, models.py; run when python3 imports
# torch), MARE_SANITIZE (default 1: compute-sanitizer's MARE_SANITIZE_TOOLS, default
# "memcheck racecheck initcheck synccheck", each on every GPU test, one process per test,
# since one error poisons the CUDA context for the rest; 0 skips them).
# MARE_PROFILE (default 1: Nsight Compute's per-kernel time of one paper-size
# iteration of UTRE and NTCRE-CPD at both shapes, when ncu is on PATH; 0 skips it).
# MARE_STEP_TIMEOUT (seconds, default 1800) bounds each test shard, each
# sanitized test and each benchmark, so that a hang costs one step, not the report.
# The tests run with MARE_REQUIRE_GPU=1: on this machine a GPU test that cannot
# run (no device, a broken driver) fails with the CUDA error instead of skipping.
set -uo pipefail
export MARE_REQUIRE_GPU=1
src=$(cd "$(dirname "$0")/../.." && pwd)
tree="${1:-build-gpu}"
jobs="${MARE_JOBS:-$(nproc)}"
start=$(date +%s)
step() { echo "=== +$(($(date +%s) - start))s $*"; }
export MARE_STEP_TIMEOUT="${MARE_STEP_TIMEOUT:-1800}"
bounded() { timeout "$MARE_STEP_TIMEOUT" "$@"; }

if [ -f "$tree/PACKED" ]; then  # a packed folder: binaries in bin/, libraries in lib/
  tree=$(cd "$tree" && pwd)
  # shellcheck disable=SC1091
  source "$tree/env.sh"
  bin() { echo "$tree/bin/$1"; }
  origin="the packed folder $tree ($(head -n 1 "$tree/PACKED"))"
else
  archs="${CMAKE_CUDA_ARCHITECTURES:-75;90}"
  (cd "$src" && cmake -S . -B "$tree" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMARE_CUDA=ON \
    "-DCMAKE_CUDA_ARCHITECTURES=$archs" >/dev/null && cmake --build "$tree" -j "$jobs") || exit 1
  tree=$(cd "$src" && cd "$tree" && pwd)
  export MARE_SOURCE_DIR="$src" MARE_CLI="$tree/mare"
  bin() { find "$tree" -type f -name "$1" ! -path '*/CMakeFiles/*' | head -n 1; }
  origin="the build $tree of commit $(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null)"
fi
mare=$(bin mare)
doctor=$("$mare" doctor)
gpu=$(grep -m1 '^gpu 0' <<<"$doctor" | sed 's/^gpu 0 *//; s/,.*//')
[ -n "$gpu" ] || { echo "no GPU visible: $(grep '^cuda' <<<"$doctor")" >&2; exit 1; }
slug=$(echo "$gpu" | tr 'A-Z ' 'a-z-' | tr -cd 'a-z0-9-')-$(date -u +%Y-%m-%d)
dir="${2:-$src/reports/devices/$slug}"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
echo "$doctor" >"$dir/doctor.txt"
nvidia-smi >"$dir/nvidia-smi.txt" 2>&1 || true

# 1. Every test binary, in 4 shards each, all at once (MARE_THREADS=1 a process).
step "tests" | tee -a "$dir/steps.txt"
tests=()
for t in ${MARE_TESTS:-test_kernels test_kernel_threads test_models test_fused_step test_threads \
  test_experiments test_collect test_data test_inspect test_sweep_runner test_sweep_spec test_stats test_figures \
  test_reports}; do
  p=$(bin "$t")
  [ -n "$p" ] && [ -x "$p" ] && tests+=("$p")
done
mkdir -p "$dir/tests"
rm -f "$dir"/tests/*.txt  # a rerun into the same folder starts clean
for p in "${tests[@]}"; do
  for i in 0 1 2 3; do echo "$p $i"; done
done | xargs -P "$jobs" -L 1 sh -c 'MARE_THREADS=1 GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$1 \
  timeout "$MARE_STEP_TIMEOUT" "$0" --gtest_color=no >"'"$dir"'/tests/$(basename "$0").$1.txt" 2>&1; \
  echo "$(basename "$0") shard $1: exit $?" >>"'"$dir"'/tests/exits.txt"'
sort "$dir/tests/exits.txt" -o "$dir/tests/exits.txt"
test_passed=$(cat "$dir"/tests/test_*.txt | grep -h '^\[  PASSED  \]' | awk '{s += $4} END {print s + 0}')
test_failed=$(cat "$dir"/tests/test_*.txt | grep -h '^\[  FAILED  \].*(' | sort -u)
test_skipped=$(cat "$dir"/tests/test_*.txt | grep -h '^\[  SKIPPED \] .* ([0-9]* ms)$' |
  sed 's/^\[  SKIPPED \] //; s/ (.*//' | sort -u)
bad_exits=$(grep -v 'exit 0$' "$dir/tests/exits.txt")

# 2. compute-sanitizer: each tool of MARE_SANITIZE_TOOLS over every GPU test, one process
# per test (one error poisons the CUDA context for the rest).
san_summary="skipped (MARE_SANITIZE=0)"
san_tools="${MARE_SANITIZE_TOOLS:-memcheck racecheck initcheck synccheck}"
if [ "${MARE_SANITIZE:-1}" = 1 ] && command -v compute-sanitizer >/dev/null; then
  mkdir -p "$dir/sanitize"
  for t in test_kernels test_models test_fused_step; do
    p=$(bin "$t")
    [ -n "$p" ] || continue
    "$p" --gtest_list_tests --gtest_filter='*Cuda*:*Gpu*:*GPU*' | awk -v b="$p" '
      /^[^ ]/ {suite = $1} /^  / {print b, suite $1}'
  done >"$dir/sanitize/list.txt"
  san_summary=""
  for tool in $san_tools; do
    step "$tool, one process per GPU test" | tee -a "$dir/steps.txt"
    mkdir -p "$dir/$tool"
    TOOL=$tool xargs -P "$jobs" -L 1 sh -c 'out=$(timeout "$MARE_STEP_TIMEOUT" compute-sanitizer --tool "$TOOL" --error-exitcode 99 \
      "$0" --gtest_filter="$1" --gtest_brief=1 2>&1); rc=$?; \
      errs=$(printf "%s\n" "$out" | grep -E "^========= (Invalid|Program hit|ERROR|Error|Uninit|Leaked|Race|Barrier|Warning)|SUMMARY: [1-9]" | sort -u | tr "\n" "|"); \
      echo "$TOOL rc=$rc $(basename "$0") $1 :: $errs"' <"$dir/sanitize/list.txt" \
      | sort >"$dir/$tool/results.txt"
    # A test that ends before its first CUDA call (one that checks the no-GPU path)
    # has nothing to check: the sanitizer says so and exits 255.
    total=$(wc -l <"$dir/$tool/results.txt")
    clean=$(grep -c "^$tool rc=0 " "$dir/$tool/results.txt")
    idle=$(grep -c 'terminated before first instrumented API call' "$dir/$tool/results.txt")
    san_summary="$san_summary${san_summary:+; }$tool: $clean of $total GPU tests clean, $idle made no CUDA call, $((total - clean - idle)) with findings"
  done
fi

# 3. Benchmarks: allocation, training iterations at the paper size, the ops.
step "bench allocation" | tee -a "$dir/steps.txt"
bounded "$mare" bench allocation --device cuda --json "$dir/allocation_cuda.json" \
  --csv "$dir/allocation_cuda.csv" >"$dir/allocation_cuda.txt" 2>&1
step "bench iteration" | tee -a "$dir/steps.txt"
bounded "$mare" bench iteration --device cuda --size paper --shape both --iterations 10 --warmup 3 \
  --json "$dir/iteration_cuda.json" >"$dir/iteration_cuda.txt" 2>"$dir/iteration_cuda.log"
# The alternatives a researcher can ask for, beside the defaults: the fused memory step
# on the GPU (memory_step=fused) and TF32 GEMMs (--matmul-precision high; PyTorch's own
# TF32 setting beside it in section 4).
step "bench iteration: fused memory step, TF32" | tee -a "$dir/steps.txt"
bounded "$mare" bench iteration --device cuda --size paper --shape both --iterations 5 --warmup 2 \
  --models NTCRE+memory_step=fused,NTCRE-CPD+memory_step=fused \
  --json "$dir/iteration_fused.json" >"$dir/iteration_fused.txt" 2>"$dir/iteration_fused.log"
bounded "$mare" bench iteration --device cuda --size paper --shape both --iterations 5 --warmup 2 \
  --matmul-precision high --models UTRE,NTCRE+memory_step=fused,UTRE-CPD,NTCRE-CPD+memory_step=fused \
  --json "$dir/iteration_tf32.json" >"$dir/iteration_tf32.txt" 2>"$dir/iteration_tf32.log"
# The static step (halting to t_max under device masks: no device read inside a step,
# the step a CUDA graph could hold), beside the dynamic rows above.
step "bench iteration: static step" | tee -a "$dir/steps.txt"
bounded "$mare" bench iteration --device cuda --size paper --shape both --iterations 5 --warmup 2 \
  --static-step --models UTRE-CPD,NTCRE-CPD \
  --json "$dir/iteration_static.json" >"$dir/iteration_static.txt" 2>"$dir/iteration_static.log"
# How busy the GPU is while mare trains: nvidia-smi's utilization.gpu (the
# share of each 100 ms sample in which a kernel ran) through `mare train` of
# UTRE-CPD and NTCRE-CPD at their registry sizes on synth-cdr (200 steps, one
# evaluation at the end), idle samples before the first busy one and after the
# last dropped.
step "GPU busy" | tee -a "$dir/steps.txt"
train_dir=$(mktemp -d)
"$mare" data generate synth-cdr --out "$train_dir/data" --seed 5 >/dev/null 2>&1
busy_rows=""
for model in UTRE-CPD NTCRE-CPD; do
  nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 100 \
    >"$dir/busy_$model.txt" 2>/dev/null &
  smi=$!
  bounded "$mare" train --model "$model" --data "synth-cdr:$train_dir/data" --steps 200 \
    --eval-every 200 --batching balanced --seed 1 --device cuda --out "$train_dir/busy_$model" \
    >"$dir/busy_${model}_train.txt" 2>&1
  sleep 0.3
  kill "$smi" 2>/dev/null
  wait "$smi" 2>/dev/null
  mean=$(awk '{v[NR] = $1} END {a = 1; while (a <= NR && v[a] == 0) a++; b = NR; while (b >= a && v[b] == 0) b--;
    s = 0; n = 0; for (i = a; i <= b; i++) {s += v[i]; n++}
    if (n) printf "%.0f%% over %d samples", s / n, n; else print "no samples"}' "$dir/busy_$model.txt")
  speed=$(tr '\r' '\n' <"$dir/busy_${model}_train.txt" | grep -o '[0-9.]* steps/s' | tail -n 1)
  busy_rows+="- $model: $mean ($speed)"$'\n'
done
step "training from the command line" | tee -a "$dir/steps.txt"
for run in 1 2; do
  bounded "$mare" train --model UTRE-CPD+d=32+heads=4+ner_prob=0 \
    --data "synth-cdr:$train_dir/data" --steps 300 --eval-every 300 --batching balanced --seed 1 --device cuda \
    --out "$train_dir/run$run" >"$dir/train_cuda_$run.txt" 2>&1
done
cmp -s "$train_dir/run1/result.json" "$train_dir/run2/result.json" && same_bytes=yes || same_bytes=no
cp "$train_dir/run1/result.json" "$dir/train_cuda_result.json" 2>/dev/null
rm -rf "$train_dir"
step "bench_ops" | tee -a "$dir/steps.txt"
bounded "$(bin bench_ops)" --device cuda --benchmark_out="$dir/ops_cuda.json" \
  --benchmark_out_format=json --benchmark_min_time=0.05 >"$dir/ops_cuda.txt" 2>&1

# 3b. Where the GPU time of an iteration goes: Nsight Compute's kernel durations
# (caches and clocks left as they run, one iteration after none untimed) summed per
# kernel by ncu_summary.sh. MARE_PROFILE=0 skips it.
profiles=()
if [ "${MARE_PROFILE:-1}" = 1 ] && command -v ncu >/dev/null; then
  step "profiles" | tee -a "$dir/steps.txt"
  for spec in "UTRE semeval" "UTRE cdr" "NTCRE-CPD semeval" "NTCRE-CPD cdr"; do
    read -r model shape <<<"$spec"
    raw="$dir/profile_${model}_${shape}.txt"
    bounded ncu --cache-control none --clock-control none --metrics gpu__time_duration.sum \
      --print-summary per-kernel "$mare" bench iteration --device cuda --size paper --shape "$shape" \
      --models "$model" --iterations 1 --warmup 0 >"$raw" 2>&1
    "$src/reports/devices/ncu_summary.sh" "$raw" 15 >"${raw%.txt}.summary.txt" 2>&1 &&
      profiles+=("$model $shape")
  done
fi

# 4. The PyTorch peers on the same GPU, right after.
peers="${MARE_PEERS:-}"
if [ -n "$peers" ] && python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  step "peers" | tee -a "$dir/steps.txt"
  bounded python3 "$peers/torch_alloc_gpu.py" 1,10,100,1000 >"$dir/peer_allocation.csv" 2>"$dir/peer_allocation.log"
  (cd "$peers" && bounded python3 bench_iteration.py --device cuda --sizes paper --shapes semeval,cdr \
    --configs UTRE-CPD,NTCRE-CPD,UTRE,NTCRE --threads 1 --iters 10 --warmup 3 --budget 120 \
    --out "$dir/peer_iteration.csv") >"$dir/peer_iteration.log" 2>&1
  (cd "$peers" && TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 bounded python3 bench_iteration.py --device cuda \
    --sizes paper --shapes semeval,cdr --configs UTRE-CPD,NTCRE-CPD,UTRE,NTCRE --threads 1 --iters 10 \
    --warmup 3 --budget 120 --out "$dir/peer_iteration_tf32.csv") >"$dir/peer_iteration_tf32.log" 2>&1
fi
step "done" | tee -a "$dir/steps.txt"

{
  echo "# $gpu — $(date -u +%Y-%m-%d)"
  echo
  echo "Produced by \`reports/devices/gpu_report.sh\` from $origin."
  echo
  echo '## Machine'
  echo
  echo '```'
  cat "$dir/doctor.txt"
  echo '```'
  echo
  echo '## Tests (`MARE_REQUIRE_GPU=1`: a GPU test that cannot run fails)'
  echo
  echo "- ${#tests[@]} test binaries, 4 shards each: $test_passed tests passed"
  echo "- failed: ${test_failed:-none}"
  echo "- skipped: $(echo "${test_skipped:-none}" | tr '\n' ' ')"
  echo "- shards with a non-zero exit: ${bad_exits:-none}"
  echo "- sanitizers: $san_summary"
  for tool in $san_tools; do
    [ -f "$dir/$tool/results.txt" ] || continue
    echo
    echo "Tests whose $tool was not clean (a finding, or no CUDA call to check):"
    echo
    grep -v "^$tool rc=0 " "$dir/$tool/results.txt" | sed 's/^/    /' || true
  done
  echo
  echo '## Training iteration (`mare bench iteration --device cuda --size paper`)'
  echo
  echo '```'
  cat "$dir/iteration_cuda.txt"
  echo '```'
  echo
  echo 'GPU busy while mare trains (nvidia-smi utilization.gpu, 100 ms samples; `mare train`, 200 steps):'
  echo
  printf '%s' "$busy_rows"
  if [ -f "$dir/peer_iteration.csv" ]; then
    echo
    echo 'PyTorch eager on the same GPU (`peers/bench_iteration.py`):'
    echo
    echo '```'
    cat "$dir/peer_iteration.csv"
    echo '```'
  fi
  echo
  echo '## The alternatives: the fused memory step on the GPU, TF32 GEMMs, the static step'
  echo
  echo '`memory_step=fused` (`kernels/cuda/memory_step.cu`; the default on the GPU is the composed ops):'
  echo
  echo '```'
  grep -v '^  ' "$dir/iteration_fused.txt" 2>/dev/null || echo "(not run)"
  echo '```'
  echo
  echo '`--matmul-precision high` (TF32 tensor cores):'
  echo
  echo '```'
  grep -v '^  ' "$dir/iteration_tf32.txt" 2>/dev/null || echo "(not run)"
  echo '```'
  if [ -f "$dir/peer_iteration_tf32.csv" ]; then
    echo
    echo 'PyTorch eager with `TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1` (its matmuls in TF32), same GPU:'
    echo
    echo '```'
    cat "$dir/peer_iteration_tf32.csv"
    echo '```'
  fi
  echo
  echo '`--static-step` (halting to t_max under device masks; device_reads: the loss only):'
  echo
  echo '```'
  grep -v '^  ' "$dir/iteration_static.txt" 2>/dev/null || echo "(not run)"
  echo '```'
  echo
  echo "## Training from the command line (UTRE-CPD d 32, synth-cdr, 300 steps; same bytes twice: $same_bytes)"
  echo
  echo '```'
  tr '\r' '\n' <"$dir/train_cuda_1.txt" | grep 'steps/s' | tail -n 1
  tr '\r' '\n' <"$dir/train_cuda_1.txt" | tail -n 3
  echo '```'
  for p in "${profiles[@]}"; do
    read -r model shape <<<"$p"
    echo
    echo "## Where the GPU time goes: $model, $shape (Nsight Compute, one iteration, \`ncu_summary.sh\`)"
    echo
    echo '```'
    cat "$dir/profile_${model}_${shape}.summary.txt"
    echo '```'
  done
  echo
  echo '## Allocation kernels on the GPU (`mare bench allocation --device cuda`)'
  echo
  echo '```'
  cat "$dir/allocation_cuda.txt"
  echo '```'
  echo
  echo "Raw outputs: \`$(basename "$dir")/\`."
} >"$dir.md"
echo "wrote $dir.md"
