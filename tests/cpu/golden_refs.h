#pragma once
// Read access to shared/goldens/a/refs-a.safetensors (transformers 5.17 fp32 activations of
// preset a) through the project's own safetensors reader, plus the engine-vs-golden helpers the
// CPU tests share.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "formats/safetensors/safetensors_file.h"
#include "tests/test_support.h"

namespace gptoss::test {

inline const std::vector<std::string>& golden_prompts() {
  static const std::vector<std::string> names = {"hi", "four", "harmony", "long", "random"};
  return names;
}

class GoldenRefs {
 public:
  explicit GoldenRefs(const std::filesystem::path& goldens)
      : file_(SafetensorsFile::open(goldens / "a" / "refs-a.safetensors")) {}

  std::vector<float> f32(const std::string& name) const { return values<float>(name, DType::F32); }
  std::vector<int32_t> i32(const std::string& name) const { return values<int32_t>(name, DType::I32); }
  std::vector<uint32_t> ids(const std::string& prompt) const {
    const auto signed_ids = i32(prompt + ".ids");
    return {signed_ids.begin(), signed_ids.end()};
  }
  std::vector<uint64_t> shape(const std::string& name) const { return tensor(name).shape; }

 private:
  const SafetensorsTensor& tensor(const std::string& name) const {
    const auto* t = file_.find(name);
    if (!t) throw std::runtime_error("refs-a.safetensors has no tensor " + name);
    return *t;
  }
  template <typename T>
  std::vector<T> values(const std::string& name, DType dtype) const {
    const auto& t = tensor(name);
    if (t.dtype != dtype) throw std::runtime_error(name + " has an unexpected dtype");
    const auto bytes = file_.data(t);
    std::vector<T> out(bytes.size() / sizeof(T));
    std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));  // little-endian host
    return out;
  }
  SafetensorsFile file_;
};

inline float max_abs_diff(const float* a, const float* b, size_t n) {
  double worst = 0;
  for (size_t i = 0; i < n; ++i) worst = worse(worst, std::abs(a[i] - b[i]));
  return static_cast<float>(worst);
}

}  // namespace gptoss::test
