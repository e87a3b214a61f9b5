#include "formats/core/json_file.h"

#include <nlohmann/json.hpp>

#include "formats/core/error.h"
#include "formats/core/mapped_file.h"

namespace gptoss {

nlohmann::json read_json_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw_format_error(path.string(), "", std::nullopt, "cannot open");
  const auto file = MappedFile::open(path);
  const auto bytes = file->bytes();
  nlohmann::json parsed;
  try {
    parsed = nlohmann::json::parse(bytes.begin(), bytes.end());
  } catch (const nlohmann::json::exception& e) {
    file->check_intact();
    throw_format_error(path.string(), "", std::nullopt, std::string("invalid JSON: ") + e.what());
  }
  file->check_intact();
  return parsed;
}

}  // namespace gptoss
