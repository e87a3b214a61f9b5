#include "runtime/vulkan/kernels.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "shaders/kernel_abi.h"
#include "shaders/shader_registry.h"

namespace gptoss::vk {
namespace {

void require(bool ok, const char* kernel, const std::string& violated) {
  if (!ok) throw std::runtime_error("Vulkan kernel " + std::string(kernel) + ": " + violated);
}

std::string limit(const char* what, uint64_t value, const char* relation, uint64_t bound) {
  return std::string(what) + " " + std::to_string(value) + " " + relation + " " + std::to_string(bound);
}

uint32_t ceil_div(uint64_t a, uint64_t b) { return static_cast<uint32_t>((a + b - 1) / b); }

// A grid of `groups` workgroups split over x and y to stay under the 65535 limit per dimension.
std::pair<uint32_t, uint32_t> split_grid(uint32_t groups) {
  constexpr uint32_t kMaxX = 65535;
  if (groups <= kMaxX) return {groups, 1};
  return {kMaxX, ceil_div(groups, kMaxX)};
}

}  // namespace

namespace {
// A tuning field's value: `value` where set (non-zero), within 1 .. most, else an error naming the
// field; `fallback` where it is 0.
uint32_t tuned(uint32_t value, uint32_t fallback, const char* field, uint32_t most) {
  if (value == 0) return fallback;
  if (value > most)
    throw std::invalid_argument(std::string("VulkanTuning::") + field + " " + std::to_string(value) +
                                " is outside 1.." + std::to_string(most));
  return value;
}

// The cooperative dense GEMM's width for weights exact in f16: GEMM_TILE_N (gemm_coop.comp) or
// COOP_DENSE_WIDE_TILE_N (gemm_coop_wide.comp; the default, the faster for the HF checkpoint in
// docs/results.md), the same sums either way.
uint32_t dense_tile_of(const runtime::VulkanTuning& tuning) {
  if (tuning.dense_tile == 0) return COOP_DENSE_WIDE_TILE_N;
  if (tuning.dense_tile != GEMM_TILE_N && tuning.dense_tile != COOP_DENSE_WIDE_TILE_N)
    throw std::invalid_argument("VulkanTuning::dense_tile " + std::to_string(tuning.dense_tile) + " is neither " +
                                std::to_string(GEMM_TILE_N) + " nor " + std::to_string(COOP_DENSE_WIDE_TILE_N));
  return tuning.dense_tile;
}

// The dense cooperative GEMMs' most depth between promotions of their partial sums: 16, 32 or
// COOP_TILE_K, or 0 for the tile's own step (coop_tile.glsl's kSegmentK).
uint32_t dense_promote_of(const runtime::VulkanTuning& tuning) {
  const uint32_t depth = tuning.dense_promote;
  if (depth != 0 && depth != 16 && depth != 32 && depth != COOP_TILE_K)
    throw std::invalid_argument("VulkanTuning::dense_promote " + std::to_string(depth) + " is none of 16, 32 and " +
                                std::to_string(COOP_TILE_K));
  return depth;
}

// The cooperative expert GEMM's width: COOP_EXPERT_TILE_N (expert_gemm_coop.comp),
// COOP_EXPERT_WIDE_TILE_N (expert_gemm_coop_wide.comp) or COOP_EXPERT_SHORT_TILE_N
// (expert_gemm_coop_short.comp, 32-row tiles), the same sums each way; 0: by the rows
// (Kernels::expert_tile_width).
uint32_t expert_tile_of(const runtime::VulkanTuning& tuning) {
  if (tuning.expert_tile != 0 && tuning.expert_tile != COOP_EXPERT_TILE_N && tuning.expert_tile != COOP_EXPERT_WIDE_TILE_N &&
      tuning.expert_tile != COOP_EXPERT_SHORT_TILE_N)
    throw std::invalid_argument("VulkanTuning::expert_tile " + std::to_string(tuning.expert_tile) + " is none of " +
                                std::to_string(COOP_EXPERT_TILE_N) + ", " + std::to_string(COOP_EXPERT_WIDE_TILE_N) +
                                " and " + std::to_string(COOP_EXPERT_SHORT_TILE_N));
  return tuning.expert_tile;
}

// A group of tuning fields set together or not at all: their values, or `fallback`.
std::vector<uint32_t> tuned_group(const std::vector<uint32_t>& values, std::vector<uint32_t> fallback,
                                  const char* fields, const std::vector<uint32_t>& most) {
  const bool any = std::any_of(values.begin(), values.end(), [](uint32_t v) { return v != 0; });
  if (!any) return fallback;
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i] == 0 || values[i] > most[i]) {
      std::string bounds;
      for (uint32_t m : most) bounds += (bounds.empty() ? "1.." : ",1..") + std::to_string(m);
      throw std::invalid_argument(std::string("VulkanTuning::") + fields + " are set together, within " + bounds);
    }
  return values;
}

Kernels::ExpertShape expert_shape_of(const runtime::VulkanTuning& t) {
  const Kernels::ExpertShape d;
  const auto v = tuned_group({t.mlp1_outputs, t.mlp1_batch, t.mlp2_outputs, t.mlp2_batch},
                             {d.mlp1_outputs, d.mlp1_batch, d.mlp2_outputs, d.mlp2_batch},
                             "mlp1_outputs, mlp1_batch, mlp2_outputs and mlp2_batch",
                             {EXPERT_MAX_OUTPUTS, EXPERT_MAX_BATCH, EXPERT_MAX_OUTPUTS, EXPERT_MAX_BATCH});
  return {v[0], v[1], v[2], v[3]};
}

std::optional<Kernels::MatvecShape> matvec_shape_of(const runtime::VulkanTuning& t) {
  if (t.matvec_rows == 0 && t.matvec_loads == 0) return std::nullopt;
  const auto v = tuned_group({t.matvec_rows, t.matvec_loads}, {}, "matvec_rows and matvec_loads",
                             {MATVEC_MAX_ROWS, MATVEC_MAX_BATCH});
  return Kernels::MatvecShape{v[0], v[1]};
}

