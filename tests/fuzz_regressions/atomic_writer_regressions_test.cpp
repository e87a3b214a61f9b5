// Found by UBSan while the fuzz seed generator wrote an empty GGUF metadata block: writing an
// empty span (whose data() is null) reached memcpy(dst, nullptr, 0), which is undefined.
#include <gtest/gtest.h>

#include <span>

#include "formats/core/atomic_file.h"
#include "tests/test_support.h"

namespace gptoss {
namespace {

TEST(AtomicWriterFuzzRegression, EmptyWritesAreNoOps) {
  test::TempDir dir;
  AtomicFileWriter out(dir / "empty-writes.bin");
  out.write(std::span<const uint8_t>());  // null data, size 0
  out.write(nullptr, 0);
  out.write_u8(7);
  out.write(std::span<const uint8_t>());
  EXPECT_EQ(out.position(), 1u);
  out.commit();
  EXPECT_EQ(test::read_file_bytes(dir / "empty-writes.bin"), std::vector<uint8_t>{7});
}

}  // namespace
}  // namespace gptoss
