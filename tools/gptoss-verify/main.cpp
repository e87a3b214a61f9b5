// gptoss-verify: structural and value checks of any GPT-OSS model file, SHA-256 manifests, and
// cross-format equivalence ("do these two files hold the same weights?").
// Exit status: 0 clean, 1 findings (or mismatches, or different weights), 2 unreadable input.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>
#include "convert/model_io.h"
#include "formats/core/atomic_file.h"
#include "formats/core/error.h"
#include "tools/common/progress_bar.h"
#include "tools/common/tool_main.h"
#include "verify/canonical_digest.h"
#include "verify/checksums.h"
#include "verify/equivalence.h"
#include "verify/structural.h"

namespace fs = std::filesystem;
using namespace gptoss;

namespace {

std::vector<ItemChecksum> checksum_paths(const std::vector<std::string>& paths, const fs::path& base, unsigned threads,
                                         bool progress) {
  std::vector<StoredItem> items;
  for (const auto& p : paths) {
    auto more = list_stored_items(p);
    items.insert(items.end(), more.begin(), more.end());
  }
  ProgressBar bar("sha256", progress);
  auto sums = compute_checksums(items, base, threads, [&](uint64_t done, uint64_t total) { bar.update(done, total); });
  bar.finish();
  return sums;
}

int run_check(const std::string& manifest_path, unsigned threads, bool progress, bool json) {
  std::ifstream in(manifest_path);
  if (!in) throw_format_error(manifest_path, "", std::nullopt, "cannot open manifest");
  std::stringstream text;
  text << in.rdbuf();
  const auto expected = parse_manifest(text.str(), manifest_path);
  const fs::path base = fs::absolute(manifest_path).parent_path();
  std::vector<std::string> files;
  for (const auto& e : expected) {
    std::string file = e.label.substr(0, e.label.find(':'));
    const std::string full = (base / file).string();
    if (std::find(files.begin(), files.end(), full) == files.end() && fs::exists(full)) files.push_back(full);
  }
  const auto actual = checksum_paths(files, base, threads, progress);
  const auto mismatches = check_manifest(expected, actual);
  if (json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& m : mismatches) arr.push_back({{"item", m.label}, {"expected", m.expected}, {"actual", m.actual}});
    std::cout << nlohmann::json{{"checked", expected.size()}, {"mismatches", arr}}.dump(2) << "\n";
  } else {
    for (const auto& m : mismatches)
      std::cout << "FAILED  " << m.label << (m.actual.empty() ? "  (missing)" : "  (sha256 " + m.actual + ", expected " + m.expected + ")") << "\n";
    std::cout << expected.size() - mismatches.size() << " of " << expected.size() << " items match\n";
  }
  return mismatches.empty() ? 0 : 1;
}

}  // namespace

// Each mode (--check, --same, --write-manifest, --expect-sha256, verification) reads only its own
// options: one it would ignore is an error, never silently dropped.
void refuse_unhonoured(const CLI::App& app) {
  auto refuse = [&](const char* mode, std::initializer_list<const char*> options) {
    if (app.count(mode) == 0) return;
    for (const char* option : options)
      if (app.count(option) > 0)
        throw std::invalid_argument(std::string(option) + " cannot be combined with " + mode +
                                    (std::string(option) == "paths" ? " (which takes no PATH)" : ""));
  };
  refuse("--check", {"paths", "--values", "--digest", "--write-manifest", "--expect-sha256", "--same"});
  refuse("--same", {"paths", "--values", "--digest", "--write-manifest", "--expect-sha256"});
  refuse("--write-manifest", {"--values", "--digest", "--json", "--expect-sha256"});
  refuse("--expect-sha256", {"--values", "--digest", "--json"});
}

