#pragma once
// Small random-weight models of each architecture, rebuilt from tests/fixtures/architectures.json
// (tools/reference/make_arch_fixture.py): the fixture names the metadata and, per tensor, its
// shape and either its values or the generator's scale and offset. The generator is the fixture
// script's `weights`: element i of tensor `name` is offset + scale * (2u - 1), u the top 24 bits of
// splitmix64's (i + 1)-th output from the state seed ^ fnv1a64(name), over 2^24, in double, stored
// as f32. The file carries no tokenizer: the tests feed token ids.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/gguf_writer.h"

namespace snapkv::test {

inline uint64_t fnv1a64(const std::string& s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

inline std::vector<float> seeded_weights(uint64_t seed, const std::string& name, size_t n, double scale,
                                         double offset) {
  const uint64_t state = seed ^ fnv1a64(name);
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) {
    uint64_t z = state + (i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const double u = static_cast<double>(z >> 40) / static_cast<double>(1 << 24);
    out[i] = static_cast<float>(offset + scale * (2.0 * u - 1.0));
  }
  return out;
}

// The GGUF bytes of one entry of architectures.json's "architectures".
inline std::vector<uint8_t> arch_model_gguf(const nlohmann::json& arch) {
  GgufWriter w;
  for (const auto& m : arch["metadata"]) {
    const std::string key = m[0], type = m[1];
    if (type == "u32") {
      w.add_u32(key, m[2].get<uint32_t>());
    } else if (type == "f32") {
      w.add_f32(key, m[2].get<float>());
    } else if (type == "string") {
      w.add_string(key, m[2].get<std::string>());
    } else {
      throw std::runtime_error("architectures.json: metadata type " + type);
    }
  }
  const uint64_t seed = arch["seed"].get<uint64_t>();
  for (const auto& t : arch["tensors"]) {
    const std::string name = t["name"];
    const auto ne = t["ne"].get<std::vector<uint64_t>>();
    size_t n = 1;
    for (uint64_t d : ne) n *= d;
    const std::vector<float> v =
        t.contains("values") ? t["values"].get<std::vector<float>>()
                             : seeded_weights(seed, name, n, t["scale"].get<double>(), t["offset"].get<double>());
    if (v.size() != n) throw std::runtime_error("architectures.json: " + name + " has the wrong number of values");
    std::vector<uint8_t> bytes(n * sizeof(float));
    std::memcpy(bytes.data(), v.data(), bytes.size());
    w.add_tensor(name, ne, /*F32*/ 0, std::move(bytes));
  }
  return w.bytes();
}

}  // namespace snapkv::test
