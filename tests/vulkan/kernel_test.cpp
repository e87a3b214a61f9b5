// Every kernel of the Vulkan engine against a double-precision computation written out here, on
// random data with sizes that are multiples of no tile (1, 3, 31, 33, 65, 513 tokens; odd row
// counts), in every stored encoding: dense products (decode matvec with its fused RMSNorm, bias,
// accumulation; prefill GEMM, portable or on cooperative matrices where the device has them),
// embedding gather, RMSNorm, RoPE + KV store and block attention (causal, sliding window over a
// ring cache, sinks, GQA), decode attention over key ranges, the router's top-k with ties, the MoE
// grouped by expert (route, MXFP4 GEMMs with SwiGLU, combine) and its decode kernels, argmax.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <set>

#include "formats/codecs/float_codec.h"
#include "formats/codecs/mxfp4.h"
#include "formats/core/float16.h"
#include "runtime/cpu/cpu_kernels.h"
#include "runtime/vulkan/device_tensors.h"
#include "runtime/rope.h"
#include "runtime/vulkan/kernels.h"
#include "shaders/kernel_abi.h"
#include "tests/test_support.h"
#include "tests/random_blocks.h"
#include "tests/vulkan/vulkan_test_support.h"
#include "tools/common/vulkan_options.h"

