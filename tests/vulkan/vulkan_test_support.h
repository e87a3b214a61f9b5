#pragma once
// One Vulkan context per test binary (lavapipe on CI), buffer helpers, and the skip for machines
// without a Vulkan device.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/vulkan/vulkan_context.h"

namespace gptoss::test {

// The shared context, or null (with the reason in *why) when no device is usable.
std::shared_ptr<vk::Context> vulkan_context(std::string* why = nullptr);

// A host-visible buffer holding `values` (at least 4 bytes).
template <class T>
std::unique_ptr<vk::Buffer> host_buffer(const vk::Context& ctx, const std::vector<T>& values) {
  const size_t bytes = values.size() * sizeof(T);
  auto buffer = std::make_unique<vk::Buffer>(ctx, std::max<size_t>(4, (bytes + 3) / 4 * 4), true);
  std::memset(buffer->mapped(), 0, buffer->size());
  if (bytes) std::memcpy(buffer->mapped(), values.data(), bytes);
  return buffer;
}

template <class T>
std::vector<T> read_buffer(const vk::Buffer& buffer, size_t count) {
  std::vector<T> values(count);
  std::memcpy(values.data(), buffer.mapped(), count * sizeof(T));
  return values;
}

inline std::vector<float> random_floats(size_t count, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> values(count);
  for (float& v : values) v = dist(rng);
  return values;
}

}  // namespace gptoss::test

#define VULKAN_OR_SKIP()                                                                   \
  std::string vulkan_skip_reason;                                                          \
  const auto ctx = ::gptoss::test::vulkan_context(&vulkan_skip_reason);                    \
  if (!ctx) GTEST_SKIP() << "no usable Vulkan device (" << vulkan_skip_reason              \
                         << "): install Mesa's lavapipe (mesa-vulkan-drivers) to run these";
