// Corpus statistics (see inspect.h).
//
// Rule: sorted keys, fixed formatting.
#include "experiments/data/inspect.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "experiments/data/examples.h"

namespace mare::data {

namespace {

std::string distribution(std::vector<int> v) {
  if (v.empty()) return "n=0";
  std::sort(v.begin(), v.end());
  auto q = [&](double p) { return v[static_cast<std::size_t>(p * (v.size() - 1) + 0.5)]; };
  double mean = 0;
  for (int x : v) mean += x;
  mean /= v.size();
  char buf[160];
  std::snprintf(buf, sizeof buf, "n=%zu min=%d p25=%d median=%d mean=%.1f p75=%d p95=%d max=%d",
                v.size(), v.front(), q(0.25), q(0.5), mean, q(0.75), q(0.95), v.back());
  return buf;
}

std::string buckets(const std::vector<int>& v) {
  const int edges[] = {50, 100, 200, 300, 500};
  std::string out;
  char buf[64];
  int lo = 0;
  for (int e : edges) {
    const long n = std::count_if(v.begin(), v.end(), [&](int x) { return x >= lo && x < e; });
    std::snprintf(buf, sizeof buf, "[%d,%d):%ld ", lo, e, n);
    out += buf;
    lo = e;
  }
  const long n = std::count_if(v.begin(), v.end(), [&](int x) { return x >= 500; });
  std::snprintf(buf, sizeof buf, ">=500:%ld", n);
  return out + buf;
}

}  // namespace

std::string describe_documents(const std::vector<Document>& docs, const std::string& title) {
  std::string out = title + "\n";
  long tokens = 0, sentences = 0, relations = 0;
  std::map<std::string, long> mentions, entities, classes;
  std::set<std::pair<std::string, std::string>> related_types;
  std::vector<int> lengths;
  for (const Document& d : docs) {
    tokens += static_cast<long>(d.tokens.size());
    sentences += static_cast<long>(d.sentences.size());
    lengths.push_back(static_cast<int>(d.tokens.size()));
    for (const Mention& m : d.mentions) ++mentions[m.type];
    for (const Entity& e : d.entities) ++entities[e.type];
    for (const Relation& r : d.relations) {
      const std::string& h = d.entities[r.head].type;
      const std::string& t = d.entities[r.tail].type;
      ++classes[h + " -> " + t + " : " + r.type + (r.reverse ? " (REVERSE)" : "")];
      related_types.insert({h, t});
      ++relations;
    }
  }
  out += "  documents: " + std::to_string(docs.size()) + "\n";
  out += "  sentences: " + std::to_string(sentences) + "\n";
  out += "  tokens:    " + std::to_string(tokens) + "\n";
  out += "  mentions per type:\n";
  for (const auto& [k, v] : mentions) out += "    " + k + ": " + std::to_string(v) + "\n";
  out += "  entities per type (per document, summed):\n";
  for (const auto& [k, v] : entities) out += "    " + k + ": " + std::to_string(v) + "\n";
  out += "  relations: " + std::to_string(relations) + " in " + std::to_string(classes.size()) +
         " classes\n";
  for (const auto& [k, v] : classes) out += "    " + k + ": " + std::to_string(v) + "\n";
  out += "  document length (tokens): " + distribution(lengths) + "\n";
  ExampleOptions opt;
  for (const auto& [h, t] : related_types) opt.allowed.push_back({h, t});
  if (!opt.allowed.empty()) {
    const ExampleSet set = build_examples(docs, opt);
    std::vector<int> all, pos;
    for (const Example& e : set.examples) {
      all.push_back(e.distance);
      if (e.label != kNullLabel) pos.push_back(e.distance);
    }
    out += "  candidate pairs (related type pairs): " + std::to_string(all.size()) + ", NULL " +
           std::to_string(all.size() - pos.size()) + "\n";
    out += "  pair distance, all pairs (tokens):      " + distribution(all) + "\n";
    out += "    buckets: " + buckets(all) + "\n";
    out += "  pair distance, related pairs (tokens):  " + distribution(pos) + "\n";
    out += "    buckets: " + buckets(pos) + "\n";
  }
  return out;
}

std::string describe_embeddings(const Embeddings& emb, const std::string& title) {
  std::string out = title + "\n";
  out += "  words:     " + std::to_string(emb.size()) + "\n";
  out += "  dimension: " + std::to_string(emb.dim) + "\n";
  double mn = INFINITY, mx = 0, mean = 0;
  for (int i = 0; i < emb.size(); ++i) {
    double n = 0;
    for (int k = 0; k < emb.dim; ++k) n += double(emb.row(i)[k]) * emb.row(i)[k];
    n = std::sqrt(n);
    mn = std::min(mn, n);
    mx = std::max(mx, n);
    mean += n;
  }
  if (emb.size() > 0) {
    char buf[120];
    std::snprintf(buf, sizeof buf, "  vector norm: min=%.4f mean=%.4f max=%.4f\n", mn,
                  mean / emb.size(), mx);
    out += buf;
  }
  std::string first;
  for (int i = 0; i < std::min(emb.size(), 8); ++i) first += " " + emb.words[i];
  out += "  first words:" + first + "\n";
  return out;
}

}  // namespace mare::data
