#!/usr/bin/env bash
# The main job (./run_all.sh with no argument) at smoke sizes: every step runs as the full
# job runs it (the xor proof, the generated and the real corpora's statistics, the sweeps,
# collect, compare, the memory inspection, both CPU benchmarks, the report), into a
# scratch folder. One spec that does not exist stands in for a failed step: it is recorded,
# the others go on, the report is still written, and the job exits 1 naming it.
# Usage: tests/main_job_smoke.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
root=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mare_main_job.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
out="$tmp/results"
fail() { echo "main_job_smoke: $*" >&2; exit 1; }

set +e
(cd "$root" && MARE_PROFILE=smoke MARE_RESULTS="$out" MARE_BUILD_DIR="$build" MARE_JOBS=2 \
  MARE_MAIN_SPECS="table4.6 table4.14 no-such-table" ./run_all.sh run) >"$tmp/log" 2>&1
status=$?
set -e
[ "$status" -eq 1 ] || { tail -n 30 "$tmp/log" >&2; fail "expected exit 1 (one failed step), got $status"; }
grep -q "these steps had failed runs (see their run directories): no-such-table" "$tmp/log" ||
  fail "the failed step is not named: $(tail -n 5 "$tmp/log")"

for f in runs/mlp-xor-seed1/result.json data/synth-cdr.stats.json data/synth-ctd.stats.json \
  data/synth-semeval.stats.json data/cdr.stats.json data/semeval2018-1.1.stats.json \
  data/semeval2018-1.2.stats.json results.csv compare_test_f1.md inspect/ntcre-cpd/memory.json \
  bench/ops.json bench/allocation.json bench/allocation.csv report/index.html report/index.md \
  report/tables/table4.6.md report/tables/table4.7.md report/tables/table4.14.md \
  report/tables/ops.md report/tables/table4.4.md report/tables/table4.11.md; do
  [ -s "$out/$f" ] || fail "results/$f is missing or empty"
done
# Every run the two sweeps plan (a run's dir is CELL/seedN-ID) is in results.csv, completed.
planned=0
for spec in table4.6 table4.14; do
  n=$(grep -c '"dir": "[^"]*/seed[0-9]*-[0-9a-f]*"' "$out/sweeps/$spec/sweep.json")
  planned=$((planned + n))
done
completed=$(grep -c '^[^,]*,[^,]*,smoke,[^,]*,[^,]*,[^,]*,completed,' "$out/results.csv")
[ "$planned" -gt 0 ] && [ "$completed" -eq "$planned" ] ||
  fail "results.csv has $completed completed sweep runs; the sweeps plan $planned"
grep -q "mare main job (smoke profiles)" "$out/report/index.md" || fail "the report's title names no profile"
echo "main_job_smoke: every step ran; the failed step was recorded and named; exit 1"
