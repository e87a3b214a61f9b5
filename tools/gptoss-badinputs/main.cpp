// gptoss-badinputs: runs the bad-input corpus (truncations, byte changes, hostile headers of
// every format we read) through the public readers and prints the tally as a markdown table.
// Exit status 1 when any case ended in something other than FormatError or a valid parse.
#include <CLI/CLI.hpp>

#include <iostream>

#include "tools/gptoss-badinputs/badinputs.h"

int main(int argc, char** argv) {
  CLI::App app{"Run the bad-input corpus through every reader and print the results as a markdown table."};
  gptoss::BadInputOptions options;
  app.add_option("--stride", options.stride, "try every N-th byte for truncations and byte changes (default 1: all)")
      ->check(CLI::PositiveNumber);
  app.add_option("--format", options.only_format,
                 "only this format: safetensors, \"safetensors index.json\", GGUF, model.bin, tokenizer.json, config.json, "
                 "\"harmony output (token ids)\"");
  CLI11_PARSE(app, argc, argv);
  const auto tallies = gptoss::run_bad_inputs(options);
  std::cout << gptoss::bad_input_table(tallies);
  bool clean = true;
  for (const auto& t : tallies)
    for (const auto& m : t.unexpected_messages) {  // other exceptions and crashes
      std::cerr << t.format << " / " << t.input_class << ": unexpected exception: " << m << "\n";
      clean = false;
    }
  return clean ? 0 : 1;
}
