// GPT-OSS canonical model <-> model.bin (shared/specs/modelbin.md). Both directions are lazy
// TensorSources over the inputs, so memory stays bounded whatever the model size.
#include "convert/modelbin/modelbin_model.h"

#include <stdexcept>

#include "convert/dtype_convert.h"
#include "convert/modelbin/modelbin_config.h"
#include "convert/modelbin/modelbin_tokenizer.h"
#include "convert/modelbin/modelbin_transforms.h"
#include "formats/core/error.h"
#include "formats/modelbin/modelbin_file.h"
#include "formats/modelbin/modelbin_writer.h"

namespace gptoss {
namespace fs = std::filesystem;
using modelbin::Region;

namespace {

// The writer's prescale: Q x 0.5 and K x 0.25, i.e. 1/sqrt(64) split over both (head_dim 64).
constexpr float kQScale = 0.5f;
constexpr float kKScale = 0.25f;

}  // namespace

// ---------------------------------------------------------------------------------------------
// canonical -> model.bin

std::vector<std::string> write_modelbin_model(const CanonicalModel& source_model, const fs::path& path,
                                              const ModelBinWriteOptions& options) {
  std::vector<LossyStep> lossy;
  const CanonicalModel model = with_mxfp4_experts(source_model, lossy);  // experts only as the MXFP4 pair
  const GptOssConfig& c = model.config;
  std::vector<std::string> notes;
  const modelbin::ModelHeader header = modelbin_header_from_config(c, notes);
  if (!model.tokenizer)
    throw std::invalid_argument("model.bin holds the tokenizer, but " + model.source_description +
                                " has none: put the o200k_harmony tokenizer.json beside the checkpoint");
  if (c.vocab_size < kModelBinVocabulary)
    throw std::invalid_argument("model.bin stores " + std::to_string(kModelBinVocabulary) +
                                " vocabulary rows (o200k text tokens + 16 specials), but the model has only " +
                                std::to_string(c.vocab_size));
  const modelbin::TokenizerSection section = modelbin_tokenizer_section(*model.tokenizer, notes);
  if (c.vocab_size > kModelBinVocabulary)
    notes.push_back("embedding and unembedding truncated from " + std::to_string(c.vocab_size) + " to the " +
                    std::to_string(kModelBinVocabulary) + " rows model.bin holds");

  modelbin::ModelBinWriter writer(path, header, section);
  auto qk_inexact = std::make_shared<std::atomic<uint64_t>>(0);

  // Dense tensors are BF16 in model.bin: anything else is re-encoded (and measured).
  auto as_bf16 = [&](const CanonicalTensor& t, uint64_t rows) -> TensorSourcePtr {
    const uint64_t row_elements = t.spec.shape.back();  // 1-D tensors are one row
    TensorSourcePtr src = t.source;
    if (t.spec.shape.size() > 1 && rows < t.spec.shape.front())
      src = std::make_shared<SliceSource>(src, 0, rows * *dtype_row_bytes(t.dtype, row_elements));
    return convert_declared(lossy, t.spec.name, src, t.dtype, DType::BF16, row_elements);
  };
  auto dense = [&](TensorRole role, int layer) {
    const auto& t = model.get(role, layer);
    return as_bf16(t, t.spec.shape.front());
  };
  std::vector<TensorSourcePtr> in_write_order;
  auto emit = [&](TensorSourcePtr src) { in_write_order.push_back(std::move(src)); };
  const uint64_t H = c.hidden_size, row_bytes = H * 2;

  emit(as_bf16(model.get(TensorRole::Embedding), kModelBinVocabulary));
  for (int l = 0; l < static_cast<int>(c.num_layers); ++l) {
    emit(dense(TensorRole::AttnNorm, l));
    // Fused QKV: Q and K rows interleaved per head and prescaled, V as is; weight, then bias.
    auto qkv = [&](TensorRole q, TensorRole k, TensorRole v, uint64_t rb) {
      return std::make_shared<ConcatSource>(std::vector<TensorSourcePtr>{
          make_qk_transform(dense(q, l), c.q_rows(), rb, c.head_dim, QkDirection::ToModelBin, kQScale, qk_inexact),
          make_qk_transform(dense(k, l), c.kv_rows(), rb, c.head_dim, QkDirection::ToModelBin, kKScale, qk_inexact),
          dense(v, l)});
    };
    emit(qkv(TensorRole::AttnQ, TensorRole::AttnK, TensorRole::AttnV, row_bytes));
    emit(qkv(TensorRole::AttnQBias, TensorRole::AttnKBias, TensorRole::AttnVBias, 2));
    emit(dense(TensorRole::AttnSinks, l));
    emit(dense(TensorRole::AttnOut, l));
    emit(dense(TensorRole::AttnOutBias, l));
    emit(dense(TensorRole::MlpNorm, l));
    emit(dense(TensorRole::RouterWeight, l));
    emit(dense(TensorRole::RouterBias, l));
  }
  emit(dense(TensorRole::FinalNorm, -1));
  emit(as_bf16(model.get(TensorRole::Unembedding), kModelBinVocabulary));

  // Experts: block by block, expert by expert, six tensors each; scales + 14.
  for (int l = 0; l < static_cast<int>(c.num_layers); ++l) {
    const CanonicalTensor* parts[6] = {
        &model.get(TensorRole::Mlp1Blocks, l), &model.get(TensorRole::Mlp1Scales, l), &model.get(TensorRole::Mlp1Bias, l),
        &model.get(TensorRole::Mlp2Blocks, l), &model.get(TensorRole::Mlp2Scales, l), &model.get(TensorRole::Mlp2Bias, l)};
    TensorSourcePtr sources[6];
    for (int p = 0; p < 6; ++p)
      sources[p] = parts[p]->dtype == DType::U8 ? parts[p]->source : as_bf16(*parts[p], parts[p]->spec.shape.front());
    for (uint64_t e = 0; e < c.num_experts; ++e)
      for (int p = 0; p < 6; ++p) {
        const uint64_t per_expert = sources[p]->size() / c.num_experts;
        TensorSourcePtr src = std::make_shared<SliceSource>(sources[p], e * per_expert, per_expert);
        if (parts[p]->spec.role == TensorRole::Mlp1Scales || parts[p]->spec.role == TensorRole::Mlp2Scales)
          src = make_scale_offset(src, +14, parts[p]->origin, parts[p]->spec.name + " (expert " + std::to_string(e) + ")",
                                  std::nullopt);
        emit(src);
      }
  }
  PipelineOptions stream;
  stream.threads = options.threads;
  stream.progress = options.progress;
  writer.write_tensors(in_write_order, stream);
  writer.commit();

  append_lossy_notes(lossy, notes);
  if (*qk_inexact)
    notes.push_back("Q x0.5 / K x0.25 prescale rounded " + std::to_string(qk_inexact->load()) +
                    " subnormal BF16 values (not exactly invertible)");
  return notes;
}

// ---------------------------------------------------------------------------------------------
// model.bin -> canonical

CanonicalModel load_modelbin_model(const fs::path& path) {
  auto file = std::make_shared<const modelbin::ModelBinFile>(modelbin::ModelBinFile::open(path));
  return canonical_from_modelbin(file);
}

CanonicalModel canonical_from_modelbin(const std::shared_ptr<const modelbin::ModelBinFile>& file) {
  const auto& h = file->header();
  const auto& L = file->layout();
  const std::string& name = file->path();
  CanonicalModel model;
  model.source_description = "model.bin " + name;
  model.config = config_from_modelbin_header(h, L.vocabulary_size, name, model.notes);
  const GptOssConfig& c = model.config;
  if (h.head_dim != 64)
    throw_format_error(name, "model_header.head_dim", modelbin::kModelHeaderOffset + 28,
                       "is " + std::to_string(h.head_dim) + "; model.bin's Q/K prescale (x0.5, x0.25) is only defined for 64");

  auto region = [&](const Region& r) -> TensorSourcePtr {
    return std::make_shared<MappedSource>(file->mapped(), file->bytes(r));
  };
  auto sub = [&](const Region& r, uint64_t offset, uint64_t size) { return region({r.offset + offset, size}); };
  const auto specs = canonical_tensor_specs(c);
  auto add = [&](TensorRole role, int layer, DType dtype, TensorSourcePtr src, const std::string& origin) {
    for (const auto& s : specs)
      if (s.role == role && s.layer == layer) {
        model.tensors.push_back({s, dtype, std::move(src), name + ":" + origin});
        return;
      }
  };
  const uint64_t H = c.hidden_size, row_bytes = H * 2, q = c.q_rows(), kv = c.kv_rows();
  add(TensorRole::Embedding, -1, DType::BF16, region(L.embedding), "embedding");
  for (int l = 0; l < static_cast<int>(c.num_layers); ++l) {
    const auto& b = L.blocks[static_cast<size_t>(l)];
    const std::string p = "block " + std::to_string(l) + " ";
    add(TensorRole::AttnNorm, l, DType::BF16, region(b.attn_norm), p + "attention norm");
    auto split = [&](const Region& fused, uint64_t rb, TensorRole qr, TensorRole kr, TensorRole vr, const char* what) {
      add(qr, l, DType::BF16,
          make_qk_transform(sub(fused, 0, q * rb), q, rb, c.head_dim, QkDirection::ToCanonical, 1 / kQScale),
          p + what + " (Q rows)");
      add(kr, l, DType::BF16,
          make_qk_transform(sub(fused, q * rb, kv * rb), kv, rb, c.head_dim, QkDirection::ToCanonical, 1 / kKScale),
          p + what + " (K rows)");
      add(vr, l, DType::BF16, sub(fused, (q + kv) * rb, kv * rb), p + what + " (V rows)");
    };
    split(b.qkv_weight, row_bytes, TensorRole::AttnQ, TensorRole::AttnK, TensorRole::AttnV, "QKV weight");
    split(b.qkv_bias, 2, TensorRole::AttnQBias, TensorRole::AttnKBias, TensorRole::AttnVBias, "QKV bias");
    add(TensorRole::AttnSinks, l, DType::BF16, region(b.sinks), p + "attention sinks");
    add(TensorRole::AttnOut, l, DType::BF16, region(b.out_weight), p + "attention output weight");
    add(TensorRole::AttnOutBias, l, DType::BF16, region(b.out_bias), p + "attention output bias");
    add(TensorRole::MlpNorm, l, DType::BF16, region(b.mlp_norm), p + "MLP norm");
    add(TensorRole::RouterWeight, l, DType::BF16, region(b.gate_weight), p + "router weight");
    add(TensorRole::RouterBias, l, DType::BF16, region(b.gate_bias), p + "router bias");

    // Experts back to expert-major tensors: expert e's piece of each of the six.
    const uint64_t moe = L.moe_block_offsets[static_cast<size_t>(l)];
    auto regroup = [&](const Region& within, TensorRole role, DType dtype, bool scales, const char* what) {
      std::vector<TensorSourcePtr> pieces;
      pieces.reserve(c.num_experts);
      for (uint64_t e = 0; e < c.num_experts; ++e) {
        const Region r{moe + e * L.expert.size + within.offset, within.size};
        TensorSourcePtr src = region(r);
        if (scales) src = make_scale_offset(src, -14, name, p + "expert " + std::to_string(e) + " " + what, r.offset);
        pieces.push_back(std::move(src));
      }
      add(role, l, dtype, std::make_shared<ConcatSource>(std::move(pieces)), p + what + " (all experts)");
    };
    regroup(L.expert.mlp1_blocks, TensorRole::Mlp1Blocks, DType::U8, false, "mlp1 blocks");
    regroup(L.expert.mlp1_scales, TensorRole::Mlp1Scales, DType::U8, true, "mlp1 scales");
    regroup(L.expert.mlp1_bias, TensorRole::Mlp1Bias, DType::BF16, false, "mlp1 bias");
    regroup(L.expert.mlp2_blocks, TensorRole::Mlp2Blocks, DType::U8, false, "mlp2 blocks");
    regroup(L.expert.mlp2_scales, TensorRole::Mlp2Scales, DType::U8, true, "mlp2 scales");
    regroup(L.expert.mlp2_bias, TensorRole::Mlp2Bias, DType::BF16, false, "mlp2 bias");
  }
  add(TensorRole::FinalNorm, -1, DType::BF16, region(L.final_norm), "final norm");
  add(TensorRole::Unembedding, -1, DType::BF16, region(L.unembedding), "unembedding");
  finalize_canonical_tensors(c, model.tensors, name);

  model.tokenizer = tokenizer_from_modelbin(*file, model.notes);
  if (model.tokenizer->bos_id) model.config.bos_token_id = model.tokenizer->bos_id;
  if (model.tokenizer->eos_id) model.config.eos_token_id = model.tokenizer->eos_id;
  if (model.tokenizer->pad_id) model.config.pad_token_id = model.tokenizer->pad_id;
  model.notes.push_back("model.bin holds " + std::to_string(L.vocabulary_size) +
                        " vocabulary rows, so vocab_size is " + std::to_string(L.vocabulary_size) +
                        " (gpt-oss checkpoints pad to 201088; the rows above 200013 are not in the file)");
  return model;
}

}  // namespace gptoss
