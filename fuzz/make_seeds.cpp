// Writes the seed corpora of the fuzz targets into OUT/<target>/: small files made by our own
// writers from a tiny GPT-OSS model (vocabulary 280, hidden 32/64), hand-made containers that use
// every value type, the heads of the goldens and of the real tokenizer.json when present, and
// gptoss-badinputs' hand-made hostile files.
// Deterministic: the same inputs give the same corpus.
//
//   gptoss_fuzz_seeds OUT [--goldens DIR] [--tokenizer tokenizer.json]
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "convert/gguf/gguf_model.h"
#include "convert/gptoss_config.h"
#include "convert/modelbin/modelbin_config.h"
#include "convert/modelbin/modelbin_tokenizer.h"
#include "convert/safetensors_model.h"
#include "convert/tokenizer_json.h"
#include "formats/core/float16.h"
#include "formats/gguf/gguf_writer.h"
#include "formats/modelbin/modelbin_writer.h"
#include "formats/safetensors/safetensors_writer.h"
#include "runtime/tokenizer/o200k_pretokenizer.h"
#include "runtime/tokenizer/tokenizer.h"
#include "tools/gptoss-badinputs/badinputs.h"
#include "convert/synthesize.h"

namespace {
using namespace gptoss;
namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr uint64_t kMaxSeedBytes = 96 * 1024;  // safetensors / GGUF / JSON seeds
constexpr const char* kHarmonySpecials[] = {"<|startoftext|>", "<|endoftext|>", "<|return|>", "<|constrain|>", "<|channel|>",
                                            "<|start|>", "<|end|>", "<|message|>", "<|call|>"};

std::vector<uint8_t> read_bytes(const fs::path& path, uint64_t limit = UINT64_MAX) {
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> bytes;
  char buffer[65536];
  while (in && bytes.size() < limit) {
    in.read(buffer, static_cast<std::streamsize>(std::min<uint64_t>(sizeof buffer, limit - bytes.size())));
    bytes.insert(bytes.end(), buffer, buffer + in.gcount());
  }
  return bytes;
}

void save(const fs::path& path, std::span<const uint8_t> bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}
void save(const fs::path& path, std::string_view text) {
  save(path, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

// 256 byte tokens, four merges spelling "hello", the harmony specials.
std::shared_ptr<TokenizerData> tiny_tokenizer() {
  auto t = std::make_shared<TokenizerData>();
  for (int b = 0; b < 256; ++b) {
    t->tokens.emplace_back(1, static_cast<char>(b));
    t->types.push_back(TokenType::Normal);
  }
  const std::pair<const char*, const char*> merges[] = {{"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}};
  for (const auto& [l, r] : merges) {
    t->tokens.push_back(std::string(l) + r);
    t->types.push_back(TokenType::Normal);
    t->merges.emplace_back(l, r);
  }
  for (const char* special : kHarmonySpecials) {
    t->tokens.emplace_back(special);
    t->types.push_back(TokenType::Control);
  }
  t->pretokenizer_regex = std::string(kO200kPretokenizerRegex);
  t->bos_id = t->find_special("<|startoftext|>");
  t->eos_id = t->find_special("<|return|>");
  t->pad_id = t->find_special("<|endoftext|>");
  return t;
}

json tokenizer_json_of(const TokenizerData& t, const std::string& regex) {
  json vocab = json::object(), added = json::array(), merges = json::array();
  for (uint32_t id = 0; id < t.size(); ++id) {
    if (t.types[id] == TokenType::Normal) vocab[bytes_to_gpt2_unicode(t.tokens[id])] = id;
    else if (t.is_special(id)) added.push_back({{"id", id}, {"content", t.tokens[id]}, {"special", true}});
  }
  for (const auto& [l, r] : t.merges) merges.push_back(json::array({bytes_to_gpt2_unicode(l), bytes_to_gpt2_unicode(r)}));
  json split = {{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}};
  json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}};
  return {{"version", "1.0"},
          {"added_tokens", added},
          {"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", json::array({split, byte_level})}}},
          {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"ignore_merges", false}}}};
}

