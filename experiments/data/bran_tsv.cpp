// BRAN TSV reader and writer (see bran_tsv.h).
//
// Rule: every line is checked against the document's earlier lines; an inconsistency
// names both lines.
#include "experiments/data/bran_tsv.h"

#include <map>

#include "experiments/data/error.h"
#include "experiments/data/tokenizer.h"

namespace mare::data {

namespace {

constexpr int kColumns = 13;

std::size_t column_of(const std::vector<std::string_view>& fields, std::size_t k) {
  std::size_t col = 1;
  for (std::size_t i = 0; i < k; ++i) col += fields[i].size() + 1;
  return col;
}

struct DocState {
  std::size_t index = 0;                           // into docs
  std::size_t first_line = 0;                      // line that introduced the document
  std::map<std::string, std::size_t> entity_line;  // entity id -> line that defined it
  // (head, tail) -> the lines that listed the pair, with their labels
  std::map<std::pair<int, int>, std::vector<std::pair<std::string, std::size_t>>> pair_lines;
};

// The text of the tokens [begin, end) as the file writes them (single spaces).
std::string span_text(const Document& doc, const Span& s) {
  return doc.text.substr(doc.tokens[s.begin].begin,
                         doc.tokens[s.end - 1].end - doc.tokens[s.begin].begin);
}

std::string join_spans(const Document& doc, const Entity& e, bool starts) {
  std::string s;
  for (int m : e.mentions) {
    if (!s.empty()) s += ":";
    s += std::to_string(starts ? doc.mentions[m].tokens.begin : doc.mentions[m].tokens.end);
  }
  return s;
}

}  // namespace

const std::vector<std::string>& ctd_relation_classes() {
  static const std::vector<std::string> classes{"chem_disease_marker/mechanism",
                                                "chem_disease_therapeutic",
                                                "gene_disease_marker/mechanism",
                                                "gene_disease_therapeutic",
                                                "chem_gene_increases_expression",
                                                "chem_gene_increases_metabolic_processing",
                                                "chem_gene_decreases_expression",
                                                "chem_gene_increases_activity",
                                                "chem_gene_affects_response_to_substance",
                                                "chem_gene_decreases_activity",
                                                "chem_gene_affects_transport",
                                                "chem_gene_increases_reaction",
                                                "chem_gene_decreases_reaction",
                                                "chem_gene_decreases_metabolic_processing"};
  return classes;
}

BranOptions::BranOptions() {
  for (const auto& c : ctd_relation_classes()) labels.insert(c);
  labels.insert("CID");
}

namespace {

// One line of the file, split into its 13 columns, each checked non-empty.
struct TsvLine {
  std::string_view file;
  std::size_t number = 0;
  std::vector<std::string_view> f;
  std::size_t column(std::size_t k) const { return column_of(f, k); }
};

TsvLine read_columns(const Line& ln, std::string_view file) {
  if (ln.text.empty())
    fail(file, ln.number, 1, "expected a TSV line with 13 columns, found a blank line");
  TsvLine l{file, ln.number, split(ln.text, '\t')};
  if (static_cast<int>(l.f.size()) != kColumns)
    fail(file, ln.number, 1,
         "expected 13 tab-separated columns (e1_id, e1_type, e1_mention, e1_starts, "
         "e1_ends, e2_id, e2_type, e2_mention, e2_starts, e2_ends, doc_id, label, "
         "tokenized_text), found " +
             std::to_string(l.f.size()));
  for (int k = 0; k < kColumns; ++k)
    if (l.f[k].empty())
      fail(file, ln.number, l.column(k), "expected a non-empty column " + std::to_string(k + 1));
  return l;
}

// The document the line belongs to: made from its tokenized_text on the document's first
// line, checked against that text on every later one.
DocState& document_of(const TsvLine& l, std::vector<Document>& docs,
                      std::map<std::string, DocState>& state) {
  const std::string doc_id(l.f[10]);
  auto [it, inserted] = state.emplace(doc_id, DocState{});
  DocState& st = it->second;
  if (inserted) {
    st.index = docs.size();
    st.first_line = l.number;
    Document doc;
    doc.id = doc_id;
    doc.text = std::string(l.f[12]);
    int pos = 0;
    for (std::string_view tok : split(l.f[12], ' ')) {
      if (tok.empty())
        fail(l.file, l.number, l.column(12) + pos,
             "expected tokens separated by single spaces, found an empty token");
      doc.tokens.push_back({std::string(tok), pos, pos + static_cast<int>(tok.size())});
      pos += static_cast<int>(tok.size()) + 1;
    }
    doc.sentences = split_sentences(doc.text, doc.tokens);
    docs.push_back(std::move(doc));
  } else if (docs[st.index].text != l.f[12]) {
    fail(l.file, l.number, l.column(12),
         "document " + quote(doc_id) + " has a different tokenized_text than on line " +
             std::to_string(st.first_line));
  }
  return st;
}

// The token spans of one side's entity (columns c + 3 and c + 4: starts and ends).
std::vector<Span> entity_spans(const TsvLine& l, int c, const std::string& id, int n_tokens) {
  const std::vector<std::string_view> starts = split(l.f[c + 3], ':');
  const std::vector<std::string_view> stops = split(l.f[c + 4], ':');
  if (starts.size() != stops.size())
    fail(l.file, l.number, l.column(c + 4),
         "expected as many ends as starts for entity " + quote(id) + ", found " +
             std::to_string(starts.size()) + " starts and " + std::to_string(stops.size()) +
             " ends");
  std::vector<Span> spans;
  for (std::size_t k = 0; k < starts.size(); ++k) {
    const auto b = static_cast<int>(
        parse_int(starts[k], 0, n_tokens - 1, "a token start", l.file, l.number, l.column(c + 3)));
    const auto e =
        static_cast<int>(parse_int(stops[k], b + 1, n_tokens, "a token end after its start", l.file,
                                   l.number, l.column(c + 4)));
    spans.push_back({b, e});
  }
  return spans;
}

// The index of one side's entity (side 0: columns 1-5, side 1: 6-10): added with its
// mentions on its first line, checked against them on every later one; the mention column
// must be the text of one of its spans.
int read_entity(const TsvLine& l, int side, Document& doc, DocState& st) {
  const int c = side * 5;
  const std::string id(l.f[c]);
  const std::string type(l.f[c + 1]);
  const std::vector<Span> spans = entity_spans(l, c, id, static_cast<int>(doc.tokens.size()));
  int index = doc.find_entity(id);
  if (index < 0) {
    index = static_cast<int>(doc.entities.size());
    doc.entities.push_back({id, type, {}});
    st.entity_line[id] = l.number;
    for (const Span& s : spans) {
      Mention m;
      m.tokens = s;
      m.char_begin = doc.tokens[s.begin].begin;
      m.char_end = doc.tokens[s.end - 1].end;
      m.text = doc.text.substr(m.char_begin, m.char_end - m.char_begin);
      m.type = type;
      m.entities.push_back(index);
      doc.entities[index].mentions.push_back(static_cast<int>(doc.mentions.size()));
      doc.mentions.push_back(std::move(m));
    }
  } else {
    const Entity& ent = doc.entities[index];
    bool same = ent.type == type && ent.mentions.size() == spans.size();
    for (std::size_t k = 0; same && k < spans.size(); ++k)
      same = doc.mentions[ent.mentions[k]].tokens == spans[k];
    if (!same)
      fail(l.file, l.number, l.column(c),
           "entity " + quote(id) + " has a different type or different mentions than on line " +
               std::to_string(st.entity_line[id]));
  }
  // The mention column is the text of one of the entity's spans.
  bool text_matches = false;
  for (const Span& sp : spans) text_matches = text_matches || span_text(doc, sp) == l.f[c + 2];
  if (!text_matches)
    fail(l.file, l.number, l.column(c + 2),
         "mention text " + quote(l.f[c + 2]) + " of entity " + quote(id) +
             " is the text of none of its spans (the first, tokens [" +
             std::to_string(spans[0].begin) + ", " + std::to_string(spans[0].end) + "), is " +
             quote(span_text(doc, spans[0])) + ")");
  return index;
}

// The pair (head, tail) with the line's label, added to the document and, unless Null,
// its relations. A pair may carry several relation labels (CTD's are not exclusive), but
// not one label twice, and never Null beside a relation.
void add_pair(const TsvLine& l, int head, int tail, const BranOptions& options, Document& doc,
              DocState& st) {
  if (head == tail)
    fail(l.file, l.number, l.column(5), "expected two different entities in a pair");
  const std::string label(l.f[11]);
  if (label != "Null" && !options.labels.count(label))
    fail(l.file, l.number, l.column(11),
         "unknown relation label " + quote(label) +
             " (expected 'Null', 'CID' or a CTD class such as 'chem_gene_increases_expression')");
  auto& listed = st.pair_lines[{head, tail}];
  for (const auto& [old, old_line] : listed) {
    if (old == label)
      fail(l.file, l.number, 1,
           "the pair (" + std::string(l.f[0]) + ", " + std::string(l.f[5]) + ") with label " +
               quote(label) + " is listed twice (first at line " + std::to_string(old_line) + ")");
    if (old == "Null" || label == "Null")
      fail(l.file, l.number, l.column(11),
           "the pair (" + std::string(l.f[0]) + ", " + std::string(l.f[5]) + ") is " + quote(old) +
               " at line " + std::to_string(old_line) + " and " + quote(label) +
               " here: expected Null alone or relation labels only");
  }
  listed.push_back({label, l.number});
  doc.pairs.push_back({head, tail, label, std::string(l.f[2]), std::string(l.f[7])});
  if (label != "Null") doc.relations.push_back({label, head, tail, false});
}

}  // namespace

// A line at a time: its columns, its document, its two entities, its pair.
std::vector<Document> parse_bran_tsv(std::string_view content, std::string_view file,
                                     const BranOptions& options) {
  if (content.empty()) fail(file, 0, 0, "expected a BRAN TSV file, found an empty file");
  check_utf8(content, file);
  std::vector<Document> docs;
  std::map<std::string, DocState> state;
  for (const Line& ln : split_lines(content, file)) {
    const TsvLine l = read_columns(ln, file);
    DocState& st = document_of(l, docs, state);
    Document& doc = docs[st.index];
    const int head = read_entity(l, 0, doc, st);
    const int tail = read_entity(l, 1, doc, st);
    add_pair(l, head, tail, options, doc, st);
  }
  return docs;
}

std::vector<Document> load_bran_tsv(const std::string& path, const BranOptions& options) {
  return parse_bran_tsv(read_file(path), path, options);
}

std::string write_bran_tsv(const std::vector<Document>& docs) {
  std::string out;
  for (const Document& doc : docs) {
    std::string text;
    for (const Token& t : doc.tokens) text += (text.empty() ? "" : " ") + t.text;
    std::vector<ListedPair> pairs = doc.pairs;
    if (pairs.empty()) {
      for (const Relation& r : doc.relations) {
        const Entity& h = doc.entities[r.head];
        const Entity& t = doc.entities[r.tail];
        pairs.push_back({r.head, r.tail, r.type,
                         h.mentions.empty() ? h.id : doc.mentions[h.mentions[0]].text,
                         t.mentions.empty() ? t.id : doc.mentions[t.mentions[0]].text});
      }
    }
    for (const ListedPair& p : pairs) {
      const Entity& h = doc.entities[p.head];
      const Entity& t = doc.entities[p.tail];
      out += h.id + "\t" + h.type + "\t" + p.head_text + "\t" + join_spans(doc, h, true) + "\t" +
             join_spans(doc, h, false) + "\t" + t.id + "\t" + t.type + "\t" + p.tail_text + "\t" +
             join_spans(doc, t, true) + "\t" + join_spans(doc, t, false) + "\t" + doc.id + "\t" +
             p.label + "\t" + text + "\n";
    }
  }
  return out;
}

}  // namespace mare::data
