#pragma once
// One interface for every engine that runs the GPT-OSS forward pass (the CPU reference engine in
// f32 or f64, the Vulkan engine): what a caller needs to prefill, decode, compare activations and
// read logits, whatever computes them. Tools, the parity tracer and the generation loop see only
// this; an engine is made by `make_engine` and never named by its class outside its own tests.
//
// The checks every engine shares live here, once: `forward` refuses token ids outside the
// vocabulary and contexts past the engine's capacity before the engine's own pass runs.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "convert/canonical_model.h"

namespace gptoss::runtime {

// Where in the forward pass an activation was observed. AttentionOutput is the residual stream
// after layer L's attention (the MoE's input, before its norm), so parity can say which half of a
// layer an engine's difference comes from and the router's logits can be recomputed from a trace.
// RouterChoices is a layer's routing, not an activation: per token the ids of its experts_per_token
// experts (as floats, exact) in the router's order (largest logit first, ties to the lowest id),
// so parity can name a token routed to other experts as such.
enum class Stage { Embedding, LayerOutput, RouterChoices, FinalNorm, AttentionOutput };
// "embedding", "attention L", "router L", "layer L", "final norm": how traces and tables name a stage.
std::string stage_name(Stage stage, int layer);

// Rows [first_position, first_position + rows) of an activation, row-major [rows, cols].
// LayerOutput is the residual stream after decoder layer `layer`, AttentionOutput after its
// attention, RouterChoices that layer's choices [rows, experts_per_token] (-1 for the other
// stages). An engine shows, for every layer, its AttentionOutput, then its RouterChoices, then its
// LayerOutput.
struct ActivationView {
  Stage stage;
  int layer;
  uint64_t first_position;
  size_t rows;
  size_t cols;
  std::span<const float> values;
};
using ActivationObserver = std::function<void(const ActivationView&)>;

// Which rows of logits a forward returns, counted among its new tokens (row 0: the first new
// token): None, Last (the last new token's), All (every new token's), or range(first, count): rows
// first .. first + count - 1 only, so the unembedding product and the copy to the caller cover just
// those (gptoss-eval scores positions ctx/2 .. ctx-2 of each chunk and asks for those).
// A range's rows are bit for bit the same rows of All on every engine. Last may differ from All's
// last row in the last bits (the Vulkan engine fuses the final norm into a matrix-vector product
// for it; the CPU engine takes a matrix-vector product instead of a GEMM).
struct LogitRows {
  enum class Kind : uint8_t { None, Last, All, Range };
  Kind kind = Kind::Last;
  uint64_t first = 0;  // Range only
  uint64_t count = 0;  // Range only (0: no rows, as None)