// Decode's Q8_0 products through integer dot products: Auto where the device says its packed
// signed 4x8-bit form is accelerated (elsewhere, as on lavapipe, it may be emulated slower than the
// float decoding); On wherever the device has it (how the tests run it on lavapipe); Off never.
bool integer_dot_of(const runtime::VulkanTuning& t, const DeviceInfo& info) {
  switch (t.integer_dot) {
    case runtime::VulkanTuning::IntegerDot::On: return info.integer_dot_product;
    case runtime::VulkanTuning::IntegerDot::Off: return false;
    case runtime::VulkanTuning::IntegerDot::Auto: break;
  }
  return info.integer_dot_product && info.integer_dot_product_accelerated;
}
}  // namespace

Kernels::Kernels(const Context& ctx, const runtime::VulkanTuning& tuning)
    : ctx_(ctx),
      expert_shape_(expert_shape_of(tuning)),
      matvec_shape_(matvec_shape_of(tuning)),
      integer_dot_product_(integer_dot_of(tuning, ctx.info())),
      split_cap_(tuned(tuning.attention_splits, abi::kDefaultAttentionSplits, "attention_splits", abi::kAttentionSplits)),
      fixed_splits_(tuning.attention_splits != 0),
      heads_asked_(tuned(tuning.attention_heads, abi::kDefaultAttentionHeads, "attention_heads",
                         abi::kMaxAttentionGroupValues)),
      fixed_heads_(tuning.attention_heads != 0),
      range_keys_(tuned(tuning.attention_range, DECODE_ATTENTION_SIZE, "attention_range", DECODE_ATTENTION_SIZE)),
      key_lanes_asked_(tuned(tuning.attention_key_lanes, 2, "attention_key_lanes", 2)),
      gemm_precision_(static_cast<uint32_t>(tuning.gemm_precision)),
      float64_(tuning.float64_sums && ctx.info().float64),
      attention_coop_(tuning.attention_coop),
      attention_precision_(tuning.attention_precision == runtime::VulkanTuning::AttentionPrecision::Fast ? abi::COOP_FAST
                                                                                                         : abi::COOP_PRECISE),
      coop_khr_(tuning.coop_form == runtime::VulkanTuning::CoopForm::Khr ||
                (tuning.coop_form == runtime::VulkanTuning::CoopForm::Auto && ctx.info().cooperative_matrix_khr)),
      scaled_q8_0_(tuning.scaled_q8_0),
      dense_tile_(dense_tile_of(tuning)),
      dense_promote_(dense_promote_of(tuning)),
      expert_tile_(expert_tile_of(tuning)) {
  if (coop_khr_ && !ctx.info().cooperative_matrix_khr)
    throw std::invalid_argument("VulkanTuning::coop_form (coop_form=khr): " + ctx.info().name +
                                " lists no 16x16x16 f16 product of VK_KHR_cooperative_matrix");
}

// The most shared memory a cooperative GEMM tile takes (the dense tile, its wide form, the expert
// tile; the dense ones with their Q8_0 scales). As built they fit NVIDIA's 48 KiB per workgroup
// (the H100's maxComputeSharedMemorySize): a tile or stage change that outgrows it fails here, not
// on the device.
constexpr uint32_t kCoopSharedBytes =
    std::max({COOP_SHARED_BYTES(GEMM_TILE_M, GEMM_TILE_N, COOP_DENSE_W_PARTS, COOP_DENSE_STAGES) +
                  COOP_W_SCALE_BYTES(GEMM_TILE_N, COOP_DENSE_STAGES),
              COOP_SHARED_BYTES(GEMM_TILE_M, COOP_DENSE_WIDE_TILE_N, COOP_DENSE_WIDE_W_PARTS, COOP_DENSE_STAGES) +
                  COOP_W_SCALE_BYTES(COOP_DENSE_WIDE_TILE_N, COOP_DENSE_STAGES),
              COOP_SHARED_BYTES(GEMM_TILE_M, COOP_EXPERT_TILE_N, COOP_EXPERT_W_PARTS, COOP_EXPERT_STAGES),
              COOP_SHARED_BYTES(GEMM_TILE_M, COOP_EXPERT_WIDE_TILE_N, COOP_EXPERT_W_PARTS, COOP_EXPERT_STAGES),
              COOP_SHARED_BYTES(COOP_EXPERT_SHORT_TILE_M, COOP_EXPERT_SHORT_TILE_N, COOP_EXPERT_W_PARTS,
                                COOP_EXPERT_STAGES),
              // the direct tile: A's stages, or the C tile over them where larger
              COOP_SHARED_BYTES(COOP_EXPERT_DIRECT_TILE_M, COOP_EXPERT_DIRECT_TILE_N, 0, COOP_EXPERT_DIRECT_STAGES),
              COOP_C_TILE_BYTES(COOP_EXPERT_DIRECT_TILE_M, COOP_EXPERT_DIRECT_TILE_N)});
static_assert(kCoopSharedBytes <= 49152, "cooperative GEMM tiles over 48 KiB of shared memory");

static_assert(static_cast<uint32_t>(runtime::VulkanTuning::GemmPrecision::Fast) == abi::COOP_FAST &&
                  static_cast<uint32_t>(runtime::VulkanTuning::GemmPrecision::Split) == abi::COOP_SPLIT &&
                  static_cast<uint32_t>(runtime::VulkanTuning::GemmPrecision::Promoted) == abi::COOP_PROMOTED &&
                  static_cast<uint32_t>(runtime::VulkanTuning::GemmPrecision::Precise) == abi::COOP_PRECISE,
              "VulkanTuning::GemmPrecision and the shaders' COOP_* differ");

