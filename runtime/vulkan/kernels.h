#pragma once
// The Vulkan engine's kernels (shaders/*.comp), each behind one typed launcher that owns its
// geometry and its preconditions: it checks the shape against the limits the kernel is written
// for (shaders/kernel_abi.h, shared with the GLSL) and throws std::runtime_error naming the
// kernel and the violated limit, fills the kernel's arguments and appends the dispatch. Buffers
// are passed by device address (Buffer::address() plus a byte offset where a launcher reads part
// of a buffer). Pipelines are built on first use per (kernel, encoding) and kept.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "runtime/engine.h"
#include "runtime/vulkan/device_tensors.h"
#include "runtime/vulkan/dispatch_list.h"
#include "runtime/vulkan/vulkan_context.h"
#include "shaders/kernel_abi.h"

namespace gptoss::vk {

using Address = uint64_t;

class Kernels {
 public:
  // `tuning`'s kernel shapes and switches (runtime/engine.h); throws std::invalid_argument naming
  // a field outside the limits its kernel is written for.
  explicit Kernels(const Context& ctx, const runtime::VulkanTuning& tuning = {});
  const Context& context() const { return ctx_; }

  // x[t] = table row tokens[t], t < count.
  void embed(DispatchList& list, const DeviceMatrix& table, Address tokens, Address x, uint32_t count);
  // y[r] = RMSNorm(x[first_row + r]) * weight, r < rows.
  void rmsnorm(DispatchList& list, Address x, Address weight, Address y, uint32_t dim, uint32_t rows,
               uint32_t first_row, float eps);
  // y (+)= W x' (+ bias), x' = x or RMSNorm(x) * norm (norm != 0). flags: abi::MATVEC_*.
  void matvec(DispatchList& list, const DeviceMatrix& weight, Address bias, Address x, Address norm, Address y,
              bool accumulate, float eps);
  struct AttentionShape {
    uint32_t heads, kv_heads, head_dim, window, slots;
    float scale;
    uint32_t cache_encoding = abi::ENC_F32;  // the KV caches': ENC_F32 or ENC_F16 (pairs of dims per word)
  };
  // Scratch that workgroups of one dispatch share: `counters` (zero, and left zero) and
  // `partials`, sized by decode_attention_partials / expert_mlp2_partials.
  struct Shared {
    Address partials, counters;
  };
  // Decode attention over key ranges of at least attention_range_keys() keys: the dispatch has as
  // many workgroups per KV head as the layer's most keys (its window, or its cache slots) fill, at
  // most the cap; the kernel uses as many as the keys at the step's position fill. Merged with the
  // sinks into target.
  uint32_t decode_attention_splits(const AttentionShape& shape) const;
  uint32_t attention_split_cap() const { return split_cap_; }  // kDefaultAttentionSplits, or the tuning's
  // The ranges a dispatch of `columns` workgroups per range row uses: at most `splits`, and where
  // the device says how many multiprocessors it has, no more rows than fill them once (`resident`
  // workgroups each at the kernel's registers: DECODE_ATTENTION_*GROUPS_PER_SM): a second wave
  // repeats a workgroup's whole chain of loads and merges (faster on the H100 with either cache
  // type: 1d04c87, 51b6520).
  static uint32_t attention_wave_splits(uint32_t columns, uint32_t multiprocessors, uint32_t splits,
                                        uint32_t resident = 1);
  uint32_t attention_range_keys() const { return range_keys_; }  // DECODE_ATTENTION_SIZE, or the tuning's
  // Lanes per key in decode attention's score loop: 2 (the tuning may ask for one) where the device
  // shuffles within subgroups and the shape splits evenly, else 1. Two lanes hold half a key row
  // each, so a row in flight takes half the registers: with an f32 cache two workgroups fit an SM
  // instead of one (8f1ad56).
  uint32_t attention_key_lanes(const AttentionShape& shape) const;
  // Decode attention's workgroups per multiprocessor at its registers (DECODE_ATTENTION_*GROUPS_PER_SM).
  uint32_t decode_attention_resident(const AttentionShape& shape) const;
  // Query heads per workgroup of a KV head's `group`: the largest divisor of the group within
  // the tuning's attention_heads, or within kDefaultAttentionHeads (the engine's shape beyond one range).
  uint32_t attention_heads_per_workgroup(uint32_t group) const;
  bool attention_heads_fixed() const { return fixed_heads_; }  // the tuning sets attention_heads
  // The largest divisor of a KV head's `group` of query heads that is at most `most`.
  static uint32_t largest_divisor_within(uint32_t group, uint32_t most);
  uint64_t decode_attention_partials(const AttentionShape& shape) const;  // floats
  // Query heads per workgroup (0: attention_heads_per_workgroup) and the most keys at the step's
  // position the dispatch is made for (its rows of ranges; beyond them it returns at once).
  struct AttentionPart {
    uint32_t heads_per_workgroup, max_keys;
  };
  void attention_decode(DispatchList& list, const AttentionShape& shape, Address qkv, Address k_cache,
                        Address v_cache, Address rope, Address step, Address sinks, Address target,
                        const Shared& shared, const AttentionPart& part);
  // Every position, attention_heads_per_workgroup's shape.
  void attention_decode(DispatchList& list, const AttentionShape& shape, Address qkv, Address k_cache,
                        Address v_cache, Address rope, Address step, Address sinks, Address target,
                        const Shared& shared) {
    attention_decode(list, shape, qkv, k_cache, v_cache, rope, step, sinks, target, shared, {0, UINT32_MAX});
  }
  void rope_store(DispatchList& list, const AttentionShape& shape, Address qkv, Address k_cache, Address v_cache,
                  Address rope, Address step, uint32_t count);
  void attention_prefill(DispatchList& list, const AttentionShape& shape, Address qkv, Address k_cache,
                         Address v_cache, Address sinks, Address step, Address target, uint32_t count);
  // Whether attention_prefill handles the shape (else the engine prefills through decode steps).
  static bool prefill_attention_supports(uint32_t heads, uint32_t kv_heads, uint32_t head_dim);
  // What the length of sequences packed in one prefill submit (StepState::sequence) must be a
  // multiple of: whole key blocks (ATTENTION_KEY_BLOCK) and whole query tiles of either kernel
  // (ATTENTION_ROWS or ATTENTION_COOP_ROWS / the query heads per KV head: 32 at gpt-oss's shapes),
  // so that no tile straddles two sequences and each sequence's key blocks
  // lie where they lie in the sequence alone. A supported shape's (prefill_attention_supports).
  static uint32_t prefill_sequence_multiple(uint32_t heads, uint32_t kv_heads);
  // Whether attention_prefill runs on cooperative matrices here (cooperative(), a matrix shape the
  // kernel tiles, its shared memory, and VulkanTuning::attention_coop), else the f32 kernel.
  bool prefill_attention_cooperative() const;
  // Where this device's 16 x 16 f32 cooperative matrices hold their elements, as the map of
  // COOP_ACC_* (the dense GEMMs of Q8_0 weights scale their sums element by element):
  // coop_layout.comp's output, read once; none where the elements do not lie as such a map can
  // say, or the GEMMs are not cooperative or not of 16 x 16 x 16 matrices.
  std::optional<uint32_t> accumulator_layout() const;
  // Where its 16 x 16 f16 B operands, loaded as the GEMMs load W, hold their elements (the W row
  // as the map's row, the depth as its column: SPEC_COOP_B_MAP), in the KHR form where
  // accumulator_layout() is known: what the direct expert tile needs.
  std::optional<uint32_t> operand_layout() const;
  // coop_layout.comp's output on this device: for the accumulator, then (from COOP_LAYOUT_B_PROBE)
  // the B operand, COOP_ACC_ELEMENTS values per lane of 32, then the elements per lane.
  std::vector<float> accumulator_layout_probe() const;
  // The map that output says, or none.
  static std::optional<uint32_t> accumulator_layout_map(std::span<const float> probe);
  // Whether the dense cooperative GEMMs take Q8_0 weights as their quants in one f16 part, each
  // block's d applied to the sums element by element (coop_tile.glsl's kScaledW): at
  // COOP_PROMOTED and COOP_PRECISE, where accumulator_layout() knows the device's layout.
  bool scaled_q8_0() const;
  // Whether a pipeline of `shader` (either form) takes the accumulator map (SPEC_COOP_ACC_MAP).
  static bool takes_accumulator_map(std::string_view shader);
  // The suffix of a cooperative kernel's VK_KHR_cooperative_matrix form in the shader registry
  // (shaders/CMakeLists.txt's KHR_FORM), and a kernel's name in the form this engine runs.
  static constexpr std::string_view kKhrForm = "_khr";
  std::string in_coop_form(std::string_view shader) const;
  bool khr_form() const { return coop_khr_; }  // VulkanTuning::coop_form as resolved for this device
  // xn, and each token's k choices in chosen and gate_weights; or with logits set (decode, one
  // token) xn and the logits [experts] only, which expert_mlp1 ranks (Choices::logits).
  struct RouterOutputs {
    Address xn, chosen, gate_weights, logits;
  };
  // Workgroups per token: one when the router ranks (several tokens), one per expert when it
  // writes logits (one token, out.logits set: router_decode.glsl).
  static uint32_t router_groups(uint32_t experts, bool logits);
  void router(DispatchList& list, const DeviceMatrix& weight, Address bias, Address x, Address norm,
              const RouterOutputs& out, uint32_t k, uint32_t count, float eps);
  // mlp1's experts: the router's logits [experts], which each workgroup ranks, the first writing
  // chosen and gate_weights [k] for mlp2.
  struct Choices {
    Address chosen, gate_weights, logits;
    uint32_t experts;
  };
  void expert_mlp1(DispatchList& list, const DeviceExperts& mlp1, Address bias, Address x, const Choices& choices,
                   Address act, uint32_t k, float limit);
  static uint64_t expert_mlp2_partials(uint32_t hidden, uint32_t k);  // floats
  void expert_mlp2(DispatchList& list, const DeviceExperts& mlp2, Address bias, Address act, Address chosen,
                   Address gate_weights, Address residual, uint32_t k, const Shared& shared);
  // Counters any launcher may use (uints).
  static constexpr uint32_t kCounters = 4096;
  // result: 2 words; shared.partials: 2 * ARGMAX_GROUPS floats.
  void argmax(DispatchList& list, Address values, Address result, uint32_t count, const Shared& shared);
  // Scratch for the cooperative GEMMs' split inputs: two arrays of halves, each holding at least
  // the A rows times the depth of any product the caller launches.
  struct Halves {
    Address hi, lo;
  };
  // C[m] (+)= A[m] W^T (+ bias), m < rows; A rows a_stride floats apart, C rows c_stride. On
  // cooperative matrices A is first split into `halves` (one split_halves dispatch).
  void gemm(DispatchList& list, const DeviceMatrix& weight, Address bias, Address a, uint32_t a_stride, Address c,
            uint32_t c_stride, uint32_t rows, bool accumulate, const Halves& halves);
  void split_halves(DispatchList& list, Address a, uint32_t a_stride, uint32_t rows, uint32_t cols, const Halves& halves);
  struct MoeTables {
    Address assign_token, row_of, tiles;
    const Buffer* dispatch;  // 6 uints: the two expert GEMMs' indirect grids
    uint32_t choices;        // the (token, expert) choices routed: tokens * k (picks the expert tiles' width)
  };
  // The grids it writes are those of the kernels expert_gemm picks for mlp1 and mlp2 now: route
  // again after force_portable.
  void moe_route(DispatchList& list, Address chosen, const MoeTables& tables, uint32_t count, uint32_t k,
                 const DeviceExperts& mlp1, const DeviceExperts& mlp2);
  // mlp1: act[row] = SwiGLU(xn[token of row] W1^T + b1); mlp2: y[row] = act[row] W2^T + b2.
  // a_rows: the rows of `a` (tokens for mlp1, tokens * k for mlp2), split into `halves` first on
  // cooperative matrices.
  void expert_gemm(DispatchList& list, const DeviceExperts& weights, Address bias, Address a, uint32_t a_rows,
                   const MoeTables& tables, Address target, bool first_projection, float limit, const Halves& halves);
  // The weight rows of expert_gemm's tiles for `choices` routed rows (GEMM_TILE_N on the portable kernel).
  uint32_t expert_tile_width(const DeviceExperts& weights, uint32_t choices) const;
  // The most rows of one expert that tile takes (moe_route's tiles): 32 for the short and direct
  // tiles, else 64.
  uint32_t expert_tile_rows(const DeviceExperts& weights, uint32_t choices) const;
  // Whether the expert GEMMs take the direct tile (expert_gemm_coop_direct.comp: W decoded straight
  // into the matrices' elements): cooperative, VulkanTuning::expert_tile unset, operand_layout() known.
  bool expert_direct(const DeviceExperts& weights) const;
  void moe_combine(DispatchList& list, Address y, const MoeTables& tables, Address chosen, Address gate_weights,
                   Address x, uint32_t hidden, uint32_t k, uint32_t count);