namespace gptoss::test {
namespace {

using vk::Address;
using Doubles = std::vector<double>;

// Builds the steps with `build`, runs them once and waits.
void run(const vk::Context& ctx, const std::function<void(vk::DispatchList&)>& build) {
  vk::DispatchList list;
  build(list);
  ctx.run_once([&](VkCommandBuffer cb) { list.record(cb); });
}

vk::Kernels& kernels(const vk::Context& ctx) {
  static vk::Kernels k(ctx);
  return k;
}

// Kernels with the tuning `keys` (as --tuning reads them: "matvec_rows=3,matvec_loads=16"; ""
// the defaults), as on a device where a tool compares shapes.
runtime::VulkanTuning tuning_of(const std::string& keys) {
  runtime::VulkanTuning t;
  apply_tuning(keys, t);
  return t;
}
vk::Kernels kernels_with(const vk::Context& ctx, const std::string& keys) { return vk::Kernels(ctx, tuning_of(keys)); }
// Where value i of a token's [kv_heads * head_dim] K or V row lives in a cache of `slots` (KV_CACHE_ROW).
size_t cache_at(uint32_t slot, uint32_t i, uint32_t slots, uint32_t head_dim) {
  return KV_CACHE_ROW(size_t{slot}, size_t{i / head_dim}, size_t{slots}, size_t{head_dim}) + i % head_dim;
}
// The KV caches in `encoding` (vk::abi::ENC_F32, or ENC_F16 with dims 2m, 2m + 1 of a row in word m,
// the low half first): a value as the cache holds it, the cache's bytes, and the cache read back.
float as_cached(double value, uint32_t encoding) {
  const auto f = static_cast<float>(value);
  return encoding == vk::abi::ENC_F16 ? f16_to_f32(f32_to_f16(f)) : f;
}
std::unique_ptr<vk::Buffer> cache_buffer(const vk::Context& ctx, const std::vector<float>& values, uint32_t encoding) {
  if (encoding == vk::abi::ENC_F32) return host_buffer(ctx, values);
  std::vector<uint16_t> halves(values.size());
  std::transform(values.begin(), values.end(), halves.begin(), f32_to_f16);
  return host_buffer(ctx, halves);
}
std::vector<float> read_cache(const vk::Buffer& buffer, size_t count, uint32_t encoding) {
  if (encoding == vk::abi::ENC_F32) return read_buffer<float>(buffer, count);
  const auto halves = read_buffer<uint16_t>(buffer, count);
  std::vector<float> values(count);
  std::transform(halves.begin(), halves.end(), values.begin(), f16_to_f32);
  return values;
}
// How far a stored value may be from the exact one: an f16 cache rounds to 11 significant bits
// (either way: the device's rounding mode is its own); `slack` covers the arithmetic before it.
double cache_tolerance(double exact, uint32_t encoding, double slack) {
  return (encoding == vk::abi::ENC_F16 ? std::ldexp(std::abs(exact), -10) + std::ldexp(1.0, -24) : 0.0) + slack;
}
const char* cache_name(uint32_t encoding) { return encoding == vk::abi::ENC_F16 ? "f16" : "f32"; }

// Every value of `refused` makes the Kernels constructor throw.
// "a,b,c,d" as the four expert keys ("" none).
std::string expert_keys(const std::string& shape) {
  if (shape.empty()) return "";
  const char* keys[] = {"mlp1_outputs=", "mlp1_batch=", "mlp2_outputs=", "mlp2_batch="};
  std::string out;
  size_t at = 0;
  for (const char* key : keys) {
    const size_t comma = std::min(shape.find(',', at), shape.size());
    out += (out.empty() ? "" : ",") + std::string(key) + shape.substr(at, comma - at);
    at = comma + 1;
  }
  return out;
}
void expect_refused(const vk::Context& ctx, std::initializer_list<const char*> refused) {
  for (const char* keys : refused) {
    SCOPED_TRACE(keys);
    EXPECT_THROW(kernels_with(ctx, keys), std::invalid_argument);
  }
}

// A dense matrix in `type`, uploaded as the engine uploads it, and its exact stored values.
struct Matrix {
  vk::DeviceMatrix device;
  std::vector<float> values;  // decoded, row-major [rows, cols]
};
Matrix dense_matrix(const vk::Context& ctx, DType type, uint32_t rows, uint32_t cols, uint32_t seed, float scale = 1.0f) {
  const auto f = random_floats(size_t{rows} * cols, seed, scale);
  std::vector<uint8_t> bytes(*dtype_byte_size(type, f.size()));
  if (is_encodable(type))
    encode_from_f32(type, f.data(), f.size(), bytes.data());
  else
    bytes = random_blocks(type, f.size(), seed);
  Matrix m;
  m.values.resize(f.size());
  decode_to_f32(type, bytes.data(), f.size(), m.values.data());
  CanonicalTensor t{{TensorRole::AttnQ, 0, "test.weight", {rows, cols}}, type,
                    std::make_shared<OwnedSource>(std::move(bytes)), "test"};
  vk::DeviceUploader uploader(ctx, 1 << 20);
  m.device = vk::upload_matrix(ctx, uploader, t);
  return m;
}

// MXFP4 experts [experts, rows, cols] as stored (OpenAI layout) and decoded.
struct Experts {
  vk::DeviceExperts device;
  std::vector<float> values;  // [experts, rows, cols]
};
Experts mxfp4_experts(const vk::Context& ctx, uint32_t experts, uint32_t rows, uint32_t cols, uint32_t seed) {
  const uint64_t blocks = uint64_t{experts} * rows * (cols / 32);
  std::mt19937 rng(seed);
  std::vector<uint8_t> block_bytes(blocks * 16), scale_bytes(blocks);
  for (auto& b : block_bytes) b = static_cast<uint8_t>(rng());
  for (auto& s : scale_bytes) s = static_cast<uint8_t>(118 + rng() % 8);  // 2^-9 .. 2^-2
  Experts e;
  e.values.resize(blocks * 32);
  mxfp4::dequantize_oai(block_bytes.data(), scale_bytes.data(), blocks, e.values.data());
  const uint64_t n = cols / 32;
  CanonicalTensor b{{TensorRole::Mlp1Blocks, 0, "test.blocks", {experts, rows, n, 16}}, DType::U8,
                    std::make_shared<OwnedSource>(std::move(block_bytes)), "test"};
  CanonicalTensor s{{TensorRole::Mlp1Scales, 0, "test.scales", {experts, rows, n}}, DType::U8,
                    std::make_shared<OwnedSource>(std::move(scale_bytes)), "test"};
  vk::DeviceUploader uploader(ctx, 1 << 20);
  e.device = vk::upload_experts(ctx, uploader, b, s);
  return e;
}

// Experts [experts, rows, cols] in another type (canonical_model.h: the matrix, empty scales):
// random blocks of `type`, uploaded as the engine uploads them, and their decoded values.
Experts block_experts(const vk::Context& ctx, DType type, uint32_t experts, uint32_t rows, uint32_t cols, uint32_t seed) {
  const uint64_t elements = uint64_t{experts} * rows * cols;
  std::vector<uint8_t> bytes = random_blocks(type, elements, seed);
  Experts e;
  e.values.resize(elements);
  decode_to_f32(type, bytes.data(), elements, e.values.data());
  CanonicalTensor b{{TensorRole::Mlp1Blocks, 0, "test.blocks", {experts, rows, cols}}, type,
                    std::make_shared<OwnedSource>(std::move(bytes)), "test"};
  CanonicalTensor s{{TensorRole::Mlp1Scales, 0, "test.scales", {experts, rows, 0}}, DType::U8,
                    std::make_shared<OwnedSource>(std::vector<uint8_t>{}), "test"};
  vk::DeviceUploader uploader(ctx, 1 << 20);
  e.device = vk::upload_experts(ctx, uploader, b, s);
  return e;
}

// |got - want| <= tolerance * scale for every element, where scale is the element's sum of
// absolute products (the size of the rounding an f32 sum of them can make).
void expect_close(const std::vector<float>& got, const Doubles& want, const Doubles& scale, double tolerance,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0;
  size_t worst_at = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double err = std::abs(got[i] - want[i]) / (scale[i] + 1e-30);
    if (!(err <= worst)) {
      worst = err;
      worst_at = i;
    }
  }
  EXPECT_LE(worst, tolerance) << what << ": element " << worst_at << " is " << got[worst_at] << ", expected "
                              << want[worst_at];
}

// Relative to the sum of the products' magnitudes. The portable GEMMs and the precise and promoted
// cooperative ones hold f32's error; the split ones round Q8_0's d * q to f16 and truncate the accumulation,
// the fast ones round A too (F32 weights stay portable, as do depths the cooperative step does not
// divide).
double gemm_tolerance(const vk::Kernels& k, DType weight_type, uint32_t depth,
                      runtime::VulkanTuning::GemmPrecision precision) {
  using P = runtime::VulkanTuning::GemmPrecision;
  const bool coop = k.cooperative() && weight_type != DType::F32 && depth % COOP_TILE_K == 0;
  if (!coop || precision == P::Precise || precision == P::Promoted) return 2e-6;
  if (precision == P::Fast) return 2e-3;
  return dtype_info(weight_type).block_elements > 1 ? 2e-3 : 1e-4;
}

// ggml's quantizations other than Q8_0 (which the tests of every encoding take with the float
// encodings), and row widths of whole blocks: the kernels' 8-value chunks at every position of a
// block and, for the 256-value types, more than one block per row.
std::vector<DType> other_block_types() {
  std::vector<DType> types;
  for (const auto& e : vk::block_encodings())
    if (e.type != DType::Q8_0) types.push_back(e.type);
  return types;
}
uint32_t block_of(DType type) { return dtype_info(type).block_elements; }

struct GemmCase {
  uint32_t rows, cols, depth;
  bool bias, accumulate;
};

// C = A W^T (+ bias) (+ C) of one case against a double computation of the decoded weights.
void check_gemm(const vk::Context& ctx, vk::Kernels& tuned, runtime::VulkanTuning::GemmPrecision precision, DType type,
                const GemmCase& g) {
  const std::string what = std::string(dtype_name(type)) + " rows " + std::to_string(g.rows) + " cols " +
                           std::to_string(g.cols) + " depth " + std::to_string(g.depth);
  const auto w = dense_matrix(ctx, type, g.cols, g.depth, 7 + g.rows);
  const auto a = random_floats(size_t{g.rows} * g.depth, 11 + g.cols);
  const auto bias = random_floats(g.cols, 13);
  const auto c0 = random_floats(size_t{g.rows} * g.cols, 17);
  auto a_buf = host_buffer(ctx, a), b_buf = host_buffer(ctx, bias), c_buf = host_buffer(ctx, c0);
  auto hi = host_buffer(ctx, std::vector<uint16_t>(a.size())), lo = host_buffer(ctx, std::vector<uint16_t>(a.size()));
  run(ctx, [&](vk::DispatchList& list) {
    tuned.gemm(list, w.device, g.bias ? b_buf->address() : 0, a_buf->address(), g.depth, c_buf->address(), g.cols,
               g.rows, g.accumulate, {hi->address(), lo->address()});
  });
  Doubles want(c0.size()), scale(c0.size());
  for (uint32_t m = 0; m < g.rows; ++m)
    for (uint32_t n = 0; n < g.cols; ++n) {
      double sum = g.bias ? bias[n] : 0.0, size = std::abs(sum);
      for (uint32_t k = 0; k < g.depth; ++k) {
        const double p = double{w.values[size_t{n} * g.depth + k]} * a[size_t{m} * g.depth + k];
        sum += p;
        size += std::abs(p);
      }
      const size_t i = size_t{m} * g.cols + n;
      want[i] = sum + (g.accumulate ? c0[i] : 0.0);
      scale[i] = size + (g.accumulate ? std::abs(c0[i]) : 0.0);
    }
  expect_close(read_buffer<float>(*c_buf, c0.size()), want, scale, gemm_tolerance(tuned, type, g.depth, precision), what);
}

// `check` for each precision of the cooperative GEMMs where the device has them (elsewhere they are one path).
void for_each_gemm_precision(const vk::Context& ctx,
                             const std::function<void(vk::Kernels&, runtime::VulkanTuning::GemmPrecision)>& check) {
  for (const char* precision : {"precise", "promoted", "split", "fast"}) {
    if (!kernels(ctx).cooperative() && std::string(precision) != "precise") continue;
    SCOPED_TRACE(precision);
    const auto tuning = tuning_of(std::string("gemm_precision=") + precision);
    vk::Kernels tuned(ctx, tuning);
    check(tuned, tuning.gemm_precision);
  }
}

// GGML_BLOCK_ENCODINGS (kernel_abi.h), the device layout of ggml's block types: every byte of a
// block in exactly one of its ranges (the device holds the stored information, nothing decoded),
// the quants in whole 16-byte words, the meta records of even size (f16 fields within one word),
// the type's block shape and lookup table as formats/codecs have them, one id per type from
// ENC_Q8_0 on, and every type the codecs decode but MXFP4 (the experts' pair) in the table.
TEST(VulkanKernels, BlockEncodingsKeepEveryByteOfTheBlock) {
  std::set<DType> listed;
  uint32_t id = vk::abi::ENC_Q8_0;
  for (const auto& e : vk::block_encodings()) {
    SCOPED_TRACE(std::string(dtype_name(e.type)));
    const auto& info = dtype_info(e.type);
    EXPECT_EQ(e.encoding, id++);
    EXPECT_EQ(vk::kernel_encoding(e.type), e.encoding);
    EXPECT_EQ(e.block_elements, info.block_elements);
    ASSERT_EQ(e.split.block_bytes, info.block_bytes);
    std::vector<int> owners(info.block_bytes, 0);
    for (const auto& range : {e.split.quants, e.split.meta[0], e.split.meta[1]})
      for (uint32_t i = range.offset; i < range.offset + range.size; ++i) {
        ASSERT_LT(i, info.block_bytes);
        ++owners[i];
      }
    EXPECT_EQ(std::count(owners.begin(), owners.end(), 1), static_cast<long>(info.block_bytes));
    EXPECT_EQ(e.split.quants.size % 16, 0u);
    EXPECT_EQ((e.split.meta[0].size + e.split.meta[1].size) % 2, 0u);
    EXPECT_EQ(vk::encoding_grid(e.type).size(), e.grid_bytes);
    EXPECT_EQ(e.grid_bytes % 16, 0u);
    std::string lower(dtype_name(e.type));
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_EQ(vk::encoding_name(e.encoding), lower);
    listed.insert(e.type);
  }
  for (int t = 0; t < kDTypeCount; ++t) {
    const auto type = static_cast<DType>(t);
    if (dtype_info(type).block_elements > 1 && is_decodable(type) && type != DType::MXFP4) {
      EXPECT_TRUE(listed.count(type)) << dtype_name(type) << " has a decoder but no device encoding";
    }
  }
}

TEST(VulkanKernels, GemmInEveryEncodingAtSizesNoTileDivides) {
  VULKAN_OR_SKIP();
  const GemmCase cases[] = {{1, 63, 32, true, false},   {3, 65, 96, false, true},  {31, 130, 64, true, true},
                            {33, 1, 32, true, false},   {65, 64, 2880, false, false}, {513, 70, 96, true, true}};
  for_each_gemm_precision(*ctx, [&](vk::Kernels& tuned, runtime::VulkanTuning::GemmPrecision precision) {
    for (DType type : {DType::F32, DType::F16, DType::BF16, DType::Q8_0})
      for (const auto& g : cases) check_gemm(*ctx, tuned, precision, type, g);
  });
}

// The wide cooperative tile (dense_tile=128, the default for F16 and BF16 weights, and for Q8_0's
// quants with their d on the sums) computes each output from the same products in the same order
// as the 64-wide one: the same bits, at widths neither tile divides and with a partial last tile of
// rows, in every precision (Q8_0 at split and fast: the 64-wide tile both times). Elsewhere both are the
// portable GEMM; the tuning's other widths are refused.
TEST(VulkanKernels, WideDenseTileGivesTheSameBits) {
  VULKAN_OR_SKIP();
  expect_refused(*ctx, {"dense_tile=96", "dense_tile=256"});
  if (!kernels(*ctx).cooperative()) GTEST_SKIP() << "no cooperative matrices: one portable GEMM";
  for (const char* precision : {"precise", "promoted", "split", "fast"}) {
    vk::Kernels narrow = kernels_with(*ctx, std::string("gemm_precision=") + precision + ",dense_tile=64");
    vk::Kernels wide = kernels_with(*ctx, std::string("gemm_precision=") + precision + ",dense_tile=128");
    for (DType type : {DType::F16, DType::BF16, DType::Q8_0})
      for (const GemmCase& g : {GemmCase{70, 200, 128, true, false}, GemmCase{129, 300, 192, false, true}}) {
        SCOPED_TRACE(std::string(precision) + " " + std::string(dtype_name(type)) + " rows " + std::to_string(g.rows));
        const auto w = dense_matrix(*ctx, type, g.cols, g.depth, 5 + g.rows);
        const auto a = random_floats(size_t{g.rows} * g.depth, 6);
        const auto bias = random_floats(g.cols, 8), c0 = random_floats(size_t{g.rows} * g.cols, 9);
        auto a_buf = host_buffer(*ctx, a), b_buf = host_buffer(*ctx, bias);
        auto hi = host_buffer(*ctx, std::vector<uint16_t>(a.size())), lo = host_buffer(*ctx, std::vector<uint16_t>(a.size()));
        std::vector<std::vector<uint32_t>> outputs;  // the results' bits
        for (vk::Kernels* k : {&narrow, &wide}) {
          auto c_buf = host_buffer(*ctx, c0);
          run(*ctx, [&](vk::DispatchList& list) {
            k->gemm(list, w.device, g.bias ? b_buf->address() : 0, a_buf->address(), g.depth, c_buf->address(), g.cols,
                    g.rows, g.accumulate, {hi->address(), lo->address()});
          });
          outputs.push_back(read_buffer<uint32_t>(*c_buf, c0.size()));
        }
        EXPECT_EQ(outputs[0], outputs[1]);
        EXPECT_NE(outputs[0][0], std::bit_cast<uint32_t>(c0[0]));  // the product ran
      }
  }
}

// The precise cooperative GEMMs keep the rounding of their partial sums' f32 additions (TwoSum):
// over a depth of 2880 in Q8_0 (gpt-oss's hidden width) their error against the exact products,
// in units of 2^-24 times the products' root sum of squares (the size of a random sum's partial
// sums), is well under the promoted ones', which add those roundings (an H200 gave 0.70 of
// promoted's error measured in each result's ulps). Where the device has no cooperative matrices
// both are the portable GEMM.
TEST(VulkanKernels, PreciseGemmKeepsItsPartialSumsRoundings) {
  VULKAN_OR_SKIP();
  expect_refused(*ctx, {"dense_promote=8", "dense_promote=48", "dense_promote=128"});
  if (!kernels(*ctx).cooperative()) GTEST_SKIP() << "no cooperative matrices: one portable GEMM";
  const uint32_t rows = 64, cols = 256, depth = 2880;
  const auto w = dense_matrix(*ctx, DType::Q8_0, cols, depth, 3);
  const auto a = random_floats(size_t{rows} * depth, 4);
  auto a_buf = host_buffer(*ctx, a);
  auto hi = host_buffer(*ctx, std::vector<uint16_t>(a.size())), lo = host_buffer(*ctx, std::vector<uint16_t>(a.size()));
  Doubles want(size_t{rows} * cols), size(want.size());
  for (uint32_t m = 0; m < rows; ++m)
    for (uint32_t n = 0; n < cols; ++n) {
      long double sum = 0, squares = 0;
      for (uint32_t k = 0; k < depth; ++k) {
        const long double p = static_cast<long double>(w.values[size_t{n} * depth + k]) * a[size_t{m} * depth + k];
        sum += p;
        squares += p * p;
      }
      want[size_t{m} * cols + n] = static_cast<double>(sum);
      size[size_t{m} * cols + n] = std::ldexp(std::sqrt(static_cast<double>(squares)), -24);
    }
  const auto error = [&](const char* precision) {  // root mean square, in those units
    auto tuned = kernels_with(*ctx, std::string("gemm_precision=") + precision);
    auto c = host_buffer(*ctx, std::vector<float>(want.size()));
    run(*ctx, [&](vk::DispatchList& list) {
      tuned.gemm(list, w.device, 0, a_buf->address(), depth, c->address(), cols, rows, false, {hi->address(), lo->address()});
    });
    const auto got = read_buffer<float>(*c, want.size());
    double squares = 0;
    for (size_t i = 0; i < want.size(); ++i) squares += std::pow((got[i] - want[i]) / size[i], 2);
    return std::sqrt(squares / static_cast<double>(want.size()));
  };
  const double precise = error("precise"), promoted = error("promoted");
  RecordProperty("precise", std::to_string(precise));
  RecordProperty("promoted", std::to_string(promoted));
  EXPECT_LT(precise, 0.85 * promoted) << precise << " against " << promoted;
  // Q8_0's weights as two f16 parts (scaled_q8=off) against their quants with d on the sums (the
  // default where the layout is known): the quants' form is no less precise.
  const double two_parts = error("precise,scaled_q8=off"), two_parts_promoted = error("promoted,scaled_q8=off");
  RecordProperty("precise_two_parts", std::to_string(two_parts));
  EXPECT_LT(two_parts, 0.85 * two_parts_promoted) << two_parts << " against " << two_parts_promoted;
  if (kernels(*ctx).scaled_q8_0()) {
    EXPECT_LE(precise, 1.1 * two_parts) << precise << " against " << two_parts;
  }
  // Promoted after every 16 of depth (dense_promote=16), each partial sum one product's truncation:
  // no more error than after every step or block, with the Q8_0 quants and with two parts of W.
  const double every_product = error("precise,dense_promote=16");
  RecordProperty("precise_every_16", std::to_string(every_product));
  EXPECT_LE(every_product, precise) << every_product << " against " << precise;
  const double two_parts_every_product = error("precise,scaled_q8=off,dense_promote=16");
  EXPECT_LE(two_parts_every_product, two_parts) << two_parts_every_product << " against " << two_parts;
}

// Every other block type, its depths whole blocks: one, several, and a long row.
TEST(VulkanKernels, GemmInEveryBlockType) {
  VULKAN_OR_SKIP();
  for_each_gemm_precision(*ctx, [&](vk::Kernels& tuned, runtime::VulkanTuning::GemmPrecision precision) {
    for (DType type : other_block_types()) {
      const uint32_t b = block_of(type);
      for (const GemmCase& g : {GemmCase{1, 63, b, true, false}, GemmCase{33, 65, 3 * b, false, true},
                                GemmCase{65, 64, b == 32 ? 2880u : 2048u, true, true}})
        check_gemm(*ctx, tuned, precision, type, g);
    }
  });
}

// y (+)= W x' (+ bias) of a rows x cols matrix in `type`, x' = x with bias (variant 0) or its
// RMSNorm times a norm, accumulated (variant 1), against a double computation.
void check_matvec(const vk::Context& ctx, vk::Kernels& shaped, DType type, uint32_t rows, uint32_t cols, int variant) {
  const float eps = 1e-5f;
  const bool normed = variant == 1, bias = variant == 0, accumulate = variant == 1;
  const std::string what = std::string(dtype_name(type)) + " " + std::to_string(rows) + "x" + std::to_string(cols) +
                           (normed ? " normed, accumulated" : " with bias");
  const auto w = dense_matrix(ctx, type, rows, cols, rows + cols);
  const auto x = random_floats(cols, 3, 4.0f), norm = random_floats(cols, 5), b = random_floats(rows, 6);
  const auto y0 = random_floats(rows, 8);
  auto x_buf = host_buffer(ctx, x), n_buf = host_buffer(ctx, norm), b_buf = host_buffer(ctx, b);
  auto y_buf = host_buffer(ctx, y0);
  run(ctx, [&](vk::DispatchList& list) {
    shaped.matvec(list, w.device, bias ? b_buf->address() : 0, x_buf->address(), normed ? n_buf->address() : 0,
                  y_buf->address(), accumulate, eps);
  });
  Doubles xin(x.begin(), x.end());
  if (normed) {
    double ss = 0;
    for (double v : xin) ss += v * v;
    const double inv = 1 / std::sqrt(ss / cols + eps);
    for (uint32_t i = 0; i < cols; ++i) xin[i] = xin[i] * inv * norm[i];
  }
  Doubles want(rows), scale(rows);
  for (uint32_t r = 0; r < rows; ++r) {
    double sum = bias ? b[r] : 0.0, size = std::abs(sum);
    for (uint32_t k = 0; k < cols; ++k) {
      const double p = double{w.values[size_t{r} * cols + k]} * xin[k];
      sum += p;
      size += std::abs(p);
    }
    want[r] = sum + (accumulate ? y0[r] : 0.0);
    scale[r] = size + (accumulate ? std::abs(y0[r]) : 0.0);
  }
  expect_close(read_buffer<float>(*y_buf, rows), want, scale, 2e-6, what);
}

TEST(VulkanKernels, MatvecInEveryEncodingWithNormBiasAndAccumulation) {
  VULKAN_OR_SKIP();
  // The default shape and shapes the tuning can pick: rows per subgroup that divide no row count,
  // one load per pass, more loads per pass than a row has; Q8_0 as the device's default takes it
  // (lavapipe: decoded to floats, its integer dot products are not accelerated), through integer
  // dot products wherever the device has them (int_dot=on; lavapipe does; 8 x 8 is their shape for
  // a matrix of many waves), and decoded to floats (int_dot=off).
  const std::pair<const char*, const char*> variants[] = {
      {"", ""},         {"matvec_rows=1,matvec_loads=1", ""},   {"matvec_rows=3,matvec_loads=16", ""},
      {"matvec_rows=3,matvec_loads=3", ""},                     {"", "on"},
      {"matvec_rows=1,matvec_loads=1", "on"},                   {"matvec_rows=3,matvec_loads=16", "on"},
      {"matvec_rows=3,matvec_loads=3", "on"},                   {"matvec_rows=8,matvec_loads=8", "on"},
      {"", "off"}};
  for (const auto& [shape, int_dot] : variants) {
  const std::string keys = std::string(shape) + (*int_dot ? std::string(*shape ? "," : "") + "int_dot=" + int_dot : "");
  SCOPED_TRACE(keys);
  vk::Kernels shaped = kernels_with(*ctx, keys);
  const bool int_dot_expected = std::string(int_dot) == "on" ? ctx->info().integer_dot_product
                                 : *int_dot                  ? false
                                                             : ctx->info().integer_dot_product &&
                                                                   ctx->info().integer_dot_product_accelerated;
  EXPECT_EQ(shaped.integer_dot_product(), int_dot_expected);
  for (DType type : {DType::F32, DType::F16, DType::BF16, DType::Q8_0})
    for (uint32_t rows : {1u, 3u, 67u})
      for (uint32_t cols : {32u, 2880u})
        for (int variant = 0; variant < 2; ++variant) check_matvec(*ctx, shaped, type, rows, cols, variant);
  }
}

// Every other block type in the engine's shape (the shapes the tuning picks read the same
// load_raw8 / decode_raw8 as the float encodings above, and each pipeline is one type's code to
// compile), with rows of one block and of many (4096: attn_output's width, where the 256-value
// types occur in llama-quantize's files).
TEST(VulkanKernels, MatvecInEveryBlockType) {
  VULKAN_OR_SKIP();
  for (DType type : other_block_types())
    for (uint32_t rows : {1u, 3u, 67u})
      for (uint32_t cols : {block_of(type), block_of(type) == 32 ? 2880u : 4096u})
        for (int variant = 0; variant < 2; ++variant) check_matvec(*ctx, kernels(*ctx), type, rows, cols, variant);
}

// matvec_int_dot holds x to 24 bits of each 8-value chunk's largest value (block floating point):
// a value beside a much larger one keeps fewer of its own bits than an f32 would (beside a 1000x
// outlier, about 14). Every row's error stays within that bound: half a unit of each chunk's scale
// times the chunk's |weights|, plus f32 rounding. Chunks here: a 1000 beside values in [-1, 1],
// all zeros, and values near f32's smallest normals.
TEST(VulkanKernels, MatvecIntegerDotProductsKeep24BitsOfEachChunksLargestValue) {
  VULKAN_OR_SKIP();
  vk::Kernels int_dot = kernels_with(*ctx, "int_dot=on");
  if (!int_dot.integer_dot_product()) GTEST_SKIP() << "the device has no integer dot products";
  const uint32_t rows = 67, cols = 2880;
  const auto w = dense_matrix(*ctx, DType::Q8_0, rows, cols, 91);
  auto x = random_floats(cols, 92);
  for (uint32_t c = 0; c < cols / 8; ++c) {
    if (c % 3 == 0) x[8 * c + c % 8] = 1000.0f;
    if (c % 17 == 1) std::fill_n(x.begin() + 8 * c, 8, 0.0f);
    if (c % 17 == 2) for (uint32_t i = 0; i < 8; ++i) x[8 * c + i] *= 1e-36f;
  }
  auto x_buf = host_buffer(*ctx, x), y_buf = host_buffer(*ctx, std::vector<float>(rows));
  run(*ctx, [&](vk::DispatchList& list) { int_dot.matvec(list, w.device, 0, x_buf->address(), 0, y_buf->address(), false, 0.0f); });
  const auto got = read_buffer<float>(*y_buf, rows);
  for (uint32_t r = 0; r < rows; ++r) {
    double want = 0, size = 0, bound = 0;
    for (uint32_t c = 0; c < cols / 8; ++c) {
      double largest = 0, weights = 0;
      for (uint32_t i = 8 * c; i < 8 * c + 8; ++i) {
        const double p = double{w.values[size_t{r} * cols + i]} * x[i];
        want += p;
        size += std::abs(p);
        largest = std::max(largest, std::abs(double{x[i]}));
        weights += std::abs(double{w.values[size_t{r} * cols + i]});
      }
      bound += 0.5 * std::max(largest, 1e-30) / (127.0 * 65536.0) * weights;
    }
    EXPECT_LE(std::abs(got[r] - want), bound + 2e-6 * size) << "row " << r;
    EXPECT_NE(got[r], 0.0f);
  }
}

TEST(VulkanKernels, MatvecShapeFromTheTuningIsChecked) {
  VULKAN_OR_SKIP();
  expect_refused(*ctx, {"matvec_rows=2", "matvec_loads=4", "matvec_rows=9,matvec_loads=1", "matvec_rows=2,matvec_loads=17",
                        "matvec_rows=a", "matvec_rows=-1", "matvec_rows=1x", "matvec=1", "int_dot=1", "int_dot=yes"});
  try {
    kernels_with(*ctx, "matvec_rows=2,matvec_loads=17");
    ADD_FAILURE() << "2,17 accepted";
  } catch (const std::invalid_argument& e) {  // the message names the fields and their bounds
    EXPECT_EQ(std::string(e.what()), "VulkanTuning::matvec_rows and matvec_loads are set together, within 1..8,1..16");
  }
  const vk::Kernels shaped = kernels_with(*ctx, "matvec_rows=1,matvec_loads=12");
  for (uint32_t rows : {1u, 5120u, 201088u}) {  // the tuning's shape for every matrix
    EXPECT_EQ(shaped.matvec_shape(rows).rows, 1u);
    EXPECT_EQ(shaped.matvec_shape(rows).batch, 12u);
  }
}

// Decode attention's ranges per dispatch: the rows of `columns` workgroups that fill the
// multiprocessors once, within 1 .. the cap; the cap where the device does not say.
TEST(VulkanKernels, AttentionRangesFillOneWave) {
  using K = vk::Kernels;
  EXPECT_EQ(K::attention_wave_splits(16, 132, 32), 8u);  // 20b at depth: 4 query heads per workgroup
  EXPECT_EQ(K::attention_wave_splits(8, 132, 32), 16u);
  EXPECT_EQ(K::attention_wave_splits(4, 132, 32), 32u);  // the cap
  EXPECT_EQ(K::attention_wave_splits(64, 32, 32), 1u);   // more columns than multiprocessors: one row
  EXPECT_EQ(K::attention_wave_splits(16, 0, 32), 32u);   // not told: the cap
  EXPECT_EQ(K::attention_wave_splits(32, 132, 32), 4u);  // 20b at depth: 2 query heads per workgroup
  EXPECT_EQ(K::attention_wave_splits(32, 132, 32, 2), 8u);  // two workgroups per multiprocessor (f16 cache)
  EXPECT_EQ(K::attention_wave_splits(64, 32, 32, 2), 1u);
}

// coop_layout.comp's output for a layout given lane by lane: place(lane, e) = row * 16 + column.
std::vector<float> layout_probe(const std::function<uint32_t(uint32_t, uint32_t)>& place, uint32_t elements = 8) {
  std::vector<float> probe;
  for (uint32_t lane = 0; lane < 32; ++lane)
    for (uint32_t e = 0; e < 8; ++e) probe.push_back(static_cast<float>(place(lane, e)));
  probe.push_back(static_cast<float>(elements));
  return probe;
}

// The accumulator layouts the dense GEMMs of Q8_0 weights read element by element (COOP_ACC_*):
// the tensor cores' as NVIDIA documents mma.m16n8k16's (lane l: rows l / 4 and l / 4 + 8, columns 2 (l % 4) and the
// next, of each 16 x 8 half) in any order of a lane's elements, each read back into a map that
// puts every element where it lies; a layout of another form, an element twice, another length
// or a short output have none.
TEST(VulkanKernels, AccumulatorLayoutMapsTheTensorCoresElementsInAnyOrder) {
  using K = vk::Kernels;
  // The dense cooperative GEMMs take the map in both forms (the KHR form once ran without it).
  for (const char* shader : {"gemm_coop", "gemm_coop_wide", "gemm_coop_khr", "gemm_coop_wide_khr"})
    EXPECT_TRUE(K::takes_accumulator_map(shader)) << shader;
  for (const char* shader : {"gemm", "expert_gemm_coop", "expert_gemm_coop_khr", "attention_prefill_coop_khr", "gemm_coop_"})
    EXPECT_FALSE(K::takes_accumulator_map(shader)) << shader;
  // Half by half, each (row g, g + 8) x (columns 2t, 2t + 1): c0..c3 of the first half, then the second.
  const auto halves = [](uint32_t l, uint32_t e) {
    return (l / 4 + 8 * ((e / 2) % 2)) * 16 + 2 * (l % 4) + e % 2 + 8 * (e / 4);
  };
  // Row by row: row g's four columns (2t, 2t + 1, 2t + 8, 2t + 9), then row g + 8's.
  const auto rows = [](uint32_t l, uint32_t e) { return (l / 4 + 8 * (e / 4)) * 16 + 2 * (l % 4) + e % 2 + 8 * ((e / 2) % 2); };
  for (const auto& layout : {std::function<uint32_t(uint32_t, uint32_t)>(halves), std::function<uint32_t(uint32_t, uint32_t)>(rows)}) {
    const auto map = K::accumulator_layout_map(layout_probe(layout));
    ASSERT_TRUE(map.has_value());
    for (uint32_t lane = 0; lane < 32; ++lane)
      for (uint32_t e = 0; e < COOP_ACC_ELEMENTS; ++e) {
        EXPECT_EQ(COOP_ACC_ROW(*map, lane, e) * 16 + COOP_ACC_COL(*map, lane, e), layout(lane, e));
        EXPECT_EQ(COOP_ACC_ROW(*map, lane, e), COOP_ACC_SLOT_ROW(lane, COOP_ACC_SLOT(*map, e)));
      }
  }
  // 3 bits per element (column bit 0, column bit 8, slot): 0, 1, 4, 5, 2, 3, 6, 7.
  EXPECT_EQ(K::accumulator_layout_map(layout_probe(halves)),
            0u | 1u << 3 | 4u << 6 | 5u << 9 | 2u << 12 | 3u << 15 | 6u << 18 | 7u << 21);
  // Transposed (lane l: columns l / 4 and l / 4 + 8): a row's elements are not in one quad.
  const auto transposed = [&](uint32_t l, uint32_t e) { return (halves(l, e) % 16) * 16 + halves(l, e) / 16; };
  EXPECT_FALSE(K::accumulator_layout_map(layout_probe(transposed)).has_value());
  EXPECT_FALSE(K::accumulator_layout_map(layout_probe([&](uint32_t l, uint32_t e) { return halves(l, e == 1 ? 0 : e); }))
                   .has_value());  // an element twice
  EXPECT_FALSE(K::accumulator_layout_map(layout_probe(halves, 16)).has_value());  // 16 elements per lane
  const auto probe = layout_probe(halves);
  EXPECT_FALSE(K::accumulator_layout_map(std::span<const float>(probe).first(probe.size() - 1)).has_value());
}

// coop_form: auto takes the KHR form exactly where the device lists its product, nv the NV form
// anywhere, khr is refused by name where the device does not list it (lavapipe: no cooperative
// matrices at all); each form's kernels are named by in_coop_form.
TEST(VulkanKernels, CoopFormFollowsTheDeviceOrTheTuning) {
  VULKAN_OR_SKIP();
  const bool khr = ctx->info().cooperative_matrix_khr;
  EXPECT_EQ(kernels(*ctx).khr_form(), khr);
  EXPECT_EQ(kernels_with(*ctx, "coop_form=auto").in_coop_form("gemm_coop"), khr ? "gemm_coop_khr" : "gemm_coop");
  const vk::Kernels nv = kernels_with(*ctx, "coop_form=nv");
  EXPECT_FALSE(nv.khr_form());
  EXPECT_EQ(nv.in_coop_form("expert_gemm_coop_wide"), "expert_gemm_coop_wide");
  if (khr) {
    EXPECT_EQ(kernels_with(*ctx, "coop_form=khr").in_coop_form("attention_prefill_coop"), "attention_prefill_coop_khr");
  } else {
    try {
      kernels_with(*ctx, "coop_form=khr");
      ADD_FAILURE() << "coop_form=khr accepted on " << ctx->info().name;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("coop_form"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(ctx->info().name), std::string::npos) << e.what();
    }
  }
}

// On the device: NVIDIA's cooperative matrices hold their elements as such a map says, so the
// dense GEMMs take Q8_0 weights as their quants (elsewhere the probe decides, and they take two
// f16 parts where it says no), and in the KHR form its B operands too, so the expert GEMMs take
// the direct tile. The probe's output is printed where it does not.
TEST(VulkanKernels, DeviceAccumulatorLayoutIsKnownOnNvidia) {
  VULKAN_OR_SKIP();
  vk::Kernels& k = kernels(*ctx);
  if (!k.cooperative()) GTEST_SKIP() << "no cooperative matrices here";
  if (ctx->info().vendor_id != 0x10DE) GTEST_SKIP() << "not an NVIDIA device: the probe decides";
  const auto probe = k.accumulator_layout_probe();
  std::string lanes;
  for (uint32_t lane = 0; lane < 32 && probe.size() > 32 * 8; ++lane) {
    lanes += "lane " + std::to_string(lane) + ":";
    for (uint32_t e = 0; e < 8; ++e) lanes += " " + std::to_string(static_cast<int>(probe[lane * 8 + e]));
    lanes += "\n";
  }
  EXPECT_TRUE(k.accumulator_layout().has_value()) << "elements per lane " << probe[COOP_LAYOUT_B_PROBE - 1] << "\n" << lanes;
  // The B operand's too, in the KHR form (the direct expert tile's), and none in the NV form.
  std::string b_lanes;
  for (uint32_t lane = 0; lane < 32 && probe.size() == 2 * COOP_LAYOUT_B_PROBE; ++lane) {
    b_lanes += "lane " + std::to_string(lane) + ":";
    for (uint32_t e = 0; e < 8; ++e) b_lanes += " " + std::to_string(static_cast<int>(probe[COOP_LAYOUT_B_PROBE + lane * 8 + e]));
    b_lanes += "\n";
  }
  if (k.khr_form()) {
    EXPECT_TRUE(k.operand_layout().has_value()) << "B elements per lane " << probe.back() << "\n" << b_lanes;
  }
  EXPECT_FALSE(kernels_with(*ctx, "coop_form=nv").operand_layout().has_value());
  EXPECT_TRUE(k.scaled_q8_0());
  // Each form's probe (the KHR form's where the device lists it) finds a map.
  EXPECT_TRUE(kernels_with(*ctx, "coop_form=nv").scaled_q8_0());
  if (ctx->info().cooperative_matrix_khr) {
    EXPECT_TRUE(kernels_with(*ctx, "coop_form=khr").scaled_q8_0());
  }
  EXPECT_FALSE(kernels_with(*ctx, "scaled_q8=off").scaled_q8_0());
  EXPECT_FALSE(kernels_with(*ctx, "gemm_precision=split").scaled_q8_0());
}

// Without a tuned matvec shape: the fewest rows per subgroup whose workgroups fill the multiprocessors
// once (two workgroups of 8 subgroups each: 2112 subgroups on 132), at least the default, at most
// MATVEC_WAVE_ROWS; the default where the device does not say how many it has.
TEST(VulkanKernels, MatvecRowsPerSubgroupFillOneWave) {
  using K = vk::Kernels;
  EXPECT_EQ(K::matvec_shape_for(2880, 8, 132).rows, 2u);    // out: 1440 subgroups at 2
  EXPECT_EQ(K::matvec_shape_for(4224, 8, 132).rows, 2u);    // exactly one wave at 2
  EXPECT_EQ(K::matvec_shape_for(4225, 8, 132).rows, 3u);
  EXPECT_EQ(K::matvec_shape_for(5120, 8, 132).rows, 3u);    // qkv: 2560 subgroups at 2 are 1.2 waves
  EXPECT_EQ(K::matvec_shape_for(201088, 8, 132).rows, 4u);  // unembedding: many waves at any shape
  EXPECT_EQ(K::matvec_shape_for(201088, 8, 0).rows, unsigned{MATVEC_DEFAULT_ROWS});
  EXPECT_EQ(K::matvec_shape_for(201088, 8, 132).batch, unsigned{MATVEC_DEFAULT_BATCH});  // not one wave
  // Not one wave even at MATVEC_WAVE_ROWS: the streaming shape as given (matvec_int_dot's).
  const K::MatvecShape int_stream{MATVEC_INT_DOT_STREAM_ROWS, MATVEC_INT_DOT_STREAM_BATCH};
  const K::MatvecShape stream = K::matvec_shape_for(201088, 8, 132, MATVEC_INT_DOT_WAVE_LOADS, int_stream);
  EXPECT_EQ(stream.rows, unsigned{MATVEC_INT_DOT_STREAM_ROWS});
  EXPECT_EQ(stream.batch, unsigned{MATVEC_INT_DOT_STREAM_BATCH});
  EXPECT_EQ(K::matvec_shape_for(8448, 8, 132, MATVEC_INT_DOT_WAVE_LOADS, int_stream).rows, 4u);  // one wave at 4
  EXPECT_EQ(K::matvec_shape_for(8449, 8, 132, MATVEC_INT_DOT_WAVE_LOADS, int_stream).rows,
            unsigned{MATVEC_INT_DOT_STREAM_ROWS});
  // One-wave shapes keep rows x loads within MATVEC_WAVE_LOADS (registers for two workgroups per SM).
  EXPECT_EQ(K::matvec_shape_for(2880, 8, 132).batch, 4u);  // out: 2 x 4
  EXPECT_EQ(K::matvec_shape_for(5120, 8, 132).batch, 3u);  // qkv: 3 x 3
  EXPECT_EQ(K::matvec_shape_for(5120, 8, 0).batch, unsigned{MATVEC_DEFAULT_BATCH});
  EXPECT_EQ(K::matvec_shape_for(5120, 8, 132, MATVEC_INT_DOT_WAVE_LOADS).batch, 4u);  // Q8_0's qkv: 3 x 4
}

// Rows of a vocab x hidden table in `type` gathered for `count` tokens: exactly the decoded values.
void check_embed(const vk::Context& ctx, DType type, uint32_t count, uint32_t vocab, uint32_t hidden) {
  const auto table = dense_matrix(ctx, type, vocab, hidden, 21);
  std::vector<uint32_t> tokens(count);
  for (uint32_t t = 0; t < count; ++t) tokens[t] = (t * 7 + 3) % vocab;
  auto tok_buf = host_buffer(ctx, tokens);
  auto x_buf = host_buffer(ctx, std::vector<float>(size_t{count} * hidden, -1.0f));
  run(ctx, [&](vk::DispatchList& list) { kernels(ctx).embed(list, table.device, tok_buf->address(), x_buf->address(), count); });
  const auto x = read_buffer<float>(*x_buf, size_t{count} * hidden);
  for (uint32_t t = 0; t < count; ++t)
    for (uint32_t i = 0; i < hidden; ++i)
      ASSERT_EQ(x[size_t{t} * hidden + i], table.values[size_t{tokens[t]} * hidden + i])
          << dtype_name(type) << " token " << t << " value " << i;
}

TEST(VulkanKernels, EmbeddingGathersRowsInEveryEncoding) {
  VULKAN_OR_SKIP();
  for (DType type : {DType::F32, DType::F16, DType::BF16, DType::Q8_0})
    for (uint32_t count : {1u, 3u, 33u}) check_embed(*ctx, type, count, 37, 96);
}

// The block types' values are the codec's bit for bit: each decoder does ggml's operations in
// ggml's order (shaders/ggml_blocks.glsl). Rows of three blocks: every 8-value chunk of a block.
TEST(VulkanKernels, EmbeddingGathersRowsInEveryBlockType) {
  VULKAN_OR_SKIP();
  for (DType type : other_block_types()) check_embed(*ctx, type, 33, 37, 3 * block_of(type));
}

TEST(VulkanKernels, RmsNormOfRowsFromAnOffset) {
  VULKAN_OR_SKIP();
  const uint32_t dim = 2880, rows = 3, first = 2;
  const auto x = random_floats(size_t{dim} * (rows + first), 31, 100.0f), w = random_floats(dim, 32);
  auto x_buf = host_buffer(*ctx, x), w_buf = host_buffer(*ctx, w);
  auto y_buf = host_buffer(*ctx, std::vector<float>(size_t{dim} * rows));
  run(*ctx, [&](vk::DispatchList& list) {
    kernels(*ctx).rmsnorm(list, x_buf->address(), w_buf->address(), y_buf->address(), dim, rows, first, 1e-5f);
  });
  const auto y = read_buffer<float>(*y_buf, size_t{dim} * rows);
  Doubles want(y.size()), scale(y.size());
  for (uint32_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (uint32_t i = 0; i < dim; ++i) ss += double{x[(first + r) * dim + i]} * x[(first + r) * dim + i];
    const double inv = 1 / std::sqrt(ss / dim + 1e-5);
    for (uint32_t i = 0; i < dim; ++i) {
      want[r * dim + i] = x[(first + r) * dim + i] * inv * w[i];
      scale[r * dim + i] = std::abs(want[r * dim + i]);
    }
  }
  expect_close(y, want, scale, 1e-5, "rmsnorm");
  if (ctx->info().float64)  // rmsnorm_f64: the CPU engine's rms_norm bit for bit (1/rms rounded to f32 once)
    for (uint32_t r = 0; r < rows; ++r) {
      double ss = 0;
      for (uint32_t i = 0; i < dim; ++i) ss += double{x[(first + r) * dim + i]} * x[(first + r) * dim + i];
      const float inv = static_cast<float>(1.0 / std::sqrt(ss / dim + double{1e-5f}));
      for (uint32_t i = 0; i < dim; ++i) ASSERT_EQ(y[r * dim + i], (x[(first + r) * dim + i] * inv) * w[i]) << r << "," << i;
    }
}

// The cooperative GEMMs' inputs: hi is each value rounded to f16's 10 mantissa bits (to nearest,
// ties away from zero: exact in f16), lo the rest times COOP_LO_SCALE in f16 (the precise GEMMs'
// default): within an f32 ulp of the value, for small values too (unscaled, the lo of 1e-3 is an
// f16 subnormal that keeps 4 bits).
TEST(VulkanKernels, SplitHalvesKeepEachValueWithinAnUlp) {
  VULKAN_OR_SKIP();
  const uint32_t rows = 3, cols = 40, stride = 48;
  auto a = random_floats(size_t{rows} * stride, 5, 30.0f);
  a[0] = 1.0f + std::ldexp(1.0f, -20);  // beyond f16: only lo keeps the low bits
  a[1] = 1e-3f * (1.0f + std::ldexp(1.0f, -19));
  a[2] = -3e-4f * (1.0f + std::ldexp(1.0f, -18));
  a[3] = 1.0f + std::ldexp(1.0f, -11);  // a tie at hi's last bit: away from zero
  a[4] = -(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -23));  // a rest of 12 bits: lo drops the last
  auto a_buf = host_buffer(*ctx, a);
  auto hi = host_buffer(*ctx, std::vector<uint16_t>(size_t{rows} * cols)), lo = host_buffer(*ctx, std::vector<uint16_t>(size_t{rows} * cols));
  run(*ctx, [&](vk::DispatchList& list) {
    kernels(*ctx).split_halves(list, a_buf->address(), stride, rows, cols, {hi->address(), lo->address()});
  });
  const auto h = read_buffer<uint16_t>(*hi, size_t{rows} * cols), l = read_buffer<uint16_t>(*lo, size_t{rows} * cols);
  const auto sum = [&](size_t i) { return double{f16_to_f32(h[i])} + f16_to_f32(l[i]) / double{vk::abi::COOP_LO_SCALE}; };
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t c = 0; c < cols; ++c) {
      const float v = a[size_t{r} * stride + c];
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      bits = (bits + 0x1000u) & 0xFFFFE000u;
      float rounded;
      std::memcpy(&rounded, &bits, 4);
      const size_t i = size_t{r} * cols + c;
      ASSERT_EQ(f16_to_f32(h[i]), rounded) << r << "," << c;
      EXPECT_LE(std::abs(sum(i) - v), std::ldexp(1.0, std::ilogb(v) - 23)) << r << "," << c;
    }
  EXPECT_EQ(f16_to_f32(h[3]), 1.0f + std::ldexp(1.0f, -10));
  EXPECT_EQ(sum(3), double{a[3]});
  EXPECT_EQ(std::abs(sum(4) - a[4]), std::ldexp(1.0, -23));  // the rest's 12th bit, a tie rounded to even
}