bool Kernels::cooperative() const {
  // The cooperative tiles' shared memory is fixed at build time; a device that allows less per
  // workgroup (NVIDIA: 48 KiB) would fail pipeline creation, so it takes the portable kernels.
  return !force_portable_ && ctx_.use_cooperative_matrix() && ctx_.info().subgroup_size == 32 &&
         kCoopSharedBytes <= ctx_.info().max_shared_memory;
}

std::string Kernels::pipeline_statistics() const {
  std::string out;
  for (const auto& [key, p] : pipelines_) out += p->name() + ": " + p->statistics() + "\n";
  return out;
}

Kernels::MatvecShape Kernels::matvec_shape_for(uint32_t rows, uint32_t subgroups, uint32_t multiprocessors,
                                               uint32_t wave_loads, MatvecShape streaming) {
  MatvecShape shape;
  if (multiprocessors == 0 || subgroups == 0) return shape;
  const uint64_t resident_subgroups = uint64_t{multiprocessors} * MATVEC_GROUPS_PER_SM * subgroups;
  shape.rows = static_cast<uint32_t>(
      std::clamp<uint64_t>((rows + resident_subgroups - 1) / resident_subgroups, MATVEC_DEFAULT_ROWS, MATVEC_WAVE_ROWS));
  if ((rows + shape.rows - 1) / shape.rows > resident_subgroups) return streaming;
  // In one wave only if its workgroups' registers let MATVEC_GROUPS_PER_SM of them share a
  // multiprocessor: at most `wave_loads` loads per lane in flight.
  shape.batch = std::min<uint32_t>(MATVEC_DEFAULT_BATCH, wave_loads / shape.rows);
  return shape;
}

Kernels::MatvecShape Kernels::matvec_shape(uint32_t rows, uint32_t encoding) const {
  if (matvec_shape_) return *matvec_shape_;
  // A CPU implementation (lavapipe) runs a subgroup's lanes as the SIMD lanes of one thread, where
  // the subgroup reduction that ends each row costs more than its loads: the most rows per
  // subgroup, one load each (preset a's unembedding, 201088 rows of 64: 100 -> 28 ms a token).
  if (ctx_.info().type == VK_PHYSICAL_DEVICE_TYPE_CPU) return MatvecShape{MATVEC_MAX_ROWS, 1};
  const bool int_dot = matvec_int_dot(encoding);
  return matvec_shape_for(rows, MATVEC_WORKGROUP_SIZE / ctx_.info().subgroup_size, ctx_.info().multiprocessors,
                          int_dot ? MATVEC_INT_DOT_WAVE_LOADS : MATVEC_WAVE_LOADS,
                          int_dot ? MatvecShape{MATVEC_INT_DOT_STREAM_ROWS, MATVEC_INT_DOT_STREAM_BATCH}
                                  : MatvecShape{MATVEC_STREAM_ROWS, MATVEC_STREAM_BATCH});
}

const Pipeline& Kernels::pipeline(const std::string& shader, uint32_t push_bytes, std::optional<uint32_t> encoding,
                                  AttentionConstants attention, std::optional<MatvecShape> matvec_constants) {
  const MatvecShape matvec = matvec_constants.value_or(MatvecShape{});
  auto& slot = pipelines_[{shader, encoding.value_or(0), attention, matvec.rows, matvec.batch}];
  if (!slot) {
    const auto shape = ctx_.info().cooperative_matrix.value_or(CooperativeMatrixShape{16, 16, 16});
    const bool mlp2 = shader == "expert_mlp2";
    const uint32_t specialization[] = {ctx_.info().subgroup_size,
                                       encoding.value_or(0),
                                       shader.starts_with("attention_prefill_coop") ? attention_precision_ : gemm_precision_,
                                       shape.m,
                                       shape.n,
                                       shape.k,
                                       mlp2 ? expert_shape_.mlp2_outputs : expert_shape_.mlp1_outputs,
                                       mlp2 ? expert_shape_.mlp2_batch : expert_shape_.mlp1_batch,
                                       attention.heads,
                                       attention.head_dim,
                                       matvec.rows,
                                       matvec.batch,
                                       attention.key_lanes,
                                       takes_accumulator_map(shader) && scaled_q8_0() ? accumulator_layout().value_or(0) : 0u,
                                       shader.starts_with("expert_gemm_coop_direct") ? operand_layout().value_or(0) : 0u,
                                       shader.starts_with("gemm_coop") ? dense_promote_ : 0u};
    const auto& registry = shader_registry();
    const auto spirv = registry.find(shader);
    if (spirv == registry.end()) throw std::logic_error("no embedded shader named " + shader);
    // Profiles name a kernel with its encoding: matvec.bf16, gemm.q8_0.
    const std::string label = encoding ? shader + "." + encoding_name(*encoding) : shader;
    slot = std::make_unique<Pipeline>(ctx_, label, spirv->second, push_bytes, specialization);
  }
  return *slot;
}

void Kernels::embed(DispatchList& list, const DeviceMatrix& table, Address tokens, Address x, uint32_t count) {
  require(table.cols % 8 == 0, "embed", limit("row width", table.cols, "is not a multiple of", 8));
  const abi::EmbedArgs args{table.address(), table.scales_address(), tokens, x, table.cols, count};
  list.dispatch(pipeline("embed", sizeof args, table.encoding), args, ceil_div(table.cols / 8, WORKGROUP_SIZE), count);
}

void Kernels::rmsnorm(DispatchList& list, Address x, Address weight, Address y, uint32_t dim, uint32_t rows,
                      uint32_t first_row, float eps) {
  const abi::RmsNormArgs args{x, weight, y, dim, rows, first_row, eps};
  list.dispatch(pipeline(float64_ ? "rmsnorm_f64" : "rmsnorm", sizeof args), args, rows);
}

