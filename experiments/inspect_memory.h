// `mare inspect memory RUN --doc ID --out DIR`: what a trained NTCRE's memories
// hold while it reads one document (thesis Figures 4.2 and 4.3).
//
// RUN is a run directory of `mare train` with an NTCRE model (manifest.json names
// the model and the data; checkpoint.bin holds the best weights and batch-norm
// statistics). The document (an id of the split, or its 0-based index) is run
// through the model alone, in evaluation mode, with a nn::MemoryRecording in
// the context: per iteration and token, the usage, memory, allocation, write
// and read weights and read vectors after that iteration. Written (each to a
// temporary file, then renamed):
//   DIR/memory.json             everything, plus the tokens and the pairs' predictions
//   DIR/memory_<field>.csv      one long-format table per field (usage, memory,
//                               allocation, write_weights, read_weights,
//                               read_vectors): iteration, token, [head,] slot|word, value
//   DIR/memory_tokens.csv       token index, text, real
//   DIR/heatmap_<field>.{png,svg}  gnuplot heatmaps: tokens across, one panel per
//                               iteration (usage, memory, write_weights,
//                               read_weights, read_vectors)
// Errors (std::invalid_argument / std::runtime_error, naming the file): no
// manifest, a model that is not NTCRE, no checkpoint, an unknown document, a
// failed gnuplot.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mare {

struct InspectMemoryOptions {
  std::filesystem::path run;
  std::string doc;  // document id, or 0-based index, in `split`
  std::filesystem::path out;
  std::string split = "test";
  std::string data;  // KIND:DIR instead of the manifest's (a moved corpus)
  bool plots = true;
};

struct InspectMemoryResult {
  nlohmann::json memory;                     // what memory.json holds
  std::vector<std::filesystem::path> files;  // written, in order
};

InspectMemoryResult inspect_memory(const InspectMemoryOptions& opt);

}  // namespace mare
