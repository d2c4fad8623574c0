// PubTator reader and writer (see pubtator.h).
//
// Rule: every malformed line is reported with file, line, column and expectation.
#include "experiments/data/pubtator.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "experiments/data/error.h"
#include "experiments/data/tokenizer.h"

namespace mare::data {

namespace {

constexpr std::int64_t kMaxOffset = 1'000'000'000;

// Column (1-based) of field k of a tab-separated line.
std::size_t column_of(const std::vector<std::string_view>& fields, std::size_t k) {
  std::size_t col = 1;
  for (std::size_t i = 0; i < k; ++i) col += fields[i].size() + 1;
  return col;
}

struct PendingRelation {
  std::string type;
  std::string head_id;
  std::string tail_id;
  std::size_t line;
  std::size_t column_head;
  std::size_t column_tail;
};

// Parses "PMID|x|text"; returns false if the line does not have that shape.
bool parse_text_line(std::string_view line, char kind, std::string_view* pmid,
                     std::string_view* text) {
  const std::size_t bar = line.find('|');
  if (bar == std::string_view::npos || line.size() < bar + 3 || line[bar + 1] != kind ||
      line[bar + 2] != '|')
    return false;
  *pmid = line.substr(0, bar);
  *text = line.substr(bar + 3);
  return true;
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// One document of a PubTator file, read line by line: its title and abstract, then its
// mention and relation lines (relations resolved once every mention is known).
class DocumentReader {
 public:
  DocumentReader(std::string_view file, const PubtatorOptions& options)
      : file_(file), options_(options) {}

  // The title and abstract lines at lines[i], lines[i + 1]; `seen_pmids` refuses a
  // repeated document.
  void read_text(const std::vector<Line>& lines, std::size_t i,
                 std::map<std::string, std::size_t>& seen_pmids) {
    const Line& tl = lines[i];
    title_line_ = tl.number;
    std::string_view title, pmid_a, abstract;
    if (!parse_text_line(tl.text, 't', &pmid_, &title) || pmid_.empty())
      fail(file_, tl.number, 1, "expected a title line 'PMID|t|title', found " + quote(tl.text));
    if (pmid_.find('\t') != std::string_view::npos || pmid_.find(' ') != std::string_view::npos)
      fail(file_, tl.number, 1, "expected a PMID without spaces or tabs, found " + quote(pmid_));
    if (auto it = seen_pmids.find(std::string(pmid_)); it != seen_pmids.end())
      fail(file_, tl.number, 1,
           "document " + quote(pmid_) + " appears twice (first at line " +
               std::to_string(it->second) + ")");
    seen_pmids[std::string(pmid_)] = tl.number;
    if (i + 1 >= lines.size() || lines[i + 1].text.empty())
      fail(file_, i + 1 < lines.size() ? lines[i + 1].number : tl.number + 1, 1,
           "expected the abstract line '" + std::string(pmid_) +
               "|a|abstract' after the title (truncated document?)");
    const Line& al = lines[i + 1];
    if (!parse_text_line(al.text, 'a', &pmid_a, &abstract))
      fail(file_, al.number, 1,
           "expected the abstract line '" + std::string(pmid_) + "|a|abstract', found " +
               quote(al.text));
    if (pmid_a != pmid_)
      fail(file_, al.number, 1,
           "expected PMID " + quote(pmid_) + " on the abstract line, found " + quote(pmid_a));
    if (title.find('\t') != std::string_view::npos)
      fail(file_, tl.number, pmid_.size() + 3 + title.find('\t') + 1,
           "expected a title without tab characters");
    if (abstract.find('\t') != std::string_view::npos)
      fail(file_, al.number, pmid_.size() + 3 + abstract.find('\t') + 1,
           "expected an abstract without tab characters");
    doc_.id = std::string(pmid_);
    doc_.text = std::string(title) + " " + std::string(abstract);
    doc_.segments.push_back({"title", 0, static_cast<int>(title.size())});
    doc_.segments.push_back(
        {"abstract", static_cast<int>(title.size()) + 1, static_cast<int>(doc_.text.size())});
    cp_ = utf8_offsets(doc_.text);
  }

  // A line after the abstract: a relation (4 columns) or a mention (6 or 7).
  void read_annotation(const Line& ln) {
    const std::vector<std::string_view> f = split(ln.text, '\t');
    if (f.size() == 1 && (ln.text.find("|t|") != std::string_view::npos ||
                          ln.text.find("|a|") != std::string_view::npos))
      fail(file_, ln.number, 1,
           "expected a blank line before the next document, found " + quote(ln.text));
    if (f[0] != pmid_)
      fail(file_, ln.number, 1,
           "expected PMID " + quote(pmid_) + " (the current document), found " + quote(f[0]));
    if (f.size() == 4 && all_digits(f[1]))
      fail(file_, ln.number, 1,
           "expected 6 or 7 tab-separated columns for a mention line (PMID, start, end, "
           "text, type, id[, extra]), found 4");
    if (f.size() == 4) return read_relation(ln, f);
    if (f.size() != 6 && f.size() != 7)
      fail(file_, ln.number, 1,
           "expected 6 or 7 tab-separated columns (PMID, start, end, text, type, id[, "
           "extra]) for a mention or 4 (PMID, type, id1, id2) for a relation, found " +
               std::to_string(f.size()));
    read_mention(ln, f);
  }

  // The relations resolved to entities, the tokens annotated: the document.
  Document finish() {
    for (const PendingRelation& r : pending_) add_relation(r);
    try {
      annotate_tokens(doc_);
    } catch (const std::logic_error& e) {  // defensive: the checks above should prevent it
      fail(file_, title_line_, 1, std::string("cannot map mentions to tokens: ") + e.what());
    }
    return std::move(doc_);
  }

 private:
  void read_relation(const Line& ln, const std::vector<std::string_view>& f) {
    if (!options_.relation_types.count(std::string(f[1]))) {
      std::string known;
      for (const auto& t : options_.relation_types) known += (known.empty() ? "" : ", ") + t;
      fail(file_, ln.number, column_of(f, 1),
           "unknown relation type " + quote(f[1]) + " (expected one of: " + known + ")");
    }
    for (int k : {2, 3})
      if (f[k].empty() || f[k] == "-1")
        fail(file_, ln.number, column_of(f, k),
             "expected an entity id in the relation, found " + quote(f[k]));
    pending_.push_back({std::string(f[1]), std::string(f[2]), std::string(f[3]), ln.number,
                        column_of(f, 2), column_of(f, 3)});
  }

  void read_mention(const Line& ln, const std::vector<std::string_view>& f) {
    const std::int64_t n_cp = static_cast<std::int64_t>(cp_.size()) - 1;
    const std::int64_t start =
        parse_int(f[1], 0, kMaxOffset, "a start offset", file_, ln.number, column_of(f, 1));
    const std::int64_t end =
        parse_int(f[2], 0, kMaxOffset, "an end offset", file_, ln.number, column_of(f, 2));
    if (end <= start)
      fail(file_, ln.number, column_of(f, 2),
           "expected end > start, found start " + std::to_string(start) + " and end " +
               std::to_string(end));
    if (end > n_cp)
      fail(file_, ln.number, column_of(f, 2),
           "offset " + std::to_string(end) + " is past the end of the text (" +
               std::to_string(n_cp) + " characters in title + ' ' + abstract)");
    const std::size_t b = cp_[static_cast<std::size_t>(start)];
    const std::size_t e = cp_[static_cast<std::size_t>(end)];
    const std::string_view span = std::string_view(doc_.text).substr(b, e - b);
    if (span != f[3])
      fail(file_, ln.number, column_of(f, 3),
           "mention text " + quote(f[3]) + " disagrees with the text at offsets [" +
               std::to_string(start) + ", " + std::to_string(end) + "), which is " + quote(span));
    if (tokenize(span).empty())
      fail(file_, ln.number, column_of(f, 3), "expected a mention with non-space text");
    if (f[4].empty() || f[4].find(' ') != std::string_view::npos)
      fail(file_, ln.number, column_of(f, 4),
           "expected an entity type (non-empty, no spaces), found " + quote(f[4]));
    const auto [first, fresh] = mention_lines_.emplace(
        std::make_tuple(start, end, std::string(f[4]), std::string(f[5])), ln.number);
    if (!fresh)
      fail(file_, ln.number, 1,
           "mention " + quote(f[3]) + " [" + std::to_string(start) + ", " + std::to_string(end) +
               ") of " + quote(f[5]) + " is listed twice (first at line " +
               std::to_string(first->second) + ")");
    Mention m;
    m.char_begin = static_cast<int>(b);
    m.char_end = static_cast<int>(e);
    m.text = std::string(span);
    m.type = std::string(f[4]);
    if (f.size() == 7) m.extra = std::string(f[6]), m.has_extra = true;
    m.ids_as_written = std::string(f[5]);
    add_entities(m, ln, f);
    doc_.mentions.push_back(std::move(m));
  }

  // The mention's ids, each an entity of the document (created at its first mention).
  void add_entities(Mention& m, const Line& ln, const std::vector<std::string_view>& f) {
    const int mention_index = static_cast<int>(doc_.mentions.size());
    for (std::string_view id : split(f[5], '|')) {
      if (id.empty())
        fail(file_, ln.number, column_of(f, 5),
             "expected entity ids separated by '|', found " + quote(f[5]));
      // The release marks a part of a composite mention that names no concept with -1
      // (D002544|-1), and repeats an id when several parts name one concept
      // (D020258|D020258): the mention belongs to each named entity once.
      if (id == "-1") continue;
      auto [it, inserted] =
          entity_index_.emplace(std::string(id), static_cast<int>(doc_.entities.size()));
      if (inserted) doc_.entities.push_back({std::string(id), m.type, {}});
      Entity& ent = doc_.entities[it->second];
      if (ent.type != m.type)
        fail(file_, ln.number, column_of(f, 4),
             "entity " + quote(id) + " has type " + quote(ent.type) +
                 " on an earlier line, found " + quote(m.type));
      if (std::find(m.entities.begin(), m.entities.end(), it->second) != m.entities.end()) continue;
      m.entities.push_back(it->second);
      ent.mentions.push_back(mention_index);
    }
  }

  void add_relation(const PendingRelation& r) {
    auto h = entity_index_.find(r.head_id);
    if (h == entity_index_.end())
      fail(file_, r.line, r.column_head,
           "entity id " + quote(r.head_id) +
               " appears in a relation but in no mention of document " + quote(pmid_));
    auto t = entity_index_.find(r.tail_id);
    if (t == entity_index_.end())
      fail(file_, r.line, r.column_tail,
           "entity id " + quote(r.tail_id) +
               " appears in a relation but in no mention of document " + quote(pmid_));
    if (h->second == t->second)
      fail(file_, r.line, r.column_tail,
           "expected a relation between two different entities, found " + quote(r.head_id) +
               " to itself");
    if (auto types = options_.argument_types.find(r.type); types != options_.argument_types.end()) {
      const Entity& head = doc_.entities[h->second];
      const Entity& tail = doc_.entities[t->second];
      if (head.type != types->second.first || tail.type != types->second.second)
        fail(file_, r.line, r.column_head,
             "expected a " + r.type + " relation from a " + types->second.first + " to a " +
                 types->second.second + ", found " + quote(r.head_id) + " (" + head.type + ") to " +
                 quote(r.tail_id) + " (" + tail.type + ")");
    }
    for (const Relation& old : doc_.relations)
      if (old.type == r.type && old.head == h->second && old.tail == t->second)
        fail(file_, r.line, 1, "duplicate relation " + r.type + " " + r.head_id + " " + r.tail_id);
    doc_.relations.push_back({r.type, h->second, t->second, false});
  }

  std::string_view file_;
  const PubtatorOptions& options_;
  std::string_view pmid_;
  std::size_t title_line_ = 0;
  Document doc_;
  std::vector<std::size_t> cp_;  // byte offset of each code point of doc_.text, and its end
  std::map<std::string, int> entity_index_;
  std::vector<PendingRelation> pending_;
  // (start, end, type, ids) of each mention line -> its line: a repeated line is refused.
  std::map<std::tuple<std::int64_t, std::int64_t, std::string, std::string>, std::size_t>
      mention_lines_;
};

}  // namespace

std::vector<Document> parse_pubtator(std::string_view content, std::string_view file,
                                     const PubtatorOptions& options) {
  if (content.empty()) fail(file, 0, 0, "expected a PubTator file, found an empty file");
  check_utf8(content, file);
  const std::vector<Line> lines = split_lines(content, file);
  std::vector<Document> docs;
  std::map<std::string, std::size_t> seen_pmids;
  std::size_t i = 0;
  while (i < lines.size()) {
    if (lines[i].text.empty()) {
      ++i;
      continue;
    }
    DocumentReader reader(file, options);
    reader.read_text(lines, i, seen_pmids);
    for (i += 2; i < lines.size() && !lines[i].text.empty(); ++i) reader.read_annotation(lines[i]);
    docs.push_back(reader.finish());
  }
  if (docs.empty()) fail(file, 0, 0, "expected at least one document, found only blank lines");
  return docs;
}

std::vector<Document> load_pubtator(const std::string& path, const PubtatorOptions& options) {
  return parse_pubtator(read_file(path), path, options);
}

std::string write_pubtator(const std::vector<Document>& docs) {
  std::string out;
  for (const Document& doc : docs) {
    std::string_view text(doc.text);
    std::string_view title = text, abstract;
    if (doc.segments.size() >= 2) {
      title = text.substr(doc.segments[0].begin, doc.segments[0].end - doc.segments[0].begin);
      abstract = text.substr(doc.segments[1].begin, doc.segments[1].end - doc.segments[1].begin);
    }
    out += doc.id + "|t|" + std::string(title) + "\n";
    out += doc.id + "|a|" + std::string(abstract) + "\n";
    for (const Mention& m : doc.mentions) {
      const std::size_t start = utf8_length(text.substr(0, m.char_begin));
      const std::size_t end = start + utf8_length(m.text);
      std::string ids = m.ids_as_written;
      if (ids.empty()) {
        for (int e : m.entities) ids += (ids.empty() ? "" : "|") + doc.entities[e].id;
        if (ids.empty()) ids = "-1";
      }
      out += doc.id + "\t" + std::to_string(start) + "\t" + std::to_string(end) + "\t" + m.text +
             "\t" + m.type + "\t" + ids;
      if (m.has_extra || !m.extra.empty()) out += "\t" + m.extra;
      out += "\n";
    }
    for (const Relation& r : doc.relations)
      out += doc.id + "\t" + r.type + "\t" + doc.entities[r.head].id + "\t" +
             doc.entities[r.tail].id + "\n";
    out += "\n";
  }
  return out;
}

}  // namespace mare::data