void Kernels::matvec(DispatchList& list, const DeviceMatrix& weight, Address bias, Address x, Address norm, Address y,
                     bool accumulate, float eps) {
  require(weight.cols % 8 == 0, "matvec", limit("row width", weight.cols, "is not a multiple of", 8));
  require(weight.cols <= abi::kMaxMatvecCols, "matvec", limit("row width", weight.cols, ">", abi::kMaxMatvecCols));
  const uint32_t flags = (accumulate ? abi::MATVEC_ACCUMULATE : 0u) | (bias ? abi::MATVEC_BIAS : 0u) |
                         (norm ? abi::MATVEC_NORM : 0u);
  const abi::MatvecArgs args{weight.address(), weight.scales_address(), bias, x, norm, y, weight.rows, weight.cols,
                             flags, eps};
  const MatvecShape shape = matvec_shape(weight.rows, weight.encoding);
  const uint32_t rows_per_group = MATVEC_WORKGROUP_SIZE / ctx_.info().subgroup_size * shape.rows;
  const auto [gx, gy] = split_grid(ceil_div(weight.rows, rows_per_group));
  list.dispatch(pipeline(matvec_int_dot(weight.encoding) ? "matvec_int_dot" : "matvec", sizeof args, weight.encoding, {},
                         shape),
                args, gx, gy);
}

namespace {
void check_attention_shape(const char* kernel, const Kernels::AttentionShape& s) {
  require(s.kv_heads > 0 && s.heads % s.kv_heads == 0, kernel,
          limit("heads", s.heads, "are not a multiple of the KV heads", s.kv_heads));
  require(s.head_dim % 4 == 0 && s.head_dim <= abi::kMaxHeadDim, kernel,
          "head_dim " + std::to_string(s.head_dim) + " is not a multiple of 4 at most " + std::to_string(abi::kMaxHeadDim));
  const uint32_t group = s.heads / s.kv_heads;
  require(group <= abi::kMaxHeadsPerKvHead, kernel, limit("query heads per KV head", group, ">", abi::kMaxHeadsPerKvHead));
  require(group * s.head_dim <= abi::kMaxAttentionGroupValues, kernel,
          limit("query values per KV head", group * s.head_dim, ">", abi::kMaxAttentionGroupValues));
  require(s.cache_encoding == abi::ENC_F32 || s.cache_encoding == abi::ENC_F16, kernel,
          "KV cache encoding " + std::to_string(s.cache_encoding) + " is neither f32 nor f16");
}
// The attention kernels' pipelines specialized for the cache's encoding (profiles name the f16
// ones attention_decode.f16 ...; f32 keeps the plain names).
std::optional<uint32_t> cache_encoding(const Kernels::AttentionShape& s) {
  return s.cache_encoding == abi::ENC_F32 ? std::nullopt : std::optional<uint32_t>(s.cache_encoding);
}
}  // namespace

uint32_t Kernels::largest_divisor_within(uint32_t group, uint32_t most) {
  uint32_t heads = std::max<uint32_t>(1, std::min(group, most));
  while (group % heads != 0) --heads;
  return heads;
}

uint32_t Kernels::attention_heads_per_workgroup(uint32_t group) const { return largest_divisor_within(group, heads_asked_); }

uint32_t Kernels::decode_attention_resident(const AttentionShape& s) const {
  if (attention_key_lanes(s) == 2) return DECODE_ATTENTION_PAIRED_GROUPS_PER_SM;
  return s.cache_encoding == abi::ENC_F16 ? DECODE_ATTENTION_F16_GROUPS_PER_SM : DECODE_ATTENTION_GROUPS_PER_SM;
}

uint32_t Kernels::attention_key_lanes(const AttentionShape& s) const {
  // A key row's 16-byte words (f16 rows in 8-byte quads where head_dim is not a multiple of 8)
  // split evenly over the lanes, and a subgroup's block keeps a multiple of 4 keys.
  const uint32_t words = s.cache_encoding == abi::ENC_F16 && s.head_dim % 8 == 0 ? s.head_dim / 8 : s.head_dim / 4;
  const bool fits = ctx_.info().subgroup_shuffle && words % 2 == 0 && (ctx_.info().subgroup_size / 2) % 4 == 0;
  return key_lanes_asked_ == 2 && fits ? 2 : 1;
}

uint32_t Kernels::decode_attention_splits(const AttentionShape& s) const {
  const uint32_t keys = s.window ? std::min(s.window, s.slots) : s.slots;
  // Ranges of at least attention_range_keys() keys, at most the cap.
  return std::clamp<uint32_t>(ceil_div(keys, range_keys_), 1, split_cap_);
}

uint32_t Kernels::attention_wave_splits(uint32_t columns, uint32_t multiprocessors, uint32_t splits,
                                       uint32_t resident) {
  if (multiprocessors == 0 || columns == 0) return splits;
  return std::clamp<uint32_t>(multiprocessors * resident / columns, 1, splits);
}

uint64_t Kernels::decode_attention_partials(const AttentionShape& s) const {
  return uint64_t{s.heads} * decode_attention_splits(s) * (s.head_dim + 2);
}

void Kernels::attention_decode(DispatchList& list, const AttentionShape& s, Address qkv, Address k_cache,
                               Address v_cache, Address rope, Address step, Address sinks, Address target,
                               const Shared& shared, const AttentionPart& part) {
  check_attention_shape("attention_decode", s);
  const uint32_t group = s.heads / s.kv_heads;
  const uint32_t per_workgroup = part.heads_per_workgroup ? part.heads_per_workgroup : attention_heads_per_workgroup(group);
  // VulkanTuning::attention_splits, where set, is the cap as given; else the ranges fill the device once.
  const uint32_t resident = decode_attention_resident(s);
  const uint32_t splits = fixed_splits_
                              ? decode_attention_splits(s)
                              : attention_wave_splits(s.heads / per_workgroup, ctx_.info().multiprocessors,
                                                      decode_attention_splits(s), resident);
  require(per_workgroup >= 1 && group % per_workgroup == 0, "attention_decode",
          std::to_string(per_workgroup) + " query heads per workgroup do not divide the " + std::to_string(group) +
              " of a KV head");
  require(s.heads / per_workgroup <= kCounters, "attention_decode",
          limit("workgroup columns", s.heads / per_workgroup, ">", kCounters));
  const abi::AttentionDecodeArgs args{qkv,    k_cache, v_cache,         rope,       step,     shared.partials,
                                      sinks,  target,  shared.counters, s.kv_heads, s.window, s.slots,
                                      splits, s.scale, range_keys_,     group,      part.max_keys};
  const AttentionConstants constants{per_workgroup, s.head_dim, attention_key_lanes(s)};
  // Rows of ranges the part's most keys can fill (a part of short contexts needs one).
  const uint32_t rows = part.max_keys == UINT32_MAX ? splits
                                                     : std::clamp<uint32_t>(ceil_div(part.max_keys, range_keys_), 1, splits);
  list.dispatch(pipeline("attention_decode", sizeof args, cache_encoding(s), constants), args, s.heads / per_workgroup, rows);
}