  static const LogitRows None, Last, All;
  static constexpr LogitRows range(uint64_t first, uint64_t count) { return {Kind::Range, first, count}; }
  // The first row and the number of rows a forward of `tokens` new tokens returns.
  constexpr uint64_t first_row(uint64_t tokens) const {
    return kind == Kind::Range ? first : kind == Kind::Last && tokens ? tokens - 1 : 0;
  }
  constexpr uint64_t row_count(uint64_t tokens) const {
    return kind == Kind::Range ? count : kind == Kind::All ? tokens : kind == Kind::Last && tokens ? 1 : 0;
  }
  friend constexpr auto operator<=>(const LogitRows&, const LogitRows&) = default;
};
inline constexpr LogitRows LogitRows::None{LogitRows::Kind::None};
inline constexpr LogitRows LogitRows::Last{LogitRows::Kind::Last};
inline constexpr LogitRows LogitRows::All{LogitRows::Kind::All};

enum class EngineKind { Cpu, CpuF64, Vulkan };
// "cpu", "cpu-f64", "vulkan": the names the CLIs take.
std::string_view engine_kind_name(EngineKind kind);
std::optional<EngineKind> engine_kind_from_name(std::string_view name);
const std::vector<std::string>& engine_kind_names();

// What the KV cache holds keys and values in. F16 halves the cache's memory and the bytes decode
// attention reads per key (llama.cpp's default cache type), at f16's precision (11 significant
// bits: a relative error up to 2^-11 per value). F32 is the default: the parity checks compare
// engines with it.
enum class KvCacheType : uint8_t { F32, F16 };
// "f32", "f16": the names the CLIs take (--kv-cache).
std::string_view kv_cache_type_name(KvCacheType type);
std::optional<KvCacheType> kv_cache_type_from_name(std::string_view name);
const std::vector<std::string>& kv_cache_type_names();

// How the Vulkan engine computes: the switches a user may want (each a CLI option of the tools:
// --profile, --pipeline-stats, --no-coopmat, --int-dot) and kernel shapes for comparing
// alternatives on a device (the tools' --tuning key=value,...: tools/common/vulkan_options.h).
// Parsed in tools/ only and carried here; the engine validates every field against the limits its
// kernels are written for (shaders/kernel_abi.h) and throws std::invalid_argument naming it.
// Defaults are the engine's own choices for the device.
struct VulkanTuning {
  // GPU time per kernel: Steps times every step of the recorded command buffers (the steps are
  // separated by barriers, so a step's time is its execution plus the barrier drain before it);
  // Submits times each command buffer as a whole (without the per-step timestamps' own cost):
  // the GPU's time per token, which against the wall time says how long it waits on the host.
  enum class Profile : uint8_t { Off, Steps, Submits };
  Profile profile = Profile::Off;
  // The driver's statistics of every pipeline built (registers, spills, shared memory), where the
  // device has VK_KHR_pipeline_executable_properties.
  bool pipeline_statistics = false;
  // false: the portable f32 GEMMs everywhere instead of cooperative matrices (as llama.cpp's
  // GGML_VK_DISABLE_COOPMAT).
  bool cooperative_matrix = true;
  // Prefill attention on cooperative matrices where the GEMMs have them
  // (shaders/attention_prefill_coop.comp: each layer's error against cpu-f64 that of the f32 kernel,
  // several times faster at depth; docs/results.md has both kernels' noise floors); false: the f32
  // kernel (attention_prefill.comp), which every device without cooperative matrices runs.
  bool attention_coop = true;
  // The cooperative GEMMs' and prefill attention's matrices: VK_KHR_cooperative_matrix's form
  // (matrices that carry their use) or VK_NV_cooperative_matrix's; the same tiles, products and
  // bits, the KHR kernels rewritten at build time from the NV ones' SPIR-V
  // (scripts/spirv_coop_khr.py). Auto: KHR where the device lists its 16x16x16 f16 product (on
  // NVIDIA's driver a dependent product's latency is about half the NV form's, and prefill faster:
  // docs/results.md), NV elsewhere.
  enum class CoopForm : uint8_t { Auto, Nv, Khr };
  CoopForm coop_form = CoopForm::Auto;
  // The dense cooperative GEMMs' Q8_0 weights as their quants in one f16 part with each block's d
  // applied to the sums (shaders/coop_tile.glsl's kScaledW), at Promoted and Precise where the
  // device's accumulator layout is known; false: d * q as two f16 parts.
  bool scaled_q8_0 = true;
  // Decode's Q8_0 products through packed 4x8-bit integer dot products: Auto where the device says
  // they are accelerated, On wherever it has them (emulated ones included), Off never.
  enum class IntegerDot : uint8_t { Auto, On, Off };
  IntegerDot integer_dot = IntegerDot::Auto;
  // The cooperative-matrix GEMMs' precision (shaders/coop_tile.glsl): Precise A and Q8_0 weights
  // as two f16 parts each (A within an f32 ulp), partial sums promoted every 64 of depth into f32
  // sums that keep each addition's rounding (TwoSum), so what is left is the tensor cores'
  // truncation within a step; Promoted the same with plain f32 additions (faster prefill:
  // docs/results.md); Split A as two parts only; Fast A and W rounded to f16. The portable GEMMs
  // are f32.
  enum class GemmPrecision : uint8_t { Fast, Split, Promoted, Precise };
  GemmPrecision gemm_precision = GemmPrecision::Precise;
  // Prefill attention on cooperative matrices (shaders/attention_prefill_coop.comp): Precise the
  // scores from three f16 parts of Q and K and the weighted values from two of P and V (each
  // layer's error against cpu-f64 the f32 kernel's); Fast one part of each, rounded to f16 (as
  // llama.cpp's flash attention: fewer products, registers and shared memory, and an error of
  // f16's precision). The f32 kernel is f32 either way.
  enum class AttentionPrecision : uint8_t { Fast, Precise };
  AttentionPrecision attention_precision = AttentionPrecision::Precise;
  // Sums in double where the device has shaderFloat64 (the router and RMSNorm, whose outputs are
  // then the CPU engine's bit for bit); false: in f32 everywhere.
  bool float64_sums = true;
  // Kernel shapes; 0 is the engine's choice.
  uint32_t attention_splits = 0;     // decode attention: the most key ranges per KV head
  uint32_t attention_heads = 0;      // decode attention: the most query heads per workgroup
  uint32_t attention_range = 0;      // decode attention: the fewest keys per range
  uint32_t attention_key_lanes = 0;  // decode attention: lanes per key (1 or 2)
  uint32_t matvec_rows = 0;          // decode matvec: rows per subgroup (with matvec_loads)
  uint32_t matvec_loads = 0;         // decode matvec: 8-value loads per lane and row in flight
  uint32_t mlp1_outputs = 0, mlp1_batch = 0;  // decode expert kernels: outputs per subgroup and blocks
  uint32_t mlp2_outputs = 0, mlp2_batch = 0;  // per lane in flight (all four, or none)
  uint32_t dense_tile = 0;           // prefill dense GEMM of F16/BF16 weights: weight rows per cooperative workgroup (64 or 128; 0: 128)
  uint32_t dense_promote = 0;        // prefill dense cooperative GEMMs at Promoted and Precise: the most depth between promotions of the partial sums (16, 32 or 64; 0: 64, a Q8_0 block's 32 for its quants)
  uint32_t expert_tile = 0;          // prefill expert GEMMs: weight rows per cooperative workgroup through a shared W tile (128 or 192 over 64 rows, 256 over 32); 0: the direct tile (32 x 128, W decoded into the matrices) where the device's B layout is known, else 256 where the experts average fewer than 32 rows, 192 where 64 or more, else 128
  friend bool operator==(const VulkanTuning&, const VulkanTuning&) = default;
};

// "vulkan", or "vulkan (f16 KV cache)" where the cache is not the default f32: how tables, JSON and
// traces name an engine.
std::string engine_label(EngineKind kind, KvCacheType kv_cache);

struct EngineOptions {
  // Positions the KV cache holds at most: forward refuses more. The Vulkan engine allocates them up
  // front; the CPU engine grows its cache as tokens arrive. Clamped to max_position_embeddings.
  uint64_t max_context = 4096;
  // Vulkan: the device to run on (an index of list_vulkan_devices()); none picks the best one.
  // make_engine refuses one for a CPU engine, as it refuses a prefill_chunk other than the default.
  std::optional<uint32_t> device_index;
  // Vulkan: tokens per submit when a forward has many (prefill); each chunk is one batched pass. A
  // row's logits do not depend on it (but a chunk of one token is a decode step: the vulkan engine's
  // docs); longer chunks fill the expert GEMMs' tiles and the dense products' waves better and take
  // more scratch memory.
  uint32_t prefill_chunk = 4096;
  // Every engine: the KV cache's encoding (the CPU engine rounds each key and value to f16 as it
  // stores them, so its results are the f16 cache's).
  KvCacheType kv_cache = KvCacheType::F32;
  // Vulkan: switches and kernel shapes (make_engine refuses any but the defaults for a CPU engine).
  VulkanTuning vulkan;
};

// Floats an engine's forwards write their logits into (Engine::logit_memory), and what holds them.
class LogitMemory {
 public:
  LogitMemory() = default;
  LogitMemory(std::span<float> values, std::shared_ptr<void> holder) : values_(values), holder_(std::move(holder)) {}
  std::span<float> values() const { return values_; }

