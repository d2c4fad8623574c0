#!/usr/bin/env bash
# mare — the one command.
#
#   ./run_all.sh          build, then run the main job on the embedded default
#                         profile and write everything under results/
#   ./run_all.sh test     build, then run the whole test suite
#   ./run_all.sh build    build only
#   ./run_all.sh pack DIR build, then pack the binaries, the shared libraries a
#                         CUDA machine lacks and the sources into DIR, to run on
#                         another machine (reports/devices/pack.sh says how)
#
# On a fresh Debian 12 machine it first installs the Debian packages that are
# missing (non-interactive, idempotent). Environment: MARE_BUILD_DIR (default
# build), MARE_JOBS (default nproc), MARE_CMAKE_ARGS (extra cmake arguments).
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(pwd)
BUILD_DIR=${MARE_BUILD_DIR:-build}
JOBS=${MARE_JOBS:-$(nproc)}
MODE=${1:-run}

log() { printf '\n== %s\n' "$*"; }

# ---- Debian packages ------------------------------------------------------
PACKAGES=(build-essential cmake ninja-build git pkg-config
  libeigen3-dev libboost-math-dev libbenchmark-dev libgtest-dev libcli11-dev
  nlohmann-json3-dev libyaml-cpp-dev librandom123-dev libpugixml-dev gnuplot-nox
  clang libclang-rt-14-dev clang-format
  slurm-wlm munge  # slurm-wlm munge: the one-node Slurm test of `mare sweep --emit slurm`
  python3-torch)    # the models' check against the PyTorch peer (tests/peers)