// ---- attention ----

struct AttentionCase {
  uint32_t heads, kv_heads, head_dim, window;
};

// Rotates the pairs (i, i + D/2) of `row` (one head) for `position`, as the CPU engine.
void rope(double* row, uint32_t D, uint32_t position, const std::vector<float>& inv_freq, double concentration) {
  for (uint32_t i = 0; i < D / 2; ++i) {
    const double angle = static_cast<double>(static_cast<float>(position) * inv_freq[i]);
    const double c = std::cos(angle) * concentration, s = std::sin(angle) * concentration;
    const double a = row[i], b = row[i + D / 2];
    row[i] = a * c - b * s;
    row[i + D / 2] = b * c + a * s;
  }
}

// out[q, h] of the queries at positions start.. over keys [0, position], window W, sinks.
Doubles reference_attention(const AttentionCase& a, const Doubles& q, const std::vector<Doubles>& keys,
                            const std::vector<Doubles>& values, const std::vector<float>& sinks, uint32_t start,
                            uint32_t count) {
  const uint32_t D = a.head_dim, G = a.heads / a.kv_heads;
  Doubles out(size_t{count} * a.heads * D);
  for (uint32_t t = 0; t < count; ++t) {
    const uint32_t pos = start + t;
    const uint32_t first = a.window && pos + 1 > a.window ? pos + 1 - a.window : 0;
    for (uint32_t h = 0; h < a.heads; ++h) {
      const uint32_t g = h / G;
      std::vector<double> scores;
      double top = sinks[h];
      for (uint32_t j = first; j <= pos; ++j) {
        double s = 0;
        for (uint32_t d = 0; d < D; ++d) s += q[(size_t{t} * a.heads + h) * D + d] * keys[j][g * D + d];
        s /= std::sqrt(static_cast<double>(D));
        scores.push_back(s);
        top = std::max(top, s);
      }
      double denominator = std::exp(sinks[h] - top);
      for (double& s : scores) denominator += (s = std::exp(s - top));
      for (uint32_t d = 0; d < D; ++d) {
        double sum = 0;
        for (uint32_t j = first; j <= pos; ++j) sum += scores[j - first] * values[j][g * D + d];
        out[(size_t{t} * a.heads + h) * D + d] = sum / denominator;
      }
    }
  }
  return out;
}

