#pragma once
// What gptoss-verify reports: each finding names its severity, the file, the tensor or field,
// the byte offset when there is one, what was found and what was expected.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace gptoss {

enum class Severity { Info, Warning, Error };
std::string severity_name(Severity s);

struct Finding {
  Severity severity = Severity::Error;
  std::string check;  // short id of the check, e.g. "shape", "nan", "padding"
  std::string file;
  std::string item;   // tensor name or header field
  std::optional<uint64_t> offset;
  std::string message;
  std::string expected;
};

class Report {
 public:
  void add(Finding f) { findings_.push_back(std::move(f)); }
  void error(std::string check, std::string file, std::string item, std::string message, std::string expected = {},
             std::optional<uint64_t> offset = {});
  void warning(std::string check, std::string file, std::string item, std::string message, std::string expected = {},
               std::optional<uint64_t> offset = {});
  void info(std::string check, std::string file, std::string item, std::string message);
  void merge(const Report& other);

  const std::vector<Finding>& findings() const { return findings_; }
  bool has_problems() const;  // any warning or error
  size_t count(Severity s) const;

  std::string to_table() const;
  nlohmann::json to_json() const;

 private:
  std::vector<Finding> findings_;
};

}  // namespace gptoss