ensure_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if ((${#missing[@]})); then
    log "installing missing Debian packages: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

# ---- build ----------------------------------------------------------------
# ccache, when the machine has it (it is not installed by this script), makes a
# rebuild in a fresh clone or a second build directory reuse earlier compiles.
LAUNCHER=()
if command -v ccache >/dev/null 2>&1; then
  LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi

build() {
  log "configuring ($BUILD_DIR)"
  # shellcheck disable=SC2086
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "${LAUNCHER[@]}" \
    ${MARE_CMAKE_ARGS:-} >/dev/null
  log "building with $JOBS jobs"
  cmake --build "$BUILD_DIR" -j "$JOBS"
}

run_tests() {
  log "running the test suite"
  ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS"
  # A skipped test says why in the log (ctest prints only failures' output): the GPU tests
  # without a GPU, and sweep_slurm where Slurm is not installed or this is not root.
  local skipped
  skipped=$(grep -A12 "Test: sweep_slurm" "$BUILD_DIR/Testing/Temporary/LastTest.log" 2>/dev/null |
    grep -m1 '^SKIP: ' || true)
  [ -z "$skipped" ] || log "sweep_slurm was skipped: ${skipped#SKIP: }"
  # Fuzzing is part of the suite: a lost script or run bit fails, it is never skipped.
  if [ ! -f tests/fuzz/run_fuzz.sh ] || [ ! -x tests/fuzz/run_fuzz.sh ]; then
    echo "run_all.sh: tests/fuzz/run_fuzz.sh is missing or not executable" \
      "(restore it, or: git update-index --chmod=+x tests/fuzz/run_fuzz.sh)" >&2
    exit 1
  fi
  log "fuzzing the loaders (short, seeded corpus)"
  tests/fuzz/run_fuzz.sh

  # The sweep pipeline end to end on the smoke profile: Table 4.6's grid x 2 seeds,
  # collected, compared (Table 4.7's shape) and reported.
  log "smoke sweep: mare sweep table4.6 --profile smoke, collect, compare, report"
  local smoke="$BUILD_DIR/smoke-sweep"
  rm -rf "$smoke"
  "$BUILD_DIR/mare" sweep experiments/specs/table4.6.yaml --profile smoke --out "$smoke/table4.6" --jobs "$JOBS"
  "$BUILD_DIR/mare" collect "$smoke" --out "$smoke/results.csv"
  "$BUILD_DIR/mare" compare "$smoke/results.csv" --metric test_f1 --baseline bran
  "$BUILD_DIR/mare" report "$smoke" --out "$smoke/report" >/dev/null
  test -s "$smoke/report/index.html" && test -s "$smoke/report/tables/table4.7.md"

  # The suites again under sanitizers, each build in its own directory (CPU only, no
  # benchmarks, only the test binaries it runs, -O1: at -O3 the sanitized Eigen code alone
  # took ~4x longer to compile, past CI's 30 minutes on 2 cores):
  #   ASan + UBSan (MARE_ASAN_BUILD_DIR, default build-asan): the kernel, model and data
  #     suites, whose code every command runs, and the stats and figure suites (the tests,
  #     and the report's readers and figures of result, benchmark and statistics files);
  #   TSan (MARE_TSAN_BUILD_DIR, default build-tsan), built portable (-DMARE_NATIVE=OFF:
  #     SSE2 code paths in Eigen, as a build for any x86-64 CPU has): the kernel suite and
  #     the kernel thread suite (the pool, and every op at 1, 2, 3 and 7 threads), each
  #     once with the AVX2 exp lanes and once on the scalar exp path (MARE_EXP_PATH=scalar,
  #     a CPU without AVX2 and FMA).
  # In CI the trainers, the CLI, sweep, collect, inspect and the report's tables run
  # unsanitized (they need the whole `mare` binary under ASan: ~30 minutes on 2 cores to
  # build and run, past CI's budget); MARE_SANITIZE_ALL=1 runs them under ASan/UBSan too.
  # MARE_SKIP_SANITIZERS=1 skips this.
  if [ "${MARE_SKIP_SANITIZERS:-0}" = 1 ]; then
    log "MARE_SKIP_SANITIZERS=1: the sanitized suites are skipped"
    return
  fi
  local asan_dir=${MARE_ASAN_BUILD_DIR:-build-asan} tsan_dir=${MARE_TSAN_BUILD_DIR:-build-tsan}
  local t asan=(kernels/test_kernels models/test_models experiments/data/test_data
    stats/test_stats reports/figures/test_figures)
  sanitized_build "$asan_dir" "ASan/UBSan" -DMARE_SANITIZE=address,undefined -- "${asan[@]##*/}"
  for t in "${asan[@]}"; do
    run_shards "ASan/UBSan" "$asan_dir/tests/$t" ASAN_OPTIONS=detect_leaks=1 \
      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  done
  if [ "${MARE_SANITIZE_ALL:-0}" = 1 ]; then
    local rest=(experiments/test_experiments experiments/collect/test_collect
      experiments/inspect/test_inspect experiments/sweep_runner/test_sweep_runner
      experiments/sweep_spec/test_sweep_spec reports/report/test_reports)
    sanitized_build "$asan_dir" "ASan/UBSan, every suite" -DMARE_SANITIZE=address,undefined -- \
      "${rest[@]##*/}"
    for t in "${rest[@]}"; do
      run_shards "ASan/UBSan" "$asan_dir/tests/$t" ASAN_OPTIONS=detect_leaks=1 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    done
  fi
  sanitized_build "$tsan_dir" "TSan, portable" -DMARE_SANITIZE=thread -DMARE_NATIVE=OFF -- \
    test_kernels test_kernel_threads
  for t in tests/kernels/test_kernels tests/kernels/threads/test_kernel_threads; do
    run_shards "TSan, portable" "$tsan_dir/$t" TSAN_OPTIONS=halt_on_error=1
    run_shards "TSan, portable, scalar exp" "$tsan_dir/$t" TSAN_OPTIONS=halt_on_error=1 \
      MARE_EXP_PATH=scalar
  done
}

# sanitized_build DIR LABEL CMAKE_FLAG... -- TARGET...: configures DIR (Release at -O1, CPU
# only, no benchmarks) with the flags and builds the targets.
sanitized_build() {
  local dir=$1 label=$2 flags=() targets=()
  shift 2
  while [ "$1" != -- ]; do
    flags+=("$1")
    shift
  done
  shift
  targets=("$@")
  log "configuring the $label build ($dir)"
  # shellcheck disable=SC2086
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${LAUNCHER[@]}" ${MARE_CMAKE_ARGS:-} \
    "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -Wno-uninitialized" "${flags[@]}" \
    -DMARE_CUDA=OFF -DMARE_BUILD_BENCHMARKS=OFF >/dev/null
  cmake --build "$dir" -j "$JOBS" --target "${targets[@]}"
}

# run_shards LABEL BINARY [VAR=VALUE...]: the test binary in $JOBS GoogleTest shards at
# once with the variables set (test_models alone takes minutes under ASan); a failing
# shard's whole output is printed and fails the run.
run_shards() {
  local label=$1 binary=$2 pids=() k failed_shards=0 logs
  shift 2
  log "$label: $binary ($JOBS shards)"
  logs=$(dirname "$binary")
  for ((k = 0; k < JOBS; k++)); do
    env MARE_SOURCE_DIR="$ROOT" "$@" GTEST_TOTAL_SHARDS="$JOBS" GTEST_SHARD_INDEX="$k" \
      "$binary" --gtest_brief=1 >"$logs/shard$k.log" 2>&1 &
    pids+=($!)
  done
  for ((k = 0; k < JOBS; k++)); do
    if ! wait "${pids[$k]}"; then
      cat "$logs/shard$k.log"
      failed_shards=$((failed_shards + 1))
    fi
  done
  if ((failed_shards)); then
    echo "run_all.sh: $binary failed under $label ($failed_shards of $JOBS shards)" >&2
    exit 1
  fi
  tail -n 2 "$logs/shard0.log"
}

# The main job. MARE_PROFILE (default `default`) is the specs' profile; at `smoke` the
# generated corpora and the benchmarks shrink too, so that tests/main_job_smoke.sh runs
# every step in minutes. MARE_RESULTS (default results/) is where it writes;
# MARE_MAIN_SPECS (default: every table's spec) the specs it sweeps.
run_main() {
  local out=${MARE_RESULTS:-$ROOT/results} mare="$BUILD_DIR/mare" failed=() spec
  local profile=${MARE_PROFILE:-default} docs=() ctd_docs=100 ops_time=0.05 alloc=()
  case "$profile" in
    smoke) docs=(--docs 20) ctd_docs=20 ops_time=0.001 alloc=(--seq 1 10 --mem 4 16 --repetitions 1) ;;
    default | paper | gpu) ;;
    *) echo "run_all.sh: MARE_PROFILE: expected smoke, default, paper or gpu, found '$profile'" >&2; exit 2 ;;
  esac
  mkdir -p "$out/runs" "$out/bench" "$out/data" "$out/sweeps"
  log "end-to-end proof: mlp on xor (seed 1) -> results/runs/mlp-xor-seed1"
  "$mare" train --model mlp --task xor --seed 1 --out "$out/runs/mlp-xor-seed1"

  log "synthetic corpora in the real formats, with the oracle F1 and their statistics -> results/data/"
  # synth-ctd at 100 training documents: its default, thesis Table 4.9's size, is 3.6 GB
  # of TSV (the `paper` and `gpu` profiles of table4.10.yaml train on it).
  "$mare" data generate synth-cdr --out "$out/data/synth-cdr" --seed 1 "${docs[@]}"
  "$mare" data generate synth-ctd --out "$out/data/synth-ctd" --seed 1 --docs "$ctd_docs"
  "$mare" data generate synth-semeval --out "$out/data/synth-semeval" --seed 1 "${docs[@]}"
  "$mare" data stats "synth-cdr:$out/data/synth-cdr" --json "$out/data/synth-cdr.stats.json" >/dev/null
  "$mare" data stats "bran-tsv:$out/data/synth-ctd" --json "$out/data/synth-ctd.stats.json" >/dev/null
  "$mare" data stats "semeval:$out/data/synth-semeval/subtask1.1" --json "$out/data/synth-semeval.stats.json" >/dev/null
  log "the real corpora as shipped (experiments/corpora), beside thesis Tables 4.4 and 4.11 -> results/data/"
  "$mare" data stats cdr --json "$out/data/cdr.stats.json"
  for sub in 1.1 1.2; do
    "$mare" data stats "semeval2018:$sub" --json "$out/data/semeval2018-$sub.stats.json" >/dev/null
  done

  # Every table's spec at its default profile (experiments/specs/*.yaml), one sweep tree
  # each. Training sweeps run two runs at once (one kernel thread each); the benchmark
  # sweeps run alone, on every core. A finished run is skipped when this runs again; a
  # failed run is recorded and the rest go on (the job fails at the end).
  for spec in ${MARE_MAIN_SPECS:-table5.1 table4.12 table4.10 table4.13 table4.5 table4.6 table4.14 table4.15}; do
    local jobs=2
    case "$spec" in table4.14 | table4.15) jobs=1 ;; esac
    log "sweep $spec ($profile profile, --jobs $jobs) -> results/sweeps/$spec"
    "$mare" sweep "experiments/specs/$spec.yaml" --profile "$profile" --out "$out/sweeps/$spec" \
      --jobs "$jobs" || failed+=("$spec")
  done
  log "all runs in one table -> results/results.csv; Table 4.7's comparisons against BRAN"
  "$mare" collect "$out/sweeps" "$out/runs" --out "$out/results.csv"
  "$mare" compare "$out/results.csv" --metric test_f1 --baseline bran --out "$out/compare_test_f1" ||
    failed+=(compare)

  # Thesis Figs 4.2/4.3 from the NTCRE-CPD run of Table 4.6 (seed 1), first test document.
  local ntcre
  ntcre=$(find "$out/sweeps/table4.6/NTCRE-CPD" -maxdepth 1 -name 'seed1-*' -type d 2>/dev/null | head -n 1)
  if [ -n "$ntcre" ] && [ -f "$ntcre/result.json" ]; then
    log "NTCRE memory on one document -> results/inspect/ntcre-cpd"
    "$mare" inspect memory "$ntcre" --doc 0 --out "$out/inspect/ntcre-cpd" >/dev/null || failed+=(inspect)
  fi

  log "op benchmarks (1 thread and all) -> results/bench/ops.json"
  "$BUILD_DIR/kernels/bench/bench_ops" --benchmark_out="$out/bench/ops.json" \
    --benchmark_out_format=json --benchmark_min_time="$ops_time"

  log "allocation kernels over sequence length x memory size -> results/bench/allocation.{json,csv}"
  "$mare" bench allocation "${alloc[@]}" --json "$out/bench/allocation.json" \
    --csv "$out/bench/allocation.csv"

  # The same two benchmarks on the GPU, when this build has the CUDA backend and
  # a GPU is present (`mare doctor` lists it as "gpu 0").
  if "$mare" doctor | grep -q '^gpu 0'; then
    log "GPU found: op benchmarks on cuda -> results/bench/ops_cuda.json"
    "$BUILD_DIR/kernels/bench/bench_ops" --device cuda --benchmark_out="$out/bench/ops_cuda.json" \
      --benchmark_out_format=json --benchmark_min_time=0.05
    log "allocation kernels on cuda -> results/bench/allocation_cuda.{json,csv}"
    "$mare" bench allocation --device cuda --json "$out/bench/allocation_cuda.json" \
      --csv "$out/bench/allocation_cuda.csv"
    log "training iterations on cuda -> results/bench/iteration_cuda.json"
    "$mare" bench iteration --device cuda --size paper --shape both --iterations 10 \
      --json "$out/bench/iteration_cuda.json" || failed+=(iteration_cuda)
  else
    log "no GPU (or no CUDA backend in this build): the cuda benchmarks are skipped"
  fi

  log "the report: every table and figure beside the published values -> results/report/"
  local inputs=("$out/sweeps" "$out/runs" "$out/data"/*.stats.json "$out/bench"/allocation*.json "$out/bench"/ops*.json)
  [ -d "$out/inspect/ntcre-cpd" ] && inputs+=("$out/inspect/ntcre-cpd")
  [ -f "$out/bench/iteration_cuda.json" ] && inputs+=("$out/bench/iteration_cuda.json")
  "$mare" report "${inputs[@]}" --out "$out/report" \
    --title "mare main job ($profile profiles): the thesis's and the dissertation's tables beside the published values"

  if ((${#failed[@]})); then
    echo "run_all.sh: these steps had failed runs (see their run directories): ${failed[*]}" >&2
    echo "report index: $out/report/index.html"
    exit 1
  fi
  log "done: report index: $out/report/index.html (and index.md); results under results/"
}

ensure_packages
case "$MODE" in
  run) build; run_main ;;
  test) build; run_tests ;;
  build) build ;;
  pack)
    [ $# -eq 2 ] || { echo "usage: $0 pack DIR" >&2; exit 2; }
    build
    reports/devices/pack.sh "$BUILD_DIR" "$2"
    ;;
  *) echo "usage: $0 [run|test|build|pack DIR]" >&2; exit 2 ;;
esac
