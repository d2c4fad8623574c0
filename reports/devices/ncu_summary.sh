#!/usr/bin/env bash
# Sums an Nsight Compute per-kernel summary (`ncu --metrics gpu__time_duration.sum
# --print-summary per-kernel …`) over launches: one line a kernel, the most time first,
# the cuBLAS GEMM kernels together as "GEMM (cuBLAS)", then the total.
#   reports/devices/ncu_summary.sh NCU_OUTPUT [ROWS]      (ROWS: default 25)
# Each line: microseconds, share of the total, launches, kernel name (templates cut).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 NCU_OUTPUT [ROWS]" >&2; exit 2; }
awk -v rows="${2:-25}" '
  # "  name(args) (gx, gy, gz)x(bx, by, bz), Device 0, CC 9.0, Invocations N"
  /, Device [0-9]+, CC [0-9.]+, Invocations [0-9]+$/ {
    line = $0
    sub(/^ +/, "", line)
    n = $NF
    name = line
    sub(/ \([0-9]+, [0-9]+, [0-9]+\)x\(.*$/, "", name)
    sub(/\(.*$/, "", name)
    if (name ~ /gemm|cutlass|splitKreduce|cublas/) name = "GEMM (cuBLAS)"
    pending = name
    next
  }
  pending != "" && $1 == "gpu__time_duration.sum" {
    scale = ($2 == "ms" || $2 == "msecond") ? 1000 : ($2 == "ns" || $2 == "nsecond") ? 0.001 : 1
    us = $NF * scale * n
    total[pending] += us
    count[pending] += n
    all += us
    launches += n
    pending = ""
  }
  END {
    if (all == 0) { print "no kernels in the profile"; exit 1 }
    for (k in total) printf "%12.1f %6.1f%% %6d  %s\n", total[k], 100 * total[k] / all, count[k], k | "sort -rn | head -n " rows
    close("sort -rn | head -n " rows)
    printf "%12.1f %6.1f%% %6d  total (us, share, launches)\n", all, 100, launches
  }' "$1"
