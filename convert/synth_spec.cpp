#include "convert/synth_spec.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <stdexcept>
#include <thread>

#include "convert/synthesize.h"
#include "formats/core/parallel_for.h"
#include "formats/core/tensor_source.h"

namespace gptoss {
namespace {
constexpr std::string_view kPrefix = "synth:";

// Generating a tensor costs about 1.6 ns a byte on one core (0.6 GB/s): an engine that reads
// synth:120b on one thread (the Vulkan upload) would wait two minutes for its 65 GB. A generated
// byte depends on its offset alone, so a large read is split over the cores; reads that arrive
// on several threads at once (a parallel writer) share the cores instead of multiplying threads.
constexpr uint64_t kPieceBytes = 1u << 20;
std::atomic<unsigned> reads_in_flight{0};

void read_in_parallel(const TensorSource& source, uint64_t offset, std::span<uint8_t> out) {
  struct InFlight {
    unsigned count = ++reads_in_flight;
    ~InFlight() { --reads_in_flight; }
  } in_flight;
  const unsigned cores = available_cores();
  const uint64_t pieces = std::min<uint64_t>(out.size() / kPieceBytes, std::max(1u, cores / in_flight.count));
  if (pieces <= 1) {
    source.read(offset, out);
    return;
  }
  const uint64_t piece = (out.size() + pieces - 1) / pieces;
  std::vector<std::exception_ptr> errors(pieces);
  auto read_piece = [&](uint64_t i) {
    try {
      const uint64_t begin = i * piece, size = std::min(piece, out.size() - begin);
      source.read(offset + begin, out.subspan(begin, size));
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  std::vector<std::thread> helpers;
  for (uint64_t i = 1; i < pieces; ++i) helpers.push_back(start_worker([&read_piece, i] { read_piece(i); }));
  read_piece(0);
  for (auto& helper : helpers) helper.join();
  for (const auto& error : errors)
    if (error) std::rethrow_exception(error);
}

TensorSourcePtr with_parallel_reads(TensorSourcePtr source) {
  const uint64_t size = source->size();
  // Rows of one byte: read(offset, out) reaches the producer as exactly that range.
  return std::make_shared<LambdaRowSource>(size, 1, [source = std::move(source)](uint64_t first, uint64_t count,
                                                                                uint8_t* out) {
    read_in_parallel(*source, first, std::span<uint8_t>(out, count));
  });
}

std::string spec_list() {
  std::string list;
  const auto names = synth_spec_names();
  for (size_t i = 0; i < names.size(); ++i)
    list += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return list;
}
}  // namespace

bool is_synth_spec(const std::filesystem::path& path) { return path.native().starts_with(kPrefix); }

std::vector<std::string> synth_spec_names() {
  std::vector<std::string> names;
  for (const auto& preset : synth_presets()) names.push_back(std::string(kPrefix) + preset.name);
  return names;
}

CanonicalModel load_synth_spec(const std::filesystem::path& spec) {
  const std::string& text = spec.native();
  const auto& presets = synth_presets();
  const auto preset = std::find_if(presets.begin(), presets.end(), [&](const SynthPreset& p) {
    return is_synth_spec(spec) && text.substr(kPrefix.size()) == p.name;
  });
  if (preset == presets.end())
    throw std::invalid_argument("unknown model spec \"" + text + "\": the synthesized models are " + spec_list() +
                                " (a file of that name is reached as ./" + text + ")");
  CanonicalModel model = synthesize_model(*preset);
  for (auto& tensor : model.tensors) tensor.source = with_parallel_reads(std::move(tensor.source));
  model.source_description = text + " (preset " + preset->name + " synthesized on the fly, no tokenizer)";
  return model;
}

}  // namespace gptoss
