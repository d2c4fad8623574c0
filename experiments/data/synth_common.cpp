// Building blocks of the generators (see synth_common.h).
//
// Rule: rendering is the only place where offsets are computed.
#include "experiments/data/synth_common.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "experiments/data/error.h"
#include "experiments/data/tokenizer.h"

namespace mare::data::synth {

void words(Sentence& s, const std::string& text) {
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string w = text.substr(start, end - start);
    if (!w.empty()) {
      const bool glue = w == "." || w == "," || w == ";" || w == ":" || w == ")";
      s.push_back({w, -1, glue});
    }
    start = end + 1;
  }
}

void render(Document& doc, const std::vector<Sentence>& sentences,
            const std::vector<LocalEntity>& entities, std::map<int, int>& local_to_doc) {
  for (const Sentence& s : sentences) {
    for (std::size_t k = 0; k < s.size(); ++k) {
      const Piece& p = s[k];
      if (!doc.text.empty() && !(p.glue && k > 0)) doc.text += ' ';
      const int begin = static_cast<int>(doc.text.size());
      doc.text += p.text;
      if (p.entity < 0) continue;
      auto it = local_to_doc.find(p.entity);
      if (it == local_to_doc.end()) {
        const LocalEntity& le = entities[p.entity];
        it = local_to_doc.emplace(p.entity, static_cast<int>(doc.entities.size())).first;
        doc.entities.push_back({le.id, le.type, {}});
      }
      Mention m;
      m.char_begin = begin;
      m.char_end = static_cast<int>(doc.text.size());
      m.text = p.text;
      m.type = entities[p.entity].type;
      m.entities = {it->second};
      doc.entities[it->second].mentions.push_back(static_cast<int>(doc.mentions.size()));
      doc.mentions.push_back(std::move(m));
    }
  }
}

int token_count(const Sentence& s) {
  int n = 0;
  for (const Piece& p : s) n += static_cast<int>(tokenize(p.text).size());
  return n;
}

std::vector<int> class_plan(const std::vector<double>& weights, int total, Rng& rng) {
  double sum = 0;
  for (double w : weights) sum += w;
  const int k = static_cast<int>(weights.size());
  std::vector<int> count(k, 0);
  std::vector<std::pair<double, int>> remainder;
  int assigned = 0;
  const bool at_least_one = total >= k;
  const int budget = at_least_one ? total - k : total;
  for (int c = 0; c < k; ++c) {
    const double exact = budget * weights[c] / sum;
    count[c] = static_cast<int>(std::floor(exact)) + (at_least_one ? 1 : 0);
    assigned += count[c];
    remainder.emplace_back(exact - std::floor(exact), c);
  }
  std::stable_sort(remainder.begin(), remainder.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (int i = 0; assigned < total; ++i, ++assigned) ++count[remainder[i % k].second];
  std::vector<int> plan;
  for (int c = 0; c < k; ++c) plan.insert(plan.end(), count[c], c);
  rng.shuffle(plan);
  return plan;
}

Embeddings make_vectors(const std::vector<Document>& docs,
                        const std::map<std::string, std::string>& groups, int dim, Rng rng) {
  std::set<std::string> vocab;
  for (const Document& d : docs)
    for (const Token& t : d.tokens) vocab.insert(t.text);
  auto direction = [&](const std::string& key) {
    Rng r = rng.fork(key);
    std::vector<double> v(dim);
    double norm = 0;
    for (double& x : v) {
      x = 2 * r.uniform() - 1;
      norm += x * x;
    }
    for (double& x : v) x /= std::sqrt(norm);
    return v;
  };
  Embeddings emb;
  emb.dim = dim;
  std::vector<float> row(dim);
  for (const std::string& w : vocab) {
    const std::vector<double> own = direction("word:" + w);
    auto g = groups.find(w);
    std::vector<double> shared = g == groups.end() ? own : direction("group:" + g->second);
    for (int k = 0; k < dim; ++k) {
      const double x = 0.5 * own[k] + 0.5 * shared[k];
      row[k] = static_cast<float>(std::round(x * 1e4) / 1e4);
    }
    emb.add(w, row.data());
  }
  return emb;
}

std::string syllable_name(Rng& rng, const std::vector<std::string>& heads,
                          const std::vector<std::string>& middles,
                          const std::vector<std::string>& tails) {
  return rng.pick(heads) + rng.pick(middles) + rng.pick(tails);
}

std::vector<std::string> write_vectors(const std::string& out_dir, const Embeddings& emb) {
  const std::string txt = (std::filesystem::path(out_dir) / "vectors.txt").string();
  const std::string bin = (std::filesystem::path(out_dir) / "vectors.bin").string();
  write_file(txt, write_word2vec_text(emb));
  write_file(bin, write_word2vec_binary(emb));
  return {txt, bin};
}

}  // namespace mare::data::synth
