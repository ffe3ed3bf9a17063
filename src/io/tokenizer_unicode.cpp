#include "io/tokenizer_unicode.h"

namespace snapkv::tokenizer_detail {

namespace {

bool is_cont(uint8_t b) { return (b & 0xC0) == 0x80; }

// Validates the sequence at s[i] per Unicode Table 3-7 (well-formed UTF-8); returns its length
// or 0 when the bytes there do not form a complete, well-formed character.
size_t valid_len(std::string_view s, size_t i) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data()) + i;
  const size_t left = s.size() - i;
  const uint8_t b0 = p[0];
  if (b0 < 0x80) return 1;
  size_t n;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (left < n) return 0;
  if (p[1] < lo || p[1] > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (!is_cont(p[k])) return 0;
  }
  return n;
}

// Length of the maximal ill-formed subpart at s[i]: the longest prefix of a well-formed
// sequence that is present, but at least one byte.
size_t invalid_len(std::string_view s, size_t i) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data()) + i;
  const size_t left = s.size() - i;
  const uint8_t b0 = p[0];
  size_t n;
  uint8_t lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 1;
  }
  size_t k = 1;
  if (k < left && k < n && p[k] >= lo && p[k] <= hi) {
    ++k;
    while (k < left && k < n && is_cont(p[k])) ++k;
  }
  return k;
}

}  // namespace

size_t utf8_char_len(std::string_view s, size_t i) {
  const size_t n = valid_len(s, i);
  return n == 0 ? 1 : n;
}

uint32_t utf8_decode(std::string_view s, size_t i, size_t* len, bool* valid) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data()) + i;
  const size_t n = valid_len(s, i);
  *valid = n != 0;
  *len = n == 0 ? 1 : n;
  switch (n) {
    case 1: return p[0];
    case 2: return (uint32_t(p[0] & 0x1F) << 6) | (p[1] & 0x3F);
    case 3: return (uint32_t(p[0] & 0x0F) << 12) | (uint32_t(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
    case 4:
      return (uint32_t(p[0] & 0x07) << 18) | (uint32_t(p[1] & 0x3F) << 12) |
             (uint32_t(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
    default: return p[0];
  }
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const size_t n = valid_len(s, i);
    if (n != 0) {
      out.append(s.data() + i, n);
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      i += invalid_len(s, i);
    }
  }
  return out;
}

bool utf8_valid(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = valid_len(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

ByteLevelTable::ByteLevelTable() {
  for (auto& v : cp_to_byte) v = -1;
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    const uint32_t cp = printable ? b : next++;
    append_utf8(byte_to_utf8[b], cp);
    cp_to_byte[cp] = static_cast<int16_t>(b);
  }
}

const ByteLevelTable& byte_level_table() {
  static const ByteLevelTable table;
  return table;
}

}  // namespace snapkv::tokenizer_detail
