// Safetensors inputs the fuzzer (fuzz/fuzz_safetensors_header.cpp) crashed on, reduced by hand.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "formats/core/error.h"
#include "formats/core/mapped_file.h"
#include "formats/safetensors/safetensors_file.h"

namespace gptoss {
namespace {

std::vector<uint8_t> with_header(const std::string& json) {
  std::vector<uint8_t> bytes(8 + json.size());
  store_u64(bytes.data(), json.size());
  std::memcpy(bytes.data() + 8, json.data(), json.size());
  return bytes;
}

// nlohmann reports a number too large for a double as json::out_of_range (406), not as a
// parse_error: the reader let it escape instead of naming the file, field and offset.
TEST(SafetensorsFuzzRegression, NumberOverflowInHeaderIsAFormatError) {
  for (const std::string header : {R"({"x":6792E6920})", R"({"t":{"dtype":"F32","shape":[1E400],"data_offsets":[0,4]}})",
                                   R"({"__metadata__":{"a":"b"},"n":-1e99999})"}) {
    SCOPED_TRACE(header);
    try {
      SafetensorsFile::parse(MappedFile::from_bytes(with_header(header), "overflow.safetensors"));
      FAIL() << "parsed";
    } catch (const FormatError& e) {
      EXPECT_EQ(e.file(), "overflow.safetensors");
      EXPECT_EQ(e.field(), "header");
      EXPECT_EQ(e.offset(), 8u);
      EXPECT_NE(std::string(e.what()).find("number overflow"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace gptoss
