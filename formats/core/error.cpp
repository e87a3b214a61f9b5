#include "formats/core/error.h"

namespace gptoss {
namespace {
std::string compose(const std::string& file, const std::string& field, const std::optional<uint64_t>& offset,
                    const std::string& message) {
  std::string text = file.empty() ? std::string("<input>") : file;
  if (!field.empty()) text += ": " + field;
  if (offset) text += " at byte " + std::to_string(*offset);
  text += ": " + message;
  return text;
}
}  // namespace

FormatError::FormatError(std::string file, std::string field, std::optional<uint64_t> offset, std::string message)
    : std::runtime_error(compose(file, field, offset, message)),
      file_(std::move(file)),
      field_(std::move(field)),
      offset_(offset),
      message_(std::move(message)) {}

void throw_format_error(const std::string& file, const std::string& field, std::optional<uint64_t> offset,
                        const std::string& message) {
  throw FormatError(file, field, offset, message);
}

}  // namespace gptoss
