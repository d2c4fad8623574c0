// The real corpora that mare ships in experiments/corpora/, as their publishers ship
// them: BioCreative V CDR (release CDR.Corpus.v010516), SemEval 2018 Task 7 (the
// organisers' training, test and key files) and the MeSH 2017 tree. Their sources,
// notices and checksums: experiments/corpora/README.md.
//
// Rule: a file read under one of the release's official names is that release's file,
// byte for byte: its SHA-256 is checked on every load, and a copy that differs is
// refused (naming the file and both checksums), so that a score computed on "cdr" is
// always a score on the published corpus. Other files in the same formats are read
// through the generic sources (pubtator:DIR, semeval:DIR), which check no checksum.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "experiments/data/document.h"

namespace mare::data {

struct ReleaseFile {
  std::string_view folder;  // under experiments/corpora/: cdr, semeval2018-task7, mesh
  std::string_view name;    // the publisher's file name
  std::string_view sha256;  // of the published bytes
};

// Every file of the three releases.
const std::vector<ReleaseFile>& release_files();
// The release file with this name, or nullptr.
const ReleaseFile* find_release_file(std::string_view name);

// The folder of the shipped corpora: $MARE_CORPORA when set; else
// $MARE_SOURCE_DIR/experiments/corpora (a packed tree sets it); else the
// experiments/corpora of the source tree this binary was built from. Throws
// std::runtime_error naming where it looked when none of them holds the corpora.
std::filesystem::path shipped_corpora_dir();

// Reads DIR/name, which must be a release file name (std::invalid_argument otherwise),
// and checks its SHA-256: DataError naming the file when it is missing or differs.
std::string read_release_file(const std::filesystem::path& dir, std::string_view name);

// A release read into its three splits, and the files it was read from.
struct ReleaseSplits {
  std::vector<Document> train, valid, test;
  std::vector<std::string> files;  // the paths read, in reading order
};

// BioCreative V CDR from DIR's CDR_TrainingSet/DevelopmentSet/TestSet.PubTator.txt
// (train, valid, test), each checked against the release.
ReleaseSplits load_cdr_release(const std::filesystem::path& dir);

// The subtasks of SemEval 2018 Task 7 that classify given pairs.
const std::vector<std::string>& semeval2018_subtasks();  // "1.1", "1.2"

// SemEval 2018 Task 7 subtask S ("1.1" or "1.2") from DIR: train is S.text.xml with
// S.relations.txt less the abstracts that training-eval.txt names for S (the organisers'
// held-out 50, or 49 for 1.2), which are valid; test is S.test.text.xml with the
// official keys keys.test.S.txt, whose pairs must be those of S.test.relations.txt, in
// the same order with the same direction flags. With also_train = T (the other subtask),
// T's training abstracts join train, all 350 of them but those that S's training or test
// files hold under the same id (1.2 shares six abstracts with 1.1). Every file is checked
// against the release.
ReleaseSplits load_semeval2018_release(const std::filesystem::path& dir, const std::string& subtask,
                                       const std::string& also_train = "");

// training-eval.txt: "SUBTASK DOCUMENT-ID" lines (blank lines skipped) -> the ids of one
// subtask, in file order.
std::vector<std::string> parse_training_eval(std::string_view content, std::string_view file,
                                             const std::string& subtask);

}  // namespace mare::data
