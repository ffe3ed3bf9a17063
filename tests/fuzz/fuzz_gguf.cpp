// libFuzzer target: arbitrary bytes through the GGUF reader and, when they parse, through every
// metadata getter, the tokenizer loader and the model loader; what loads must then run: the
// tokenizer encodes and decodes a text, the model prefills 3 tokens and decodes one. Any outcome
// but success or snapkv::Error is a bug. Seeds of every architecture and of both tokenizer kinds:
// tests/fuzz/make_gguf_seeds.py.
#include <cstddef>
#include <cstdint>

#include "engine/sequence.h"
#include "io/gguf.h"
#include "model/model.h"
#include "snapkv/tokenizer.h"
#include "util/error.h"
#include "util/thread_pool.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace snapkv;
  try {
    const auto f = GgufFile::parse(data, size, "fuzz");
    for (const auto& [key, v] : f->metadata()) {
      try {
        switch (v.type) {
          case GgufValueType::kString: (void)f->get_string(key); break;
          case GgufValueType::kArray:
            if (v.elem_type == GgufValueType::kString) (void)f->get_string_array(key);
            else if (v.elem_type == GgufValueType::kF32 || v.elem_type == GgufValueType::kF64) (void)f->get_float_array(key);
            else (void)f->get_int_array(key);
            break;
          case GgufValueType::kF32: case GgufValueType::kF64: (void)f->get_float(key); break;
          default: (void)f->get_uint(key); break;
        }
      } catch (const Error&) {
      }
    }
    try {
      const auto tok = Tokenizer::from_gguf(*f);
      (void)tok->decode(tok->encode("Hello world!\n<|im_start|> \xe2\x96\x81x \xff", true, true));
    } catch (const Error&) {
    }
    // Touch every tensor byte the reader vouched for.
    uint8_t acc = 0;
    for (const GgufTensor& t : f->tensors()) {
      if (t.n_bytes > 0) acc ^= t.data[0] ^ t.data[t.n_bytes - 1];
    }
    (void)acc;
    const auto model = load_decoder(*f);
    static ThreadPool pool(1);
    Sequence s(*model, 8, pool, SequenceOptions{KvType::kF32, {}});
    const int32_t last = model->hparams().n_vocab - 1;
    const int32_t ids[3] = {0, last / 2, last};
    s.prefill(ids);
    s.decode(last);
  } catch (const Error&) {
  }
  return 0;
}