std::vector<float> yarn_like_inv_freq(uint32_t D) {
  std::vector<float> f(D / 2);
  for (uint32_t i = 0; i < D / 2; ++i) f[i] = static_cast<float>(std::pow(150000.0, -2.0 * i / D));
  return f;
}

// Prefill: rope_store then attention_prefill over `count` new tokens at `start`, the earlier
// keys already in a cache of `slots` positions (a ring when windowed).
// The new keys and values are checked against the exact ones as the cache holds them, and the
// attention against a reference over the cache's own values (an f16 cache's rounding included),
// within `tolerance`; the largest difference into *largest where given.
void check_prefill_attention(const vk::Context& ctx, vk::Kernels& k, const AttentionCase& a, uint32_t start,
                             uint32_t count, uint32_t encoding = vk::abi::ENC_F32, double tolerance = 2e-5,
                             double* largest = nullptr) {
  SCOPED_TRACE("heads " + std::to_string(a.heads) + "/" + std::to_string(a.kv_heads) + " D " +
               std::to_string(a.head_dim) + " window " + std::to_string(a.window) + " start " + std::to_string(start) +
               " count " + std::to_string(count) + " cache " + cache_name(encoding));
  const uint32_t D = a.head_dim, kv_rows = a.kv_heads * D, stride = (a.heads + 2 * a.kv_heads) * D;
  const uint32_t slots = a.window ? a.window + count : start + count;
  const float concentration = 1.25f;
  const auto inv_freq = yarn_like_inv_freq(D);
  const auto qkv = random_floats(size_t{count} * stride, start * 131 + count, 2.0f);
  const auto sinks = random_floats(a.heads, 5);
  // Keys/values of the earlier positions (already rotated, as the cache holds them).
  std::vector<Doubles> keys(start + count, Doubles(kv_rows)), values(start + count, Doubles(kv_rows));
  std::vector<float> k_cache(size_t{slots} * kv_rows, 0.0f), v_cache(size_t{slots} * kv_rows, 0.0f);
  const auto old_k = random_floats(size_t{start} * kv_rows, 77), old_v = random_floats(size_t{start} * kv_rows, 78);
  for (uint32_t j = 0; j < start; ++j)
    for (uint32_t i = 0; i < kv_rows; ++i) {
      keys[j][i] = as_cached(old_k[size_t{j} * kv_rows + i], encoding);
      values[j][i] = as_cached(old_v[size_t{j} * kv_rows + i], encoding);
      if (a.window == 0 || j + a.window + count > start) {  // what the ring still holds
        k_cache[cache_at(j % slots, i, slots, D)] = static_cast<float>(keys[j][i]);
        v_cache[cache_at(j % slots, i, slots, D)] = static_cast<float>(values[j][i]);
      }
    }
  Doubles q(size_t{count} * a.heads * D);
  for (uint32_t t = 0; t < count; ++t) {
    const float* row = qkv.data() + size_t{t} * stride;
    for (uint32_t i = 0; i < a.heads * D; ++i) q[size_t{t} * a.heads * D + i] = row[i];
    for (uint32_t h = 0; h < a.heads; ++h) rope(&q[(size_t{t} * a.heads + h) * D], D, start + t, inv_freq, concentration);
    for (uint32_t i = 0; i < kv_rows; ++i) {
      keys[start + t][i] = row[a.heads * D + i];
      values[start + t][i] = row[a.heads * D + kv_rows + i];
    }
    for (uint32_t g = 0; g < a.kv_heads; ++g) rope(&keys[start + t][g * D], D, start + t, inv_freq, concentration);
  }

  auto qkv_buf = host_buffer(ctx, qkv);
  auto k_buf = cache_buffer(ctx, k_cache, encoding), v_buf = cache_buffer(ctx, v_cache, encoding);
  auto f_buf = host_buffer(ctx, runtime::rope_pairs(start + count, inv_freq, concentration));
  auto s_buf = host_buffer(ctx, sinks);
  auto step_buf = host_buffer(ctx, std::vector<uint32_t>{start, count, 0});
  auto out_buf = host_buffer(ctx, std::vector<float>(size_t{count} * a.heads * D, -7.0f));
  const vk::Kernels::AttentionShape shape{a.heads, a.kv_heads, D, a.window, slots, 1.0f / std::sqrt(static_cast<float>(D)),
                                          encoding};
  run(ctx, [&](vk::DispatchList& list) {
    k.rope_store(list, shape, qkv_buf->address(), k_buf->address(), v_buf->address(), f_buf->address(),
                 step_buf->address(), count);
    k.attention_prefill(list, shape, qkv_buf->address(), k_buf->address(), v_buf->address(), s_buf->address(),
                        step_buf->address(), out_buf->address(), count);
  });
  // The new keys went into their slots rotated, the values as they were (each as the cache holds it).
  const auto k_after = read_cache(*k_buf, k_cache.size(), encoding);
  const auto v_after = read_cache(*v_buf, v_cache.size(), encoding);
  for (uint32_t t = 0; t < count; ++t)
    for (uint32_t i = 0; i < kv_rows; ++i) {
      const size_t at = cache_at((start + t) % slots, i, slots, D);
      const double key = keys[start + t][i], value = values[start + t][i];
      ASSERT_LE(std::abs(k_after[at] - key), cache_tolerance(key, encoding, 1e-5)) << "token " << t << " key " << i;
      ASSERT_LE(std::abs(v_after[at] - value), cache_tolerance(value, encoding, 0.0)) << "token " << t << " value " << i;
      keys[start + t][i] = k_after[at];
      values[start + t][i] = v_after[at];
    }
  const auto want = reference_attention(a, q, keys, values, sinks, start, count);
  const auto out = read_buffer<float>(*out_buf, want.size());
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) worst = test::worse(worst, std::abs(out[i] - want[i]));
  EXPECT_LE(worst, tolerance);
  if (largest) *largest = std::max(*largest, worst);
}