GptOssConfig tiny_config(uint32_t layers, uint32_t hidden, uint32_t head_dim, uint32_t heads, uint32_t experts,
                         uint32_t topk, uint32_t vocab) {
  GptOssConfig c;
  c.num_layers = layers;
  c.hidden_size = hidden;
  c.intermediate_size = 32;
  c.num_heads = heads;
  c.num_kv_heads = 1;
  c.head_dim = head_dim;
  c.num_experts = experts;
  c.experts_per_token = topk;
  c.vocab_size = vocab;
  c.sliding_window = 16;
  for (uint32_t l = 0; l < layers; ++l) c.sliding_layers.push_back(l % 2 == 0);
  c.validate("tiny seed config");
  return c;
}

// Every canonical tensor with deterministic small values (bf16 dense, MXFP4 bytes with sane scales).
CanonicalModel tiny_model(const GptOssConfig& config, std::shared_ptr<TokenizerData> tokenizer) {
  CanonicalModel model;
  model.config = config;
  model.tokenizer = tokenizer;
  std::mt19937 rng(1234);
  std::vector<CanonicalTensor> tensors;
  for (const auto& spec : canonical_tensor_specs(config)) {
    uint64_t elements = 1;
    for (uint64_t d : spec.shape) elements *= d;
    std::vector<uint8_t> bytes;
    DType dtype = DType::BF16;
    if (is_mxfp4_role(spec.role)) {
      dtype = DType::U8;
      const bool scales = spec.role == TensorRole::Mlp1Scales || spec.role == TensorRole::Mlp2Scales;
      for (uint64_t i = 0; i < elements; ++i) bytes.push_back(static_cast<uint8_t>(scales ? 120 + rng() % 10 : rng()));
    } else {
      for (uint64_t i = 0; i < elements; ++i) {
        const uint16_t v = f32_to_bf16(static_cast<float>(static_cast<int>(rng() % 2001) - 1000) / 1000.0f);
        bytes.push_back(static_cast<uint8_t>(v));
        bytes.push_back(static_cast<uint8_t>(v >> 8));
      }
    }
    tensors.push_back({spec, dtype, std::make_shared<OwnedSource>(std::move(bytes)), "seed"});
  }
  finalize_canonical_tensors(config, tensors, "tiny seed model");
  model.tensors = std::move(tensors);
  return model;
}

// ---------------------------------------------------------------------------------------------

void safetensors_seeds(const fs::path& out, const fs::path& work, const CanonicalModel& model, const fs::path& goldens) {
  const fs::path dir = out / "fuzz_safetensors_header";
  int n = 0;
  auto keep_file = [&](const fs::path& file) {
    auto bytes = read_bytes(file);
    if (bytes.size() <= kMaxSeedBytes) save(dir / ("synth-" + std::to_string(n++)), bytes);
  };
  for (auto layout : {CheckpointLayout::HuggingFace, CheckpointLayout::Original}) {
    for (uint64_t shard : {uint64_t{0}, uint64_t{12000}}) {
      const fs::path ck = work / ("st-" + std::to_string(n));
      SafetensorsWriteOptions options;
      options.layout = layout;
      options.max_shard_bytes = shard;
      write_safetensors_model(model, ck, options);
      for (const auto& entry : fs::directory_iterator(ck))
        if (entry.path().extension() == ".safetensors") keep_file(entry.path());
      if (fs::exists(ck / "model.safetensors.index.json")) {
        // The harness saves the shard as model-00001-of-00001.safetensors: keep the index entries
        // of the first shard, renamed, so that the checkpoint opens.
        std::ifstream in(ck / "model.safetensors.index.json");
        json index = json::parse(in);
        std::string first;
        for (const auto& item : index["weight_map"].items())
          if (first.empty() || item.value().get<std::string>() < first) first = item.value().get<std::string>();
        json kept = json::object();
        for (const auto& item : index["weight_map"].items())
          if (item.value() == first) kept[item.key()] = "model-00001-of-00001.safetensors";
        index["weight_map"] = kept;
        std::string text = index.dump(2) + "\n--SHARD--\n";
        const auto shard_bytes = read_bytes(ck / first);
        std::vector<uint8_t> combined(text.begin(), text.end());
        combined.insert(combined.end(), shard_bytes.begin(), shard_bytes.end());
        if (combined.size() <= kMaxSeedBytes) save(dir / ("index-" + std::to_string(n++)), combined);
      }
    }
  }
  // Hand-made: every dtype the reader knows, empty tensors, zero-dim shapes, metadata.
  std::vector<SafetensorsEntry> entries;
  auto zeros = [](uint64_t count) { return owned_bytes(std::vector<uint8_t>(count)); };
  entries.push_back({"scalar", DType::F32, {}, zeros(4)});
  entries.push_back({"empty", DType::BF16, {0, 3}, zeros(0)});
  entries.push_back({"vector.f64", DType::F64, {3}, zeros(24)});
  entries.push_back({"matrix.i8", DType::I8, {2, 3}, zeros(6)});
  entries.push_back({"bool", DType::BOOL, {5}, zeros(5)});
  entries.push_back({"f8", DType::F8_E4M3, {4}, zeros(4)});
  entries.push_back({"u16", DType::U16, {1, 1, 1, 2}, zeros(4)});
  write_safetensors(work / "hand.safetensors", entries, {{"format", "pt"}, {"note", "fuzz seed"}});
  keep_file(work / "hand.safetensors");
  write_safetensors(work / "none.safetensors", {}, {});
  keep_file(work / "none.safetensors");
  // The golden's header (its data cut off: the reader must say so).
  if (const fs::path golden = goldens / "a" / "refs-a.safetensors"; fs::exists(golden)) {
    const auto head = read_bytes(golden, 8);
    if (head.size() == 8) {
      const uint64_t header = load_u64(head.data());
      save(dir / "golden-refs-a-header", read_bytes(golden, std::min<uint64_t>(8 + header + 64, kMaxSeedBytes)));
    }
  }
  std::cout << "fuzz_safetensors_header: " << n + 1 << " seeds\n";
}

