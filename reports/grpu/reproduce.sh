#!/usr/bin/env bash
# Dissertation Table 5.1, every row at 1000 epochs for seeds 1-3: the paper profile of experiments/specs/table5.1.yaml (finished runs are skipped). Usage: reports/grpu/reproduce.sh [MARE_BINARY]
cd "$(dirname "$0")/../.." && exec nice -n 10 "${1:-build/mare}" sweep experiments/specs/table5.1.yaml --profile paper --out reports/grpu/runs
