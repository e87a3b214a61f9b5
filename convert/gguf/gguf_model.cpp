// GPT-OSS <-> GGUF (llama.cpp's gpt-oss arch): metadata, tensors and tokenizer both ways. The
// container work is in formats/gguf; the streaming transforms in gguf_sources.h.
#include "convert/gguf/gguf_model.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <stdexcept>

#include "convert/dtype_convert.h"
#include "formats/codecs/float_codec.h"
#include "convert/gguf/gguf_names.h"
#include "convert/gguf/gguf_sources.h"
#include "convert/gguf/gguf_tokenizer.h"
#include "formats/core/checked_math.h"
#include "formats/core/error.h"
#include "formats/gguf/gguf_split.h"
#include "formats/gguf/gguf_writer.h"

namespace gptoss {
namespace fs = std::filesystem;

namespace {
constexpr const char* kArch = "gpt-oss";
std::string arch_key(const char* key) { return std::string(kArch) + "." + key; }

// gguf-py's model_weight_count_rounded_notation: "26M", "1.5B", ...
std::string rounded_count(uint64_t count) {
  double scaled = static_cast<double>(count);
  const char* suffix = "K";
  if (count > 1'000'000'000'000ull) { scaled *= 1e-12; suffix = "T"; }
  else if (count > 1'000'000'000ull) { scaled *= 1e-9; suffix = "B"; }
  else if (count > 1'000'000ull) { scaled *= 1e-6; suffix = "M"; }
  else { scaled *= 1e-3; }
  const int digits = static_cast<int>(std::to_string(std::llround(scaled)).size());
  const int fix = std::max(2 - digits, 0);
  char text[64];
  std::snprintf(text, sizeof text, "%.*f%s", fix, scaled, suffix);
  return text;
}

// "<experts>x<params per expert path>" as llama.cpp's converter labels MoE models.
std::string size_label(const CanonicalModel& model) {
  uint64_t shared = 0, experts = 0;
  for (const auto& t : model.tensors) {
    const uint64_t elements = checked_product(t.spec.shape).value_or(0);
    if (is_expert_matrix_role(t.spec.role)) experts += holds_mxfp4(t) ? 2 * elements : elements;  // a pair's byte: two values
    else if (t.spec.role == TensorRole::Mlp1Bias || t.spec.role == TensorRole::Mlp2Bias) experts += elements;
    else if (!is_mxfp4_role(t.spec.role)) shared += elements;
  }
  const uint32_t e = std::max<uint32_t>(model.config.num_experts, 1);
  return std::to_string(e) + "x" + rounded_count(shared + experts / e);
}

uint32_t file_type_for(DType dense) {
  switch (dense) {
    case DType::F32: return 0;   // ALL_F32
    case DType::F16: return 1;   // MOSTLY_F16
    case DType::Q8_0: return 7;  // MOSTLY_Q8_0 (llama.cpp's converter with --outtype q8_0)
    default: return 38;          // MOSTLY_MXFP4_MOE (llama.cpp's converter with --outtype bf16)
  }
}

// The converter's keys, in its order. A mix: llama-quantize copies them, then sets
// general.quantization_version and general.file_type, which moves both to the end.
GgufMetadata gguf_metadata(const CanonicalModel& model, DType dense, const std::string& name,
                           const std::optional<GgufMix>& mix) {
  const GptOssConfig& c = model.config;
  GgufMetadata md;
  md.add_string("general.architecture", kArch);
  md.add_string("general.type", "model");
  md.add_string("general.name", name.empty() ? "gpt-oss" : name);
  md.add_string("general.size_label", size_label(model));
  md.add_u32(arch_key("block_count"), c.num_layers);
  if (c.max_position_embeddings > UINT32_MAX) throw std::invalid_argument("context length does not fit GGUF's UINT32");
  md.add_u32(arch_key("context_length"), static_cast<uint32_t>(c.max_position_embeddings));
  md.add_u32(arch_key("embedding_length"), c.hidden_size);
  md.add_u32(arch_key("feed_forward_length"), c.intermediate_size);
  md.add_u32(arch_key("attention.head_count"), c.num_heads);
  md.add_u32(arch_key("attention.head_count_kv"), c.num_kv_heads);
  md.add_string(arch_key("rope.scaling.type"), "yarn");
  md.add_f32(arch_key("rope.scaling.factor"), static_cast<float>(c.rope_scaling_factor));
  md.add_u32(arch_key("rope.scaling.original_context_length"), c.rope_original_context);
  md.add_f32(arch_key("rope.scaling.yarn_beta_fast"), static_cast<float>(c.yarn_beta_fast));
  md.add_f32(arch_key("rope.scaling.yarn_beta_slow"), static_cast<float>(c.yarn_beta_slow));
  md.add_f32(arch_key("rope.freq_base"), static_cast<float>(c.rope_theta));
  md.add_f32(arch_key("attention.layer_norm_rms_epsilon"), static_cast<float>(c.rms_norm_eps));
  md.add_u32(arch_key("expert_count"), c.num_experts);
  md.add_u32(arch_key("expert_used_count"), c.experts_per_token);
  md.add_u32(arch_key("attention.key_length"), c.head_dim);
  md.add_u32(arch_key("attention.value_length"), c.head_dim);
  if (!mix) md.add_u32("general.file_type", file_type_for(dense));
  md.add_u32(arch_key("attention.sliding_window"), c.sliding_window);
  md.add_u32(arch_key("expert_feed_forward_length"), c.intermediate_size);
  constexpr uint32_t kQuantizationVersion = 2;  // ggml's GGML_QNT_VERSION
  if (!mix) md.add_u32("general.quantization_version", kQuantizationVersion);
  if (model.tokenizer) {
    TokenizerData tok = *model.tokenizer;
    if (!tok.bos_id) tok.bos_id = c.bos_token_id;
    if (!tok.eos_id) tok.eos_id = c.eos_token_id;
    if (!tok.pad_id) tok.pad_id = c.pad_token_id;
    add_gguf_tokenizer(md, tok, c.vocab_size);
  }
  if (mix) {
    md.add_u32("general.quantization_version", kQuantizationVersion);
    md.add_u32("general.file_type", gguf_mix_info(*mix).file_type);
  }
  return md;
}

// What GGUF cannot say about a model: llama.cpp hard-codes these for gpt-oss.
void check_expressible(const GptOssConfig& c) {
  for (uint32_t l = 0; l < c.num_layers; ++l)
    if (c.is_sliding(l) != (l % 2 == 0))
      throw std::invalid_argument("GGUF gpt-oss has no layer_types key: llama.cpp slides the even layers only, "
                                  "but this model's layer " + std::to_string(l) + " differs");
  if (c.swiglu_limit != 7.0)
    throw std::invalid_argument("GGUF gpt-oss has no swiglu_limit key (llama.cpp uses 7), this model has " +
                                std::to_string(c.swiglu_limit));
}

std::vector<uint64_t> reversed(std::vector<uint64_t> shape) { return {shape.rbegin(), shape.rend()}; }

// What a mix cannot honour, before anything is written: llama-quantize reads a float GGUF (it
// refuses to requantize a quantized tensor unless told to, and then compounds both errors), and
// keeps the experts in MXFP4 only when they are MXFP4 already.
void check_mix_input(const CanonicalModel& model, GgufMix mix, DType dense) {
  const std::string what = "--mix " + std::string(gguf_mix_info(mix).name);
  if (dense != DType::BF16 && dense != DType::F16 && dense != DType::F32)
    throw std::invalid_argument(what + " quantizes the GGUF llama.cpp's converter writes, whose dense tensors are BF16, "
                                "F16 or F32; --dense " + std::string(dtype_name(dense)) + " is not one of them");
  for (const auto& t : model.tensors) {
    if (is_matrix_role(t.spec.role) && dtype_info(t.dtype).block_elements > 1)
      throw std::invalid_argument(what + ": " + t.origin + " is already quantized (" + std::string(dtype_name(t.dtype)) +
                                  "); quantizing its dequantized values again would compound both errors, and "
                                  "llama-quantize refuses it too (without --allow-requantize). Give the float "
                                  "checkpoint it came from");
    if (is_expert_matrix_role(t.spec.role) && !holds_mxfp4(t))
      throw std::invalid_argument(what + ": the experts of " + t.origin + " are " + std::string(dtype_name(t.dtype)) +
                                  ", not MXFP4; a mix keeps the experts as the MXFP4 they are, and quantizing "
                                  "quantized experts again would compound both errors (llama-quantize refuses it "
                                  "without --allow-requantize)");
  }
}

// ggml_n_dims: llama-quantize writes a tensor's dimensions without the trailing ones.
std::vector<uint64_t> without_trailing_ones(std::vector<uint64_t> ne) {
  while (ne.size() > 1 && ne.back() == 1) ne.pop_back();
  return ne;
}
}  // namespace

std::vector<std::string> write_gguf_model(const CanonicalModel& model, const fs::path& path,
                                          const GgufWriteOptions& options) {
  const DType dense = options.dense_dtype;
  if (dense != DType::BF16 && dense != DType::F16 && dense != DType::F32 && dense != DType::Q8_0)
    throw std::invalid_argument("GGUF dense type must be bf16, f16, f32 or q8_0, not " + std::string(dtype_name(dense)));
  const GptOssConfig& c = model.config;
  check_expressible(c);
  if (options.mix) check_mix_input(model, *options.mix, dense);
  std::vector<std::string> notes;
  if (!model.tokenizer)
    notes.push_back("the model has no tokenizer: the GGUF has no tokenizer.* keys and llama.cpp will not load it");
  else if (model.tokenizer->size() > c.vocab_size)
    throw std::invalid_argument("tokenizer has " + std::to_string(model.tokenizer->size()) +
                                " tokens, more than the model's vocab_size " + std::to_string(c.vocab_size));
  if (c.yarn_truncate)
    notes.push_back("the model asks for truncated YaRN correction dims; GGUF cannot say so (llama.cpp always truncates)");

  std::vector<LossyStep> lossy;
  auto convert = [&](const std::string& name, TensorSourcePtr source, DType from, DType to, uint64_t row_elements) {
    return convert_declared(lossy, name, std::move(source), from, to, row_elements);
  };
  auto encoded = [&](const CanonicalTensor& t, DType to) {
    return convert(t.spec.name, t.source, t.dtype, to, t.spec.shape.back());
  };

  std::vector<GgufTensorEntry> entries;
  auto add = [&](const std::string& name, DType type, std::vector<uint64_t> ne, TensorSourcePtr source) {
    GgufTensorEntry e;
    e.name = name;
    e.ggml_type = static_cast<uint32_t>(dtype_info(type).ggml_type);
    e.ne = std::move(ne);
    e.data = std::move(source);
    entries.push_back(std::move(e));
  };

  const uint64_t H = c.hidden_size, I = c.intermediate_size, E = c.num_experts;
  for (const auto& g : gguf_tensor_names(c.num_layers)) {
    switch (g.kind) {
      case GgufTensorKind::Dense: {
        const CanonicalTensor& t = model.get(g.role, g.layer);
        // llama.cpp's converter: 2-D weights in the chosen type, except the router; the rest F32.
        const bool dense_matrix = is_matrix_role(g.role) && g.role != TensorRole::RouterWeight;
        if (!dense_matrix || !options.mix) {
          add(g.name, dense_matrix ? dense : DType::F32, reversed(t.spec.shape), encoded(t, dense_matrix ? dense : DType::F32));
          break;
        }
        // A mix: the values the converter's GGUF holds (in `dense`), quantized as llama-quantize does.
        const uint64_t row = t.spec.shape.back();
        const DType type = gguf_mix_type(*options.mix, g.role, g.layer, c.num_layers, c.num_experts, row);
        add(g.name, type, reversed(t.spec.shape), convert(t.spec.name, encoded(t, dense), dense, type, row));
        break;
      }
      // Experts as ggml MXFP4 from the pair; in another type as they are (gate and up: every
      // other row of mlp1).
      case GgufTensorKind::GateExps:
      case GgufTensorKind::UpExps: {
        const auto& blocks = model.get(TensorRole::Mlp1Blocks, g.layer);
        const uint64_t phase = g.kind == GgufTensorKind::UpExps ? 1 : 0;
        if (!holds_mxfp4(blocks)) {
          add(g.name, blocks.dtype, {H, I, E}, make_strided_units(blocks.source, *dtype_row_bytes(blocks.dtype, H), 2, phase));
          break;
        }
        const auto& scales = model.get(TensorRole::Mlp1Scales, g.layer);
        add(g.name, DType::MXFP4, {H, I, E}, make_ggml_mxfp4_rows(blocks.source, scales.source, H / 32, 2, phase));
        break;
      }
      case GgufTensorKind::DownExps: {
        const auto& blocks = model.get(TensorRole::Mlp2Blocks, g.layer);
        if (!holds_mxfp4(blocks)) {
          add(g.name, blocks.dtype, {I, H, E}, blocks.source);
          break;
        }
        const auto& scales = model.get(TensorRole::Mlp2Scales, g.layer);
        add(g.name, DType::MXFP4, {I, H, E}, make_ggml_mxfp4_rows(blocks.source, scales.source, I / 32, 1, 0));
        break;
      }
      case GgufTensorKind::GateExpsBias:
      case GgufTensorKind::UpExpsBias: {
        const auto& bias = model.get(TensorRole::Mlp1Bias, g.layer);
        add(g.name, DType::F32, {I, E},
            make_strided_units(encoded(bias, DType::F32), 4, 2, g.kind == GgufTensorKind::UpExpsBias ? 1 : 0));
        break;
      }
    }
  }

  if (options.mix) {  // in llama-quantize's order, with its dimensions
    std::stable_sort(entries.begin(), entries.end(),
                     [](const GgufTensorEntry& a, const GgufTensorEntry& b) { return llama_loader_order(a.name, b.name); });
    for (auto& e : entries) e.ne = without_trailing_ones(std::move(e.ne));
  }
  const GgufMetadata metadata = gguf_metadata(model, dense, options.name, options.mix);
  PipelineOptions stream;
  stream.threads = options.threads;
  stream.progress = options.progress;
  write_gguf_split(path, metadata, entries, options.split_max_bytes, 32, stream);

  append_lossy_notes(lossy, notes);
  return notes;
}

// ---------------------------------------------------------------------------------------------
// Reading

namespace {
// The shortest decimal that reads back as the same f32 (1e-05, not 9.999999747378752e-06), so a
// config written from a GGUF says what the original config said.
double shortest_double(float value) {
  char text[64];
  for (int precision = 1; precision <= 9; ++precision) {
    std::snprintf(text, sizeof text, "%.*g", precision, static_cast<double>(value));
    if (std::strtof(text, nullptr) == value) return std::strtod(text, nullptr);
  }
  return value;
}

uint32_t get_u32(const GgufFile& f, const char* key) { return static_cast<uint32_t>(f.require(arch_key(key), GgufType::U32).bits); }
std::optional<uint32_t> opt_u32(const GgufFile& f, const char* key) {
  const GgufValue* v = f.optional(arch_key(key), GgufType::U32);
  return v ? std::optional<uint32_t>(static_cast<uint32_t>(v->bits)) : std::nullopt;
}
std::optional<double> opt_f32(const GgufFile& f, const char* key) {
  const GgufValue* v = f.optional(arch_key(key), GgufType::F32);
  return v ? std::optional<double>(shortest_double(std::bit_cast<float>(static_cast<uint32_t>(v->bits)))) : std::nullopt;
}

GptOssConfig gguf_config(const GgufModelFiles& files) {
  const GgufFile& f = files.metadata();
  const GgufValue& arch = f.require("general.architecture", GgufType::String);
  if (arch.string != kArch)
    f.fail("general.architecture", f.find("general.architecture")->offset,
           "expected \"gpt-oss\", found \"" + std::string(arch.string) + "\"");
  GptOssConfig c;
  c.num_layers = get_u32(f, "block_count");
  c.hidden_size = get_u32(f, "embedding_length");
  c.num_heads = get_u32(f, "attention.head_count");
  c.num_kv_heads = get_u32(f, "attention.head_count_kv");
  c.head_dim = opt_u32(f, "attention.key_length").value_or(c.num_heads ? c.hidden_size / c.num_heads : 0);
  if (auto v = opt_u32(f, "attention.value_length"); v && *v != c.head_dim)
    f.fail(arch_key("attention.value_length"), std::nullopt, "differs from key_length; gpt-oss has one head size");
  c.num_experts = get_u32(f, "expert_count");
  c.experts_per_token = get_u32(f, "expert_used_count");
  c.intermediate_size = get_u32(f, "expert_feed_forward_length");
  c.sliding_window = get_u32(f, "attention.sliding_window");
  c.max_position_embeddings = get_u32(f, "context_length");
  if (c.num_layers > kMaxConfigLayers)
    f.fail(arch_key("block_count"), f.find(arch_key("block_count"))->offset,
           std::to_string(c.num_layers) + " blocks is more than the limit of " + std::to_string(kMaxConfigLayers));
  c.sliding_layers.resize(c.num_layers);
  for (uint32_t l = 0; l < c.num_layers; ++l) c.sliding_layers[l] = l % 2 == 0;  // llama.cpp's fixed pattern
  c.rms_norm_eps = opt_f32(f, "attention.layer_norm_rms_epsilon").value_or(0);
  if (c.rms_norm_eps == 0) f.fail(arch_key("attention.layer_norm_rms_epsilon"), std::nullopt, "required key is missing");
  c.rope_theta = opt_f32(f, "rope.freq_base").value_or(10000.0);
  if (const GgufValue* type = f.optional(arch_key("rope.scaling.type"), GgufType::String); type && type->string != "yarn")
    f.fail(arch_key("rope.scaling.type"), f.find(arch_key("rope.scaling.type"))->offset,
           "gpt-oss uses YaRN, found \"" + std::string(type->string) + "\"");
  c.rope_scaling_factor = opt_f32(f, "rope.scaling.factor").value_or(1.0);
  c.rope_original_context = opt_u32(f, "rope.scaling.original_context_length").value_or(4096);
  c.yarn_beta_fast = opt_f32(f, "rope.scaling.yarn_beta_fast").value_or(32.0);
  c.yarn_beta_slow = opt_f32(f, "rope.scaling.yarn_beta_slow").value_or(1.0);
  c.yarn_truncate = false;  // llama.cpp always truncates; the HF config of gpt-oss says false
  const std::string embd_name = gguf_tensor_name(TensorRole::Embedding, -1);
  const GgufTensorRef* embd = files.find_tensor(embd_name);
  if (!embd) f.fail(embd_name, std::nullopt, "tensor missing from the file");
  if (embd->info->ne.size() != 2 || embd->info->ne[1] > UINT32_MAX)
    embd->file->fail(embd_name, embd->info->info_offset, "must be a 2-D [hidden, vocab] tensor");
  c.vocab_size = static_cast<uint32_t>(embd->info->ne[1]);
  return c;
}

TensorSourcePtr mapped(const GgufTensorRef& ref) {
  return std::make_shared<MappedSource>(ref.file->mapped(), ref.file->data(*ref.info));
}

std::string describe_ne(const std::vector<uint64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}
}  // namespace

CanonicalModel load_gguf_model(const fs::path& path) {
  auto files = std::make_shared<GgufModelFiles>(GgufModelFiles::open(path));
  CanonicalModel model;
  model.config = gguf_config(*files);
  model.source_description = "GGUF " + path.string();
  const GptOssConfig& c = model.config;
  c.validate(path.string());  // a FormatError naming the file, field "config"
  model.tokenizer = gguf_tokenizer(files->metadata());
  if (model.tokenizer) {
    if (model.tokenizer->size() > c.vocab_size)
      throw_format_error(path.string(), "tokenizer.ggml.tokens", std::nullopt,
                         std::to_string(model.tokenizer->size()) + " tokens but token_embd has " +
                             std::to_string(c.vocab_size) + " rows");
    model.config.bos_token_id = model.tokenizer->bos_id;
    model.config.eos_token_id = model.tokenizer->eos_id;
    model.config.pad_token_id = model.tokenizer->pad_id;
  }

  const uint64_t H = c.hidden_size, I = c.intermediate_size, E = c.num_experts;
  std::set<std::string> used;
  auto require = [&](const std::string& name, std::vector<uint64_t> ne) -> const GgufTensorRef& {
    const GgufTensorRef* ref = files->find_tensor(name);
    if (!ref) throw_format_error(path.string(), name, std::nullopt, "tensor missing from the file");
    if (ref->info->ne != ne)
      ref->file->fail(name, ref->info->info_offset,
                      "has ne " + describe_ne(ref->info->ne) + ", the metadata needs " + describe_ne(ne));
    used.insert(name);
    return *ref;
  };
  // Dense tensors keep their stored encoding: any the toolkit decodes (F32, F16, BF16 and ggml's
  // quantizations); MXFP4 only for the experts.
  auto dense_type = [&](const GgufTensorRef& ref) {
    const auto& t = *ref.info;
    if (!is_decodable(t.dtype) || t.dtype == DType::MXFP4)
      ref.file->fail(t.name, t.info_offset,
                     "type " + std::string(dtype_name(t.dtype)) + " is not supported for dense tensors");
    return t.dtype;
  };
  // Experts: MXFP4 (repacked into the canonical pair), or any type the toolkit decodes, kept as
  // it is (canonical_model.h); gate and up in the same form.
  auto expert_type = [&](const GgufTensorRef& ref) {
    const auto& t = *ref.info;
    if (t.dtype != DType::MXFP4 && !is_decodable(t.dtype))
      ref.file->fail(t.name, t.info_offset, "type " + std::string(dtype_name(t.dtype)) + " is not supported for experts");
    return t.dtype;
  };
  std::set<DType> quantized;  // the lossy dense encodings the file holds
  std::set<DType> quantized_experts;  // and those of experts other than MXFP4

  std::vector<CanonicalTensor> tensors;
  const auto specs = canonical_tensor_specs(c);
  auto spec_of = [&](TensorRole role, int layer) -> const TensorSpec& {
    for (const auto& s : specs)
      if (s.role == role && s.layer == layer) return s;
    throw std::logic_error("no canonical spec");
  };
  // Experts in another type than MXFP4: the matrix as stored and no scales (canonical_model.h).
  auto expert_matrix = [&](TensorRole role, int layer, DType type, TensorSourcePtr source, const std::string& origin) {
    TensorSpec spec = spec_of(role, layer);
    spec.shape = canonical_shape(c, role, type);
    if (dtype_info(type).block_elements > 1) quantized_experts.insert(type);
    return CanonicalTensor{std::move(spec), type, std::move(source), origin};
  };
  auto empty_scales = [&](TensorRole role, int layer, DType type, const std::string& origin) {
    TensorSpec spec = spec_of(role, layer);
    spec.shape = canonical_shape(c, role, type);
    return CanonicalTensor{std::move(spec), DType::U8, std::make_shared<OwnedSource>(std::vector<uint8_t>{}), origin};
  };
  for (const auto& g : gguf_tensor_names(c.num_layers)) {
    switch (g.kind) {
      case GgufTensorKind::Dense: {
        const TensorSpec& spec = spec_of(g.role, g.layer);
        const GgufTensorRef& ref = require(g.name, reversed(spec.shape));
        const DType type = dense_type(ref);
        if (dtype_info(type).block_elements > 1) quantized.insert(type);
        tensors.push_back({spec, type, mapped(ref), fs::path(ref.file->path()).filename().string() + ":" + g.name});
        break;
      }
      case GgufTensorKind::GateExps: {
        const auto& gate = require(g.name, {H, I, E});
        const auto& up = require(gguf_expert_tensor_name(GgufTensorKind::UpExps, g.layer), {H, I, E});
        const std::string origin = fs::path(gate.file->path()).filename().string() + ":" + g.name + " + ffn_up_exps";
        const DType type = expert_type(gate);
        if (expert_type(up) != type)
          up.file->fail(up.info->name, up.info->info_offset,
                        "is " + std::string(dtype_name(up.info->dtype)) + " but " + g.name + " is " +
                            std::string(dtype_name(type)) + ": gate and up experts must have one type");
        const auto gate_src = mapped(gate), up_src = mapped(up);
        if (type == DType::MXFP4) {
          tensors.push_back({spec_of(TensorRole::Mlp1Blocks, g.layer), DType::U8,
                             make_interleaved_units(make_oai_blocks_from_ggml(gate_src, H / 32),
                                                    make_oai_blocks_from_ggml(up_src, H / 32), H / 32 * 16),
                             origin});
          tensors.push_back({spec_of(TensorRole::Mlp1Scales, g.layer), DType::U8,
                             make_interleaved_units(make_oai_scales_from_ggml(gate_src, H / 32),
                                                    make_oai_scales_from_ggml(up_src, H / 32), H / 32),
                             origin});
        } else {  // rows interleaved gate (even) / up (odd), each as stored
          tensors.push_back(expert_matrix(TensorRole::Mlp1Blocks, g.layer, type,
                                          make_interleaved_units(gate_src, up_src, *dtype_row_bytes(type, H)), origin));
          tensors.push_back(empty_scales(TensorRole::Mlp1Scales, g.layer, type, origin));
        }
        break;
      }
      case GgufTensorKind::DownExps: {
        const auto& down = require(g.name, {I, H, E});
        const DType type = expert_type(down);
        const auto src = mapped(down);
        const std::string origin = fs::path(down.file->path()).filename().string() + ":" + g.name;
        if (type == DType::MXFP4) {
          tensors.push_back({spec_of(TensorRole::Mlp2Blocks, g.layer), DType::U8, make_oai_blocks_from_ggml(src, I / 32), origin});
          tensors.push_back({spec_of(TensorRole::Mlp2Scales, g.layer), DType::U8, make_oai_scales_from_ggml(src, I / 32), origin});
        } else {
          tensors.push_back(expert_matrix(TensorRole::Mlp2Blocks, g.layer, type, src, origin));
          tensors.push_back(empty_scales(TensorRole::Mlp2Scales, g.layer, type, origin));
        }
        break;
      }
      case GgufTensorKind::GateExpsBias: {
        const auto& gate = require(g.name, {I, E});
        const auto& up = require(gguf_expert_tensor_name(GgufTensorKind::UpExpsBias, g.layer), {I, E});
        const DType type = dense_type(gate);
        if (dtype_info(type).block_elements > 1 || dense_type(up) != type)
          gate.file->fail(g.name, gate.info->info_offset, "expert biases must be F32, F16 or BF16, both the same");
        tensors.push_back({spec_of(TensorRole::Mlp1Bias, g.layer), type,
                           make_interleaved_units(mapped(gate), mapped(up), dtype_info(type).block_bytes),
                           fs::path(gate.file->path()).filename().string() + ":" + g.name + " + ffn_up_exps.bias"});
        break;
      }
      case GgufTensorKind::UpExps:
      case GgufTensorKind::UpExpsBias:
        break;  // read together with the gate tensor
    }
  }
  for (const auto& ref : files->tensors())
    if (!used.count(ref.info->name))
      model.notes.push_back("tensor " + ref.info->name + " is not part of gpt-oss and was ignored");
  if (!quantized_experts.empty()) {
    std::string types;
    for (DType t : quantized_experts) types += (types.empty() ? "" : ", ") + std::string(dtype_name(t));
    model.notes.push_back("experts are " + types + " in this GGUF (not MXFP4): GGUF output keeps them as they are; "
                          "safetensors and model.bin store experts only as MXFP4 and requantize them to it (lossy)");
  }
  if (!quantized.empty()) {
    std::string types;
    for (DType t : quantized) types += (types.empty() ? "" : ", ") + std::string(dtype_name(t));
    model.notes.push_back("dense tensors are " + types + " in this GGUF: writing them as BF16 dequantizes and rounds them "
                          "(lossy); F32 output keeps their values exactly");
  }
  finalize_canonical_tensors(c, tensors, path.string());
  model.tensors = std::move(tensors);
  return model;
}

}  // namespace gptoss
