#include "tools/gptoss-badinputs/badinputs.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "convert/gguf/gguf_tokenizer.h"
#include "convert/gptoss_config.h"
#include "convert/model_io.h"
#include "convert/modelbin/modelbin_tokenizer.h"
#include "convert/synthesize.h"
#include "convert/tokenizer_json.h"
#include "formats/core/error.h"
#include "formats/core/mapped_file.h"
#include "formats/gguf/gguf_file.h"
#include "formats/gguf/gguf_writer.h"
#include "formats/modelbin/modelbin_file.h"
#include "formats/modelbin/modelbin_writer.h"
#include "formats/safetensors/safetensors_checkpoint.h"
#include "formats/safetensors/safetensors_file.h"
#include "formats/safetensors/safetensors_writer.h"
#include "tools/gptoss-badinputs/child_process.h"
#include "tools/gptoss-badinputs/harmony_cases.h"
#include "tools/gptoss-badinputs/tiny_modelbin.h"

namespace gptoss {
namespace {
namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;
using Reader = std::function<void(const Bytes&)>;

// ---- files and scratch folder -------------------------------------------------------------

class Scratch {
 public:
  Scratch() {
    path_ = fs::temp_directory_path() / ("gptoss-badinputs-" + std::to_string(::getpid()));
    fs::create_directories(path_);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

Bytes read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const fs::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

Bytes text_bytes(std::string_view text) { return Bytes(text.begin(), text.end()); }

// Little-endian builder for hand-made binary headers.
struct Raw {
  Bytes b;
  Raw& u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  Raw& u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  Raw& str(std::string_view s) {  // GGUF string: u64 length + bytes
    u64(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Raw& raw(std::string_view s) {
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Bytes padded(size_t size = 1024) const {  // hostile files are 1 KB
    Bytes out = b;
    if (out.size() < size) out.resize(size, 0);
    return out;
  }
};

void patch_u32(Bytes& bytes, uint64_t offset, uint32_t v) {
  for (int i = 0; i < 4; ++i) bytes[offset + i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t touch(std::span<const uint8_t> bytes) {  // reads every byte, as a conversion would
  uint64_t sum = 0;
  for (uint8_t v : bytes) sum += v;
  return sum;
}

// ---- seeds: small valid files ---------------------------------------------------------------

Bytes safetensors_seed(const fs::path& dir) {
  auto fill = [](uint64_t n, uint8_t v) { return owned_bytes(Bytes(n, v)); };
  std::vector<SafetensorsEntry> entries = {{"a.weight", DType::BF16, {2, 3}, fill(12, 1)},
                                           {"b.bias", DType::F32, {4}, fill(16, 2)},
                                           {"c.blocks", DType::U8, {2, 2, 2}, fill(8, 3)}};
  write_safetensors(dir / "seed.safetensors", entries);
  return read_bytes(dir / "seed.safetensors");
}

GgufMetadata gguf_seed_metadata() {
  GgufMetadata md;
  md.add_string("general.architecture", "gpt-oss");
  md.add_u32("gpt-oss.block_count", 1);
  md.add_f32("gpt-oss.rope.freq_base", 150000.0f);
  md.add_bool("general.flag", true);
  md.add_string("tokenizer.ggml.model", "gpt2");
  md.add_string_array("tokenizer.ggml.tokens", {"a", "b", "ab", "<|end|>"});
  md.add_i32_array("tokenizer.ggml.token_type", std::vector<int32_t>{1, 1, 1, 3});
  md.add_string_array("tokenizer.ggml.merges", {"a b"});
  return md;
}

Bytes gguf_seed(const fs::path& dir) {
  std::vector<GgufTensorEntry> tensors;
  tensors.push_back({"a.weight", 0, {8}, owned_bytes(Bytes(32))});
  tensors.push_back({"b.weight", 8, {32, 2}, owned_bytes(Bytes(68))});
  write_gguf(dir / "seed.gguf", gguf_seed_metadata(), tensors);
  return read_bytes(dir / "seed.gguf");
}

Bytes modelbin_seed(const fs::path& dir) {
  write_tiny_modelbin(dir / "seed.bin");
  return read_bytes(dir / "seed.bin");
}

const char* kTokenizerSeed = R"({"version":"1.0","added_tokens":[{"id":4,"content":"<|end|>","special":true}],
"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"\\s+"}}]},
"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2,"Ġ":3},"merges":["a b",["Ġ","a"]]}})";

std::string config_seed() { return config_to_hf_json(synth_config(synth_preset("a"))).dump(1); }

// ---- readers: the public entry points, and a use of what they return ------------------------

void read_safetensors(const Bytes& bytes) {
  const auto st = SafetensorsFile::parse(MappedFile::from_bytes(bytes, "case.safetensors"));
  for (const auto& t : st.tensors()) touch(st.data(t));
}

void read_gguf(const Bytes& bytes) {
  const auto g = GgufFile::parse(MappedFile::from_bytes(bytes, "case.gguf"));
  for (const auto& t : g.tensors()) touch(g.data(t));
  for (const auto& kv : g.kvs()) (void)kv.value.to_string();
  (void)gguf_tokenizer(g);
}

void read_modelbin(const Bytes& bytes) {
  const auto f = modelbin::ModelBinFile::parse(MappedFile::from_bytes(bytes, "case.bin"));
  for (const auto& named : f.layout().write_order()) touch(f.bytes(named.region));
  std::vector<std::string> notes;
  (void)tokenizer_from_modelbin(f, notes);
}

Reader through_file(const fs::path& path, const std::function<void(const fs::path&)>& read) {
  return [path, read](const Bytes& bytes) {
    write_bytes(path, bytes);
    read(path);
  };
}

// ---- hostile, hand-made cases ---------------------------------------------------------------

using Cases = std::vector<std::pair<std::string, Bytes>>;

Raw gguf_head(uint64_t tensors, uint64_t kvs) {
  Raw r;
  r.u32(kGgufMagic).u32(3).u64(tensors).u64(kvs);
  return r;
}

Cases gguf_hostile() {
  Cases c;
  c.emplace_back("kv_count 2^60", gguf_head(0, 1ull << 60).padded());
  c.emplace_back("tensor_count 2^60", gguf_head(1ull << 60, 0).padded());
  c.emplace_back("key length 2^40", gguf_head(0, 1).u64(1ull << 40).padded());
  c.emplace_back("string length 2^40", gguf_head(0, 1).str("k").u32(8).u64(1ull << 40).padded());
  c.emplace_back("string length 2^64-1", gguf_head(0, 1).str("k").u32(8).u64(~0ull).padded());
  c.emplace_back("array count 2^40", gguf_head(0, 1).str("k").u32(9).u32(0).u64(1ull << 40).padded());
  c.emplace_back("string array count 2^30", gguf_head(0, 1).str("k").u32(9).u32(8).u64(1ull << 30).padded());
  c.emplace_back("u64 array count 2^27", gguf_head(0, 1).str("k").u32(9).u32(10).u64(1ull << 27).padded());
  c.emplace_back("nested array", gguf_head(0, 1).str("k").u32(9).u32(9).u64(1).padded());
  c.emplace_back("value type 2^31", gguf_head(0, 1).str("k").u32(0x80000000u).padded());
  c.emplace_back("byte-swapped version", Raw{}.u32(kGgufMagic).u32(0x03000000).u64(0).u64(0).padded());
  c.emplace_back("alignment 3", gguf_head(0, 1).str("general.alignment").u32(4).u32(3).padded());
  c.emplace_back("alignment 2^31 (huge padding)", gguf_head(0, 1).str("general.alignment").u32(4).u32(1u << 31).padded());
  c.emplace_back("duplicate key", gguf_head(0, 2).str("k").u32(4).u32(1).str("k").u32(4).u32(2).padded());
  c.emplace_back("n_dims 5", gguf_head(1, 0).str("t").u32(5).u64(1).u64(1).u64(1).u64(1).u64(1).u32(0).u64(0).padded());
  c.emplace_back("n_dims 2^32-1", gguf_head(1, 0).str("t").u32(0xFFFFFFFFu).padded());
  c.emplace_back("ne product overflows", gguf_head(1, 0).str("t").u32(2).u64(1ull << 62).u64(16).u32(0).u64(0).padded());
  c.emplace_back("ne 2^40 (size past the file)", gguf_head(1, 0).str("t").u32(1).u64(1ull << 40).u32(0).u64(0).padded());
  c.emplace_back("unknown tensor type", gguf_head(1, 0).str("t").u32(1).u64(8).u32(9999).u64(0).padded());
  c.emplace_back("tensor offset 2^63", gguf_head(1, 0).str("t").u32(1).u64(8).u32(0).u64(1ull << 63).padded());
  c.emplace_back("tensor name 900 bytes", gguf_head(1, 0).str(std::string(900, 'n')).u32(1).u64(8).u32(0).u64(0).padded());
  c.emplace_back("empty key", gguf_head(0, 1).str("").u32(4).u32(1).padded());
  return c;
}

// GPT-OSS metadata with one hostile value: reaches the model loader (load_model).
Bytes gguf_model_with(const std::string& hostile_key, uint32_t hostile_value) {
  const std::map<std::string, uint32_t> keys = {
      {"gpt-oss.block_count", 2},         {"gpt-oss.embedding_length", 64},
      {"gpt-oss.attention.head_count", 2}, {"gpt-oss.attention.head_count_kv", 1},
      {"gpt-oss.attention.key_length", 64}, {"gpt-oss.expert_count", 4},
      {"gpt-oss.expert_used_count", 2},   {"gpt-oss.expert_feed_forward_length", 64},
      {"gpt-oss.attention.sliding_window", 8}, {"gpt-oss.context_length", 4096}};
  Raw r = gguf_head(0, keys.size() + 2);
  r.str("general.architecture").u32(8).str("gpt-oss");
  r.str("gpt-oss.attention.layer_norm_rms_epsilon").u32(6).u32(0x3727C5AC);  // 1e-5f
  for (const auto& [key, value] : keys) r.str(key).u32(4).u32(key == hostile_key ? hostile_value : value);
  return r.padded();
}

Cases gguf_model_hostile() {
  Cases c;
  for (const char* key : {"gpt-oss.block_count", "gpt-oss.expert_count", "gpt-oss.embedding_length",
                          "gpt-oss.attention.head_count", "gpt-oss.expert_feed_forward_length",
                          "gpt-oss.attention.key_length"})
    c.emplace_back(std::string(key) + " 2^32-1", gguf_model_with(key, 0xFFFFFFFFu));
  c.emplace_back("all sane, no tensors", gguf_model_with("", 0));
  return c;
}

Cases safetensors_hostile() {
  auto file = [](std::string_view header) {
    Raw r;
    r.u64(header.size()).raw(header);
    return r.padded();
  };
  Cases c;
  c.emplace_back("header length 2^63", Raw{}.u64(1ull << 63).padded());
  c.emplace_back("header length 100000001", Raw{}.u64(100000001).padded());
  c.emplace_back("header length past the file", Raw{}.u64(5000).raw("{}").padded());
  c.emplace_back("shape [2^62, 2^62]",
                 file(R"({"t":{"dtype":"F32","shape":[4611686018427387904,4611686018427387904],"data_offsets":[0,16]}})"));
  c.emplace_back("shape product wraps to 0",
                 file(R"({"t":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})"));
  c.emplace_back("data_offsets [0, 2^64-1]",
                 file(R"({"t":{"dtype":"U8","shape":[8],"data_offsets":[0,18446744073709551615]}})"));
  c.emplace_back("data_offsets reversed", file(R"({"t":{"dtype":"U8","shape":[0],"data_offsets":[8,0]}})"));
  std::string dims = R"({"t":{"dtype":"U8","shape":[)";
  for (int i = 0; i < 400; ++i) dims += i ? ",1" : "1";
  c.emplace_back("400 dimensions", file(dims + R"(],"data_offsets":[0,1]}})"));
  c.emplace_back("unknown dtype", file(R"({"t":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}})"));
  c.emplace_back("negative dimension", file(R"({"t":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}})"));
  c.emplace_back("fractional dimension", file(R"({"t":{"dtype":"U8","shape":[1.5],"data_offsets":[0,1]}})"));
  c.emplace_back("number 1e400", file(R"({"t":{"dtype":"U8","shape":[1e400],"data_offsets":[0,1]}})"));
  c.emplace_back("metadata value not a string", file(R"({"__metadata__":{"a":1}})"));
  c.emplace_back("duplicate key", file(R"({"t":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},"t":{}})"));
  c.emplace_back("NUL in header", file(std::string("{}\0\0", 4)));
  c.emplace_back("byte-order mark", file("\xEF\xBB\xBF{}"));
  c.emplace_back("nesting 900 deep", file(std::string(900, '[')));
  c.emplace_back("top level is an array", file("[]"));
  c.emplace_back("invalid UTF-8 key", file("{\"\xFF\":1}"));
  return c;
}

Cases modelbin_hostile(const Bytes& seed) {
  using namespace modelbin;
  Cases c;
  auto patched = [&](uint64_t offset, uint32_t v) {
    Bytes b = seed;
    patch_u32(b, offset, v);
    return b;
  };
  const std::pair<const char*, uint64_t> model_fields[] = {
      {"num_blocks", 4}, {"num_experts", 8}, {"num_active_experts", 12}, {"embedding_dim", 16},
      {"mlp_dim", 20},   {"head_dim", 28},   {"num_heads", 32},          {"num_kv_heads", 36}};
  for (const auto& [name, at] : model_fields) {
    c.emplace_back(std::string(name) + " 2^32-1", patched(kModelHeaderOffset + at, 0xFFFFFFFFu));
    c.emplace_back(std::string(name) + " 0", patched(kModelHeaderOffset + at, 0));
  }
  const std::pair<const char*, uint64_t> tokenizer_fields[] = {
      {"num_special_tokens", 0}, {"num_text_tokens", 4}, {"regex_size", 8}, {"tokens_size", 12}};
  for (const auto& [name, at] : tokenizer_fields) {
    c.emplace_back(std::string(name) + " 2^32-1", patched(kTokenizerHeaderOffset + at, 0xFFFFFFFFu));
    c.emplace_back(std::string(name) + " 0", patched(kTokenizerHeaderOffset + at, 0));
  }
  Bytes long_token = seed;
  const uint64_t first_token = kSpecialTableOffset + 2 * 16 + 4;  // after 2 specials and "\s+\0"
  long_token[first_token] = 0xFF;
  long_token[first_token + 1] = 0xFF;
  c.emplace_back("token length 65535", long_token);
  c.emplace_back("1 KB header only", Bytes(seed.begin(), seed.begin() + 1024));
  return c;
}

Cases tokenizer_hostile() {
  auto tok = [](const std::string& model, const std::string& extra = "") {
    return text_bytes("{" + extra + "\"model\":{\"type\":\"BPE\"," + model + "}}");
  };
  Cases c;
  c.emplace_back("token id 2^24-1 (sparse vocabulary)", tok(R"("vocab":{"a":16777215})"));
  c.emplace_back("token id 2^63", tok(R"("vocab":{"a":9223372036854775808})"));
  c.emplace_back("token id -1", tok(R"("vocab":{"a":-1})"));
  c.emplace_back("added token id 2^24-1", tok(R"("vocab":{"a":0})", R"("added_tokens":[{"id":16777215,"content":"x"}],)"));
  c.emplace_back("added token content not a string", tok(R"("vocab":{"a":0})", R"("added_tokens":[{"id":1,"content":7}],)"));
  c.emplace_back("special not a boolean", tok(R"("vocab":{"a":0})", R"("added_tokens":[{"id":1,"content":"x","special":"yes"}],)"));
  c.emplace_back("model type not a string", text_bytes(R"({"model":{"type":7,"vocab":{}}})"));
  c.emplace_back("merge without space", tok(R"("vocab":{"a":0},"merges":["ab"])"));
  c.emplace_back("merge of 3 parts", tok(R"("vocab":{"a":0},"merges":[["a","b","c"]])"));
  c.emplace_back("merges not an array", tok(R"("vocab":{"a":0},"merges":{"a":"b"})"));
  c.emplace_back("regex not a string",
                 tok(R"("vocab":{"a":0})", R"("pre_tokenizer":{"type":"Split","pattern":{"Regex":5}},)"));
  c.emplace_back("pattern not an object",
                 tok(R"("vocab":{"a":0})", R"("pre_tokenizer":{"type":"Split","pattern":"x"},)"));
  std::string deep = R"("pre_tokenizer":)";
  for (int i = 0; i < 60; ++i) deep += R"({"type":"Sequence","pretokenizers":[)";
  deep += "{}";
  for (int i = 0; i < 60; ++i) deep += "]}";
  c.emplace_back("pretokenizers 60 deep", tok(R"("vocab":{"a":0})", deep + ","));
  c.emplace_back("pretokenizers not an array",
                 tok(R"("vocab":{"a":0})", R"("pre_tokenizer":{"type":"Sequence","pretokenizers":7},)"));
  c.emplace_back("token not byte-level text", tok(R"("vocab":{"\u4e00":0})"));
  c.emplace_back("id used twice", tok(R"("vocab":{"a":0,"b":0})"));
  c.emplace_back("nesting 900 deep", text_bytes(std::string(900, '[')));
  c.emplace_back("not JSON", text_bytes("\x00\x01\x02"));
  return c;
}

Cases config_hostile() {
  Cases c;
  const std::string seed = config_seed();
  auto with = [&](const std::string& key, const std::string& value) {
    auto j = nlohmann::json::parse(seed);
    j[key] = nlohmann::json::parse(value);
    return text_bytes(j.dump());
  };
  for (const char* key : {"num_hidden_layers", "num_local_experts", "hidden_size", "intermediate_size",
                          "num_attention_heads", "head_dim", "vocab_size", "num_key_value_heads"}) {
    c.emplace_back(std::string(key) + " 2^32-1", with(key, "4294967295"));
    c.emplace_back(std::string(key) + " 2^31-32", with(key, "2147483616"));
  }
  c.emplace_back("num_hidden_layers 2^40", with("num_hidden_layers", "1099511627776"));
  c.emplace_back("num_hidden_layers -1", with("num_hidden_layers", "-1"));
  c.emplace_back("num_hidden_layers 1.5", with("num_hidden_layers", "1.5"));
  c.emplace_back("num_hidden_layers a string", with("num_hidden_layers", "\"4\""));
  c.emplace_back("layer_types not strings", with("layer_types", "[1,2]"));
  c.emplace_back("layer_types 3 for 4 layers", with("layer_types", R"(["sliding_attention","full_attention","full_attention"])"));
  c.emplace_back("rope_scaling type not a string", with("rope_scaling", R"({"rope_type":7})"));
  c.emplace_back("rope factor a string", with("rope_scaling", R"({"rope_type":"yarn","factor":"x"})"));
  c.emplace_back("rope_theta NaN-like 1e400", text_bytes(seed.substr(0, seed.size() - 1) + R"(,"rope_theta":1e400})"));
  c.emplace_back("eos_token_id 2^40", with("eos_token_id", "1099511627776"));
  c.emplace_back("model_type llama", with("model_type", "\"llama\""));
  c.emplace_back("top level is a number", text_bytes("42"));
  c.emplace_back("nesting 900 deep", text_bytes(std::string(900, '{')));
  return c;
}

Cases index_hostile() {
  Cases c;
  c.emplace_back("weight_map not an object", text_bytes(R"({"weight_map":[]})"));
  c.emplace_back("shard name ../escape", text_bytes(R"({"weight_map":{"a.weight":"../x.safetensors"}})"));
  c.emplace_back("shard name with a slash", text_bytes(R"({"weight_map":{"a.weight":"sub/x.safetensors"}})"));
  c.emplace_back("shard name empty", text_bytes(R"({"weight_map":{"a.weight":""}})"));
  c.emplace_back("shard name not a string", text_bytes(R"({"weight_map":{"a.weight":1}})"));
  c.emplace_back("shard that does not exist", text_bytes(R"({"weight_map":{"a.weight":"missing.safetensors"}})"));
  c.emplace_back("shard is the index itself", text_bytes(R"({"weight_map":{"a.weight":"model.safetensors.index.json"}})"));
  c.emplace_back("nesting 900 deep", text_bytes(std::string(900, '[')));
  return c;
}

// ---- the runner ---------------------------------------------------------------------------

class Runner {
 public:
  explicit Runner(const BadInputOptions& options) : options_(options) {}
  std::vector<BadInputTally> tallies;

  void run(const std::string& input_class, const std::string& format, const Reader& read, const Bytes& bytes) {
    BadInputTally& t = tally(input_class, format);
    ++t.cases;
    const auto start = std::chrono::steady_clock::now();
    try {
      read(bytes);
      ++t.accepted;
    } catch (const FormatError&) {
      ++t.rejected;
    } catch (const std::exception& e) {
      ++t.unexpected;
      if (t.unexpected_messages.size() < 5) t.unexpected_messages.push_back(e.what());
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    t.max_ms = std::max(t.max_ms, ms);
  }

  void truncations(const std::string& format, const Reader& read, const Bytes& seed) {
    for (uint64_t n = 0; n < seed.size(); n += options_.stride)
      run("truncation at every byte", format, read, Bytes(seed.begin(), seed.begin() + static_cast<std::ptrdiff_t>(n)));
  }

  void flips(const std::string& format, const Reader& read, const Bytes& seed) {
    Bytes b = seed;
    for (uint64_t i = 0; i < seed.size(); i += options_.stride) {
      for (uint8_t value : {static_cast<uint8_t>(seed[i] ^ 0x01), static_cast<uint8_t>(seed[i] ^ 0x80), uint8_t{0xFF}}) {
        if (value == seed[i]) continue;
        b[i] = value;
        run("single-byte change (^0x01, ^0x80, 0xFF)", format, read, b);
      }
      b[i] = seed[i];
    }
  }

  void crafted(const std::string& format, const Reader& read, const Cases& cases) {
    for (const auto& [name, bytes] : cases) run("hostile header fields (1 KB)", format, read, bytes);
  }

  bool wants(const std::string& format) const { return options_.only_format.empty() || options_.only_format == format; }

 private:
  BadInputTally& tally(const std::string& input_class, const std::string& format) {
    for (auto& t : tallies)
      if (t.input_class == input_class && t.format == format) return t;
    tallies.push_back({input_class, format});
    return tallies.back();
  }
  BadInputOptions options_;
};

// The sharded checkpoint whose index.json the index cases replace.
fs::path sharded_folder(const fs::path& dir) {
  const fs::path folder = dir / "sharded";
  if (!fs::exists(folder / "model-00002-of-00002.safetensors")) {
    fs::create_directories(folder);
    std::vector<SafetensorsEntry> entries = {
        {"a.weight", DType::U8, {4}, owned_bytes(Bytes(4))}, {"b.weight", DType::U8, {4}, owned_bytes(Bytes(4))}};
    write_sharded_safetensors(folder, entries, 4);
  }
  return folder;
}

Reader reader_for(const std::string& format, const fs::path& dir) {
  if (format == "safetensors") return read_safetensors;
  if (format == "GGUF") return read_gguf;
  if (format == "model.bin") return read_modelbin;
  if (format == "safetensors index.json") {
    const fs::path folder = sharded_folder(dir);
    return through_file(folder / "model.safetensors.index.json",
                        [folder](const fs::path&) { (void)SafetensorsCheckpoint::open(folder); });
  }
  if (format == "GGUF model (load_model)")
    return through_file(dir / "case.gguf", [](const fs::path& p) { (void)load_model(p); });
  if (format == "model.bin model (load_model)")
    return through_file(dir / "case.bin", [](const fs::path& p) { (void)load_model(p); });
  if (format == "tokenizer.json")
    return through_file(dir / "tokenizer.json", [](const fs::path& p) { (void)load_tokenizer_json(p); });
  if (format == "harmony output (token ids)") return read_harmony_stream;
  if (format == "config.json")
    return through_file(dir / "config.json", [](const fs::path& p) { (void)load_config_file(p.string()); });
  throw std::invalid_argument("unknown bad-input format \"" + format + "\"");
}

struct Seeded {
  std::string format;
  std::function<Bytes(const fs::path&)> seed;
  std::function<Cases(const Bytes&)> hostile;
};

const std::vector<Seeded>& seeded_formats() {
  static const std::vector<Seeded> formats = {
      {"safetensors", safetensors_seed, [](const Bytes&) { return safetensors_hostile(); }},
      {"safetensors index.json",
       [](const fs::path& dir) { return read_bytes(sharded_folder(dir) / "model.safetensors.index.json"); },
       [](const Bytes&) { return index_hostile(); }},
      {"GGUF", gguf_seed, [](const Bytes&) { return gguf_hostile(); }},
      {"model.bin", modelbin_seed, modelbin_hostile},
      {"tokenizer.json", [](const fs::path&) { return text_bytes(kTokenizerSeed); },
       [](const Bytes&) { return tokenizer_hostile(); }},
      {"config.json", [](const fs::path&) { return text_bytes(config_seed()); },
       [](const Bytes&) { return config_hostile(); }},
      {"harmony output (token ids)", [](const fs::path&) { return harmony_seed(); },
       [](const Bytes&) { return harmony_hostile(); }},
  };
  return formats;
}

}  // namespace

std::vector<HostileCase> hostile_cases() {
  Scratch scratch;
  std::vector<HostileCase> out;
  for (const auto& f : seeded_formats()) {
    const Bytes seed = f.seed(scratch.path());
    for (auto& [name, bytes] : f.hostile(seed)) {
      out.push_back({f.format, name, bytes});
      if (f.format == "model.bin") out.push_back({"model.bin model (load_model)", name, bytes});
    }
  }
  for (auto& [name, bytes] : gguf_model_hostile()) out.push_back({"GGUF model (load_model)", name, std::move(bytes)});
  return out;
}

void prepare_scratch(const fs::path& scratch_dir) { (void)sharded_folder(scratch_dir); }

void read_as(const std::string& format, const std::vector<uint8_t>& bytes, const fs::path& scratch_dir) {
  reader_for(format, scratch_dir)(bytes);
}

namespace {
// A tally through the pipe of the child that filled it: numbers on the first line, then the
// unexpected messages one per line.
std::string serialize(const BadInputTally& t) {
  std::ostringstream out;
  out << t.cases << ' ' << t.rejected << ' ' << t.accepted << ' ' << t.unexpected << ' ' << t.max_ms << '\n';
  for (std::string m : t.unexpected_messages) {
    std::replace(m.begin(), m.end(), '\n', ' ');
    out << m << '\n';
  }
  return out.str();
}

void deserialize(const std::string& text, BadInputTally& t) {
  std::istringstream in(text);
  in >> t.cases >> t.rejected >> t.accepted >> t.unexpected >> t.max_ms;
  in.ignore(1);
  for (std::string line; std::getline(in, line);) t.unexpected_messages.push_back(line);
}

using RowBody = std::function<void(Runner&)>;

// Runs one row of the table in a child process (no memory limit: the row is measured, not
// bounded; 10 minutes at most) and returns its tally with the child's peak memory growth.
BadInputTally run_row(const BadInputOptions& options, const std::string& input_class, const std::string& format,
                      const RowBody& body) {
  ChildLimits limits;
  limits.extra_address_space = 0;
  limits.seconds = 600;
  const ChildResult r = run_in_child_reporting([&] {
    Runner runner(options);
    body(runner);
    return runner.tallies.empty() ? serialize(BadInputTally{input_class, format}) : serialize(runner.tallies.front());
  }, limits);
  BadInputTally t{input_class, format};
  if (r.outcome == ChildOutcome::Accepted) {
    deserialize(r.message, t);
  } else {
    t.crashes = 1;
    t.unexpected_messages.push_back(std::string(outcome_name(r.outcome)) + ": " + r.message);
  }
  t.peak_memory_growth_kb = r.peak_memory_growth_kb;
  return t;
}
}  // namespace

std::vector<BadInputTally> run_bad_inputs(const BadInputOptions& options) {
  Scratch scratch;
  const fs::path& dir = scratch.path();
  std::vector<BadInputTally> rows;
  for (const auto& f : seeded_formats()) {
    if (!Runner(options).wants(f.format)) continue;
    const Bytes seed = f.seed(dir);  // made here, so that a row's child measures only the reading
    const Reader read = reader_for(f.format, dir);
    const Cases hostile = f.hostile(seed);
    rows.push_back(run_row(options, "truncation at every byte", f.format, [&](Runner& r) { r.truncations(f.format, read, seed); }));
    rows.push_back(run_row(options, "single-byte change (^0x01, ^0x80, 0xFF)", f.format,
                           [&](Runner& r) { r.flips(f.format, read, seed); }));
    rows.push_back(run_row(options, "hostile header fields (1 KB)", f.format, [&](Runner& r) { r.crafted(f.format, read, hostile); }));
    if (f.format == "model.bin") {
      const Reader model = reader_for("model.bin model (load_model)", dir);
      rows.push_back(run_row(options, "hostile header fields (1 KB)", "model.bin model (load_model)",
                             [&](Runner& r) { r.crafted("model.bin model (load_model)", model, hostile); }));
    }
    if (f.format == "GGUF") {
      const Reader model = reader_for("GGUF model (load_model)", dir);
      const Cases model_hostile = gguf_model_hostile();
      rows.push_back(run_row(options, "hostile header fields (1 KB)", "GGUF model (load_model)",
                             [&](Runner& r) { r.crafted("GGUF model (load_model)", model, model_hostile); }));
    }
  }
  return rows;
}

std::string bad_input_table(const std::vector<BadInputTally>& tallies) {
  std::ostringstream out;
  out << "| input class | format | cases | rejected (FormatError) | accepted (valid) | other exceptions | crashes | "
         "slowest case (ms) | peak memory growth (KB) |\n";
  out << "|---|---|---:|---:|---:|---:|---:|---:|---:|\n";
  BadInputTally total{"total", ""};
  std::vector<std::pair<std::string, const BadInputTally*>> worst_memory;  // per format, in table order
  char ms[32];
  for (const auto& t : tallies) {
    std::snprintf(ms, sizeof ms, "%.2f", t.max_ms);
    out << "| " << t.input_class << " | " << t.format << " | " << t.cases << " | " << t.rejected << " | " << t.accepted
        << " | " << t.unexpected << " | " << t.crashes << " | " << ms << " | " << t.peak_memory_growth_kb << " |\n";
    total.cases += t.cases;
    total.rejected += t.rejected;
    total.accepted += t.accepted;
    total.unexpected += t.unexpected;
    total.crashes += t.crashes;
    total.max_ms = std::max(total.max_ms, t.max_ms);
    total.peak_memory_growth_kb = std::max(total.peak_memory_growth_kb, t.peak_memory_growth_kb);
    auto it = std::find_if(worst_memory.begin(), worst_memory.end(), [&](const auto& w) { return w.first == t.format; });
    if (it == worst_memory.end()) worst_memory.emplace_back(t.format, &t);
    else if (t.peak_memory_growth_kb > it->second->peak_memory_growth_kb) it->second = &t;
  }
  std::snprintf(ms, sizeof ms, "%.2f", total.max_ms);
  out << "| **total** | | " << total.cases << " | " << total.rejected << " | " << total.accepted << " | "
      << total.unexpected << " | " << total.crashes << " | " << ms << " | " << total.peak_memory_growth_kb << " |\n";
  out << "\n| format | worst peak memory growth (KB) | in |\n|---|---:|---|\n";
  for (const auto& [format, t] : worst_memory)
    out << "| " << format << " | " << t->peak_memory_growth_kb << " | " << t->input_class << " |\n";
  return out.str();
}

}  // namespace gptoss
