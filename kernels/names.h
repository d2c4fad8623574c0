// One table per enum: each value beside its spelling, read both ways. An enum's
// names are written once, in its table; printing a value, parsing a name and
// the list of valid names in an error message all read the same table.
//
//   constexpr Named<Colour> kColours[] = {{Colour::red, "red"}, {Colour::blue, "blue"}};
//   name_of(kColours, Colour::red)  == "red"
//   value_of(kColours, "blue")      -> pointer to Colour::blue, nullptr if unknown
//   names_of(kColours, " or ")      == "red or blue"
//   names_list(kColours)            == {"red", "blue"}  (CLI11's IsMember, a spec's choices)
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace mare {

template <class E>
struct Named {
  E value;
  std::string_view name;
};

template <class E, std::size_t K>
constexpr std::string_view name_of(const Named<E> (&table)[K], E value) {
  for (const Named<E>& n : table)
    if (n.value == value) return n.name;
  return "?";
}

template <class E, std::size_t K>
constexpr const E* value_of(const Named<E> (&table)[K], std::string_view name) {
  for (const Named<E>& n : table)
    if (n.name == name) return &n.value;
  return nullptr;
}

// The names in table order, ", " between them and `last` before the last one.
template <class E, std::size_t K>
std::string names_of(const Named<E> (&table)[K], std::string_view last = ", ") {
  std::string s;
  for (std::size_t i = 0; i < K; ++i)
    s.append(i == 0 ? "" : i + 1 == K ? last : ", ").append(table[i].name);
  return s;
}

// The names in table order, one string each.
template <class E, std::size_t K>
std::vector<std::string> names_list(const Named<E> (&table)[K]) {
  std::vector<std::string> names;
  for (const Named<E>& n : table) names.emplace_back(n.name);
  return names;
}

}  // namespace mare