  // Whether the GEMMs run on cooperative matrices here (fp16 listed, subgroups of 32, not disabled);
  // F32 weights always take the portable kernel (f16 would round them).
  bool cooperative() const;
  // The decode expert kernels' shape: outputs per subgroup and blocks loaded per lane before use.
  struct ExpertShape {
    uint32_t mlp1_outputs = EXPERT_MLP1_OUTPUTS, mlp1_batch = EXPERT_MLP1_BATCH;
    uint32_t mlp2_outputs = EXPERT_MLP2_OUTPUTS, mlp2_batch = EXPERT_MLP2_BATCH;
  };
  const ExpertShape& expert_shape() const { return expert_shape_; }
  struct MatvecShape {
    uint32_t rows = MATVEC_DEFAULT_ROWS, batch = MATVEC_DEFAULT_BATCH;
  };
  // The shape of the matvec of a matrix of `rows` in `encoding`: the tuning's where set, else
  // matvec_shape_for(rows, ...) on this device with the loads its decoding leaves room for.
  MatvecShape matvec_shape(uint32_t rows, uint32_t encoding = abi::ENC_BF16) const;
  // Rows per subgroup: the fewest from MATVEC_DEFAULT_ROWS up to MATVEC_WAVE_ROWS whose workgroups
  // (of `subgroups` subgroups) fit `multiprocessors` at MATVEC_GROUPS_PER_SM each, in one wave: a
  // second, partial wave repeats a workgroup's whole chain of loads. The default where the device
  // does not say (multiprocessors 0).
  // In one wave, at most `wave_loads` rows x loads per lane (the registers that let
  // MATVEC_GROUPS_PER_SM workgroups share a multiprocessor): MATVEC_WAVE_LOADS for the float
  // decodings, MATVEC_INT_DOT_WAVE_LOADS for matvec_int_dot. A matrix that is not one wave even at
  // MATVEC_WAVE_ROWS takes `streaming` (MATVEC_STREAM_* or MATVEC_INT_DOT_STREAM_*).
  static MatvecShape matvec_shape_for(uint32_t rows, uint32_t subgroups, uint32_t multiprocessors,
                                      uint32_t wave_loads = MATVEC_WAVE_LOADS,
                                      MatvecShape streaming = {MATVEC_STREAM_ROWS, MATVEC_STREAM_BATCH});
  // Benchmarks compare the two on one device.
  void force_portable(bool portable) { force_portable_ = portable; }
  // The Q8_0 decode products through integer dot products (matvec_int_dot): VulkanTuning::integer_dot.
  bool integer_dot_product() const { return integer_dot_product_; }
  // Whether a matvec of weights in `encoding` takes matvec_int_dot.
  bool matvec_int_dot(uint32_t encoding) const { return encoding == abi::ENC_Q8_0 && integer_dot_product_; }
  // Every pipeline built so far with the driver's statistics of it (Pipeline::statistics).
  std::string pipeline_statistics() const;

