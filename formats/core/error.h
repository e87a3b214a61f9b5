#pragma once
// One error type for every reader and writer: it names the file, the field and the byte
// offset, so a person can find the bad byte with a hex editor.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace gptoss {

class FormatError : public std::runtime_error {
 public:
  FormatError(std::string file, std::string field, std::optional<uint64_t> offset, std::string message);

  const std::string& file() const { return file_; }
  const std::string& field() const { return field_; }
  const std::optional<uint64_t>& offset() const { return offset_; }
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  std::string field_;
  std::optional<uint64_t> offset_;
  std::string message_;
};

[[noreturn]] void throw_format_error(const std::string& file, const std::string& field,
                                     std::optional<uint64_t> offset, const std::string& message);

}  // namespace gptoss
