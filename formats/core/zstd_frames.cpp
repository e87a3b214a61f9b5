#include "formats/core/zstd_frames.h"

#include <zstd.h>

#include "formats/core/error.h"

namespace gptoss {
namespace {
struct CctxDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct DctxDeleter {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

ZSTD_CCtx* thread_cctx() {
  thread_local std::unique_ptr<ZSTD_CCtx, CctxDeleter> cctx(ZSTD_createCCtx());
  if (!cctx) throw std::bad_alloc();
  return cctx.get();
}

ZSTD_DCtx* thread_dctx() {
  thread_local std::unique_ptr<ZSTD_DCtx, DctxDeleter> dctx(ZSTD_createDCtx());
  if (!dctx) throw std::bad_alloc();
  return dctx.get();
}
}  // namespace

std::vector<uint8_t> zstd_compress_frame(std::span<const uint8_t> bytes, int level) {
  ZSTD_CCtx* cctx = thread_cctx();
  ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);
  std::vector<uint8_t> out(ZSTD_compressBound(bytes.size()));
  const size_t size = ZSTD_compress2(cctx, out.data(), out.size(), bytes.data(), bytes.size());
  if (ZSTD_isError(size)) throw std::runtime_error(std::string("zstd compression failed: ") + ZSTD_getErrorName(size));
  out.resize(size);
  return out;
}

ZstdFrameReader::ZstdFrameReader(std::shared_ptr<const MappedFile> file) : file_(std::move(file)) {}

ZstdFrameReader::Frame ZstdFrameReader::next(std::string_view field, uint64_t max_content_size) {
  const std::string name(field);
  if (at_end()) throw_format_error(file_->path(), name, offset_, "the file ends here: a zstd frame is missing");
  const auto rest = file_->bytes().subspan(offset_);
  const unsigned long long content = ZSTD_getFrameContentSize(rest.data(), rest.size());
  if (content == ZSTD_CONTENTSIZE_ERROR)
    throw_format_error(file_->path(), name, offset_, "not a zstd frame (the file is not what this reader expects, or corrupt)");
  if (content == ZSTD_CONTENTSIZE_UNKNOWN)
    throw_format_error(file_->path(), name, offset_, "the zstd frame does not state its content size");
  if (content > max_content_size)
    throw_format_error(file_->path(), name, offset_,
                       "the zstd frame holds " + std::to_string(content) + " bytes, more than the " +
                           std::to_string(max_content_size) + " this record can have");
  const size_t size = ZSTD_findFrameCompressedSize(rest.data(), rest.size());
  if (ZSTD_isError(size))
    throw_format_error(file_->path(), name, offset_, std::string("truncated or corrupt zstd frame: ") + ZSTD_getErrorName(size));
  Frame frame{rest.first(size), offset_, content};
  offset_ += size;
  return frame;
}

void ZstdFrameReader::decompress(const Frame& frame, std::span<uint8_t> out, std::string_view field) const {
  if (out.size() != frame.content_size)
    throw_format_error(file_->path(), std::string(field), frame.offset,
                       "the zstd frame holds " + std::to_string(frame.content_size) + " bytes, expected " +
                           std::to_string(out.size()));
  const size_t got = ZSTD_decompressDCtx(thread_dctx(), out.data(), out.size(), frame.bytes.data(), frame.bytes.size());
  if (ZSTD_isError(got))
    throw_format_error(file_->path(), std::string(field), frame.offset,
                       std::string("corrupt zstd frame: ") + ZSTD_getErrorName(got));
  if (got != out.size())
    throw_format_error(file_->path(), std::string(field), frame.offset, "the zstd frame decompressed to fewer bytes than its header states");
}

std::vector<uint8_t> ZstdFrameReader::decompress(const Frame& frame, std::string_view field) const {
  std::vector<uint8_t> out(frame.content_size);
  decompress(frame, out, field);
  return out;
}

}  // namespace gptoss