void gguf_seeds(const fs::path& out, const fs::path& work, const CanonicalModel& model, const fs::path& goldens) {
  const fs::path dir = out / "fuzz_gguf";
  int n = 0;
  for (DType dense : {DType::BF16, DType::Q8_0, DType::F32}) {
    GgufWriteOptions options;
    options.dense_dtype = dense;
    const fs::path file = work / ("tiny-" + std::to_string(n) + ".gguf");
    write_gguf_model(model, file, options);
    const auto bytes = read_bytes(file);
    if (bytes.size() <= kMaxSeedBytes) save(dir / ("tiny-" + std::string(dtype_name(dense))), bytes);
    ++n;
  }
  // Every value type, nested arrays, an alignment key and small tensors of several ggml types.
  GgufMetadata md;
  md.add_string("general.architecture", "gpt-oss");
  md.add_u32("general.alignment", 64);
  md.add_u8("t.u8", 1);
  md.add_i8("t.i8", -1);
  md.add_u16("t.u16", 2);
  md.add_i16("t.i16", -2);
  md.add_i32("t.i32", -3);
  md.add_f32("t.f32", 0.5f);
  md.add_bool("t.bool", true);
  md.add_u64("t.u64", 4);
  md.add_i64("t.i64", -4);
  md.add_f64("t.f64", 0.25);
  const int32_t ints[] = {1, 2, 3};
  md.add_i32_array("t.i32s", ints);
  md.add_string_array("t.strings", {"a", "", "gpt-oss"});
  std::vector<GgufTensorEntry> tensors;
  auto zeros = [](uint64_t count) { return owned_bytes(std::vector<uint8_t>(count)); };
  tensors.push_back({"f32", 0, {4}, zeros(16)});
  tensors.push_back({"q8_0", 8, {32, 2}, zeros(68)});
  tensors.push_back({"mxfp4", 39, {32, 1, 2}, zeros(34)});
  tensors.push_back({"bf16", 30, {2, 2, 2, 2}, zeros(32)});
  write_gguf(work / "hand.gguf", md, tensors, 64);
  save(dir / "hand-all-types", read_bytes(work / "hand.gguf"));
  // No keys, no tensors: magic, version 3, two zero counts (written by hand: the writer has
  // nothing to say about it).
  const uint8_t empty[24] = {'G', 'G', 'U', 'F', 3};
  save(dir / "empty", std::span<const uint8_t>(empty));
  if (const fs::path golden = goldens / "a" / "model-q8_0.gguf"; fs::exists(golden))
    save(dir / "golden-q8_0-head", read_bytes(golden, 4096));  // header and the first keys
  std::cout << "fuzz_gguf: " << n + 3 << " seeds\n";
}