void Kernels::rope_store(DispatchList& list, const AttentionShape& s, Address qkv, Address k_cache, Address v_cache,
                         Address rope, Address step, uint32_t count) {
  check_attention_shape("rope_store", s);
  const abi::RopeStoreArgs args{qkv, k_cache, v_cache, rope, step, s.heads, s.kv_heads, s.head_dim, s.slots, count};
  // Q pairs, K pairs two at a time, V values two at a time (rope_store.comp).
  const uint32_t per_token = s.heads * (s.head_dim / 2) + s.kv_heads * (s.head_dim / 4) + s.kv_heads * (s.head_dim / 2);
  list.dispatch(pipeline("rope_store", sizeof args, cache_encoding(s)), args, ceil_div(per_token, WORKGROUP_SIZE), count);
}

bool Kernels::prefill_attention_supports(uint32_t heads, uint32_t kv_heads, uint32_t head_dim) {
  if (kv_heads == 0 || heads % kv_heads) return false;
  const uint32_t group = heads / kv_heads;
  return head_dim % 4 == 0 && head_dim <= abi::kMaxPrefillHeadDim && ATTENTION_ROWS % group == 0;
}

uint32_t Kernels::prefill_sequence_multiple(uint32_t heads, uint32_t kv_heads) {
  const uint32_t group = heads / kv_heads;
  return std::lcm(std::lcm(uint32_t{ATTENTION_KEY_BLOCK}, uint32_t{ATTENTION_ROWS} / group),
                  uint32_t{ATTENTION_COOP_ROWS} / group);
}

void Kernels::attention_prefill(DispatchList& list, const AttentionShape& s, Address qkv, Address k_cache,
                                Address v_cache, Address sinks, Address step, Address target, uint32_t count) {
  check_attention_shape("attention_prefill", s);
  require(prefill_attention_supports(s.heads, s.kv_heads, s.head_dim), "attention_prefill",
          "needs head_dim <= " + std::to_string(abi::kMaxPrefillHeadDim) + " and query heads per KV head dividing " +
              std::to_string(ATTENTION_ROWS));
  const abi::AttentionPrefillArgs args{qkv,     k_cache,  v_cache, sinks,   step,  target, s.heads,
                                       s.kv_heads, s.head_dim, s.window, s.slots, count, s.scale};
  const bool coop = prefill_attention_cooperative();
  const uint32_t queries_per_group = (coop ? ATTENTION_COOP_ROWS : ATTENTION_ROWS) / (s.heads / s.kv_heads);
  const std::string shader = coop ? in_coop_form("attention_prefill_coop") : "attention_prefill";
  list.dispatch(pipeline(shader, sizeof args, cache_encoding(s)), args, s.kv_heads, ceil_div(count, queries_per_group));
}

// The cooperative kernel's three parts of Q (before the first key block, half its rows at a time)
// and its f32 output (after the last) lie over all of its shared memory; its rows are a multiple of
// the f32 kernel's (so every group that divides one divides the other), and its head dims cover
// every head_dim the f32 kernel takes.
static_assert(3 * (ATTENTION_COOP_ROWS / 2) * (ATTENTION_COOP_DIMS / 8 + 1) * 16 <= ATTENTION_COOP_SHARED_BYTES &&
                  ATTENTION_COOP_ROWS * (ATTENTION_COOP_DIMS / 4 + 1) * 16 <= ATTENTION_COOP_SHARED_BYTES &&
                  ATTENTION_COOP_ROWS % ATTENTION_ROWS == 0 && ATTENTION_COOP_DIMS >= abi::kMaxPrefillHeadDim &&
                  ATTENTION_COOP_SHARED_BYTES <= 49152,
              "attention_prefill_coop's tiles");

bool Kernels::prefill_attention_cooperative() const {
  if (!attention_coop_ || !cooperative() || ATTENTION_COOP_SHARED_BYTES > ctx_.info().max_shared_memory) return false;
  // Its tiles take matrices of 8 or 16 rows, columns and depth (the device's shape).
  const auto shape = ctx_.info().cooperative_matrix.value_or(CooperativeMatrixShape{});
  const auto fits = [](uint32_t n) { return n == 8 || n == 16; };
  return fits(shape.m) && fits(shape.n) && fits(shape.k);
}

std::optional<uint32_t> Kernels::accumulator_layout_map(std::span<const float> probe) {
  constexpr uint32_t kLanes = 32, kCols = 16;
  if (probe.size() != kLanes * COOP_ACC_ELEMENTS + 1 || probe.back() != float{COOP_ACC_ELEMENTS}) return std::nullopt;
  // Lane 0 (rows 0 and 8, columns 0, 1, 8 and 9) names each element's place; every lane must then
  // hold its own places by COOP_ACC_ROW / COOP_ACC_COL, and no place twice.
  uint32_t map = 0;
  for (uint32_t e = 0; e < COOP_ACC_ELEMENTS; ++e) {
    const float v = probe[e];
    const uint32_t index = v >= 0 && v < 256 ? static_cast<uint32_t>(v) : 256;
    const uint32_t row = index / kCols, col = index % kCols;
    if ((row != 0 && row != 8) || (col != 0 && col != 1 && col != 8 && col != 9)) return std::nullopt;
    map |= ((col & 1u) | ((col / 8) << 1) | ((row / 8) << 2)) << (3 * e);
  }
  std::vector<bool> seen(kLanes * COOP_ACC_ELEMENTS, false);
  for (uint32_t lane = 0; lane < kLanes; ++lane)
    for (uint32_t e = 0; e < COOP_ACC_ELEMENTS; ++e) {
      const uint32_t index = COOP_ACC_ROW(map, lane, e) * kCols + COOP_ACC_COL(map, lane, e);
      if (probe[lane * COOP_ACC_ELEMENTS + e] != static_cast<float>(index) || seen[index]) return std::nullopt;
      seen[index] = true;
    }
  return map;
}

