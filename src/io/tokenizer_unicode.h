#pragma once
// UTF-8 helpers for the tokenizers. All of them accept arbitrary bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace snapkv::tokenizer_detail {

// Length in bytes of the UTF-8 character starting at s[i]: 1 to 4 for a well-formed sequence,
// 1 for any byte that does not start one (a stray continuation byte, an overlong form, a
// surrogate, a truncated sequence), so that invalid input is walked byte by byte.
size_t utf8_char_len(std::string_view s, size_t i);

// Decodes the character at s[i] (utf8_char_len bytes); an invalid byte decodes to itself + the
// flag `valid` set to false.
uint32_t utf8_decode(std::string_view s, size_t i, size_t* len, bool* valid);

void append_utf8(std::string& out, uint32_t cp);

// Replaces every maximal ill-formed subsequence with U+FFFD (the Unicode "best practice" that
// Rust's String::from_utf8_lossy, and so HF's decoders, follow).
std::string utf8_lossy(std::string_view s);
bool utf8_valid(std::string_view s);

// GPT-2's byte-to-unicode table: printable Latin-1 bytes map to themselves, the other 68 bytes
// to U+0100 onwards, in byte order.
struct ByteLevelTable {
  std::string byte_to_utf8[256];
  // Inverse for code points below 0x144; -1 where the code point is no byte's image.
  int16_t cp_to_byte[0x144];
  ByteLevelTable();
};
const ByteLevelTable& byte_level_table();

}  // namespace snapkv::tokenizer_detail