void modelbin_seeds(const fs::path& out, const fs::path& work, const fs::path& goldens) {
  const fs::path dir = out / "fuzz_modelbin";
  // A tiny model.bin: the format fixes head_dim 64 and 4 active experts.
  std::vector<std::string> notes;
  const GptOssConfig config = tiny_config(1, 64, 64, 1, 4, 4, 272);
  const modelbin::ModelHeader header = modelbin_header_from_config(config, notes);
  const auto tokenizer = tiny_tokenizer();
  modelbin::TokenizerSection section;
  section.special_token_uuids = modelbin_special_token_table();
  section.regex = kO200kRegex;
  for (int b = 0; b < 256; ++b) section.text_tokens.push_back(tokenizer->tokens[static_cast<size_t>(b)]);
  modelbin::ModelBinWriter writer(work / "tiny.bin", header, section);
  std::vector<TensorSourcePtr> tensors;
  uint8_t fill = 1;
  for (const auto& region : writer.layout().write_order())
    tensors.push_back(owned_bytes(std::vector<uint8_t>(region.region.size, fill++)));
  writer.write_tensors(tensors);
  writer.commit();
  save(dir / "tiny", read_bytes(work / "tiny.bin"));
  if (const fs::path golden = goldens / "a" / "model.bin"; fs::exists(golden))
    save(dir / "golden-head", read_bytes(golden, 8192));  // headers, UUIDs, the start of the tokens
  std::cout << "fuzz_modelbin: 2 seeds\n";
}

void tokenizer_seeds(const fs::path& out, const fs::path& real_tokenizer) {
  const fs::path dir = out / "fuzz_tokenizer_json";
  save(dir / "tiny", tokenizer_json_of(*tiny_tokenizer(), std::string(kO200kPretokenizerRegex)).dump(1));
  save(dir / "merges-as-strings", std::string(R"({"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]},)"
                                              R"("added_tokens":[{"id":3,"content":"<|end|>","special":true}]})"));
  save(dir / "minimal", std::string(R"({"model":{"type":"BPE","vocab":{}}})"));
  if (real_tokenizer.empty()) return;
  // The real tokenizer cut down to its first 600 ids (merges kept where all three tokens remain).
  auto real = load_tokenizer_json(real_tokenizer);
  TokenizerData small;
  for (uint32_t id = 0; id < 600; ++id) {
    small.tokens.push_back(real->tokens[id]);
    small.types.push_back(real->types[id]);
  }
  std::set<std::string> kept(small.tokens.begin(), small.tokens.end());
  for (const auto& [l, r] : real->merges)
    if (kept.count(l) && kept.count(r) && kept.count(l + r)) small.merges.emplace_back(l, r);
  for (const char* special : kHarmonySpecials) {
    small.tokens.emplace_back(special);
    small.types.push_back(TokenType::Control);
  }
  save(dir / "real-first-600", tokenizer_json_of(small, real->pretokenizer_regex).dump());
  std::cout << "fuzz_tokenizer_json: 4 seeds\n";
}

void config_seeds(const fs::path& out) {
  const fs::path dir = out / "fuzz_config_json";
  for (const auto& preset : synth_presets()) {
    const GptOssConfig c = synth_config(preset);
    save(dir / ("hf-" + preset.name), config_to_hf_json(c).dump(2));
    save(dir / ("original-" + preset.name), config_to_original_json(c).dump(2));
  }
  std::cout << "fuzz_config_json: " << 2 * synth_presets().size() << " seeds\n";
}

