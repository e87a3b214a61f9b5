#include "tests/vulkan/vulkan_test_support.h"

#include <stdexcept>

namespace gptoss::test {

std::shared_ptr<vk::Context> vulkan_context(std::string* why) {
  static std::string reason;
  static const std::shared_ptr<vk::Context> ctx = []() -> std::shared_ptr<vk::Context> {
    try {
      return std::shared_ptr<vk::Context>(vk::Context::create());
    } catch (const std::exception& e) {
      reason = e.what();
      return nullptr;
    }
  }();
  if (why) *why = reason;
  return ctx;
}

}  // namespace gptoss::test