int main(int argc, char** argv) {
  CLI::App app{"Verify GPT-OSS model files (safetensors checkpoint folders, GGUF, model.bin).\n"
               "Exit status: 0 clean, 1 findings / mismatches / different weights, 2 unreadable input."};
  std::vector<std::string> paths;
  bool values = false, json = false, digest = false, quiet = false;
  std::string write_manifest, check, expect_sha;
  std::vector<std::string> same;
  unsigned threads = 0;
  app.add_option("paths", paths, "model files or checkpoint folders");
  app.add_flag("--values", values, "one pass over all data: NaN/Inf, all-zero tensors, abs max, MXFP4 and Q8_0 scale ranges");
  app.add_flag("--json", json, "machine-readable output");
  app.add_flag("--digest", digest, "print the canonical digest of every tensor and of the model");
  app.add_option("--write-manifest", write_manifest, "write SHA-256 of every file and every stored tensor to FILE");
  app.add_option("--check", check, "re-hash the items listed in a manifest and report every mismatch");
  app.add_option("--expect-sha256", expect_sha, "published SHA-256 of the (single) file");
  app.add_option("--same", same, "compare the weights of two models in any formats")->expected(2);
  app.add_option("-j,--threads", threads, "worker threads (default: one per core)");
  app.add_flag("-q,--quiet", quiet, "no progress bar");
  CLI11_PARSE(app, argc, argv);
  gptoss::remove_temp_files_on_signals();  // Ctrl-C leaves no temp file beside the outputs
  const bool progress = !quiet && !json && stderr_is_terminal();
  return gptoss::report_errors("gptoss-verify", [&] {
    refuse_unhonoured(app);
    if (!check.empty()) return run_check(check, threads, progress, json);
    if (!same.empty()) {
      const auto a = load_model(same[0]);
      const auto b = load_model(same[1]);
      const auto cmp = compare_models(a, b, threads);
      if (json) std::cout << cmp.to_json().dump(2) << "\n";
      else std::cout << "A: " << a.source_description << "\nB: " << b.source_description << "\n" << cmp.to_table()
                     << (cmp.any_different() ? "DIFFERENT\n" : "SAME WEIGHTS\n");
      return cmp.any_different() ? 1 : 0;
    }
    if (paths.empty()) {
      std::cerr << app.help();
      return 2;
    }
    int status = 0;
    if (!write_manifest.empty()) {
      const fs::path base = fs::absolute(write_manifest).parent_path();
      const auto sums = checksum_paths(paths, base, threads, progress);
      const std::string text = format_manifest(sums);
      AtomicFileWriter out(write_manifest);
      out.write(text.data(), text.size());
      out.commit();
      std::cerr << "wrote " << sums.size() << " checksums to " << write_manifest << "\n";
      return 0;
    }
    if (!expect_sha.empty()) {
      if (paths.size() != 1 || fs::is_directory(paths[0])) {
        std::cerr << "gptoss-verify: --expect-sha256 takes exactly one file\n";
        return 2;
      }
      const auto sums = checksum_paths({paths[0]}, fs::absolute(paths[0]).parent_path(), threads, progress);
      // Published hashes come in either case; ours are lower-case hex.
      std::string expected = expect_sha;
      std::transform(expected.begin(), expected.end(), expected.begin(), [](unsigned char c) { return std::tolower(c); });
      const bool ok = sums.front().sha256 == expected;
      std::cout << (ok ? "OK  " : "FAILED  ") << paths[0] << "  sha256 " << sums.front().sha256 << "\n";
      return ok ? 0 : 1;
    }
    nlohmann::json all = nlohmann::json::array();
    for (const auto& p : paths) {
      VerifyOptions options{values, threads};
      const auto result = verify_model(p, options);
      nlohmann::json j = result.to_json();
      j["path"] = p;
      if (digest) {
        const auto model = load_model(p);
        const auto digests = canonical_digests(model, threads);
        nlohmann::json d = nlohmann::json::object();
        for (const auto& t : digests) d[t.name] = t.sha256;
        j["canonical_digests"] = d;
        j["model_digest"] = model_digest(digests);
        if (!json) {
          for (const auto& t : digests) std::cout << t.sha256 << "  " << t.name << "\n";
          std::cout << model_digest(digests) << "  (model digest)\n";
        }
      }
      if (json) all.push_back(j);
      else {
        std::cout << p << " (" << result.format << ")\n" << result.report.to_table();
        if (values)
          for (const auto& s : result.stats)
            std::cout << "  " << s.name << "  " << s.dtype << (s.dtype == "U8" ? std::string() : "  abs max " + std::to_string(s.abs_max))
                      << (s.scale_min >= 0 ? "  scale bytes " + std::to_string(s.scale_min) + ".." + std::to_string(s.scale_max) : "")
                      << (s.q8_0 ? "  Q8_0 scales " + std::to_string(s.q8_0->min) + ".." + std::to_string(s.q8_0->max) : "")
                      << (s.nan ? "  NaN " + std::to_string(s.nan) : "") << (s.inf ? "  Inf " + std::to_string(s.inf) : "")
                      << "\n";
      }
      if (result.report.has_problems()) status = 1;
    }
    if (json) std::cout << (all.size() == 1 ? all[0] : all).dump(2) << "\n";
    return status;
  });
}
