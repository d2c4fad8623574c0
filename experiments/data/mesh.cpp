// MeSH tree reader (see mesh.h).
#include "experiments/data/mesh.h"

#include <set>

#include "experiments/data/error.h"

namespace mare::data {

MeshTree MeshTree::parse(std::string_view content, std::string_view file) {
  if (content.empty()) fail(file, 0, 0, "expected the MeSH tree file, found an empty file");
  // The MeSH release starts with a byte-order mark: skipped, not refused.
  const std::string_view bom = "\xEF\xBB\xBF";
  std::size_t skip = content.substr(0, 3) == bom ? 3 : 0;
  check_utf8_field(content.substr(skip), file, 1, 1 + skip);
  const std::vector<Line> lines = split_lines(content.substr(skip), file);
  const std::string_view header = "Tree Number\tDesc Ui\tTerm";
  if (lines.empty() || lines[0].text != header)
    fail(file, 1, 1 + skip,
         "expected the header 'Tree Number<TAB>Desc Ui<TAB>Term', found " +
             quote(lines.empty() ? std::string_view() : lines[0].text));
  MeshTree tree;
  std::set<std::string> seen;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const Line& ln = lines[i];
    if (ln.text.empty()) continue;
    const std::vector<std::string_view> f = split(ln.text, '\t');
    if (f.size() != 3)
      fail(file, ln.number, 1,
           "expected 3 tab-separated columns (tree number, descriptor, term), found " +
               std::to_string(f.size()));
    const std::string_view number = f[0], descriptor = f[1];
    bool ok = !number.empty() && number.front() != '.' && number.back() != '.';
    for (char c : number) ok = ok && ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.');
    if (!ok)
      fail(file, ln.number, 1,
           "expected a tree number such as C10.228.140, found " + quote(number));
    if (descriptor.size() < 2 || descriptor[0] != 'D')
      fail(file, ln.number, number.size() + 2,
           "expected a descriptor id such as D001829, found " + quote(descriptor));
    if (!seen.insert(std::string(number)).second)
      fail(file, ln.number, 1, "tree number " + quote(number) + " is listed twice");
    tree.numbers_[std::string(descriptor)].push_back(std::string(number));
    ++tree.count_;
  }
  if (tree.count_ == 0) fail(file, 0, 0, "expected tree numbers after the header, found none");
  return tree;
}

const std::vector<std::string>& MeshTree::tree_numbers(const std::string& descriptor) const {
  static const std::vector<std::string> none;
  auto it = numbers_.find(descriptor);
  return it == numbers_.end() ? none : it->second;
}

bool MeshTree::is_hypernym(const std::string& ancestor, const std::string& descendant) const {
  if (ancestor == descendant) return false;
  for (const std::string& a : tree_numbers(ancestor))
    for (const std::string& b : tree_numbers(descendant))
      if (b.size() > a.size() && b.compare(0, a.size(), a) == 0 && b[a.size()] == '.') return true;
  return false;
}

}  // namespace mare::data
