// The MeSH tree (NLM's "2017MeshTree.txt": UTF-8 with a byte-order mark, a header line
// "Tree Number<TAB>Desc Ui<TAB>Term", then one line per tree number) and the hypernym
// relation BRAN's preprocessing reads from it.
//
// Rule: descriptor A is a hypernym (an ancestor) of descriptor B when one of A's tree
// numbers is a proper prefix of one of B's, ending at a '.' (C10.228 is an ancestor of
// C10.228.140 and not of C10.2289). A descriptor is not its own hypernym.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace mare::data {

class MeshTree {
 public:
  // Throws DataError with file:line:column for anything but the format above.
  static MeshTree parse(std::string_view content, std::string_view file);

  bool contains(const std::string& descriptor) const { return numbers_.count(descriptor) > 0; }
  const std::vector<std::string>& tree_numbers(const std::string& descriptor) const;
  bool is_hypernym(const std::string& ancestor, const std::string& descendant) const;
  std::size_t descriptors() const { return numbers_.size(); }
  std::size_t tree_number_count() const { return count_; }

 private:
  std::map<std::string, std::vector<std::string>> numbers_;  // descriptor -> tree numbers
  std::size_t count_ = 0;
};

}  // namespace mare::data
