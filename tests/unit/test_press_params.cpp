// The press options table (snapkv/press.h): defaults that pass their own checks, values read from
// command-line words and from JSON-typed values, one error naming the option for each bad value,
// and PressConfig::validate() enforcing the table's ranges.
#include <gtest/gtest.h>

#include <limits>
#include <set>

#include "snapkv/press.h"

namespace snapkv {
namespace {

const PressParam& param(const std::string& name) {
  const PressParam* p = find_press_param(name);
  if (!p) throw std::runtime_error("no press option " + name);
  return *p;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(PressParams, NamesAreUniqueAndDefaultsPassTheirChecks) {
  std::set<std::string> names;
  for (const PressParam& p : press_params()) {
    EXPECT_TRUE(names.insert(p.name).second) << p.name;
    EXPECT_EQ(p.flag(), "--kv-" + p.name);
    EXPECT_FALSE(p.help.empty()) << p.name;
    EXPECT_EQ(p.default_text, p.text(PressConfig{})) << p.name;
    EXPECT_EQ(p.check(p.get(PressConfig{}), ""), "") << p.name;
    PressConfig c;
    EXPECT_EQ(p.set_text(c, p.default_text, p.flag()), "") << p.name;
    EXPECT_EQ(p.text(c), p.default_text) << p.name;
  }
  EXPECT_EQ(PressConfig{}.validate(), "");
  EXPECT_EQ(find_press_param("colour"), nullptr);
  // The press option's choices are the registry's names.
  EXPECT_EQ(param("press").choices, press_names());
  ASSERT_EQ(press_infos().size(), press_names().size());
  for (const PressInfo& i : press_infos()) EXPECT_FALSE(i.summary.empty()) << i.name;
}

TEST(PressParams, CommandLineWords) {
  PressConfig c;
  EXPECT_EQ(param("capacity").set_text(c, "256", "--kv-capacity"), "");
  EXPECT_EQ(c.capacity, 256);
  EXPECT_EQ(param("ratio").set_text(c, "0.5", "--kv-ratio"), "");
  EXPECT_DOUBLE_EQ(c.ratio, 0.5);
  EXPECT_EQ(param("pool").set_text(c, "avg", "--kv-pool"), "");
  EXPECT_EQ(c.pool, PoolKind::kAvg);
  EXPECT_EQ(param("gqa").set_text(c, "per_query_head", "--kv-gqa"), "");
  EXPECT_EQ(c.gqa, GqaReduce::kPerQueryHead);
  EXPECT_EQ(param("short").set_text(c, "always", "--kv-short"), "");
  EXPECT_TRUE(c.compress_short);
  EXPECT_EQ(param("variant").set_text(c, "kvpress", "--kv-variant"), "");
  EXPECT_EQ(c.variant, PressVariant::kKvpress);
  EXPECT_EQ(param("seed").set_text(c, "9223372036854775807", "--kv-seed"), "");
  EXPECT_EQ(c.seed, static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));

  const PressConfig before = c;
  const std::string capacity = param("capacity").set_text(c, "abc", "--kv-capacity");
  EXPECT_TRUE(contains(capacity, "--kv-capacity must be an integer, got 'abc'")) << capacity;
  EXPECT_TRUE(contains(param("capacity").set_text(c, "12x", "--kv-capacity"), "integer"));
  EXPECT_TRUE(contains(param("capacity").set_text(c, "0", "--kv-capacity"), "in [1, 16777216], got 0"));
  EXPECT_TRUE(contains(param("ratio").set_text(c, "1.5", "--kv-ratio"), "0 or in (0, 1), got 1.5"));
  EXPECT_TRUE(contains(param("ratio").set_text(c, "-0.2", "--kv-ratio"), "(0, 1)"));
  EXPECT_TRUE(contains(param("ratio").set_text(c, "nan", "--kv-ratio"), "must be a number"));
  EXPECT_TRUE(contains(param("kernel").set_text(c, "4", "--kv-kernel"), "odd"));
  EXPECT_TRUE(contains(param("window").set_text(c, "5000", "--kv-window"), "in [1, 4096]"));
  EXPECT_TRUE(contains(param("alpha").set_text(c, "2", "--kv-alpha"), "--kv-alpha must be in [0, 1], got 2"));
  EXPECT_TRUE(contains(param("seed").set_text(c, "-1", "--kv-seed"), ">= 0"));
  const std::string pool = param("pool").set_text(c, "median", "--kv-pool");
  EXPECT_EQ(pool, "--kv-pool: unknown pool 'median' (one of: max, avg)");
  const std::string press = param("press").set_text(c, "snap", "--kv-press");
  EXPECT_TRUE(contains(press, "unknown press 'snap'")) << press;
  for (const std::string& n : press_names()) EXPECT_TRUE(contains(press, n)) << press;
  // A rejected value leaves the config as it was.
  EXPECT_EQ(c.capacity, before.capacity);
  EXPECT_EQ(c.pool, before.pool);
  EXPECT_EQ(c.press, before.press);
}

// Press specs: a name, then OPTION=VALUE parts over the other values of the config.
TEST(PressParams, PressSpecsCarryOptionsOfTheirOwn) {
  PressConfig c;
  c.kernel = 15;
  EXPECT_EQ(apply_press_spec(c, "snapkv+budget=ada+chunk=20+critical=0.5"), "");
  EXPECT_EQ(c.press, "snapkv");
  EXPECT_EQ(c.budget, BudgetKind::kAda);
  EXPECT_EQ(c.chunk, 20);
  EXPECT_DOUBLE_EQ(c.critical, 0.5);
  EXPECT_EQ(c.kernel, 15);  // untouched
  EXPECT_EQ(apply_press_spec(c, "keydiff"), "");
  EXPECT_EQ(c.press, "keydiff");
  EXPECT_TRUE(contains(apply_press_spec(c, "snap"), "unknown press 'snap'"));
  EXPECT_EQ(apply_press_spec(c, "snapkv+chunk"), "press 'snapkv+chunk': 'chunk' is not OPTION=VALUE (one option of "
                                                  "the table after the press name)");
  EXPECT_EQ(apply_press_spec(c, "snapkv+press=h2o"), "press 'snapkv+press=h2o': 'press=h2o' is not OPTION=VALUE (one "
                                                      "option of the table after the press name)");
  EXPECT_EQ(apply_press_spec(c, "snapkv+size=3"), "press 'snapkv+size=3': unknown option 'size'");
  EXPECT_TRUE(contains(apply_press_spec(c, "snapkv+kernel=4"), "press 'snapkv+kernel=4': kernel must be odd"));
  EXPECT_TRUE(contains(apply_press_spec(c, "snapkv+"), "'' is not OPTION=VALUE"));
}

TEST(PressParams, JsonTypedValues) {
  PressConfig c;
  const std::string label = "'kv_compression.capacity'";
  EXPECT_EQ(param("capacity").set(c, 1e3, label), "");  // 1e3 is an integer too
  EXPECT_EQ(c.capacity, 1000);
  EXPECT_EQ(param("capacity").set(c, 1.5, label), "'kv_compression.capacity' must be an integer, got 1.5");
  EXPECT_EQ(param("capacity").set(c, std::string("big"), label), "'kv_compression.capacity' must be an integer");
  EXPECT_EQ(param("capacity").set(c, std::monostate{}, label), "'kv_compression.capacity' must be an integer");
  EXPECT_TRUE(contains(param("capacity").set(c, 1e30, label), "in [1, 16777216]"));
  EXPECT_EQ(param("alpha").set(c, int64_t{1}, "'kv_compression.alpha'"), "");
  EXPECT_DOUBLE_EQ(c.alpha, 1.0);
  EXPECT_EQ(param("pool").set(c, int64_t{1}, "'kv_compression.pool'"),
            "'kv_compression.pool' must be a string, one of: max, avg");
  EXPECT_EQ(c.capacity, 1000);
}

TEST(PressParams, ValidateEnforcesEveryRangeOfTheTable) {
  PressConfig unknown;
  unknown.press = "nonsense";
  EXPECT_TRUE(contains(unknown.validate(), "unknown press 'nonsense' (one of: full, snapkv")) << unknown.validate();
  for (const PressParam& p : press_params()) {
    // Choices other than the press name are enums: no stored value is out of range.
    if (p.type == PressParam::Type::kChoice) continue;
    if (p.max >= 1e18) continue;  // seed: every stored value is in range
    PressConfig c;
    c.press = "snapkv";
    if (p.type == PressParam::Type::kInt) {
      p.put(c, static_cast<int64_t>(p.max) + 1);
    } else {
      p.put(c, p.max + 0.5);
    }
    const std::string err = c.validate();
    EXPECT_TRUE(contains(err, p.name + " must be " + p.allowed())) << p.name << ": " << err;
  }
}

}  // namespace
}  // namespace snapkv
