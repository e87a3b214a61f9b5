#include "convert/safetensors_model.h"

#include <nlohmann/json.hpp>

#include "convert/dtype_convert.h"
#include "convert/hf_tokenizer_files.h"
#include "formats/core/atomic_file.h"
#include "formats/core/checked_math.h"
#include "formats/core/error.h"
#include "formats/core/json_file.h"
#include "formats/core/json_value.h"
#include "formats/safetensors/safetensors_checkpoint.h"
#include "formats/safetensors/safetensors_writer.h"

namespace gptoss {
namespace fs = std::filesystem;

std::string layout_tensor_name(CheckpointLayout layout, TensorRole role, int layer) {
  const std::string n = std::to_string(layer);
  if (layout == CheckpointLayout::HuggingFace) {
    const std::string l = "model.layers." + n + ".";
    switch (role) {
      case TensorRole::Embedding: return "model.embed_tokens.weight";
      case TensorRole::Unembedding: return "lm_head.weight";
      case TensorRole::FinalNorm: return "model.norm.weight";
      case TensorRole::AttnNorm: return l + "input_layernorm.weight";
      case TensorRole::AttnQ: return l + "self_attn.q_proj.weight";
      case TensorRole::AttnQBias: return l + "self_attn.q_proj.bias";
      case TensorRole::AttnK: return l + "self_attn.k_proj.weight";
      case TensorRole::AttnKBias: return l + "self_attn.k_proj.bias";
      case TensorRole::AttnV: return l + "self_attn.v_proj.weight";
      case TensorRole::AttnVBias: return l + "self_attn.v_proj.bias";
      case TensorRole::AttnOut: return l + "self_attn.o_proj.weight";
      case TensorRole::AttnOutBias: return l + "self_attn.o_proj.bias";
      case TensorRole::AttnSinks: return l + "self_attn.sinks";
      case TensorRole::MlpNorm: return l + "post_attention_layernorm.weight";
      case TensorRole::RouterWeight: return l + "mlp.router.weight";
      case TensorRole::RouterBias: return l + "mlp.router.bias";
      case TensorRole::Mlp1Blocks: return l + "mlp.experts.gate_up_proj_blocks";
      case TensorRole::Mlp1Scales: return l + "mlp.experts.gate_up_proj_scales";
      case TensorRole::Mlp1Bias: return l + "mlp.experts.gate_up_proj_bias";
      case TensorRole::Mlp2Blocks: return l + "mlp.experts.down_proj_blocks";
      case TensorRole::Mlp2Scales: return l + "mlp.experts.down_proj_scales";
      case TensorRole::Mlp2Bias: return l + "mlp.experts.down_proj_bias";
    }
  }
  const std::string b = "block." + n + ".";
  switch (role) {
    case TensorRole::Embedding: return "embedding.weight";
    case TensorRole::Unembedding: return "unembedding.weight";
    case TensorRole::FinalNorm: return "norm.scale";
    case TensorRole::AttnNorm: return b + "attn.norm.scale";
    case TensorRole::AttnQ: case TensorRole::AttnK: case TensorRole::AttnV: return b + "attn.qkv.weight";
    case TensorRole::AttnQBias: case TensorRole::AttnKBias: case TensorRole::AttnVBias: return b + "attn.qkv.bias";
    case TensorRole::AttnOut: return b + "attn.out.weight";
    case TensorRole::AttnOutBias: return b + "attn.out.bias";
    case TensorRole::AttnSinks: return b + "attn.sinks";
    case TensorRole::MlpNorm: return b + "mlp.norm.scale";
    case TensorRole::RouterWeight: return b + "mlp.gate.weight";
    case TensorRole::RouterBias: return b + "mlp.gate.bias";
    case TensorRole::Mlp1Blocks: return b + "mlp.mlp1_weight.blocks";
    case TensorRole::Mlp1Scales: return b + "mlp.mlp1_weight.scales";
    case TensorRole::Mlp1Bias: return b + "mlp.mlp1_bias";
    case TensorRole::Mlp2Blocks: return b + "mlp.mlp2_weight.blocks";
    case TensorRole::Mlp2Scales: return b + "mlp.mlp2_weight.scales";
    case TensorRole::Mlp2Bias: return b + "mlp.mlp2_bias";
  }
  return "?";
}

namespace {
bool is_q(TensorRole r) { return r == TensorRole::AttnQ || r == TensorRole::AttnQBias; }
bool is_k(TensorRole r) { return r == TensorRole::AttnK || r == TensorRole::AttnKBias; }
bool is_v(TensorRole r) { return r == TensorRole::AttnV || r == TensorRole::AttnVBias; }
bool is_qkv(TensorRole r) { return is_q(r) || is_k(r) || is_v(r); }
}  // namespace

CanonicalModel load_safetensors_model(const fs::path& path) {
  const auto ck = std::make_shared<SafetensorsCheckpoint>(SafetensorsCheckpoint::open(path));
  const fs::path dir = fs::is_directory(path) ? path : path.parent_path();
  const CheckpointLayout layout =
      ck->find("embedding.weight") ? CheckpointLayout::Original : CheckpointLayout::HuggingFace;
  const fs::path config_path = dir / "config.json";
  if (!fs::exists(config_path))
    throw_format_error(config_path.string(), "", std::nullopt, "checkpoint has no config.json beside its weights");
  const nlohmann::json config_json = read_json_file(config_path);
  CanonicalModel model;
  model.config = layout == CheckpointLayout::Original ? config_from_original_json(config_json, config_path.string())
                                                      : config_from_hf_json(config_json, config_path.string());
  if (layout == CheckpointLayout::HuggingFace && fs::exists(dir / "generation_config.json")) {
    const fs::path gen_path = dir / "generation_config.json";
    const nlohmann::json gen_json = read_json_file(gen_path);
    const JsonValue gen(gen_json, gen_path.string());
    // Our writer put "null" there for a model without special ids before it wrote "{}".
    if (!gen.is_object() && !gen.is_null()) gen.fail_expected("an object");
    if (const auto bos = gen.is_object() ? gen.find("bos_token_id") : std::nullopt; bos && !model.config.bos_token_id)
      model.config.bos_token_id = bos->as_u32();
  }
  model.source_description = std::string(layout == CheckpointLayout::Original ? "OpenAI original" : "Hugging Face") +
                             " safetensors checkpoint " + path.string();

  const auto& c = model.config;
  for (const auto& spec : canonical_tensor_specs(c)) {
    const std::string name = layout_tensor_name(layout, spec.role, spec.layer);
    const CheckpointTensorRef* ref = ck->find(name);
    if (!ref) throw_format_error(ck->root().string(), "tensor \"" + name + "\"", std::nullopt, "missing from the checkpoint");
    const auto& t = *ref->tensor;
    auto whole = std::make_shared<MappedSource>(ref->file->mapped(), ref->file->data(t));
    CanonicalTensor ct{spec, t.dtype, whole, fs::path(ref->file->path()).filename().string() + ":" + name};
    if (layout == CheckpointLayout::Original && is_qkv(spec.role)) {
      // Fused rows: Q heads, then K heads, then V heads; a plain row split (no permutation).
      const bool weight = spec.shape.size() == 2;
      const uint64_t row_elems = weight ? c.hidden_size : 1;
      const uint64_t rows_total = static_cast<uint64_t>(c.q_rows()) + 2ull * c.kv_rows();
      std::vector<uint64_t> expected = weight ? std::vector<uint64_t>{rows_total, c.hidden_size}
                                              : std::vector<uint64_t>{rows_total};
      if (t.shape != expected)
        throw_format_error(ct.origin, "shape", std::nullopt,
                           "fused QKV must have " + std::to_string(rows_total) + " rows for this config");
      const uint64_t row_bytes = *dtype_byte_size(t.dtype, row_elems);
      const uint64_t first = is_q(spec.role) ? 0 : is_k(spec.role) ? c.q_rows() : c.q_rows() + c.kv_rows();
      const uint64_t rows = is_q(spec.role) ? c.q_rows() : c.kv_rows();
      ct.source = std::make_shared<SliceSource>(whole, first * row_bytes, rows * row_bytes);
      ct.origin += is_q(spec.role) ? " (Q rows)" : is_k(spec.role) ? " (K rows)" : " (V rows)";
    } else {
      ct.spec.shape = t.shape;  // checked against the config in finalize
    }
    model.tensors.push_back(std::move(ct));
  }
  finalize_canonical_tensors(c, model.tensors, path.string());

  if (auto tok = load_hf_tokenizer_files(dir)) {
    // The config's special ids win; where it has none (the original layout never does), the
    // tokenizer's fill it in.
    auto merge = [](std::optional<uint32_t>& config_id, std::optional<uint32_t>& tokenizer_id) {
      if (config_id) tokenizer_id = config_id;
      else config_id = tokenizer_id;
    };
    merge(model.config.bos_token_id, tok->bos_id);
    merge(model.config.eos_token_id, tok->eos_id);
    merge(model.config.pad_token_id, tok->pad_id);
    model.tokenizer = std::move(tok);
  }
  return model;
}

std::vector<std::string> write_safetensors_model(const CanonicalModel& source_model, const fs::path& dir,
                                                 const SafetensorsWriteOptions& options) {
  std::vector<LossyStep> lossy;
  const CanonicalModel model = with_mxfp4_experts(source_model, lossy);  // experts only as the MXFP4 pair
  fs::create_directories(dir);
  const auto& c = model.config;
  std::vector<std::string> notes;
  std::vector<SafetensorsEntry> entries;

  auto dense_source = [&](const CanonicalTensor& t) -> TensorSourcePtr {
    if (is_mxfp4_role(t.spec.role)) return t.source;
    return convert_declared(lossy, t.spec.name, t.source, t.dtype, options.dense_dtype, t.spec.shape.back());
  };
  auto make_entry = [&](std::string name, DType dtype, std::vector<uint64_t> shape, TensorSourcePtr src) {
    SafetensorsEntry e;
    e.name = std::move(name);
    e.dtype = dtype;
    e.shape = std::move(shape);
    e.data = std::move(src);
    entries.push_back(std::move(e));
  };

  for (const auto& t : model.tensors) {
    const DType dtype = is_mxfp4_role(t.spec.role) ? DType::U8 : options.dense_dtype;
    if (options.layout == CheckpointLayout::Original && is_qkv(t.spec.role)) {
      if (!is_q(t.spec.role)) continue;  // Q emits the fused tensor
      const bool weight = t.spec.role == TensorRole::AttnQ;
      const auto& q = t;
      const auto& k = model.get(weight ? TensorRole::AttnK : TensorRole::AttnKBias, t.spec.layer);
      const auto& v = model.get(weight ? TensorRole::AttnV : TensorRole::AttnVBias, t.spec.layer);
      std::vector<uint64_t> shape = q.spec.shape;
      shape[0] = static_cast<uint64_t>(c.q_rows()) + 2ull * c.kv_rows();
      make_entry(layout_tensor_name(options.layout, t.spec.role, t.spec.layer), dtype, shape,
                 std::make_shared<ConcatSource>(std::vector<TensorSourcePtr>{dense_source(q), dense_source(k), dense_source(v)}));
      continue;
    }
    make_entry(layout_tensor_name(options.layout, t.spec.role, t.spec.layer), dtype, t.spec.shape, dense_source(t));
  }

  if (options.layout == CheckpointLayout::HuggingFace) {
    write_file_atomically(dir / "config.json", config_to_hf_json(c).dump(2) + "\n");
    nlohmann::ordered_json gen = nlohmann::ordered_json::object();  // "{}" without ids (was "null")
    if (c.bos_token_id) gen["bos_token_id"] = *c.bos_token_id;
    if (c.eos_token_id) gen["eos_token_id"] = *c.eos_token_id;
    if (c.pad_token_id) gen["pad_token_id"] = *c.pad_token_id;
    write_file_atomically(dir / "generation_config.json", gen.dump(2) + "\n");
  } else {
    write_file_atomically(dir / "config.json", config_to_original_json(c).dump(2) + "\n");
  }
  if (model.tokenizer) {
    // The special ids the config knows fill those the tokenizer lacks (tokenizer_config.json);
    // the copy of the whole vocabulary only when there is something to fill.
    const TokenizerData& tok = *model.tokenizer;
    const bool fill = (!tok.bos_id && c.bos_token_id) || (!tok.eos_id && c.eos_token_id) || (!tok.pad_id && c.pad_token_id);
    if (fill) {
      TokenizerData filled = tok;
      if (!filled.bos_id) filled.bos_id = c.bos_token_id;
      if (!filled.eos_id) filled.eos_id = c.eos_token_id;
      if (!filled.pad_id) filled.pad_id = c.pad_token_id;
      write_hf_tokenizer_files(filled, dir, notes);
    } else {
      write_hf_tokenizer_files(tok, dir, notes);
    }
  }
  PipelineOptions stream;
  stream.threads = options.threads;
  stream.progress = options.progress;
  write_sharded_safetensors(dir, entries, options.max_shard_bytes, {{"format", "pt"}}, {}, stream);

  append_lossy_notes(lossy, notes);
  return notes;
}

}  // namespace gptoss