bool Kernels::scaled_q8_0() const {
  return scaled_q8_0_ && cooperative() && gemm_precision_ >= abi::COOP_PROMOTED && accumulator_layout().has_value();
}

bool Kernels::takes_accumulator_map(std::string_view shader) {
  if (shader.ends_with(kKhrForm)) shader.remove_suffix(kKhrForm.size());
  return shader == "gemm_coop" || shader == "gemm_coop_wide";
}

std::string Kernels::in_coop_form(std::string_view shader) const {
  return std::string(shader) + (coop_khr_ ? std::string(kKhrForm) : "");
}

std::vector<float> Kernels::accumulator_layout_probe() const {
  // In the form the GEMMs that read the map run in: each form's matrices may lie differently.
  const Pipeline probe(ctx_, in_coop_form("coop_layout"), sizeof(abi::CoopLayoutArgs));
  const Buffer out(ctx_, 2 * COOP_LAYOUT_B_PROBE * sizeof(float), true);
  const abi::CoopLayoutArgs args{out.address()};
  ctx_.dispatch_once(probe, &args, sizeof args, 1);
  const auto* values = static_cast<const float*>(out.mapped());
  return {values, values + 2 * COOP_LAYOUT_B_PROBE};
}

std::optional<uint32_t> Kernels::accumulator_layout() const {
  const auto shape = ctx_.info().cooperative_matrix.value_or(CooperativeMatrixShape{});
  if (!cooperative() || shape.m != 16 || shape.n != 16 || shape.k != 16) return std::nullopt;  // COOP_ACC_* are 16 x 16
  if (!layout_probed_) {
    const auto probe = accumulator_layout_probe();
    const std::span<const float> all(probe);
    accumulator_map_ = accumulator_layout_map(all.first(COOP_LAYOUT_B_PROBE));
    operand_map_ = accumulator_layout_map(all.subspan(COOP_LAYOUT_B_PROBE));
    layout_probed_ = true;
  }
  return accumulator_map_;
}

// In the KHR form only, whose matrices carry their use: the direct expert tile writes B operands
// element by element, measured there (the NV form's types have no use to fix their layout by).
std::optional<uint32_t> Kernels::operand_layout() const {
  return coop_khr_ && accumulator_layout().has_value() ? operand_map_ : std::nullopt;
}

uint32_t Kernels::router_groups(uint32_t experts, bool logits) { return logits ? experts : 1; }

void Kernels::router(DispatchList& list, const DeviceMatrix& weight, Address bias, Address x, Address norm,
                     const RouterOutputs& out, uint32_t k, uint32_t count, float eps) {
  require(weight.rows <= abi::kMaxExperts, "router", limit("experts", weight.rows, ">", abi::kMaxExperts));
  require(k >= 1 && k <= abi::kMaxExpertsPerToken && k <= weight.rows, "router",
          "experts per token " + std::to_string(k) + " outside 1 .. min(" + std::to_string(abi::kMaxExpertsPerToken) +
              ", experts)");
  require(weight.cols % 8 == 0, "router", limit("hidden", weight.cols, "is not a multiple of", 8));
  require(weight.cols <= abi::kMaxRouterHidden, "router", limit("hidden", weight.cols, ">", abi::kMaxRouterHidden));
  require(count == 1 || out.logits == 0, "router", "writes logits for one token only, not " + std::to_string(count));
  const abi::RouterArgs args{x,           norm,        weight.address(), weight.scales_address(), bias, out.xn,
                             out.chosen,  out.gate_weights, out.logits,  weight.cols, weight.rows, k, count, eps};
  // Sums in double where the device has them (router.glsl: a logit rounded once, as the CPU engine's);
  // one token's router is its own kernel (router_decode.glsl: every load at once).
  const bool decode = out.logits != 0;
  const char* shader = decode ? (float64_ ? "router_decode_f64" : "router_decode") : (float64_ ? "router_f64" : "router");
  list.dispatch(pipeline(shader, sizeof args, weight.encoding), args, router_groups(weight.rows, decode), count);
}

namespace {
void check_choices(const char* kernel, const Kernels::Choices& c, uint32_t k) {
  require(c.logits != 0 && c.chosen != 0 && c.gate_weights != 0, kernel,
          "ranks the router's logits and writes the choices for mlp2: logits, chosen and gate_weights need addresses");
  require(c.experts >= k && c.experts <= abi::kMaxExperts, kernel,
          "ranks " + std::to_string(c.experts) + " logits for " + std::to_string(k) + " experts per token; at most " +
              std::to_string(abi::kMaxExperts));
}

void check_experts(const char* kernel, const DeviceExperts& e, uint32_t k) {
  require(e.cols % 32 == 0, kernel, limit("input width", e.cols, "is not a multiple of", 32));
  require(e.cols <= abi::kMaxExpertDepth, kernel, limit("input width", e.cols, ">", abi::kMaxExpertDepth));
  require(k >= 1 && k <= abi::kMaxExpertsPerToken, kernel, limit("experts per token", k, ">", abi::kMaxExpertsPerToken));
}
}  // namespace