TEST(VulkanKernels, PrefillAttentionCausalWindowedSinksGqa) {
  VULKAN_OR_SKIP();
  for (const AttentionCase a : {AttentionCase{16, 2, 64, 0}, AttentionCase{16, 2, 64, 8}, AttentionCase{4, 4, 32, 0},
                                AttentionCase{8, 2, 64, 5}})
    for (uint32_t count : {1u, 3u, 33u, 65u})
      for (uint32_t start : {0u, 7u}) check_prefill_attention(*ctx, kernels(*ctx), a, start, count);
}

// An f16 KV cache: rope_store writes halves in pairs of dims (a head_dim of 36 puts a row's start
// 8 bytes past a 16-byte boundary), attention_prefill reads them, over a ring when windowed.
TEST(VulkanKernels, PrefillAttentionWithAnF16Cache) {
  VULKAN_OR_SKIP();
  for (const AttentionCase a : {AttentionCase{16, 2, 64, 0}, AttentionCase{8, 2, 64, 5}, AttentionCase{4, 4, 36, 0}})
    for (uint32_t count : {1u, 33u})
      for (uint32_t start : {0u, 7u}) check_prefill_attention(*ctx, kernels(*ctx), a, start, count, vk::abi::ENC_F16);
}

// The cooperative-matrix kernel (where the device has it and attention_coop asks for it) and the
// f32 kernel beside it, on shapes across its tiles: query counts no block of queries
// divides (8, 16 or 64 per block by the group), depths that start key blocks off their 32, several
// blocks of keys, windows that end inside a block, gpt-oss's group of 8 query heads per KV head,
// a head_dim the matrices' 16 do not divide, and both caches.
TEST(VulkanKernels, PrefillAttentionOnCooperativeMatricesAcrossTiles) {
  VULKAN_OR_SKIP();
  vk::Kernels coop = kernels_with(*ctx, "attention_coop=on"), f32 = kernels_with(*ctx, "attention_coop=off");
  EXPECT_FALSE(f32.prefill_attention_cooperative());
  if (!coop.prefill_attention_cooperative()) GTEST_SKIP() << "no cooperative matrices for prefill attention here";
  for (vk::Kernels* k : {&coop, &f32}) {
    SCOPED_TRACE(k == &coop ? "cooperative" : "f32");
    for (const AttentionCase a : {AttentionCase{64, 8, 64, 0}, AttentionCase{64, 8, 64, 40}, AttentionCase{8, 2, 64, 5},
                                  AttentionCase{4, 4, 32, 0}, AttentionCase{8, 1, 36, 0}})
      for (uint32_t count : {1u, 70u, 130u})
        for (uint32_t start : {0u, 45u, 300u}) check_prefill_attention(*ctx, *k, a, start, count);
    for (const AttentionCase a : {AttentionCase{64, 8, 64, 40}, AttentionCase{8, 1, 36, 0}})
      check_prefill_attention(*ctx, *k, a, 45, 70, vk::abi::ENC_F16);
  }
}

// attention_precision=fast: Q, K, P and V each one f16 part, so the cooperative kernel's error is
// f16's (of order 1e-3 on these values, where the precise kernel's is within 2e-5), on the same
// shapes and caches; where it is not precise, it is the fast form that ran.
TEST(VulkanKernels, FastPrefillAttentionIsWithinF16sPrecision) {
  VULKAN_OR_SKIP();
  vk::Kernels fast = kernels_with(*ctx, "attention_precision=fast");
  if (!fast.prefill_attention_cooperative()) GTEST_SKIP() << "no cooperative matrices for prefill attention here";
  double worst = 0;
  for (const AttentionCase a : {AttentionCase{64, 8, 64, 0}, AttentionCase{64, 8, 64, 40}, AttentionCase{8, 1, 36, 0}})
    for (uint32_t count : {1u, 70u})
      for (uint32_t start : {0u, 300u})
        check_prefill_attention(*ctx, fast, a, start, count, vk::abi::ENC_F32, 1e-2, &worst);
  check_prefill_attention(*ctx, fast, AttentionCase{64, 8, 64, 40}, 45, 70, vk::abi::ENC_F16, 1e-2, &worst);
  EXPECT_GT(worst, 1e-4) << "attention_precision=fast gave the precise kernel's error";
}

// A row of the prefill attention does not depend on where its chunk starts: 100 tokens in one
// dispatch, and the same tokens as chunks of 5 and 95 (whose query tiles then start at positions
// 5, 13, ...: windows of 40 keys begin inside a key block), give the same bits, in the
// cooperative kernel where the device has it and in the f32 kernel.
TEST(VulkanKernels, PrefillAttentionRowsDoNotDependOnTheChunkStart) {
  VULKAN_OR_SKIP();
  const AttentionCase a{64, 8, 64, 40};
  const uint32_t D = a.head_dim, stride = (a.heads + 2 * a.kv_heads) * D, total = 100, first = 5;
  const uint32_t slots = total, kv_rows = a.kv_heads * D;  // the cache never wraps here
  const auto inv_freq = yarn_like_inv_freq(D);
  const auto qkv = random_floats(size_t{total} * stride, 91, 2.0f);
  auto s_buf = host_buffer(*ctx, random_floats(a.heads, 92));
  auto f_buf = host_buffer(*ctx, runtime::rope_pairs(total, inv_freq, 1.0f));
  const vk::Kernels::AttentionShape shape{a.heads, a.kv_heads, D, a.window, slots, 1.0f / std::sqrt(static_cast<float>(D)),
                                          vk::abi::ENC_F32};
  for (const char* keys : {"attention_coop=on", "attention_coop=off"}) {
    vk::Kernels k = kernels_with(*ctx, keys);
    if (std::string(keys) == "attention_coop=on" && !k.prefill_attention_cooperative()) continue;
    SCOPED_TRACE(keys);
    // The output rows of positions from..to-1 after the chunks `starts` (each to the next) ran.
    const auto rows_after = [&](std::vector<uint32_t> starts) {
      auto qkv_buf = host_buffer(*ctx, qkv);  // rope_store rotates Q in place
      auto k_buf = host_buffer(*ctx, std::vector<float>(size_t{slots} * kv_rows, 0.0f));
      auto v_buf = host_buffer(*ctx, std::vector<float>(size_t{slots} * kv_rows, 0.0f));
      auto out_buf = host_buffer(*ctx, std::vector<float>(size_t{total} * a.heads * D, -7.0f));
      starts.push_back(total);
      for (size_t c = 0; c + 1 < starts.size(); ++c) {
        const uint32_t start = starts[c], count = starts[c + 1] - starts[c];
        auto step_buf = host_buffer(*ctx, std::vector<uint32_t>{start, count, 0});
        const Address qkv_at = qkv_buf->address() + uint64_t{start} * stride * 4;
        run(*ctx, [&](vk::DispatchList& list) {
          k.rope_store(list, shape, qkv_at, k_buf->address(), v_buf->address(), f_buf->address(), step_buf->address(), count);
          k.attention_prefill(list, shape, qkv_at, k_buf->address(), v_buf->address(), s_buf->address(),
                              step_buf->address(), out_buf->address() + uint64_t{start} * a.heads * D * 4, count);
        });
      }
      return read_buffer<uint32_t>(*out_buf, size_t{total} * a.heads * D);
    };
    const auto whole = rows_after({0}), chunked = rows_after({0, first});
    size_t differing = 0;
    for (size_t i = 0; i < whole.size(); ++i) differing += whole[i] != chunked[i];
    EXPECT_EQ(differing, 0u) << "of " << whole.size() << " outputs";
    EXPECT_NE(whole[0], std::bit_cast<uint32_t>(-7.0f));  // the attention ran
  }
}

// Packed sequences (StepState::sequence, Engine::forward_sequences): three sequences of 64 tokens in
// one dispatch give each sequence's rows bit for bit as the sequence alone from position 0 does
// (RoPE from its own first token, no key of another sequence), with a sliding window of 40 keys
// and without, in the cooperative kernel where the device has it and in the f32 kernel.
TEST(VulkanKernels, PrefillAttentionOfPackedSequencesIsEachSequenceAlone) {
  VULKAN_OR_SKIP();
  for (const AttentionCase a : {AttentionCase{64, 8, 64, 40}, AttentionCase{64, 8, 64, 0}}) {
    const uint32_t D = a.head_dim, stride = (a.heads + 2 * a.kv_heads) * D, length = 64, sequences = 3;
    const uint32_t total = length * sequences, slots = total, kv_rows = a.kv_heads * D;
    ASSERT_EQ(length % vk::Kernels::prefill_sequence_multiple(a.heads, a.kv_heads), 0u);
    const auto inv_freq = yarn_like_inv_freq(D);
    const auto qkv = random_floats(size_t{total} * stride, 93, 2.0f);
    auto s_buf = host_buffer(*ctx, random_floats(a.heads, 94));
    auto f_buf = host_buffer(*ctx, runtime::rope_pairs(total, inv_freq, 1.0f));
    const vk::Kernels::AttentionShape shape{a.heads, a.kv_heads, D, a.window, slots,
                                            1.0f / std::sqrt(static_cast<float>(D)), vk::abi::ENC_F32};
    for (const char* keys : {"attention_coop=on", "attention_coop=off"}) {
      vk::Kernels k = kernels_with(*ctx, keys);
      if (std::string(keys) == "attention_coop=on" && !k.prefill_attention_cooperative()) continue;
      SCOPED_TRACE(std::string(keys) + ", window " + std::to_string(a.window));
      // The outputs of `count` tokens from qkv row `first` run as one dispatch of sequences of `sequence` tokens.
      const auto outputs = [&](uint32_t first, uint32_t count, uint32_t sequence) {
        auto qkv_buf = host_buffer(*ctx, std::vector<float>(qkv.begin() + size_t{first} * stride,
                                                             qkv.begin() + size_t{first + count} * stride));
        auto k_buf = host_buffer(*ctx, std::vector<float>(size_t{slots} * kv_rows, 0.0f));
        auto v_buf = host_buffer(*ctx, std::vector<float>(size_t{slots} * kv_rows, 0.0f));
        auto out_buf = host_buffer(*ctx, std::vector<float>(size_t{count} * a.heads * D, -7.0f));
        auto step_buf = host_buffer(*ctx, std::vector<uint32_t>{0, count, sequence});
        run(*ctx, [&](vk::DispatchList& list) {
          k.rope_store(list, shape, qkv_buf->address(), k_buf->address(), v_buf->address(), f_buf->address(),
                       step_buf->address(), count);
          k.attention_prefill(list, shape, qkv_buf->address(), k_buf->address(), v_buf->address(), s_buf->address(),
                              step_buf->address(), out_buf->address(), count);
        });
        return read_buffer<uint32_t>(*out_buf, size_t{count} * a.heads * D);
      };
      const auto packed = outputs(0, total, length);
      const size_t per_sequence = size_t{length} * a.heads * D;
      for (uint32_t s = 0; s < sequences; ++s) {
        const auto alone = outputs(s * length, length, 0);
        size_t differing = 0;
        for (size_t i = 0; i < per_sequence; ++i) differing += alone[i] != packed[s * per_sequence + i];
        EXPECT_EQ(differing, 0u) << "sequence " << s << ": of " << per_sequence << " outputs";
        EXPECT_NE(alone[0], std::bit_cast<uint32_t>(-7.0f));  // the attention ran
      }
    }
  }
}

