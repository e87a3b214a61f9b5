#include "convert/hf_tokenizer_files.h"

#include <fstream>
#include <iterator>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "convert/tokenizer_json.h"
#include "convert/tokenizer_json_writer.h"
#include "formats/core/atomic_file.h"
#include "formats/core/error.h"
#include "formats/core/json_file.h"
#include "formats/core/json_value.h"
#include "formats/core/mapped_file.h"

namespace gptoss {
namespace fs = std::filesystem;

namespace {
std::string read_text_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_format_error(path.string(), "", std::nullopt, "cannot open");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void copy_file_atomically(const fs::path& from, const fs::path& to) {
  const auto source = MappedFile::open(from);
  AtomicFileWriter out(to);
  out.write(source->bytes());
  source->check_intact();
  out.commit();
}
}  // namespace

std::shared_ptr<TokenizerData> load_hf_tokenizer_files(const fs::path& dir) {
  for (const fs::path& folder : {dir, dir.parent_path()}) {
    const fs::path json_path = folder / "tokenizer.json";
    if (!fs::exists(json_path)) continue;
    auto tok = load_tokenizer_json(json_path);
    tok->source_files.tokenizer_json = json_path;
    const fs::path config_path = folder / "tokenizer_config.json";
    if (fs::exists(config_path)) {
      tok->source_files.tokenizer_config = config_path;
      const nlohmann::json config_json = read_json_file(config_path);
      const JsonValue config(config_json, config_path.string());
      if (!config.is_object()) config.fail_expected("an object");
      // A list of named templates (transformers' other form) is not one we can use: left out.
      if (const auto chat_template = config.find("chat_template"); chat_template && !chat_template->is_array())
        tok->chat_template = chat_template->as_string();
    }
    const fs::path jinja_path = folder / "chat_template.jinja";
    if (fs::exists(jinja_path)) {
      tok->source_files.chat_template_jinja = jinja_path;
      // transformers prefers the .jinja file when both exist; so do we.
      tok->chat_template = read_text_file(jinja_path);
    }
    return tok;
  }
  return nullptr;
}

void write_hf_tokenizer_files(const TokenizerData& tok, const fs::path& dir, std::vector<std::string>& notes) {
  const TokenizerSourceFiles& from = tok.source_files;
  // Generate everything before writing anything, so a refusal leaves no half set behind.
  std::string json_text, config_text;
  try {
    if (!from.tokenizer_json) json_text = tokenizer_json_text(tok);
    if (!from.tokenizer_config) config_text = tokenizer_config_json_text(tok, /*include_chat_template=*/!from.chat_template_jinja);
  } catch (const std::invalid_argument& e) {
    notes.push_back(std::string("no tokenizer files written: ") + e.what());
    return;
  }
  if (from.tokenizer_json) copy_file_atomically(*from.tokenizer_json, dir / "tokenizer.json");
  else write_file_atomically(dir / "tokenizer.json", json_text);
  if (from.tokenizer_config) copy_file_atomically(*from.tokenizer_config, dir / "tokenizer_config.json");
  else write_file_atomically(dir / "tokenizer_config.json", config_text);
  if (from.chat_template_jinja) copy_file_atomically(*from.chat_template_jinja, dir / "chat_template.jinja");
}

}  // namespace gptoss