void Kernels::expert_mlp1(DispatchList& list, const DeviceExperts& mlp1, Address bias, Address x,
                          const Choices& choices, Address act, uint32_t k, float limit_value) {
  check_experts("expert_mlp1", mlp1, k);
  check_choices("expert_mlp1", choices, k);
  const uint32_t intermediate = mlp1.rows / 2;
  const abi::ExpertMlp1Args args{mlp1.blocks_address(), mlp1.scales_address(), bias, x, choices.chosen,
                                 choices.gate_weights, choices.logits, act, mlp1.cols, intermediate, k,
                                 choices.experts, limit_value};
  // One subgroup per (slot, group of outputs), every slot's groups in one row of workgroups.
  const uint32_t subgroups = EXPERT_WORKGROUP_SIZE / ctx_.info().subgroup_size;
  const uint32_t items = k * ceil_div(intermediate, expert_shape_.mlp1_outputs);
  list.dispatch(pipeline("expert_mlp1", sizeof args, mlp1.encoding), args, ceil_div(items, subgroups));
}

uint64_t Kernels::expert_mlp2_partials(uint32_t hidden, uint32_t k) { return uint64_t{hidden} * k; }

void Kernels::expert_mlp2(DispatchList& list, const DeviceExperts& mlp2, Address bias, Address act, Address chosen,
                          Address gate_weights, Address residual, uint32_t k, const Shared& shared) {
  check_experts("expert_mlp2", mlp2, k);
  const abi::ExpertMlp2Args args{mlp2.blocks_address(), mlp2.scales_address(), bias,           act,
                                 chosen,                 gate_weights,           residual,       shared.partials,
                                 shared.counters,        mlp2.rows,              mlp2.cols,      k};
  const uint32_t groups = ceil_div(mlp2.rows, EXPERT_WORKGROUP_SIZE / ctx_.info().subgroup_size * expert_shape_.mlp2_outputs);
  require(groups <= kCounters, "expert_mlp2", limit("output groups", groups, ">", kCounters));
  list.dispatch(pipeline("expert_mlp2", sizeof args, mlp2.encoding), args, groups, k);
}

void Kernels::argmax(DispatchList& list, Address values, Address result, uint32_t count, const Shared& shared) {
  const abi::ArgmaxArgs args{values, result, shared.partials, shared.counters, count};
  list.dispatch(pipeline("argmax", sizeof args), args, std::clamp<uint32_t>(ceil_div(count, 4096), 1, ARGMAX_GROUPS));
}

void Kernels::split_halves(DispatchList& list, Address a, uint32_t a_stride, uint32_t rows, uint32_t cols,
                           const Halves& halves) {
  require(cols % 8 == 0 && a_stride % 4 == 0, "split_halves", "rows of " + std::to_string(cols) + " values are not whole 8-value groups");
  const float lo_scale = gemm_precision_ >= abi::COOP_PROMOTED ? abi::COOP_LO_SCALE : 1.0f;
  const abi::SplitHalvesArgs args{a, halves.hi, halves.lo, rows, cols, a_stride, lo_scale};
  list.dispatch(pipeline("split_halves", sizeof args), args, ceil_div(cols / 8, WORKGROUP_SIZE), rows);
}

void Kernels::gemm(DispatchList& list, const DeviceMatrix& weight, Address bias, Address a, uint32_t a_stride,
                   Address c, uint32_t c_stride, uint32_t rows, bool accumulate, const Halves& halves) {
  require(weight.cols % GEMM_TILE_K == 0, "gemm", limit("depth", weight.cols, "is not a multiple of", GEMM_TILE_K));
  require(a_stride % 4 == 0, "gemm", limit("input row stride", a_stride, "is not a multiple of", 4));
  const uint32_t flags = (accumulate ? abi::GEMM_ACCUMULATE : 0u) | (bias ? abi::GEMM_BIAS : 0u);
  const abi::GemmArgs args{halves.hi, halves.lo, a, weight.address(), weight.scales_address(), bias, c, rows,
                           weight.rows, weight.cols, a_stride, c_stride, flags};
  // F32 weights would round to f16; depths the cooperative step does not divide go portable too.
  const bool coop = cooperative() && weight.encoding != abi::ENC_F32 && weight.cols % COOP_TILE_K == 0;
  // The wide tile holds one W part: only weights whose values f16 holds exactly, and Q8_0's quants
  // where their d goes onto the sums (scaled_q8_0).
  const bool wide = coop && dense_tile_ == COOP_DENSE_WIDE_TILE_N &&
                    (weight.encoding == abi::ENC_F16 || weight.encoding == abi::ENC_BF16 ||
                     (weight.encoding == abi::ENC_Q8_0 && scaled_q8_0()));
  if (coop) split_halves(list, a, a_stride, rows, weight.cols, halves);
  // The cooperative kernels take row tiles along x (gemm_coop.glsl), the portable one W tiles.
  const uint32_t w_tiles = ceil_div(weight.rows, wide ? COOP_DENSE_WIDE_TILE_N : GEMM_TILE_N);
  const uint32_t row_tiles = ceil_div(rows, GEMM_TILE_M);
  list.dispatch(pipeline(!coop ? "gemm" : in_coop_form(wide ? "gemm_coop_wide" : "gemm_coop"), sizeof args, weight.encoding), args,
                coop ? row_tiles : w_tiles, coop ? w_tiles : row_tiles);
}

// moe_route's tiles are never shorter than the short and direct expert tiles' rows.
static_assert(COOP_EXPERT_DIRECT_TILE_M >= COOP_EXPERT_SHORT_TILE_M && GEMM_TILE_M >= COOP_EXPERT_SHORT_TILE_M);
uint32_t Kernels::max_moe_tiles(uint32_t choices, uint32_t experts) {
  return ceil_div(choices, COOP_EXPERT_SHORT_TILE_M) + std::min(choices, experts);
}

bool Kernels::expert_cooperative(const DeviceExperts& weights) const {
  return cooperative() && weights.cols % COOP_TILE_K == 0 && weights.encoding == abi::ENC_MXFP4;  // its tile decodes MXFP4
}

