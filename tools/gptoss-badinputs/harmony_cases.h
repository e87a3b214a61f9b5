#pragma once
// The harmony output parser's row of the bad-input table: its input is what a model generates, a
// stream of token ids (here little-endian u32s, as the fuzz target reads them), parsed with a
// byte-level tokenizer that has the harmony special tokens.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "convert/tokenizer_data.h"

namespace gptoss {

// 256 one-byte tokens, then <|start|> <|end|> <|message|> <|channel|> <|constrain|> <|return|>
// <|call|> <|endoftext|> (ids 256-263), with the o200k pre-tokenizer. Also what fuzz_harmony_parser
// parses with when the real tokenizer.json is not cached.
TokenizerData harmony_byte_tokenizer();

// A well-formed answer (analysis, then final, ended by <|return|>) as u32 ids.
std::vector<uint8_t> harmony_seed();
// Hand-made hostile streams of 256 ids (1 KB).
std::vector<std::pair<std::string, std::vector<uint8_t>>> harmony_hostile();
// Pushes every id through harmony::StreamParser (the prompt opened an assistant message) and
// finishes; a stream the parser found problems in, or that is not whole u32s, is a FormatError
// naming the first problem. The parser itself never throws.
void read_harmony_stream(const std::vector<uint8_t>& bytes);

}  // namespace gptoss
