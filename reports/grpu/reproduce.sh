#!/usr/bin/env bash
# Reproduces dissertation Table 5.1 (GRPU on the addition problem and its
# variants, plus the bidirectional-GRU reference): every row at full size
# (1000 epochs) for seeds 1, 2, 3, one run at a time, niced. Runs that already
# hold a result.json are skipped, so the script resumes where it stopped.
# Train and test MSE are evaluated every 10 epochs and after the last one.
#
#   reports/grpu/reproduce.sh [MARE_BINARY] [SEEDS...]
#   e.g. reports/grpu/reproduce.sh build/mare 1 2 3
# Then: python3 reports/grpu/summarize.py  (writes results.csv and table.md)
set -u
here="$(cd "$(dirname "$0")" && pwd)"
mare="${1:-$here/../../build/mare}"
shift || true
seeds=("$@")
[ ${#seeds[@]} -eq 0 ] && seeds=(1 2 3)
runs="$here/runs"
mkdir -p "$runs"

# row id | model | task | batch | samples | curriculum flag
# Ordered by cost per run (cheapest first), so a partial reproduction covers
# as many rows as possible.
rows=(
  "r6_grpu_b10_cur_cond|grpu+prod|conditional|10|1000|--curriculum"
  "r4_grpu_b10_cur|grpu+prod|addition|10|1000|--curriculum"
  "r5_grpu_b100_cond|grpu|conditional|100|1000|"
  "r1_grpu_b100|grpu|addition|100|1000|"
  "r3_grpu_b10|grpu+prod|addition|10|1000|"
  "r0_bigru_b100|bigru|addition|100|1000|"
  "r2_grpu_b32_s3200|grpu|addition|32|3200|"
)

for seed in "${seeds[@]}"; do
  for row in "${rows[@]}"; do
    IFS='|' read -r id model task batch samples cur <<<"$row"
    out="$runs/$id/seed$seed"
    if [ -f "$out/result.json" ]; then continue; fi
    echo "$(date -u +%FT%TZ) start $id seed $seed" >>"$runs/log.txt"
    nice -n 10 "$mare" train --model "$model" --task "$task" --batch "$batch" \
      --samples "$samples" $cur --epochs 1000 --eval-every 10 --seed "$seed" --out "$out" \
      >>"$runs/log.txt" 2>&1
    echo "$(date -u +%FT%TZ) end $id seed $seed (exit $?)" >>"$runs/log.txt"
  done
done