// Decode: the new token's Q/K/V unrotated in qkv, earlier keys in the cache; partials over key
// ranges then the combine with the sink.
// `part`: the dispatch's shape (query heads per workgroup, the most keys it is made for); by default
// attention_heads_per_workgroup's for every position.
// With an f16 cache, as check_prefill_attention: the new key and value against the exact ones as
// the cache holds them, the attention against a reference over the cache's values.
void check_decode_attention(const vk::Context& ctx, const vk::Kernels& k, const AttentionCase& a, uint32_t position,
                            uint32_t capacity, vk::Kernels::AttentionPart part = {0, UINT32_MAX},
                            uint32_t encoding = vk::abi::ENC_F32) {
  SCOPED_TRACE("heads " + std::to_string(a.heads) + "/" + std::to_string(a.kv_heads) + " window " +
               std::to_string(a.window) + " position " + std::to_string(position) + " capacity " +
               std::to_string(capacity) + " cache " + cache_name(encoding));
  const uint32_t D = a.head_dim, kv_rows = a.kv_heads * D;
  const uint32_t slots = a.window ? std::min(capacity, a.window + 1) : capacity;
  const auto inv_freq = yarn_like_inv_freq(D);
  const auto qkv = random_floats(size_t{a.heads + 2 * a.kv_heads} * D, position + 1, 2.0f);
  const auto sinks = random_floats(a.heads, 9);
  std::vector<Doubles> keys(position + 1, Doubles(kv_rows)), values(position + 1, Doubles(kv_rows));
  std::vector<float> k_cache(size_t{slots} * kv_rows), v_cache(size_t{slots} * kv_rows);
  const auto old_k = random_floats(size_t{position} * kv_rows, 41), old_v = random_floats(size_t{position} * kv_rows, 42);
  for (uint32_t j = 0; j < position; ++j)
    for (uint32_t i = 0; i < kv_rows; ++i) {
      keys[j][i] = as_cached(old_k[size_t{j} * kv_rows + i], encoding);
      values[j][i] = as_cached(old_v[size_t{j} * kv_rows + i], encoding);
      k_cache[cache_at(j % slots, i, slots, D)] = static_cast<float>(keys[j][i]);
      v_cache[cache_at(j % slots, i, slots, D)] = static_cast<float>(values[j][i]);
    }
  Doubles q(qkv.begin(), qkv.begin() + a.heads * D);
  for (uint32_t h = 0; h < a.heads; ++h) rope(&q[size_t{h} * D], D, position, inv_freq, 1.0);
  for (uint32_t i = 0; i < kv_rows; ++i) {
    keys[position][i] = qkv[a.heads * D + i];
    values[position][i] = qkv[a.heads * D + kv_rows + i];
  }
  for (uint32_t g = 0; g < a.kv_heads; ++g) rope(&keys[position][g * D], D, position, inv_freq, 1.0);

  auto qkv_buf = host_buffer(ctx, qkv);
  auto k_buf = cache_buffer(ctx, k_cache, encoding), v_buf = cache_buffer(ctx, v_cache, encoding);
  auto f_buf = host_buffer(ctx, runtime::rope_pairs(position + 1, inv_freq, 1.0f));
  auto s_buf = host_buffer(ctx, sinks);
  auto step_buf = host_buffer(ctx, std::vector<uint32_t>{position, 1, 0});
  const vk::Kernels::AttentionShape shape{a.heads, a.kv_heads, D, a.window, slots, 1.0f / std::sqrt(static_cast<float>(D)),
                                          encoding};
  auto partials = host_buffer(ctx, std::vector<float>(k.decode_attention_partials(shape), NAN));
  auto counters = host_buffer(ctx, std::vector<uint32_t>(vk::Kernels::kCounters, 0u));
  auto out_buf = host_buffer(ctx, std::vector<float>(size_t{a.heads} * D, -7.0f));
  for (int repeat = 0; repeat < 2; ++repeat)  // the counters are left zero for the next dispatch
    run(ctx, [&](vk::DispatchList& list) {
      const_cast<vk::Kernels&>(k).attention_decode(list, shape, qkv_buf->address(), k_buf->address(), v_buf->address(),
                                                   f_buf->address(), step_buf->address(), s_buf->address(),
                                                   out_buf->address(), {partials->address(), counters->address()}, part);
    });
  const auto counts = read_buffer<uint32_t>(*counters, a.heads);
  EXPECT_EQ(counts, std::vector<uint32_t>(a.heads, 0u));
  const auto k_after = read_cache(*k_buf, k_cache.size(), encoding);
  const auto v_after = read_cache(*v_buf, v_cache.size(), encoding);
  for (uint32_t i = 0; i < kv_rows; ++i) {
    const size_t at = cache_at(position % slots, i, slots, D);
    const double key = keys[position][i], value = values[position][i];
    ASSERT_LE(std::abs(k_after[at] - key), cache_tolerance(key, encoding, 1e-5)) << "new key " << i;
    ASSERT_LE(std::abs(v_after[at] - value), cache_tolerance(value, encoding, 0.0)) << "new value " << i;
    keys[position][i] = k_after[at];
    values[position][i] = v_after[at];
  }
  const auto want = reference_attention(a, q, keys, values, sinks, position, 1);
  const auto out = read_buffer<float>(*out_buf, want.size());
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) worst = test::worse(worst, std::abs(out[i] - want[i]));
  EXPECT_LE(worst, 2e-5);
}

TEST(VulkanKernels, QueryHeadsPerWorkgroupDivideTheGroup) {
  EXPECT_EQ(vk::Kernels::largest_divisor_within(8, 4), 4u);
  EXPECT_EQ(vk::Kernels::largest_divisor_within(8, 3), 2u);
  EXPECT_EQ(vk::Kernels::largest_divisor_within(6, 4), 3u);
  EXPECT_EQ(vk::Kernels::largest_divisor_within(8, 100), 8u);
  EXPECT_EQ(vk::Kernels::largest_divisor_within(1, 4), 1u);
}

// Decode attention in every shape its launcher takes: the defaults, and the tunings that change
// its ranges (the most the kernel holds, 32 and 7 keys: below a workgroup's blocks, merged across
// workgroups), its query heads per workgroup (one: each reading its KV head's cache itself, the
// first storing the new key and value) and its lanes per key (one: whole key rows per lane).
class VulkanDecodeAttention : public ::testing::TestWithParam<const char*> {
 protected:
  // One Kernels per tuning for the whole process, so each pipeline compiles once (lavapipe is slow
  // to compile the unrolled attention kernels). Tests call VULKAN_OR_SKIP first.
  const vk::Kernels& k() const {
    static std::map<std::string, std::unique_ptr<vk::Kernels>> by_tuning;
    auto& slot = by_tuning[GetParam()];
    std::string unused;
    if (!slot) slot = std::make_unique<vk::Kernels>(kernels_with(*vulkan_context(&unused), GetParam()));
    return *slot;
  }
};

TEST_P(VulkanDecodeAttention, OverKeyRangesWithRingCache) {
  VULKAN_OR_SKIP();
  for (uint32_t window : {0u, 8u})
    for (uint32_t position : {0u, 5u, 31u, 32u, 300u, 513u}) {
      check_decode_attention(*ctx, k(), {16, 2, 64, window}, position, 1024);
      check_decode_attention(*ctx, k(), {64, 8, 64, window}, position, 600);
    }
  check_decode_attention(*ctx, k(), {4, 4, 32, 0}, 700, 1000);  // one head per KV head: 3 ranges
  check_decode_attention(*ctx, k(), {64, 8, 64, 0}, 3000, 4096);  // 12 ranges of 250 or 251 keys
  // A whole KV head's query heads per workgroup (eight), one range and several.
  for (uint32_t position : {100u, 700u}) check_decode_attention(*ctx, k(), {16, 2, 32, 0}, position, 1000, {8, UINT32_MAX});
}

// The engine's decode attention shapes: one query head per workgroup at positions whose keys fit
// one range (256) on every layer, two beyond, on full layers and on sliding ones (their window
// full): each shape at the positions on its side of the switch.
TEST_P(VulkanDecodeAttention, ShapesOfBothReaches) {
  VULKAN_OR_SKIP();
  const vk::Kernels::AttentionPart short_reach{1, 256}, long_reach{2, UINT32_MAX};
  for (uint32_t position : {0u, 255u}) check_decode_attention(*ctx, k(), {32, 4, 32, 0}, position, 1000, short_reach);
  check_decode_attention(*ctx, k(), {32, 4, 32, 128}, 100, 1000, short_reach);
  for (uint32_t position : {256u, 700u}) check_decode_attention(*ctx, k(), {32, 4, 32, 0}, position, 1000, long_reach);
  for (uint32_t position : {256u, 300u}) check_decode_attention(*ctx, k(), {32, 4, 32, 128}, position, 1000, long_reach);
}

// The edges of the kernel's key ranges (at least attention_range_keys() keys each, as many as the
// keys fill up to the dispatched workgroups) and of its per-lane shapes: ranges of several blocks
// per subgroup, a last block of a few keys, a window of several ranges over a ring, 1 and 16
// query heads per KV head, a head_dim that the subgroup does not divide.
TEST_P(VulkanDecodeAttention, RangesAndShapes) {
  VULKAN_OR_SKIP();
  const uint32_t splits = k().attention_split_cap(), range = k().attention_range_keys();
  // More keys than the dispatched ranges hold at `range` each: longer ranges.
  check_decode_attention(*ctx, k(), {2, 2, 32, 0}, range * splits * 5 / 2 + 37, range * splits * 3);
  check_decode_attention(*ctx, k(), {16, 2, 64, 700}, 5000, 6000);  // 700 keys over a ring of 701: 3 ranges
  // Shapes small enough that lavapipe compiles each kernel (unrolled over heads and dims) quickly.
  for (uint32_t position : {0u, 40u, 256u, 1100u}) {
    check_decode_attention(*ctx, k(), {16, 16, 36, 0}, position, 1200);  // one query head per KV head
    check_decode_attention(*ctx, k(), {32, 2, 32, 0}, position, 1200);   // 16 query heads per KV head
    check_decode_attention(*ctx, k(), {8, 4, 36, 100}, position, 1200);
  }
}

// Two lanes per key where the device shuffles, its subgroup's half holds a multiple of 4 keys and a
// key row's 16-byte words (f16: 8-byte quads where head_dim is not a multiple of 8) split evenly:
// the shapes of the tests above take both paths (head_dim 32 and 64 two lanes, 36 one).
// The tuning attention_key_lanes=1 runs them all with one.
TEST_P(VulkanDecodeAttention, KeyLanesSplitTheRowEvenly) {
  VULKAN_OR_SKIP();
  const auto& info = ctx->info();
  const bool one_asked = GetParam() == std::string("attention_key_lanes=1");
  const uint32_t two = !one_asked && info.subgroup_shuffle && (info.subgroup_size / 2) % 4 == 0 ? 2 : 1;
  const auto lanes = [&](uint32_t head_dim, uint32_t encoding) {
    return k().attention_key_lanes({64, 8, head_dim, 0, 128, 0.125f, encoding});
  };
  EXPECT_EQ(lanes(64, vk::abi::ENC_F32), two);  // 16 words
  EXPECT_EQ(lanes(64, vk::abi::ENC_F16), two);  // 8 words of two quads
  EXPECT_EQ(lanes(32, vk::abi::ENC_F16), two);  // 4
  EXPECT_EQ(lanes(40, vk::abi::ENC_F32), two);  // 10
  EXPECT_EQ(lanes(36, vk::abi::ENC_F32), 1u);   // 9
  EXPECT_EQ(lanes(36, vk::abi::ENC_F16), 1u);   // 9 quads of 8 bytes
  EXPECT_EQ(lanes(40, vk::abi::ENC_F16), 1u);   // 5 words
  EXPECT_EQ(lanes(4, vk::abi::ENC_F32), 1u);    // 1
  // Two lanes halve the registers: two workgroups per multiprocessor with either cache.
  const vk::Kernels::AttentionShape f32_64{64, 8, 64, 0, 128, 0.125f, vk::abi::ENC_F32};
  EXPECT_EQ(k().decode_attention_resident(f32_64), two == 2 ? 2u : 1u);
}

// An f16 cache: 16-byte loads of 8 halves per key row quad pair (head_dim 64), 8-byte loads where
// head_dim is not a multiple of 8 (36), one range and several, a ring, the shapes of both reaches.
TEST_P(VulkanDecodeAttention, WithAnF16Cache) {
  VULKAN_OR_SKIP();
  const vk::Kernels::AttentionPart every{0, UINT32_MAX};
  for (uint32_t position : {0u, 31u, 513u}) {
    check_decode_attention(*ctx, k(), {64, 8, 64, 0}, position, 600, every, vk::abi::ENC_F16);
    check_decode_attention(*ctx, k(), {16, 2, 64, 8}, position, 1024, every, vk::abi::ENC_F16);
  }
  check_decode_attention(*ctx, k(), {8, 4, 36, 100}, 1100, 1200, every, vk::abi::ENC_F16);
  check_decode_attention(*ctx, k(), {64, 8, 64, 0}, 3000, 4096, every, vk::abi::ENC_F16);
  check_decode_attention(*ctx, k(), {32, 4, 32, 0}, 255, 1000, {1, 256}, vk::abi::ENC_F16);
  check_decode_attention(*ctx, k(), {32, 4, 32, 0}, 700, 1000, {2, UINT32_MAX}, vk::abi::ENC_F16);
  check_decode_attention(*ctx, k(), {32, 4, 32, 128}, 300, 1000, {2, UINT32_MAX}, vk::abi::ENC_F16);
}

// ---- router ----

INSTANTIATE_TEST_SUITE_P(Tunings, VulkanDecodeAttention,
                         ::testing::Values("", "attention_splits=128", "attention_heads=1", "attention_key_lanes=1",
                                           "attention_range=32", "attention_range=7"),
                         [](const ::testing::TestParamInfo<const char*>& p) {
                           std::string name = *p.param ? p.param : "defaults";
                           std::replace(name.begin(), name.end(), '=', '_');
                           return name;
                         });

