// Which prompt entries our presses keep, per layer and KV head, against references we did not
// write: kvpress 0.5.5 (SnapKVPress, PyramidKVPress, AdaKVPress, StreamingLLMPress, KnormPress,
// ObservedAttentionPress, TOVAPress) and a numpy transcription of the official SnapKV code path,
// on the default model and prompts of 2K-7K tokens (tests/fixtures/press_selections.json, made by
// tools/reference/make_press_fixture.py). Overlap = |ours ∩ reference| / |reference| per head;
// required: >= 97 % on average and >= 90 % at worst for every case. Differences come from
// near-ties at the selection boundary (the fixture records the boundary gaps), since transformers
// computes in fp32 with another summation order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "eval/recorded_prefill.h"
#include "kv/press.h"
#include "reference_model.h"

namespace snapkv {
namespace {

using nlohmann::json;

// The fixture's options are named as the server's kv_compression fields: each goes through the
// press options table, as a request's would.
PressConfig config_from(const json& o) {
  PressConfig c;
  for (const auto& [key, v] : o.items()) {
    const PressParam* p = find_press_param(key);
    if (!p) {
      ADD_FAILURE() << "unknown press option '" << key << "' in " << o.dump();
      continue;
    }
    const PressValue value = v.is_string()           ? PressValue(v.get<std::string>())
                             : v.is_number_integer() ? PressValue(v.get<int64_t>())
                                                     : PressValue(v.get<double>());
    EXPECT_EQ(p->set(c, value, key), "") << o.dump();
  }
  EXPECT_EQ(c.validate(), "") << o.dump();
  return c;
}

// Kept positions from the fixture's encoding: the first entry is absolute; then x > 0 means
// next = prev + x, and x < 0 means the -x positions prev + 1 ... prev - x follow.
std::vector<int32_t> undelta(const json& d) {
  std::vector<int32_t> out;
  for (size_t i = 0; i < d.size(); ++i) {
    const int32_t x = d[i].get<int32_t>();
    if (i == 0) {
      out.push_back(x);
    } else if (x > 0) {
      out.push_back(out.back() + x);
    } else {
      for (int32_t r = 0; r < -x; ++r) out.push_back(out.back() + 1);
    }
  }
  return out;
}

void check_prompt(size_t prompt_index) {
  const json fx = test::load_fixture("press_selections.json");
  const json& prompt = fx.at("prompts").at(prompt_index);
  const std::vector<int32_t> tokens = prompt.at("tokens").get<std::vector<int32_t>>();
  std::vector<const json*> cases;
  for (const json& c : fx.at("cases")) {
    if (c.at("prompt").get<size_t>() == prompt_index) cases.push_back(&c);
  }
  ASSERT_FALSE(cases.empty());
  int64_t window = 1;
  bool observed = false;
  for (const json* c : cases) {
    const auto press = make_press(config_from(c->at("options")));
    window = std::max<int64_t>(window, press->window());
    observed |= press->needs_observed_attention();
  }
  ThreadPool pool(2);
  // f32 storage: the references score fp32 keys.
  const RecordedPrefill rec(*test::reference_model().model, tokens, KvType::kF32, window, observed, pool);
  for (const json* c : cases) {
    const auto press = make_press(config_from(c->at("options")));
    KvCache kv = rec.pressed(*press);
    const json& kept = c->at("kept_delta");
    ASSERT_EQ(kept.size(), static_cast<size_t>(kv.n_layer()));
    double sum = 0, worst = 1;
    int n = 0, worst_layer = -1, worst_head = -1;
    for (int il = 0; il < kv.n_layer(); ++il) {
      const auto views = kv.layer(il);
      ASSERT_EQ(kept[il].size(), views.size());
      for (size_t h = 0; h < views.size(); ++h) {
        const std::vector<int32_t> ref = undelta(kept[il][h]);
        std::vector<int32_t> ours(views[h].pos, views[h].pos + views[h].n);
        std::vector<int32_t> common;
        std::set_intersection(ours.begin(), ours.end(), ref.begin(), ref.end(), std::back_inserter(common));
        const double overlap = ref.empty() ? 1.0 : static_cast<double>(common.size()) / ref.size();
        sum += overlap;
        ++n;
        if (overlap < worst) worst = overlap, worst_layer = il, worst_head = static_cast<int>(h);
      }
    }
    const double mean = sum / n;
    const std::string what = c->at("reference").get<std::string>() + " " + c->at("options").dump() + " on " +
                             prompt.at("name").get<std::string>();
    std::printf("%-100s overlap mean %.4f, worst %.4f", what.c_str(), mean, worst);
    if (worst < 1) std::printf(" (layer %d, head %d)", worst_layer, worst_head);
    std::printf("\n");
    EXPECT_GE(mean, 0.97) << what;
    EXPECT_GE(worst, 0.90) << what << " at layer " << worst_layer << " head " << worst_head;
  }
}

TEST(PressReference, Prompt0) { check_prompt(0); }
TEST(PressReference, Prompt1) { check_prompt(1); }
TEST(PressReference, Prompt2) { check_prompt(2); }

}  // namespace
}  // namespace snapkv