// The short tile (32 rows) where the experts average fewer than 32 rows (synth:120b's 128 experts
// at 512 tokens: 16 rows each on average): a 64-row tile would then be mostly empty, its W
// decoding, stores and barriers serving few rows while the subgroups of its second half idle. The wide tile where they average a whole 64-row tile
// or more: its 12 subgroups on a multiprocessor hide more of each other's waits than the narrow
// tile's 8 (all its registers allow), and each A tile serves 192 weight rows. Between the two the
// narrow tile (docs/results.md).
uint32_t Kernels::cooperative_expert_tile(uint32_t tuned, uint32_t choices, uint32_t experts) {
  if (tuned != 0) return tuned;
  if (uint64_t{choices} < uint64_t{COOP_EXPERT_SHORT_TILE_M} * experts) return COOP_EXPERT_SHORT_TILE_N;
  return uint64_t{choices} >= uint64_t{GEMM_TILE_M} * experts ? COOP_EXPERT_WIDE_TILE_N : COOP_EXPERT_TILE_N;
}

// The direct tile wherever the device's B layout is known and no tile is asked for: at the 20b's
// 64 rows an expert it prefilled faster than the wide tile, and at synth:120b's 16 than the short
// one (docs/results.md), its two workgroups a multiprocessor each waiting at its own barriers.
bool Kernels::expert_direct(const DeviceExperts& weights) const {
  return expert_tile_ == 0 && expert_cooperative(weights) && operand_layout().has_value();
}

uint32_t Kernels::expert_tile_width(const DeviceExperts& weights, uint32_t choices) const {
  if (!expert_cooperative(weights)) return GEMM_TILE_N;
  return expert_direct(weights) ? COOP_EXPERT_DIRECT_TILE_N : cooperative_expert_tile(expert_tile_, choices, weights.experts);
}

uint32_t Kernels::expert_tile_rows(const DeviceExperts& weights, uint32_t choices) const {
  if (expert_direct(weights)) return COOP_EXPERT_DIRECT_TILE_M;
  return expert_tile_width(weights, choices) == COOP_EXPERT_SHORT_TILE_N ? COOP_EXPERT_SHORT_TILE_M : GEMM_TILE_M;
}

uint32_t Kernels::expert_column_tiles(const DeviceExperts& weights, uint32_t choices) const {
  return ceil_div(weights.rows, expert_tile_width(weights, choices));
}

void Kernels::moe_route(DispatchList& list, Address chosen, const MoeTables& tables, uint32_t count, uint32_t k,
                        const DeviceExperts& mlp1, const DeviceExperts& mlp2) {
  require(mlp1.experts == mlp2.experts, "moe_route", limit("mlp1 experts", mlp1.experts, "differ from mlp2's", mlp2.experts));
  require(mlp1.experts <= abi::kMaxExperts, "moe_route", limit("experts", mlp1.experts, ">", abi::kMaxExperts));
  require(tables.choices == count * k, "moe_route",
          limit("MoeTables::choices", tables.choices, "is not tokens * k", count * k));
  const abi::MoeRouteArgs args{chosen,
                               tables.assign_token,
                               tables.row_of,
                               tables.tiles,
                               tables.dispatch->address(),
                               count,
                               k,
                               mlp1.experts,
                               expert_column_tiles(mlp1, tables.choices),
                               expert_column_tiles(mlp2, tables.choices),
                               // Every kernel takes tiles of fewer rows than its own.
                               std::min(expert_tile_rows(mlp1, tables.choices), expert_tile_rows(mlp2, tables.choices))};
  list.dispatch(pipeline("moe_route", sizeof args), args, 1);
}

void Kernels::expert_gemm(DispatchList& list, const DeviceExperts& weights, Address bias, Address a, uint32_t a_rows,
                          const MoeTables& tables, Address target, bool first_projection, float limit_value,
                          const Halves& halves) {
  require(weights.cols % GEMM_TILE_K == 0, "expert_gemm", limit("depth", weights.cols, "is not a multiple of", GEMM_TILE_K));
  require(!first_projection || weights.rows % 2 == 0, "expert_gemm", "gate/up rows come in pairs");
  const uint32_t flags = first_projection ? (abi::EXPERT_SWIGLU | abi::EXPERT_GATHER) : 0u;
  const abi::ExpertGemmArgs args{halves.hi, halves.lo, a,       tables.assign_token, weights.blocks_address(),
                                 weights.scales_address(), bias, tables.tiles, target, weights.cols,
                                 weights.rows, flags, limit_value};
  const bool coop = expert_cooperative(weights);
  if (coop) split_halves(list, a, weights.cols, a_rows, weights.cols, halves);
  const uint32_t width = expert_tile_width(weights, tables.choices);
  const char* shader = !coop                                 ? "expert_gemm"
                       : expert_direct(weights)            ? "expert_gemm_coop_direct"
                       : width == COOP_EXPERT_WIDE_TILE_N  ? "expert_gemm_coop_wide"
                       : width == COOP_EXPERT_SHORT_TILE_N ? "expert_gemm_coop_short"
                                                           : "expert_gemm_coop";
  list.dispatch_indirect(pipeline(coop ? in_coop_form(shader) : shader, sizeof args, weights.encoding), args,
                         *tables.dispatch, first_projection ? 0 : 12);
}

void Kernels::moe_combine(DispatchList& list, Address y, const MoeTables& tables, Address chosen, Address gate_weights,
                          Address x, uint32_t hidden, uint32_t k, uint32_t count) {
  require(hidden % 4 == 0, "moe_combine", limit("hidden", hidden, "is not a multiple of", 4));
  require(k <= abi::kMaxExpertsPerToken, "moe_combine", limit("experts per token", k, ">", abi::kMaxExpertsPerToken));
  const abi::MoeCombineArgs args{y, tables.row_of, chosen, gate_weights, x, hidden, k, count};
  list.dispatch(pipeline("moe_combine", sizeof args), args, count);
}

}  // namespace gptoss::vk