TEST(VulkanKernels, RouterTopKWithTiesAndSoftmaxPerToken) {
  VULKAN_OR_SKIP();
  const uint32_t k = 4;
  // Both forms where the device has doubles (router_f64, the default, and f64=off's f32 sums).
  for (const char* keys : {"", "f64=off"}) {
    SCOPED_TRACE(*keys ? keys : "defaults");
    vk::Kernels routers = kernels_with(*ctx, keys);
    const bool f64 = ctx->info().float64 && !*keys;
    // Widths whose chunks of 8 leave lanes of the decode router idle (96), give some lanes two
    // (2880, gpt-oss) and every lane its most (kMaxRouterHidden).
    for (uint32_t hidden : {96u, 2880u, vk::abi::kMaxRouterHidden})
      for (uint32_t experts : {8u, 32u})
        for (uint32_t count : {1u, 3u, 33u}) {
          SCOPED_TRACE("hidden " + std::to_string(hidden) + ", experts " + std::to_string(experts) + ", tokens " +
                       std::to_string(count));
          auto w = dense_matrix(*ctx, DType::BF16, experts, hidden, experts);
          const auto x = random_floats(size_t{count} * hidden, 3, 10.0f), norm = random_floats(hidden, 4);
          // Experts 1 and 5 get equal bias and rows: a tie the lower id must win.
          std::vector<float> bias = random_floats(experts, 6);
          bias[5] = bias[1];
          std::vector<float> w_values = w.values;
          std::copy_n(w_values.begin() + hidden, hidden, w_values.begin() + 5 * hidden);
          {
            std::vector<uint8_t> bytes(*dtype_byte_size(DType::BF16, w_values.size()));
            encode_from_f32(DType::BF16, w_values.data(), w_values.size(), bytes.data());
            CanonicalTensor t{{TensorRole::RouterWeight, 0, "router", {experts, hidden}}, DType::BF16,
                              std::make_shared<OwnedSource>(std::move(bytes)), "test"};
            vk::DeviceUploader uploader(*ctx, 1 << 20);
            w.device = vk::upload_matrix(*ctx, uploader, t);
          }
          auto x_buf = host_buffer(*ctx, x), n_buf = host_buffer(*ctx, norm), b_buf = host_buffer(*ctx, bias);
          auto xn_buf = host_buffer(*ctx, std::vector<float>(x.size()));
          auto chosen_buf = host_buffer(*ctx, std::vector<uint32_t>(size_t{count} * k, 99));
          auto weights_buf = host_buffer(*ctx, std::vector<float>(size_t{count} * k));
          // One token (decode) spreads its experts over workgroups that write the logits, which the
          // expert kernels rank (DecodeExpertKernelsEqualThePerTokenSum); several rank here.
          const bool decode = count == 1;
          EXPECT_EQ(vk::Kernels::router_groups(experts, decode), decode ? experts : 1u);
          auto logits_buf = host_buffer(*ctx, std::vector<float>(experts, NAN));
          run(*ctx, [&](vk::DispatchList& list) {
            routers.router(list, w.device, b_buf->address(), x_buf->address(), n_buf->address(),
                           {xn_buf->address(), decode ? 0 : chosen_buf->address(),
                            decode ? 0 : weights_buf->address(), decode ? logits_buf->address() : 0},
                           k, count, 1e-5f);
          });
          const auto chosen = read_buffer<uint32_t>(*chosen_buf, size_t{count} * k);
          const auto gate = read_buffer<float>(*weights_buf, size_t{count} * k);
          const auto xn = read_buffer<float>(*xn_buf, x.size());
          const auto device_logits = read_buffer<float>(*logits_buf, experts);
          for (uint32_t t = 0; t < count; ++t) {
            double ss = 0;
            for (uint32_t i = 0; i < hidden; ++i) ss += double{x[t * hidden + i]} * x[t * hidden + i];
            const double inv = 1 / std::sqrt(ss / hidden + 1e-5);
            Doubles logits(experts);
            for (uint32_t e = 0; e < experts; ++e) {
              double sum = bias[e];
              for (uint32_t i = 0; i < hidden; ++i) {
                const double normed = x[t * hidden + i] * inv * norm[i];
                if (e == 0) {
                  ASSERT_NEAR(xn[t * hidden + i], normed, 1e-5 * std::abs(normed) + 1e-6);
                }
                sum += double{w_values[e * hidden + i]} * normed;
              }
              logits[e] = sum;
            }
            if (f64) {
              // router_f64: the experts' input normalized as the CPU engine's rms_norm (1/rms rounded
              // to f32, then (x * 1/rms) * norm), bit for bit; each logit as cpu::router_logits computes
              // it, (W . (x * norm)) * 1/rms + bias in double, rounded to f32 once.
              const double factor = 1.0 / std::sqrt(ss / hidden + double{1e-5f});
              const auto inv_f = static_cast<float>(factor);
              std::vector<float> xn_cpu(hidden);
              for (uint32_t i = 0; i < hidden; ++i) xn_cpu[i] = (x[t * hidden + i] * inv_f) * norm[i];
              for (uint32_t i = 0; i < hidden; ++i)
                ASSERT_EQ(xn[t * hidden + i], xn_cpu[i]) << "token " << t << " dim " << i;
              if (decode) {
                std::vector<float> cpu_logits(experts);
                const std::vector<double> w_wide(w_values.begin(), w_values.end());
                cpu::router_logits(x.data() + size_t{t} * hidden, 1, hidden, norm.data(), double{1e-5f},
                                   w_wide.data(), experts, bias.data(), cpu_logits.data());
                for (uint32_t e = 0; e < experts; ++e) EXPECT_EQ(device_logits[e], cpu_logits[e]) << "expert " << e;
              }
            }
            if (decode) {
              for (uint32_t e = 0; e < experts; ++e)
                EXPECT_NEAR(device_logits[e], logits[e], 1e-5 * (1 + std::abs(logits[e])));
              EXPECT_EQ(device_logits[5], device_logits[1]) << "the tie, exact on the device as well";
              EXPECT_EQ(chosen, std::vector<uint32_t>(k, 99)) << "decode leaves the choices to the expert kernels";
              continue;
            }
            logits[5] = logits[1];  // the tie, exact on the device as well
            std::vector<uint32_t> order(experts);
            std::iota(order.begin(), order.end(), 0u);
            std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return logits[a] > logits[b]; });
            double top = logits[order[0]], sum = 0;
            for (uint32_t s = 0; s < k; ++s) sum += std::exp(logits[order[s]] - top);
            for (uint32_t s = 0; s < k; ++s) {
              EXPECT_EQ(chosen[t * k + s], order[s]) << "token " << t << " slot " << s;
              EXPECT_NEAR(gate[t * k + s], std::exp(logits[order[s]] - top) / sum, 1e-5);
            }
          }
        }
  }
}

// ---- mixture of experts ----

struct MoeProblem {
  uint32_t count, experts, k, hidden, inter;
  std::vector<uint32_t> chosen;  // [count, k], distinct per token
  std::vector<float> gate, xn, x0, b1, b2;
};
MoeProblem moe_problem(uint32_t count, uint32_t experts, uint32_t k, uint32_t hidden, uint32_t inter) {
  MoeProblem p{count, experts, k, hidden, inter, {}, {}, {}, {}, {}, {}};
  std::mt19937 rng(count * 31 + experts);
  for (uint32_t t = 0; t < count; ++t) {
    std::vector<uint32_t> all(experts);
    std::iota(all.begin(), all.end(), 0u);
    std::shuffle(all.begin(), all.end(), rng);
    if (t % 5 == 4) std::sort(all.begin(), all.begin() + k);  // some tokens list experts in id order
    p.chosen.insert(p.chosen.end(), all.begin(), all.begin() + k);
  }
  p.gate = random_floats(size_t{count} * k, 3, 1.0f);
  p.xn = random_floats(size_t{count} * hidden, 4, 2.0f);
  p.x0 = random_floats(size_t{count} * hidden, 5, 50.0f);
  p.b1 = random_floats(size_t{experts} * 2 * inter, 6);
  p.b2 = random_floats(size_t{experts} * hidden, 7);
  return p;
}

// x after the MoE: x0 + sum over t's experts in increasing id of gate * (W2 act + b2).
Doubles reference_moe(const MoeProblem& p, const Experts& mlp1, const Experts& mlp2, double limit, Doubles* scale) {
  Doubles x(p.x0.begin(), p.x0.end());
  scale->assign(x.size(), 0.0);
  for (uint32_t t = 0; t < p.count; ++t) {
    std::vector<uint32_t> slots(p.k);
    std::iota(slots.begin(), slots.end(), 0u);
    std::sort(slots.begin(), slots.end(), [&](uint32_t a, uint32_t b) { return p.chosen[t * p.k + a] < p.chosen[t * p.k + b]; });
    Doubles sum(p.hidden, 0.0);
    for (uint32_t s : slots) {
      const uint32_t e = p.chosen[t * p.k + s];
      Doubles act(p.inter);
      for (uint32_t j = 0; j < p.inter; ++j) {
        double gate = p.b1[size_t{e} * 2 * p.inter + 2 * j], up = p.b1[size_t{e} * 2 * p.inter + 2 * j + 1];
        for (uint32_t i = 0; i < p.hidden; ++i) {
          gate += double{mlp1.values[(size_t{e} * 2 * p.inter + 2 * j) * p.hidden + i]} * p.xn[t * p.hidden + i];
          up += double{mlp1.values[(size_t{e} * 2 * p.inter + 2 * j + 1) * p.hidden + i]} * p.xn[t * p.hidden + i];
        }
        gate = std::min(gate, limit);
        up = std::clamp(up, -limit, limit);
        act[j] = (up + 1) * gate / (1 + std::exp(-1.702 * gate));
      }
      for (uint32_t d = 0; d < p.hidden; ++d) {
        double down = p.b2[size_t{e} * p.hidden + d], size = std::abs(down);
        for (uint32_t j = 0; j < p.inter; ++j) {
          const double prod = double{mlp2.values[(size_t{e} * p.hidden + d) * p.inter + j]} * act[j];
          down += prod;
          size += std::abs(prod);
        }
        sum[d] += p.gate[t * p.k + s] * down;
        (*scale)[t * p.hidden + d] += std::abs(p.gate[t * p.k + s]) * (size + 1.0);
      }
    }
    for (uint32_t d = 0; d < p.hidden; ++d) {
      x[t * p.hidden + d] += sum[d];
      (*scale)[t * p.hidden + d] += std::abs(p.x0[t * p.hidden + d]);
    }
  }
  return x;
}

struct MoeCase {
  uint32_t count, experts, k, hidden, inter;
};

// The MoE of `c.count` tokens grouped by expert (route, the two expert GEMMs, combine) against the
// per-token sum of the decoded experts, on `shaped` (default: the context's default kernels);
// returns the residual after it.
// tolerance: relative to the sum's scale (the portable GEMMs and the precise cooperative ones alike;
// the rounding levels' f16 products need more).
std::vector<float> check_grouped_moe(const vk::Context& ctx, const MoeCase& c, const Experts& mlp1, const Experts& mlp2,
                                     vk::Kernels* shaped = nullptr, double tolerance = 1e-5) {
  const float limit = 7.0f;
  const auto p = moe_problem(c.count, c.experts, c.k, c.hidden, c.inter);
  Doubles scale;
  const auto want = reference_moe(p, mlp1, mlp2, limit, &scale);
  const uint32_t choices = c.count * c.k;
  auto chosen = host_buffer(ctx, p.chosen), gate = host_buffer(ctx, p.gate), xn = host_buffer(ctx, p.xn);
  auto x = host_buffer(ctx, p.x0), b1 = host_buffer(ctx, p.b1), b2 = host_buffer(ctx, p.b2);
  auto assign = host_buffer(ctx, std::vector<uint32_t>(choices)), row_of = host_buffer(ctx, std::vector<uint32_t>(choices));
  auto tiles = host_buffer(ctx, std::vector<uint32_t>(3 * size_t{vk::Kernels::max_moe_tiles(choices, c.experts)}));
  vk::Buffer dispatch(ctx, 32, false);
  auto act = host_buffer(ctx, std::vector<float>(size_t{choices} * c.inter));
  auto y = host_buffer(ctx, std::vector<float>(size_t{choices} * c.hidden));
  const vk::Kernels::MoeTables tables{assign->address(), row_of->address(), tiles->address(), &dispatch, choices};
  const size_t halves = std::max(size_t{c.count} * c.hidden, size_t{choices} * c.inter);
  auto hi = host_buffer(ctx, std::vector<uint16_t>(halves)), lo = host_buffer(ctx, std::vector<uint16_t>(halves));
  run(ctx, [&](vk::DispatchList& list) {
    auto& k = shaped ? *shaped : kernels(ctx);
    k.moe_route(list, chosen->address(), tables, c.count, c.k, mlp1.device, mlp2.device);
    k.expert_gemm(list, mlp1.device, b1->address(), xn->address(), c.count, tables, act->address(), true, limit,
                  {hi->address(), lo->address()});
    k.expert_gemm(list, mlp2.device, b2->address(), act->address(), choices, tables, y->address(), false, 0.0f,
                  {hi->address(), lo->address()});
    k.moe_combine(list, y->address(), tables, chosen->address(), gate->address(), x->address(), c.hidden, c.k, c.count);
  });
  // The grouping: every choice has a row, rows of one expert are contiguous, each row's token is
  // the choice's token.
  const auto rows = read_buffer<uint32_t>(*row_of, choices), tokens = read_buffer<uint32_t>(*assign, choices);
  std::vector<uint32_t> sorted(rows);
  std::sort(sorted.begin(), sorted.end());
  for (uint32_t i = 0; i < choices; ++i) EXPECT_EQ(sorted[i], i);
  for (uint32_t i = 0; i < choices; ++i) EXPECT_EQ(tokens[rows[i]], i / c.k);
  for (uint32_t i = 0; i < choices; ++i)
    for (uint32_t j = 0; j < choices; ++j)
      if (p.chosen[i] < p.chosen[j]) {
        EXPECT_LT(rows[i], rows[j]);
      }
  auto result = read_buffer<float>(*x, want.size());
  expect_close(result, want, scale, tolerance, "x after the MoE");
  return result;
}

TEST(VulkanKernels, MoeGroupedByExpertEqualsThePerTokenSum) {
  VULKAN_OR_SKIP();
  // On cooperative matrices (depths a multiple of COOP_TILE_K, weight rows COOP_EXPERT_TILE_N per
  // tile): 64 to 320 weight rows (partial last tiles), depths of 1 to 3 steps; 1 to 513 tokens, so
  // tiles of an expert's rows hold 1 to 64 rows (subgroups past the last row skip their products).
  for (const MoeCase c : {MoeCase{1, 8, 4, 64, 64}, MoeCase{3, 8, 4, 96, 64}, MoeCase{33, 8, 4, 64, 96},
                          MoeCase{65, 32, 4, 64, 64}, MoeCase{513, 128, 4, 64, 32}, MoeCase{17, 4, 2, 192, 128},
                          MoeCase{40, 4, 3, 128, 160}}) {
    SCOPED_TRACE("tokens " + std::to_string(c.count) + " experts " + std::to_string(c.experts));
    check_grouped_moe(*ctx, c, mxfp4_experts(*ctx, c.experts, 2 * c.inter, c.hidden, 1),
                      mxfp4_experts(*ctx, c.experts, c.hidden, c.inter, 2));
  }
}

