#include "verify/findings.h"

#include <sstream>

#include <nlohmann/json.hpp>

namespace gptoss {

std::string severity_name(Severity s) {
  switch (s) {
    case Severity::Info: return "info";
    case Severity::Warning: return "warning";
    case Severity::Error: return "error";
  }
  return "?";
}

void Report::error(std::string check, std::string file, std::string item, std::string message, std::string expected,
                   std::optional<uint64_t> offset) {
  add({Severity::Error, std::move(check), std::move(file), std::move(item), offset, std::move(message), std::move(expected)});
}

void Report::warning(std::string check, std::string file, std::string item, std::string message, std::string expected,
                     std::optional<uint64_t> offset) {
  add({Severity::Warning, std::move(check), std::move(file), std::move(item), offset, std::move(message), std::move(expected)});
}

void Report::info(std::string check, std::string file, std::string item, std::string message) {
  add({Severity::Info, std::move(check), std::move(file), std::move(item), std::nullopt, std::move(message), {}});
}

void Report::merge(const Report& other) {
  findings_.insert(findings_.end(), other.findings_.begin(), other.findings_.end());
}

bool Report::has_problems() const { return count(Severity::Warning) + count(Severity::Error) > 0; }

size_t Report::count(Severity s) const {
  size_t n = 0;
  for (const auto& f : findings_) n += f.severity == s;
  return n;
}

std::string Report::to_table() const {
  std::ostringstream out;
  for (const auto& f : findings_) {
    out << severity_name(f.severity) << "  [" << f.check << "]  " << f.file;
    if (!f.item.empty()) out << "  " << f.item;
    if (f.offset) out << "  @" << *f.offset;
    out << ": " << f.message;
    if (!f.expected.empty()) out << " (expected " << f.expected << ")";
    out << "\n";
  }
  out << count(Severity::Error) << " errors, " << count(Severity::Warning) << " warnings\n";
  return out.str();
}

nlohmann::json Report::to_json() const {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& f : findings_) {
    nlohmann::json j = {{"severity", severity_name(f.severity)}, {"check", f.check}, {"file", f.file},
                        {"item", f.item}, {"message", f.message}};
    if (f.offset) j["offset"] = *f.offset;
    if (!f.expected.empty()) j["expected"] = f.expected;
    arr.push_back(j);
  }
  return {{"findings", arr}, {"errors", count(Severity::Error)}, {"warnings", count(Severity::Warning)}};
}

}  // namespace gptoss
