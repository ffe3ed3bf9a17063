#include "eval/fidelity.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <sstream>

#include "engine/sampler.h"
#include "eval/recorded_prefill.h"
#include "kv/press.h"
#include "snapkv/data_dir.h"
#include "util/error.h"
#include "snapkv/timer.h"

namespace snapkv {

PressConfig FidelityParams::cell_config(const std::string& press, int capacity) const {
  PressConfig c = base;
  apply_press_spec(c, press);  // validate() has checked it
  c.capacity = capacity;
  c.ratio = 0;
  c.recompress = 0;
  return c;
}

int64_t FidelityParams::tokens_needed() const {
  const int longest = lengths.empty() ? 0 : *std::max_element(lengths.begin(), lengths.end());
  return static_cast<int64_t>(longest) + n_eval + 1;
}

std::string FidelityParams::validate(int n_ctx) const {
  if (lengths.empty()) return "the list of prompt lengths is empty";
  if (capacities.empty()) return "the list of capacities is empty";
  if (presses.empty()) return "the list of presses is empty";
  if (n_eval < 1) return fmt::format("the number of evaluated tokens must be positive, got {}", n_eval);
  for (int l : lengths) {
    if (l < 1) return fmt::format("prompt lengths must be positive, got {}", l);
    if (n_ctx > 0 && static_cast<int64_t>(l) + n_eval > n_ctx) {
      return fmt::format("a prompt of {} tokens plus {} evaluated tokens exceeds the model's context of {}", l,
                         n_eval, n_ctx);
    }
  }
  if (base.gqa == GqaReduce::kPerQueryHead) {
    return "per_query_head needs a replicated cache, which the fidelity evaluation does not build; use mean or max";
  }
  for (const std::string& p : presses) {
    PressConfig probe = base;
    if (std::string err = apply_press_spec(probe, p); !err.empty()) return err;
    if (std::count(presses.begin(), presses.end(), p) > 1) return fmt::format("press '{}' is listed twice", p);
    for (int c : capacities) {
      if (const std::string err = cell_config(p, c).validate(); !err.empty()) {
        return fmt::format("{} at capacity {}: {}", p, c, err);
      }
    }
  }
  for (int c : capacities) {
    if (std::count(capacities.begin(), capacities.end(), c) > 1) return fmt::format("capacity {} is listed twice", c);
  }
  for (int l : lengths) {
    if (std::count(lengths.begin(), lengths.end(), l) > 1) return fmt::format("length {} is listed twice", l);
  }
  return {};
}

LogitComparison compare_logits(std::span<const float> ref, std::span<const float> test, int32_t target) {
  if (ref.size() != test.size() || ref.empty()) fail(ErrorKind::kInternal, "compare_logits: rows of different sizes");
  if (target < 0 || static_cast<size_t>(target) >= ref.size()) {
    fail(ErrorKind::kInternal, "compare_logits: target {} outside the vocabulary", target);
  }
  // Stable log-softmax in double: log p_i = r_i - lse(r). With e_i = exp(r_i - max r),
  // KL(P || Q) = sum_i p_i (r_i - t_i) + lse(t) - lse(r), since the p_i sum to 1.
  const size_t n = ref.size();
  const double mr = *std::max_element(ref.begin(), ref.end());
  const double mt = *std::max_element(test.begin(), test.end());
  double sr = 0, st = 0, acc = 0;
  for (size_t i = 0; i < n; ++i) {
    const double r = ref[i], t = test[i];
    const double e = std::exp(r - mr);
    sr += e;
    acc += e * (r - t);
    st += std::exp(t - mt);
  }
  const double lse_r = mr + std::log(sr), lse_t = mt + std::log(st);
  LogitComparison c;
  // Mathematically >= 0; rounding can leave a few 1e-16 below it.
  c.kl = std::max(0.0, acc / sr + lse_t - lse_r);
  c.same_top1 = greedy_token(ref) == greedy_token(test);
  c.nll_ref = lse_r - ref[target];
  c.nll_test = lse_t - test[target];
  return c;
}

std::string read_paul_graham_essays(const std::string& data_dir, size_t* n_files) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(resolve_data_dir(data_dir)) / "niah_paulgraham" / "PaulGrahamEssays";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    fail(ErrorKind::kBadFile, "{}: no such folder (give the evaluation data with --data or $SNAPKV_DATA)",
         dir.string());
  }
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().extension() == ".txt") files.push_back(e.path());
  }
  if (files.empty()) fail(ErrorKind::kBadFile, "{}: holds no *.txt essay", dir.string());
  std::sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) {
    return a.filename().string() < b.filename().string();
  });
  std::string text;
  for (const fs::path& p : files) {
    std::ifstream in(p, std::ios::binary);
    if (!in) fail(ErrorKind::kBadFile, "{}: cannot read", p.string());
    std::ostringstream ss;
    ss << in.rdbuf();
    text += ss.str();
  }
  if (n_files) *n_files = files.size();
  return text;
}

