#pragma once
// SHA-256 through OpenSSL's EVP interface.
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace gptoss {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(std::span<const uint8_t> bytes);
  std::array<uint8_t, 32> finish();
  std::string finish_hex();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

std::string sha256_hex(std::span<const uint8_t> bytes);
std::string to_hex(std::span<const uint8_t> bytes);

}  // namespace gptoss