 private:
  std::span<float> values_;
  std::shared_ptr<void> holder_;
};

class Engine {
 public:
  virtual ~Engine() = default;
  Engine() = default;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  virtual EngineKind kind() const = 0;
  // What computes: "CPU (f32)", or the Vulkan device's name and driver.
  virtual std::string device_description() const = 0;
  virtual const GptOssConfig& config() const = 0;
  uint32_t vocab_size() const { return config().vocab_size; }
  // Tokens held in the KV cache: the position the next token gets.
  virtual uint64_t position() const = 0;
  // Positions the KV cache can hold (position() + new tokens must not exceed it).
  virtual uint64_t capacity() const = 0;
  // Empties the KV cache.
  virtual void reset() = 0;
  // Device memory the engine holds now (weights, KV cache, scratch); 0 for engines on the host.
  // Engines that share a device through SharedDevices report what all of them hold.
  virtual uint64_t device_memory_bytes() const { return 0; }
  // What the engine was asked to measure so far, as text for a tool to print: the GPU time per
  // kernel (VulkanTuning::profile) and the pipelines' statistics; empty when nothing was asked.
  virtual std::string diagnostics() const { return {}; }

  // Runs `tokens` after everything in the cache (a prefill when the cache is empty, a decode step
  // for one token) and appends them to the cache. Writes the logits of the requested rows into
  // `logits`, row-major [rows.row_count(tokens.size()), vocab], resized to exactly that: a vector
  // reused across calls keeps its memory, so a caller that runs many forwards (gptoss-eval) pays
  // no allocation or page faults per call, and the CPU engine writes its product straight into it
  // (the Vulkan engine copies its mapped readback into it once). The observer sees the embedding,
  // every layer's residual stream and the final norm of all the new tokens. Throws
  // std::out_of_range, before anything runs, for a token id >= vocab_size(), a context past
  // capacity() or a row range past the new tokens.
  void forward(std::span<const uint32_t> tokens, LogitRows rows, std::vector<float>& logits,
               const ActivationObserver& observer = {});
  // The same, returning the logits in a new vector.
  std::vector<float> forward(std::span<const uint32_t> tokens, LogitRows rows = LogitRows::Last,
                             const ActivationObserver& observer = {});
  // Runs `sequences` independent sequences packed one after the other in `tokens` (each
  // tokens.size() / sequences tokens long), each as if after reset(), as llama-perplexity batches
  // the chunks of a text, and writes each sequence's `rows` (counted within that sequence, as
  // forward's), one sequence after the other: [sequences * rows.row_count(length), vocab]. Every
  // row is bit for bit what forward gives that sequence alone after reset(): an engine may run
  // several sequences in one pass (the Vulkan engine packs as many whole ones as its prefill chunk
  // holds) but never lets one see another. The cache is empty afterwards. Throws as forward does
  // (a sequence longer than capacity(), a token outside the vocabulary, rows past a sequence's
  // tokens) and std::invalid_argument where `tokens` is not `sequences` (at least one) equal parts.
  // Into the caller's memory: `logits` holds exactly that many floats (std::invalid_argument
  // otherwise), so a caller that runs many such forwards (gptoss-eval) allocates once, as it sees fit.
  void forward_sequences(std::span<const uint32_t> tokens, uint32_t sequences, LogitRows rows, std::span<float> logits);
  // The same into a vector resized to exactly that.
  void forward_sequences(std::span<const uint32_t> tokens, uint32_t sequences, LogitRows rows,
                         std::vector<float>& logits);
  // forward(tokens, Last) reduced to the id of the largest logit (ties to the lowest id: greedy
  // decoding). A device engine decides on the device and moves 8 bytes instead of the vocabulary.
  uint32_t forward_greedy(std::span<const uint32_t> tokens);
  // forward(tokens, Last) without the copy: a view of the last new token's vocab_size() logits,
  // valid until the engine's next forward or reset. A device engine hands over the host-visible
  // memory its device copy landed in, as llama.cpp's llama_get_logits does (the host copy of
  // 0.8 MB per token at the real vocabulary is most of what logits cost a decode step over greedy
  // decoding); the CPU engine its own vector. Throws as forward does.
  std::span<const float> forward_last(std::span<const uint32_t> tokens);
  // Memory for `floats` logits (at least one) that this engine's forwards write without a host
  // copy: the Vulkan engine's is host-visible memory of its device, which the GEMM over a submit's
  // logit rows writes straight into, where rows into any other memory come from its readback by a
  // copy on the host (820 MB a group of four 512-token chunks at the real vocabulary, during which
  // the device waits for that engine's next submit); for engines on the host, ordinary memory,
  // first touched on every core. Either is ready to be written at full speed (no page faults), and
  // forward_sequences gives the same bits into it as into any other memory. Freed with the last
  // copy of the handle, which may outlive the engine.
  LogitMemory logit_memory(size_t floats);