  // The most tiles moe_route can list for `choices` rows over `experts` experts.
  static uint32_t max_moe_tiles(uint32_t choices, uint32_t experts);
  // The cooperative expert GEMM's weight rows per tile: `tuned` (VulkanTuning::expert_tile) where
  // set, else by the rows per expert (expert_tile_width, on cooperative matrices).
  static uint32_t cooperative_expert_tile(uint32_t tuned, uint32_t choices, uint32_t experts);

 private:
  // Decode attention's specialization: query heads per workgroup, head_dim and lanes per key (0
  // elsewhere).
  struct AttentionConstants {
    uint32_t heads, head_dim, key_lanes;  // {} : all 0
    auto operator<=>(const AttentionConstants&) const = default;
  };
  const Pipeline& pipeline(const std::string& shader, uint32_t push_bytes, std::optional<uint32_t> encoding = {},
                           AttentionConstants attention = {}, std::optional<MatvecShape> matvec = std::nullopt);
  // Whether expert_gemm takes the cooperative kernel for these weights, and its grid's columns.
  bool expert_cooperative(const DeviceExperts& weights) const;
  uint32_t expert_column_tiles(const DeviceExperts& weights, uint32_t choices) const;
  const Context& ctx_;
  bool force_portable_ = false;
  ExpertShape expert_shape_;
  std::optional<MatvecShape> matvec_shape_;  // the tuning's matvec_rows, matvec_loads
  bool integer_dot_product_;
  uint32_t split_cap_;
  bool fixed_splits_;
  uint32_t heads_asked_;
  bool fixed_heads_;
  uint32_t range_keys_;
  uint32_t key_lanes_asked_;
  uint32_t gemm_precision_;  // abi::COOP_* (VulkanTuning::GemmPrecision in the same order)
  bool float64_;             // the f64 forms of the router and RMSNorm
  bool attention_coop_;      // VulkanTuning::attention_coop
  uint32_t attention_precision_;  // abi::COOP_FAST or abi::COOP_PRECISE (VulkanTuning::attention_precision)
  bool coop_khr_;            // VulkanTuning::coop_form resolved: the cooperative kernels' *_khr pipelines
  bool scaled_q8_0_;         // VulkanTuning::scaled_q8_0
  uint32_t dense_tile_;      // the cooperative dense GEMM's weight rows per workgroup for F16/BF16 (VulkanTuning::dense_tile)
  uint32_t dense_promote_;   // the dense cooperative GEMMs' most depth between promotions (VulkanTuning::dense_promote; 0: the tile's)
  uint32_t expert_tile_;     // the cooperative expert GEMM's weight rows per workgroup (VulkanTuning::expert_tile; 0: by the rows)
  std::map<std::tuple<std::string, uint32_t, AttentionConstants, uint32_t, uint32_t>, std::unique_ptr<Pipeline>> pipelines_;
  mutable bool layout_probed_ = false;              // accumulator_layout() has asked the device
  mutable std::optional<uint32_t> accumulator_map_;  // its answer
  mutable std::optional<uint32_t> operand_map_;      // and the B operand's (operand_layout())
};

}  // namespace gptoss::vk
