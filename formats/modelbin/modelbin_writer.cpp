#include "formats/modelbin/modelbin_writer.h"

#include <limits>
#include <stdexcept>

namespace gptoss::modelbin {

TokenizerHeader tokenizer_header_for(const TokenizerSection& s) {
  auto fits = [](uint64_t v, const char* what) {
    if (v > std::numeric_limits<uint32_t>::max())
      throw std::invalid_argument(std::string("model.bin: ") + what + " does not fit the 32-bit tokenizer header");
    return static_cast<uint32_t>(v);
  };
  if (s.regex.find('\0') != std::string::npos)
    throw std::invalid_argument("model.bin: the tokenizer regex contains a NUL byte; the format stores it NUL-terminated");
  uint64_t tokens_size = 0;
  for (size_t id = 0; id < s.text_tokens.size(); ++id) {
    if (s.text_tokens[id].size() > std::numeric_limits<uint16_t>::max())
      throw std::invalid_argument("model.bin: text token " + std::to_string(id) + " is " +
                                  std::to_string(s.text_tokens[id].size()) + " bytes; the format's u16 length holds at most 65535");
    tokens_size += 2 + s.text_tokens[id].size();
  }
  TokenizerHeader h;
  h.num_special_tokens = fits(s.special_token_uuids.size(), "the number of special tokens");
  h.num_text_tokens = fits(s.text_tokens.size(), "the number of text tokens");
  h.regex_size = fits(s.regex.size() + 1, "the regex size");
  h.tokens_size = fits(tokens_size, "the text-token section size");
  return h;
}

ModelBinWriter::ModelBinWriter(const std::filesystem::path& path, const ModelHeader& header,
                               const TokenizerSection& tokenizer)
    : out_(path) {
  const TokenizerHeader th = tokenizer_header_for(tokenizer);
  layout_ = compute_modelbin_layout(header, th, path.string());
  order_ = layout_.write_order();

  out_.write(kMagic.data(), kMagic.size());
  out_.write_u32(0);
  out_.write(kGptOssModelUuid.data(), kGptOssModelUuid.size());
  const auto model_header = encode_model_header(header);
  out_.write(model_header.data(), model_header.size());
  out_.write(kAppleGpuLayoutUuid.data(), kAppleGpuLayoutUuid.size());
  out_.write(kTiktokenTokenizerUuid.data(), kTiktokenTokenizerUuid.size());
  out_.write_u32(th.num_special_tokens);
  out_.write_u32(th.num_text_tokens);
  out_.write_u32(th.regex_size);
  out_.write_u32(th.tokens_size);
  for (const Uuid& u : tokenizer.special_token_uuids) out_.write(u.data(), u.size());
  out_.write(tokenizer.regex.data(), tokenizer.regex.size());
  out_.write_u8(0);
  for (std::string_view token : tokenizer.text_tokens) {
    out_.write_u16(static_cast<uint16_t>(token.size()));
    out_.write(token.data(), token.size());
  }
  if (out_.position() != layout_.tokenizer_end)
    throw std::logic_error("model.bin writer: tokenizer section ends at " + std::to_string(out_.position()) +
                           ", the layout says " + std::to_string(layout_.tokenizer_end));
}

void ModelBinWriter::write_tensors(const std::vector<TensorSourcePtr>& sources, const PipelineOptions& stream) {
  if (written_) throw std::logic_error("model.bin writer: the tensors are already written");
  if (sources.size() != order_.size())
    throw std::invalid_argument("model.bin: " + std::to_string(order_.size()) + " tensors to write, " +
                                std::to_string(sources.size()) + " given");
  std::vector<PipelineItem> items;
  for (size_t i = 0; i < order_.size(); ++i) {
    const auto& expected = order_[i];
    const uint64_t size = sources[i] ? sources[i]->size() : 0;
    if (size != expected.region.size)
      throw std::invalid_argument("model.bin: " + expected.name + " must be " + std::to_string(expected.region.size) +
                                  " bytes, the source has " + std::to_string(size));
    items.push_back({expected.name, sources[i]});
  }
  OrderedChunkPipeline data(std::move(items), stream);
  for (const auto& expected : order_) {
    if (out_.position() > expected.region.offset)
      throw std::logic_error("model.bin writer: at " + std::to_string(out_.position()) + ", past the offset of " +
                             expected.name + " (" + std::to_string(expected.region.offset) + ")");
    out_.write_zeros(expected.region.offset - out_.position());
    data.write_next(out_);
    if (out_.position() != expected.region.end())
      throw std::logic_error("model.bin writer: " + expected.name + " ended at " + std::to_string(out_.position()) +
                             " instead of " + std::to_string(expected.region.end()));
  }
  written_ = true;
}

void ModelBinWriter::commit() {
  if (!written_) throw std::logic_error("model.bin writer: commit before the tensors were written");
  if (out_.position() != layout_.file_size)
    throw std::logic_error("model.bin writer: file ends at " + std::to_string(out_.position()) + ", the layout says " +
                           std::to_string(layout_.file_size));
  out_.commit();
}

}  // namespace gptoss::modelbin
