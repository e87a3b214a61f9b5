#include "verify/sha256.h"

#include <openssl/evp.h>

#include <stdexcept>

namespace gptoss {

struct Sha256::State {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : state_(std::make_unique<State>()) {
  state_->ctx = EVP_MD_CTX_new();
  if (!state_->ctx || EVP_DigestInit_ex(state_->ctx, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("OpenSSL: cannot start SHA-256");
}

Sha256::~Sha256() {
  if (state_ && state_->ctx) EVP_MD_CTX_free(state_->ctx);
}

void Sha256::update(std::span<const uint8_t> bytes) {
  if (EVP_DigestUpdate(state_->ctx, bytes.data(), bytes.size()) != 1) throw std::runtime_error("OpenSSL: SHA-256 update failed");
}

std::array<uint8_t, 32> Sha256::finish() {
  std::array<uint8_t, 32> out{};
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(state_->ctx, out.data(), &len) != 1 || len != 32)
    throw std::runtime_error("OpenSSL: SHA-256 final failed");
  return out;
}

std::string Sha256::finish_hex() {
  auto d = finish();
  return to_hex(d);
}

std::string to_hex(std::span<const uint8_t> bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

std::string sha256_hex(std::span<const uint8_t> bytes) {
  Sha256 h;
  h.update(bytes);
  return h.finish_hex();
}

}  // namespace gptoss