std::vector<int32_t> encode_prefix(const Tokenizer& tokenizer, std::string_view text, int64_t n) {
  // Pre-tokenizer pieces and BPE merges reach only a few tokens back from the cut; 16 is ample.
  constexpr int64_t kMargin = 16;
  size_t chars = static_cast<size_t>(std::max<int64_t>(n, 1)) * 6;
  while (true) {
    const bool whole = chars >= text.size();
    std::vector<int32_t> ids = tokenizer.encode(text.substr(0, std::min(chars, text.size())), tokenizer.add_bos(),
                                                /*parse_special=*/false);
    if (whole || static_cast<int64_t>(ids.size()) >= n + kMargin) {
      if (static_cast<int64_t>(ids.size()) > n) ids.resize(static_cast<size_t>(n));
      return ids;
    }
    chars *= 2;
  }
}

std::vector<FidelityCell> run_fidelity(const Decoder& model, const PressInputs& inputs, std::span<const int32_t> tokens,
                                       const FidelityParams& params, ThreadPool& pool,
                                       const std::function<void(const FidelityProgress&)>& progress) {
  const ModelHparams& hp = model.hparams();
  if (const std::string err = params.validate(hp.n_ctx_train); !err.empty()) {
    fail(ErrorKind::kInvalidArgument, "{}", err);
  }
  if (static_cast<int64_t>(tokens.size()) < params.tokens_needed()) {
    fail(ErrorKind::kOutOfRange, "the text has {} tokens; the fidelity evaluation needs {}", tokens.size(),
         params.tokens_needed());
  }
  // One prefill per length records what every press needs: the widest window, and the observed
  // attention (h2o) or query statistics (expected_attention) only when some press scores with
  // them, since they cost extra passes over every query.
  int64_t window = 1;
  PressNeeds needs;
  for (const std::string& p : params.presses) {
    for (int c : params.capacities) {
      const std::unique_ptr<Press> press = make_press(params.cell_config(p, c));
      window = std::max<int64_t>(window, press->window());
      needs |= press->needs();
    }
  }

  const int n = params.n_eval;
  const size_t n_vocab = static_cast<size_t>(hp.n_vocab);
  const int cells_total = static_cast<int>(params.lengths.size() * params.presses.size() * params.capacities.size());
  std::vector<FidelityCell> cells;
  cells.reserve(static_cast<size_t>(cells_total));
  Timer total;
  std::vector<float> ref_logits, logits;
  std::vector<LogitComparison> per_pos(static_cast<size_t>(n));
  for (int length : params.lengths) {
    if (progress) {
      FidelityProgress p;
      p.length = length;
      p.cells_done = static_cast<int>(cells.size());
      p.cells_total = cells_total;
      p.elapsed_s = total.seconds();
      progress(p);
    }
    const RecordedPrefill rec(model, tokens.first(static_cast<size_t>(length)), params.kv_type, window, needs,
                              pool);
    const std::span<const int32_t> cont = tokens.subspan(static_cast<size_t>(length), static_cast<size_t>(n));
    const std::span<const int32_t> target = tokens.subspan(static_cast<size_t>(length) + 1, static_cast<size_t>(n));
    std::vector<int32_t> pos(static_cast<size_t>(n));
    std::iota(pos.begin(), pos.end(), length);
    {
      KvCache ref_cache = rec.full();
      model.forward(cont, pos, ref_cache, LogitsMode::kAll, ref_logits, pool, nullptr);
    }
    for (const std::string& press_name : params.presses) {
      for (int capacity : params.capacities) {
        Timer t;
        const std::unique_ptr<Press> press = make_press(params.cell_config(press_name, capacity));
        FidelityCell cell;
        cell.length = length;
        cell.press = press_name;
        cell.capacity = capacity;
        cell.n_scored = n;
        cell.full_bytes = rec.full().bytes();
        cell.full_entries = rec.full().entries();
        {
          KvCache c = rec.pressed(*press, nullptr, &inputs);
          cell.kept_bytes = c.bytes();
          cell.kept_entries = c.entries();
          model.forward(cont, pos, c, LogitsMode::kAll, logits, pool, nullptr);
        }
        pool.parallel_for(n, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) {
            const size_t off = static_cast<size_t>(i) * n_vocab;
            per_pos[static_cast<size_t>(i)] =
                compare_logits(std::span<const float>(ref_logits).subspan(off, n_vocab),
                               std::span<const float>(logits).subspan(off, n_vocab), target[static_cast<size_t>(i)]);
          }
        });
        // Summed in position order, so results do not depend on the thread count.
        double kl = 0, nll_full = 0, nll_press = 0;
        int agree = 0;
        for (const LogitComparison& c : per_pos) {
          kl += c.kl;
          cell.kl_max = std::max(cell.kl_max, c.kl);
          agree += c.same_top1 ? 1 : 0;
          nll_full += c.nll_ref;
          nll_press += c.nll_test;
        }
        cell.kl_mean = kl / n;
        cell.top1 = static_cast<double>(agree) / n;
        cell.nll_full = nll_full / n;
        cell.nll_press = nll_press / n;
        cell.seconds = t.seconds();
        cells.push_back(cell);
        if (progress) {
          FidelityProgress p;
          p.length = length;
          p.press = press_name;
          p.capacity = capacity;
          p.cells_done = static_cast<int>(cells.size());
          p.cells_total = cells_total;
          p.elapsed_s = total.seconds();
          p.cell = &cells.back();
          progress(p);
        }
      }
    }
  }
  return cells;
}

}  // namespace snapkv
