#include "bench_util.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "cli_error.h"
#include "eval/fidelity.h"  // read_paul_graham_essays, encode_prefix: the engine's, not yet in include/
#include "io/gguf.h"
#include "snapkv/data_dir.h"

namespace snapkv::cli {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int32_t greedy(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

std::string data_flag_help() {
  return fmt::format("evaluation data directory (holds niah_paulgraham/; default: $SNAPKV_DATA, else {})", kDefaultDataDir);
}

std::vector<int32_t> essay_tokens(const std::string& data_dir, const Tokenizer& tok, int n) {
  std::vector<int32_t> ids = encode_prefix(tok, read_paul_graham_essays(data_dir), n);
  if (static_cast<int>(ids.size()) < n) fail(ErrorKind::kInvalidArgument, "the essays have only {} tokens", ids.size());
  return ids;
}

std::string run_in_child(const std::function<std::string()>& fn) {
  std::fflush(nullptr);
  int fd[2];
  if (pipe(fd) != 0) fail(ErrorKind::kInternal, "bench: pipe failed");
  const pid_t pid = fork();
  if (pid < 0) fail(ErrorKind::kInternal, "bench: fork failed");
  if (pid == 0) {
    close(fd[0]);
    int rc = 0;
    std::string text;
    try {
      text = "ok " + fn();
    } catch (const std::exception& e) {
      text = fmt::format("error {}", e.what());
      rc = 1;
    }
    const ssize_t w = write(fd[1], text.data(), text.size());
    _exit(w == static_cast<ssize_t>(text.size()) ? rc : 1);
  }
  close(fd[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (out.rfind("error ", 0) == 0) fail(ErrorKind::kInternal, "{}", out.substr(6));
  if (out.rfind("ok ", 0) != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fail(ErrorKind::kInternal, "bench: a measurement process failed");
  }
  return out.substr(3);
}

std::string run_command(const std::string& command) {
  std::fflush(nullptr);
  FILE* p = popen(command.c_str(), "r");
  if (!p) fail(ErrorKind::kInternal, "cannot run {}", command);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = pclose(p);
  if (status != 0) {
    while (!out.empty() && out.back() == '\n') out.pop_back();
    fail(ErrorKind::kInternal, "`{}` failed (status {}){}", command, status,
         out.empty() ? "" : ": " + out.substr(out.rfind('\n') + 1));
  }
  return out;
}

size_t decode_weight_bytes(const GgufFile& file) {
  const bool tied = file.find_tensor("output.weight") == nullptr;
  size_t bytes = 0;
  for (const GgufTensor& t : file.tensors()) {
    if (t.name != "token_embd.weight" || tied) bytes += t.n_bytes;
  }
  return bytes;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace snapkv::cli