void harmony_seeds(const fs::path& out, const fs::path& real_tokenizer) {
  const fs::path dir = out / "fuzz_harmony_parser";
  const auto data = real_tokenizer.empty() ? tiny_tokenizer() : load_tokenizer_json(real_tokenizer);
  const Tokenizer tokenizer(*data);
  const std::pair<const char*, const char*> streams[] = {
      {"final", "<|channel|>final<|message|>Hello there!<|return|>"},
      {"analysis-final", "<|channel|>analysis<|message|>User greets.<|end|><|start|>assistant<|channel|>final<|message|>Hi \xF0\x9F\x98\x80<|return|>"},
      {"tool-call", " to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>"},
      {"cut-off", "<|channel|>final<|message|>Unfinished \xE2\x82"},
      {"full-start", "<|start|>assistant<|channel|>final<|message|>x<|end|><|start|>user<|message|>y<|end|>"},
  };
  int n = 0;
  for (const auto& [name, text] : streams) {
    const auto ids = tokenizer.encode(text, /*allow_special=*/true);
    std::vector<uint8_t> bytes{static_cast<uint8_t>(std::string_view(name) == "full-start" ? 0 : 1)};
    for (uint32_t id : ids)
      for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<uint8_t>(id >> (8 * i)));
    save(dir / (std::string("ids-") + name), bytes);
    ++n;
  }
  const char* texts[] = {"Hello world, 123 456789 don't DON'T   spaces\n\n\ttabs",
                         "<|start|>user<|message|>What is 2+2?<|end|><|start|>assistant",
                         "\xE4\xBD\xA0\xE5\xA5\xBD \xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7 \xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD",
                         "invalid \xFF\xFE\xC0 utf8 \xED\xA0\x80"};
  for (const char* text : texts)
    for (char mode : {char{2}, char{3}}) {
      std::string bytes(1, mode);
      bytes += text;
      save(dir / ("text-" + std::to_string(n++)), bytes);
    }
  std::cout << "fuzz_harmony_parser: " << n << " seeds\n";
}
// gptoss-badinputs' hand-made hostile files (about 1 KB each: sizes, offsets, counts and lengths
// that lie), each in the corpus of the target that reads its format, so that the sanitizer gate's
// replay reads every one of them under ASan + UBSan. The model.bin cases also stand for their
// load_model rows (the same bytes; fuzz_modelbin maps what parses); the index.json cases have no
// target of their own, and the harmony cases are fuzz_harmony_parser's already.
void hostile_seeds(const fs::path& out) {
  const std::map<std::string, std::string> target_of = {
      {"safetensors", "fuzz_safetensors_header"}, {"GGUF", "fuzz_gguf"}, {"GGUF model (load_model)", "fuzz_gguf"},
      {"model.bin", "fuzz_modelbin"}, {"tokenizer.json", "fuzz_tokenizer_json"}, {"config.json", "fuzz_config_json"}};
  std::map<std::string, int> counts;
  for (const auto& c : hostile_cases()) {
    const auto it = target_of.find(c.format);
    if (it == target_of.end()) continue;
    save(out / it->second / ("hostile-" + std::to_string(counts[it->second]++)), c.bytes);
  }
  for (const auto& [target, n] : counts) std::cout << target << ": " << n << " hostile files\n";
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: gptoss_fuzz_seeds OUT [--goldens DIR] [--tokenizer tokenizer.json]\n";
    return 2;
  }
  const fs::path out = argv[1];
  fs::path goldens, real_tokenizer;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--goldens") == 0) goldens = argv[i + 1];
    else if (std::strcmp(argv[i], "--tokenizer") == 0) real_tokenizer = argv[i + 1];
  }
  if (!real_tokenizer.empty() && !fs::exists(real_tokenizer)) real_tokenizer.clear();
  try {
    const fs::path work = out / ".work";
    fs::remove_all(work);
    fs::create_directories(work);
    const CanonicalModel model = tiny_model(tiny_config(2, 32, 16, 2, 2, 1, 280), tiny_tokenizer());
    safetensors_seeds(out, work, model, goldens);
    gguf_seeds(out, work, model, goldens);
    modelbin_seeds(out, work, goldens);
    tokenizer_seeds(out, real_tokenizer);
    config_seeds(out);
    harmony_seeds(out, real_tokenizer);
    hostile_seeds(out);
    fs::remove_all(work);
  } catch (const std::exception& e) {
    std::cerr << "gptoss_fuzz_seeds: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
