#pragma once
// An enum's names as the command lines spell them, said once as a table of (value, name) pairs:
// the name of a value, the value of a name, and every name in order (CLI11's IsMember check).
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gptoss {

template <class Enum, size_t N>
struct NameTable {
  std::pair<Enum, const char*> entries[N];

  constexpr std::string_view name(Enum value) const {
    for (const auto& [v, n] : entries)
      if (v == value) return n;
    return "unknown";
  }
  constexpr std::optional<Enum> from_name(std::string_view name) const {
    for (const auto& [v, n] : entries)
      if (name == n) return v;
    return std::nullopt;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> all;
    for (const auto& [v, n] : entries) all.emplace_back(n);
    return all;
  }
};
template <class Enum, class... Rest>
NameTable(std::pair<Enum, const char*>, Rest...) -> NameTable<Enum, 1 + sizeof...(Rest)>;

}  // namespace gptoss
