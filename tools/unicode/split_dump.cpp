// Development tool (not built by CMake): prints the byte length of each o200k pre-tokenizer piece
// of stdin, one per line, for crosscheck_pretokenizer.py. Build after `ninja gptoss_tokenizer`:
//   g++ -std=c++20 -O2 -I. tools/unicode/split_dump.cpp build-tok/runtime/tokenizer/libgptoss_tokenizer.a -o /tmp/split_dump
#include <iostream>
#include <iterator>
#include <string>

#include "runtime/tokenizer/o200k_pretokenizer.h"

int main() {
  const std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  gptoss::o200k_split(text, [](std::string_view piece) { std::cout << piece.size() << "\n"; });
}
