#!/usr/bin/env python3
"""Summarises the Table 5.1 runs written by reports/grpu/reproduce.sh.

Reads reports/grpu/runs/<row>/seed<N>/{result.json,timing.json,metrics.jsonl}
and the published values (shared/paper/table_5_1_grpu.csv), and writes
  runs.csv   one line per run: finished runs with their final MSEs, unfinished
             ones with the last evaluated epoch (never mixed into the summary)
  table.md   per row: finished seeds, median and range of train/test MSE after
             1000 epochs, beside the published values, and the measured cost.
Only runs whose result.json says status "completed" at 1000 epochs enter the
median columns.
"""
import csv
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RUNS = os.path.join(HERE, "runs")
PAPER = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    HERE, "..", "..", "..", "shared", "paper", "table_5_1_grpu.csv")

# row id -> (label, model, published key (model, batch, samples, curriculum, conditional))
ROWS = [
    ("r0_bigru_b100", "bidirectional GRU (reference), batch 100, 1000 samples", "bigru",
     ("bidirectional GRU (reference)", "100", "1000", "0", "0")),
    ("r1_grpu_b100", "GRPU, batch 100, 1000 samples", "grpu",
     ("GRPU", "100", "1000", "0", "0")),
    ("r2_grpu_b32_s3200", "GRPU, batch 32, 3200 samples", "grpu",
     ("GRPU", "32", "3200", "0", "0")),
    ("r3_grpu_b10", "GRPU, batch 10, 1000 samples", "grpu+prod",
     ("GRPU", "10", "1000", "0", "0")),
    ("r4_grpu_b10_cur", "GRPU, batch 10, 1000 samples, curriculum", "grpu+prod",
     ("GRPU", "10", "1000", "1", "0")),
    ("r5_grpu_b100_cond", "GRPU, batch 100, 1000 samples, conditional", "grpu",
     ("GRPU", "100", "1000", "0", "1")),
    ("r6_grpu_b10_cur_cond", "GRPU, batch 10, 1000 samples, curriculum, conditional",
     "grpu+prod", ("GRPU", "10", "1000", "1", "1")),
]


def published():
    out = {}
    with open(PAPER) as f:
        lines = [l for l in f if not l.startswith("#")]
    for r in csv.DictReader(lines):
        key = (r["model"], r["batch"], r["samples"], r["curriculum"], r["conditional"])
        out[key] = (r["train_mse"] or "N/A", r["test_mse"] or "N/A")
    return out


def load(path):
    with open(path) as f:
        return json.load(f)


def fmt(x):
    return "%.3g" % x


def main():
    paper = published()
    run_lines, table = [], []
    for rid, label, model, key in ROWS:
        done, per_epoch = [], []
        rdir = os.path.join(RUNS, rid)
        seeds = sorted(os.listdir(rdir)) if os.path.isdir(rdir) else []
        for s in seeds:
            d = os.path.join(rdir, s)
            res = os.path.join(d, "result.json")
            metrics = os.path.join(d, "metrics.jsonl")
            if os.path.exists(os.path.join(d, "timing.json")):
                t = load(os.path.join(d, "timing.json"))
                if t.get("seconds_per_epoch"):
                    per_epoch.append(statistics.mean(t["seconds_per_epoch"]))
            if os.path.exists(res):
                r = load(res)
                ok = r["status"] == "completed" and r["epochs"] == 1000
                run_lines.append([rid, s, r["status"], r["epochs"], r["parameters"],
                                  r["final"]["train_mse"], r["final"]["test_mse"]])
                if ok:
                    done.append((r["final"]["train_mse"], r["final"]["test_mse"]))
            elif os.path.exists(metrics):
                last = None
                with open(metrics) as f:
                    for line in f:
                        if line.strip():
                            last = json.loads(line)
                if last:
                    run_lines.append([rid, s, "unfinished (last evaluated epoch %d)" % last["epoch"],
                                      last["epoch"], "", last["train_mse"], last["test_mse"]])
        pub = paper.get(key, ("?", "?"))
        if done:
            tr = [a for a, _ in done]
            te = [b for _, b in done]
            if len(done) == 1:  # one seed: its value, no median or range
                ours_tr, ours_te = fmt(tr[0]) + " (1 seed)", fmt(te[0]) + " (1 seed)"
            else:
                ours_tr = "%s [%s, %s]" % (fmt(statistics.median(tr)), fmt(min(tr)), fmt(max(tr)))
                ours_te = "%s [%s, %s]" % (fmt(statistics.median(te)), fmt(min(te)), fmt(max(te)))
        else:
            ours_tr = ours_te = "not run to 1000 epochs"
        cost = "%.2f" % statistics.mean(per_epoch) if per_epoch else "-"
        table.append("| %s | `%s` | %d | %s | %s | %s | %s | %s |" %
                     (label, model, len(done), pub[0], ours_tr, pub[1], ours_te, cost))
    with open(os.path.join(HERE, "runs.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["row", "seed", "status", "epochs", "parameters", "train_mse", "test_mse"])
        w.writerows(run_lines)
    with open(os.path.join(HERE, "table.md"), "w") as f:
        f.write("| row | model | seeds done (1000 epochs) | published train MSE | ours: median "
                "[min, max] | published test MSE | ours: median [min, max] | "
                "measured s/epoch |\n")
        f.write("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
        f.write("\n".join(table) + "\n")
    print(open(os.path.join(HERE, "table.md")).read())


if __name__ == "__main__":
    main()