// The expert tile's width on cooperative matrices: the tuning's where set, else 256 (32-row tiles)
// where the forward's choices (tokens x k) average fewer than 32 rows per expert (synth:120b's 512
// tokens, 4 of 128 experts each: 16), 192 where a whole row tile (64) or more (the synthesized
// 20b's 512 tokens, 4 of 32 experts each, just so; synth:120b's 2048), else 128.
TEST(KernelShapes, ExpertTileFollowsTheRowsPerExpert) {
  EXPECT_EQ(vk::Kernels::cooperative_expert_tile(0, 512 * 4, 32), 192u);
  EXPECT_EQ(vk::Kernels::cooperative_expert_tile(0, 511 * 4, 32), 128u);
  EXPECT_EQ(vk::Kernels::cooperative_expert_tile(0, 256 * 4, 32), 128u);
  EXPECT_EQ(vk::Kernels::cooperative_expert_tile(0, 255 * 4, 32), 256u);
  EXPECT_EQ(vk::Kernels::cooperative_expert_tile(0, 512 * 4, 128), 256u);
  EXPECT_EQ(vk::Kernels::cooperative_expert_tile(0, 1024 * 4, 128), 128u);
  EXPECT_EQ(vk::Kernels::cooperative_expert_tile(0, 2048 * 4, 128), 192u);
  EXPECT_EQ(vk::Kernels::cooperative_expert_tile(0, 1 * 4, 32), 256u);
  EXPECT_EQ(vk::Kernels::cooperative_expert_tile(128, 2048 * 4, 32), 128u);
  EXPECT_EQ(vk::Kernels::cooperative_expert_tile(192, 4, 32), 192u);
  EXPECT_EQ(vk::Kernels::cooperative_expert_tile(256, 2048 * 4, 32), 256u);
  // moe_route's tiles: never shorter than the short tile's 32 rows, one more a used expert at most.
  EXPECT_EQ(vk::Kernels::max_moe_tiles(512 * 4, 128), 64u + 128u);
  EXPECT_EQ(vk::Kernels::max_moe_tiles(3, 128), 1u + 3u);
}

// The expert GEMMs' wide tile (VulkanTuning::expert_tile = 192) and short one (256 weight rows
// over 32-row tiles of each expert's rows) give the 128-wide tile's bits at every precision level:
// each output's products in the same order. Cases as above: partial tiles of rows and of weight
// rows, depths of one to six 64-deep steps, experts of more rows than a tile; by default the shape
// follows the rows per expert.
TEST(VulkanKernels, WideAndShortExpertTilesGiveTheSameBits) {
  VULKAN_OR_SKIP();
  expect_refused(*ctx, {"expert_tile=64", "expert_tile=320"});
  if (!kernels(*ctx).cooperative()) GTEST_SKIP() << "no cooperative matrices: the portable expert GEMM only";
  for (const char* precision : {"precise", "promoted", "split", "fast"}) {
    const std::string level = std::string("gemm_precision=") + precision;
    vk::Kernels narrow = kernels_with(*ctx, level + ",expert_tile=128");
    vk::Kernels wide = kernels_with(*ctx, level + ",expert_tile=192");
    vk::Kernels short_tile = kernels_with(*ctx, level + ",expert_tile=256");
    // The default: the direct tile where the device's B layout is known, else the tiles by rows.
    vk::Kernels by_rows = kernels_with(*ctx, level);
    const double tolerance = std::string(precision) == "fast" ? 2e-3 : 1e-5;  // fast: A rounded to f16
    for (const MoeCase c : {MoeCase{33, 8, 4, 64, 96}, MoeCase{513, 128, 4, 64, 32}, MoeCase{40, 4, 3, 128, 160},
                            MoeCase{70, 4, 4, 192, 128}, MoeCase{200, 4, 4, 384, 192}, MoeCase{150, 8, 4, 256, 320}}) {
      SCOPED_TRACE(std::string(precision) + " tokens " + std::to_string(c.count) + " experts " + std::to_string(c.experts));
      const auto mlp1 = mxfp4_experts(*ctx, c.experts, 2 * c.inter, c.hidden, 1);
      const auto mlp2 = mxfp4_experts(*ctx, c.experts, c.hidden, c.inter, 2);
      const uint32_t choices = c.count * c.k;
      const bool direct = by_rows.operand_layout().has_value();
      EXPECT_EQ(by_rows.expert_direct(mlp1.device), direct);
      EXPECT_FALSE(narrow.expert_direct(mlp1.device));
      EXPECT_EQ(by_rows.expert_tile_width(mlp1.device, choices),
                direct ? 128u : choices < 32 * c.experts ? 256u : choices >= 64 * c.experts ? 192u : 128u);
      EXPECT_EQ(by_rows.expert_tile_rows(mlp1.device, choices), direct || choices < 32 * c.experts ? 32u : 64u);
      EXPECT_EQ(short_tile.expert_tile_rows(mlp1.device, choices), 32u);
      EXPECT_EQ(narrow.expert_tile_rows(mlp1.device, choices), 64u);
      const auto a = check_grouped_moe(*ctx, c, mlp1, mlp2, &narrow, tolerance);
      for (vk::Kernels* other : {&wide, &short_tile, &by_rows}) {
        const auto b = check_grouped_moe(*ctx, c, mlp1, mlp2, other, tolerance);
        ASSERT_EQ(a.size(), b.size());
        size_t differ = 0;
        for (size_t i = 0; i < a.size(); ++i) differ += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
        EXPECT_EQ(differ, 0u) << "of " << a.size()
                              << (other == &wide ? " (wide tile)" : other == &short_tile ? " (short tile)" : " (default tile)");
      }
    }
  }
}

// The decode expert kernels (mlp1 ranking the router's logits, mlp2 adding to the residual) of one
// token against the per-token sum: the problem's choices, or a tie at the cut.
void check_decode_moe(const vk::Context& ctx, vk::Kernels& shaped, const MoeCase& c, bool tie, const Experts& mlp1,
                      const Experts& mlp2) {
  const float limit = 7.0f;
  SCOPED_TRACE("k " + std::to_string(c.k) + " hidden " + std::to_string(c.hidden) +
               (tie ? ", a tie at the cut" : ", the problem's choices"));
  auto p = moe_problem(1, c.experts, c.k, c.hidden, c.inter);
  // The logits the decode router writes (mlp1 ranks them): decreasing along the problem's
  // choices (any order of expert ids), the rest below; or k - 1 experts above a tie of experts
  // 2 and 6 at the cut (the lower id must win). The choices' weights are their softmax.
  std::vector<float> logits(c.experts);
  for (uint32_t e = 0; e < c.experts; ++e) logits[e] = -1.0f - 0.25f * static_cast<float>(e);
  if (tie) {
    const uint32_t above_order[] = {7, 0, 5, 3, 1, 4};
    p.chosen.clear();
    for (uint32_t i = 0; i + 1 < c.k; ++i) p.chosen.push_back(above_order[i]);
  }
  for (uint32_t i = 0; i < p.chosen.size(); ++i) logits[p.chosen[i]] = 3.0f - 0.5f * static_cast<float>(i);
  if (tie) {
    logits[2] = logits[6] = 1.0f;
    p.chosen.push_back(2);
  }
  double sum = 0;
  for (uint32_t e : p.chosen) sum += std::exp(double{logits[e]} - logits[p.chosen[0]]);
  for (uint32_t s = 0; s < c.k; ++s)
    p.gate[s] = static_cast<float>(std::exp(double{logits[p.chosen[s]]} - logits[p.chosen[0]]) / sum);
  Doubles scale;
  const auto want = reference_moe(p, mlp1, mlp2, limit, &scale);
  // mlp1 writes the choices over these.
  auto chosen = host_buffer(ctx, std::vector<uint32_t>(c.k, 99));
  auto gate = host_buffer(ctx, std::vector<float>(c.k, NAN)), xn = host_buffer(ctx, p.xn);
  auto logits_buf = host_buffer(ctx, logits);
  auto x = host_buffer(ctx, p.x0), b1 = host_buffer(ctx, p.b1), b2 = host_buffer(ctx, p.b2);
  auto act = host_buffer(ctx, std::vector<float>(size_t{c.k} * c.inter));
  auto partials = host_buffer(ctx, std::vector<float>(vk::Kernels::expert_mlp2_partials(c.hidden, c.k), NAN));
  auto counters = host_buffer(ctx, std::vector<uint32_t>(vk::Kernels::kCounters, 0u));
  const vk::Kernels::Choices choices{chosen->address(), gate->address(), logits_buf->address(), c.experts};
  run(ctx, [&](vk::DispatchList& list) {
    shaped.expert_mlp1(list, mlp1.device, b1->address(), xn->address(), choices, act->address(), c.k, limit);
    shaped.expert_mlp2(list, mlp2.device, b2->address(), act->address(), chosen->address(), gate->address(),
                       x->address(), c.k, {partials->address(), counters->address()});
  });
  EXPECT_EQ(read_buffer<uint32_t>(*chosen, c.k), p.chosen) << "the choices mlp2 read";
  EXPECT_EQ(read_buffer<uint32_t>(*counters, 8), std::vector<uint32_t>(8, 0u));
  expect_close(read_buffer<float>(*x, want.size()), want, scale, 1e-5, "x after the decode MoE");
}

TEST(VulkanKernels, DecodeExpertKernelsEqualThePerTokenSum) {
  VULKAN_OR_SKIP();
  // Every shape the launchers take is the same function: the defaults and shapes the tuning can
  // pick (outputs per subgroup that do not divide the rows, batches past the blocks a lane has).
  for (const char* shape : {"", "4,2,4,2", "8,1,8,2", "3,3,5,1", "1,8,16,1"}) {
    SCOPED_TRACE(shape);
    vk::Kernels shaped = kernels_with(*ctx, expert_keys(shape));
    // 3 and 2 blocks per row (fewer than a quad's lanes), 10 and 9 (the two-block passes and a tail).
    for (const MoeCase c : {MoeCase{1, 8, 1, 96, 64}, MoeCase{1, 8, 4, 96, 64}, MoeCase{1, 8, 4, 320, 288}})
      for (bool tie : {false, true})
        check_decode_moe(*ctx, shaped, c, tie, mxfp4_experts(*ctx, 8, 2 * c.inter, c.hidden, 3),
                         mxfp4_experts(*ctx, 8, c.hidden, c.inter, 4));
  }
}

// Experts in other types (a GGUF's Q8_0 or Q4_1 experts; any type the dense kernels read): the
// grouped prefill MoE and the decode expert kernels read them through load8, against the codec's
// values: the two types fine-tunes ship and a 256-value one (two and three blocks per row); the
// decode kernels in the default shape and in one whose outputs divide no row count.
TEST(VulkanKernels, ExpertKernelsInOtherTypes) {
  VULKAN_OR_SKIP();
  vk::Kernels shaped = kernels_with(*ctx, expert_keys("3,3,5,1"));
  for (DType type : {DType::Q8_0, DType::Q4_1, DType::Q4_K}) {
    SCOPED_TRACE(std::string(dtype_name(type)));
    const uint32_t b = block_of(type), hidden = b == 32 ? 96 : 2 * b, inter = b == 32 ? 64 : 3 * b;
    const MoeCase grouped{33, 8, 4, hidden, inter}, decode{1, 8, 4, hidden, inter};
    const auto mlp1 = block_experts(*ctx, type, 8, 2 * inter, hidden, 5), mlp2 = block_experts(*ctx, type, 8, hidden, inter, 6);
    EXPECT_EQ(mlp1.device.encoding, vk::kernel_encoding(type));
    check_grouped_moe(*ctx, grouped, mlp1, mlp2);
    check_decode_moe(*ctx, type == DType::Q4_1 ? shaped : kernels(*ctx), decode, type == DType::Q4_1, mlp1, mlp2);
  }
}

TEST(VulkanKernels, ExpertShapeFromTheTuningIsChecked) {
  VULKAN_OR_SKIP();
  expect_refused(*ctx, {"mlp1_outputs=2,mlp1_batch=4,mlp2_outputs=2", "mlp1_batch=4,mlp2_outputs=2,mlp2_batch=4",
                        "mlp1_outputs=2,mlp1_batch=4,mlp2_outputs=17,mlp2_batch=1",
                        "mlp1_outputs=2,mlp1_batch=9,mlp2_outputs=2,mlp2_batch=4"});
  const vk::Kernels shaped = kernels_with(*ctx, expert_keys("8,1,4,2"));
  EXPECT_EQ(shaped.expert_shape().mlp1_outputs, 8u);
  EXPECT_EQ(shaped.expert_shape().mlp1_batch, 1u);
  EXPECT_EQ(shaped.expert_shape().mlp2_outputs, 4u);
  EXPECT_EQ(shaped.expert_shape().mlp2_batch, 2u);
}

TEST(VulkanKernels, ArgmaxTakesTheLowestIndexOfTies) {
  VULKAN_OR_SKIP();
  auto values = random_floats(201088, 3);
  values[150001] = 5.0f;
  values[70000] = 5.0f;
  values[200000] = 4.9f;
  auto v_buf = host_buffer(*ctx, values);
  auto result = host_buffer(*ctx, std::vector<uint32_t>(2));
  auto partials = host_buffer(*ctx, std::vector<float>(2 * ARGMAX_GROUPS));
  auto counters = host_buffer(*ctx, std::vector<uint32_t>(vk::Kernels::kCounters, 0u));
  run(*ctx, [&](vk::DispatchList& list) {
    kernels(*ctx).argmax(list, v_buf->address(), result->address(), 201088, {partials->address(), counters->address()});
  });
  EXPECT_EQ(read_buffer<uint32_t>(*counters, 1)[0], 0u);
  const auto r = read_buffer<uint32_t>(*result, 2);
  EXPECT_EQ(r[0], 70000u);
  float top;
  std::memcpy(&top, &r[1], 4);
  EXPECT_EQ(top, 5.0f);
}

// Launchers refuse shapes their kernels are not written for, naming the kernel and the limit.
TEST(VulkanKernels, LaunchersNameTheKernelAndTheViolatedLimit) {
  VULKAN_OR_SKIP();
  vk::DispatchList list;
  const vk::Kernels::AttentionShape too_many_heads{64, 2, 64, 0, 16, 0.125f};
  try {
    kernels(*ctx).attention_decode(list, too_many_heads, 0, 0, 0, 0, 0, 0, 0, {0, 0});
    FAIL() << "accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("Vulkan kernel attention_decode: query heads per KV head 32 > 16"),
              std::string::npos)
        << e.what();
  }
  auto router = dense_matrix(*ctx, DType::BF16, 8, 32, 1);
  try {
    kernels(*ctx).router(list, router.device, 0, 0, 0, {0, 0, 0, 0}, 40, 1, 1e-5f);
    FAIL() << "accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("Vulkan kernel router: experts per token 40 outside"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(list.size(), 0u);
}

}  // namespace
}  // namespace gptoss::test