 protected:
  // The engine's pass; `tokens` is non-empty and checked, `rows` is None, Last, All or a range
  // inside the new tokens with count > 0, and `logits` holds exactly rows.row_count(tokens.size())
  // x vocab floats, to be overwritten.
  virtual void run_forward(std::span<const uint32_t> tokens, LogitRows rows, std::span<float> logits,
                           const ActivationObserver& observer) = 0;
  // forward_sequences's pass (checked; `rows` as run_forward takes them, per sequence, and `logits`
  // sized for every sequence's): by default each sequence after reset() through run_forward, then
  // reset().
  virtual void run_forward_sequences(std::span<const uint32_t> tokens, uint32_t sequences, LogitRows rows,
                                     std::span<float> logits);
  // The argmax of run_forward(tokens, Last); engines override it to decide where the logits are.
  virtual uint32_t run_forward_greedy(std::span<const uint32_t> tokens);
  // forward_last's pass (`tokens` non-empty and checked); by default run_forward into a vector the
  // engine keeps.
  virtual std::span<const float> run_forward_last(std::span<const uint32_t> tokens);
  // logit_memory's allocation (floats > 0); by default ordinary memory.
  virtual LogitMemory allocate_logit_memory(size_t floats);

 private:
  // The checks every forward makes before anything runs (ids, capacity), for tokens that start at
  // cache position `first`.
  void check_forward(std::span<const uint32_t> tokens, uint64_t first) const;
  void check_forward(std::span<const uint32_t> tokens) const { check_forward(tokens, position()); }
  // The checks of forward(tokens, rows, ...) where the tokens start at `first`, and `rows` as
  // run_forward takes it (an empty range: None).
  LogitRows check_forward(std::span<const uint32_t> tokens, LogitRows rows, uint64_t first) const;
  // The checks of forward_sequences, `rows` as run_forward_sequences takes it, and the floats it writes.
  size_t check_sequences(std::span<const uint32_t> tokens, uint32_t sequences, LogitRows& rows) const;
  std::vector<float> last_logits_;  // run_forward_last's, where an engine keeps no logits of its own
};

// A Vulkan device as --list-devices shows it (index: what EngineOptions::device_index takes).
struct DeviceDescription {
  uint32_t index = 0;
  std::string name, type, driver;
  uint64_t memory_bytes = 0;  // largest device-local heap
  uint32_t subgroup_size = 0;
  uint64_t max_storage_buffer_range = 0;
  bool usable = false;  // has a compute queue
  // Packed 4x8-bit integer dot products (VK_KHR_shader_integer_dot_product): "accelerated" (decode's
  // Q8_0 products use them), "supported" (emulated: they do not, unless VulkanTuning::integer_dot
  // is On), "none".
  std::string integer_dot_product;
  bool float64 = false;  // shaderFloat64: the router's sums in double, as the CPU engine's (else f32)
  // The 16x16x16 f16 products of cooperative matrices prefill can run on: "nv, khr" (both
  // extensions; the KHR form is VulkanTuning::coop_form's default), "nv", "khr" (listed, though the
  // engine's cooperative kernels need the NV extension too) or "none".
  std::string cooperative_matrix;
};
// Every Vulkan device the loader offers; throws std::runtime_error when Vulkan itself is unusable.
std::vector<DeviceDescription> list_vulkan_devices();

// Checks a list of devices that one run's models spread over (gptoss-eval --device 0,1: its
// Vulkan engines go to them in turn, each device a queue of its own). An index may repeat (those
// engines share that device). Throws std::invalid_argument naming the index that is no device of
// `devices` (list_vulkan_devices()) or has no compute queue, and naming both devices where two
// differ in name or driver: engines on different hardware may differ in their last bits, and a
// comparison of models would count that as the files' difference.
void check_device_list(std::span<const uint32_t> indices, std::span<const DeviceDescription> devices);

// Vulkan engines made through one SharedDevices on the same device (the same device_index and the
// same VulkanTuning::cooperative_matrix and pipeline_statistics) share that device's one queue:
// the GPU runs their submits one after the other in the order they come, so engines driven by
// threads of their own keep the GPU busy while each copies its logits to the host (gptoss-eval's
// models). Each engine is still used by one thread at a time. Without it, every Vulkan engine
// opens the device for itself, and engines running side by side share the GPU by time slices.
class SharedDevices {
 public:
  SharedDevices();
  ~SharedDevices();
  SharedDevices(const SharedDevices&) = delete;
  SharedDevices& operator=(const SharedDevices&) = delete;
  struct Contexts;  // make_engine's: the contexts opened so far

 private:
  std::unique_ptr<Contexts> contexts_;
  friend std::unique_ptr<Engine> make_engine(EngineKind, const CanonicalModel&, const EngineOptions&, SharedDevices*);
};

// Makes an engine of `kind` on `model`, a Vulkan one on `shared`'s device where given. Throws
// std::runtime_error when the engine cannot run here (no usable Vulkan device, a shape the kernels
// do not support, a model that does not fit beside what the shared device's engines hold),
// FormatError when a tensor's encoding or size is not what its shape needs, and
// std::invalid_argument, before anything is built, for an option the engine would ignore (a
// device_index or a prefill_chunk other than the default for a CPU engine).
std::unique_ptr<Engine> make_engine(EngineKind kind, const CanonicalModel& model, const EngineOptions& options = {},
                                    SharedDevices* shared = nullptr);

}  // namespace gptoss::runtime
