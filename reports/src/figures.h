// The report's figures (SPEC §9): thesis Figs 4.2-4.6, 4.9-4.11 and dissertation Figs 5.1-5.5
// drawn by gnuplot from the harness's own results.
//
// Each figure is out_dir/figures/<id>.dat (the plotted numbers, one block per series),
// <id>.gp (the script: `gnuplot -d <id>.gp` in that directory re-plots) and <id>.png,
// <id>.svg. A figure whose input is absent is an Artifact with `missing` saying which input
// is absent; one that gnuplot could not draw keeps its .dat and .gp and says why in `missing`
// (gnuplot not installed, its error output, or its timeout). Never throws for absent data.
//
// Which inputs each figure reads:
//   fig4.2, fig4.3  memory heatmaps of a `mare inspect memory` directory, copied:
//                   heatmap_*token*.{png,svg} (single tokens, thesis Fig. 4.2) and the other
//                   heatmap_*.{png,svg} (the whole sequence, Fig. 4.3)
//   fig4.4          CorpusStats: histogram of the distances (tokens) of related entity pairs
//   fig4.5          relation runs: result.json test.relations.by_distance, F1 per cumulative
//                   distance bucket, mean +- sd over the seeds of each cell
//   fig4.6          relation runs: metrics.jsonl valid_f1_per_class and valid_f1 over the
//                   training steps, mean over the seeds of each cell (CTD runs when present,
//                   as the thesis's figure)
//   fig4.9          allocation benchmark JSON (`mare bench allocation`, forward pass, sorted
//                   and parallel) beside thesis Table 4.14 (reports/paper/, compiled in)
//   fig4.10         CorpusStats: distribution of document lengths (tokens)
//   fig4.11         iteration benchmark JSON (`mare bench iteration`): box plot of times_s
//   fig5.1-fig5.5   sequence (GRPU) runs: metrics.jsonl train_mse and test_mse per epoch,
//                   mean over seeds, log y. 5.1 addition (batch > 10), 5.2 multiplication
//                   (batch > 10), 5.3 conditional, 5.4 addition (batch <= 10: the
//                   dissertation's "new experiment" of §5.4), 5.5 multiplication (batch <= 10)
//   curves4.5, curves4.6, curves4.10, curves4.12, curves4.13, curves
//                   relation runs of that table (run.json "table"; curves: of none, as
//                   reports/learning/'s): metrics.jsonl valid_f1 and
//                   train_f1 (a fixed training sample) against the step, per cell the mean
//                   over seeds with a lowest-highest band, at most four cells a panel
//
// CorpusStats JSON (`mare data stats --json`, experiments/sweep/corpus_stats.h), the fields
// read: "source" (named "<kind>" or "<kind>:<directory name>"), "split_order", and per split
// of "splits" {"<split>": {...}}: "related_pair_distances" (Fig. 4.4) and
// "tokens": {"per_document"} (Fig. 4.10). Each distribution may also be an object
// {"<value>": count} or a histogram {"edges": [e0..ek], "counts": [c0..c(k-1)]} (bin
// midpoints used).
#pragma once

#include <filesystem>
#include <functional>
#include <vector>

#include "reports/src/inputs.h"

namespace mare::report {

// Writes every figure into out_dir/figures/ and returns one Artifact per figure id, in the
// order fig4.2 fig4.3 fig4.4 fig4.5 fig4.6 fig4.9 fig4.10 fig4.11 fig5.1 ... fig5.5, then
// curves4.5 curves4.6 curves4.10 curves4.12 curves4.13 curves. Files are
// relative to out_dir. Throws only when out_dir/figures cannot be created or written.
// With `wanted`, only the figures whose id it accepts are made (and returned).
std::vector<Artifact> write_figures(const ReportInputs& in, const std::filesystem::path& out_dir,
                                    const std::function<bool(const std::string&)>& wanted = {});

}  // namespace mare::report
