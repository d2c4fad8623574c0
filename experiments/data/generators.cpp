// Generator registry and relation scoring (see generators.h).
//
// Rule: scores compare entity ids, never indices, so gold and predictions need not
// list entities in the same order.
#include "experiments/data/generators.h"

#include <set>
#include <stdexcept>
#include <tuple>

namespace mare::data {

std::vector<std::string> generator_names() {
  return {"synth-cdr", "synth-ctd", "synth-semeval"};
}

GenerateReport generate_corpus(const std::string& name, const std::string& out_dir,
                               const GenerateOptions& options) {
  if (options.docs < 0 || options.docs > kMaxDocs)
    throw std::invalid_argument("--docs: expected a whole number from 1 to " +
                                std::to_string(kMaxDocs) + ", got " + std::to_string(options.docs));
  if (name == "synth-cdr") return generate_synth_cdr(out_dir, options);
  if (name == "synth-ctd") return generate_synth_ctd(out_dir, options);
  if (name == "synth-semeval") return generate_synth_semeval(out_dir, options);
  throw std::invalid_argument("unknown generator '" + name +
                              "' (expected synth-cdr, synth-ctd or synth-semeval)");
}

OracleScore score_relations(const std::vector<Document>& gold,
                            const std::vector<std::vector<Relation>>& predicted) {
  using Key = std::tuple<std::size_t, std::string, std::string, std::string, bool>;
  OracleScore s;
  for (std::size_t d = 0; d < gold.size(); ++d) {
    const Document& doc = gold[d];
    std::set<Key> g, p;
    for (const Relation& r : doc.relations)
      g.insert({d, doc.entities[r.head].id, doc.entities[r.tail].id, r.type, r.reverse});
    if (d < predicted.size())
      for (const Relation& r : predicted[d])
        p.insert({d, doc.entities[r.head].id, doc.entities[r.tail].id, r.type, r.reverse});
    s.gold += static_cast<long>(g.size());
    s.predicted += static_cast<long>(p.size());
    for (const Key& k : p) s.correct += g.count(k) ? 1 : 0;
  }
  return s;
}

}  // namespace mare::data
