#pragma once
// The real `snapkv serve` for the server tests: started on a free loopback port (--port 0, the
// port read from its "listening on" line), stopped with a signal, killed if a test fails early.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <regex>
#include <string>
#include <thread>

#include "support/paths.h"

namespace snapkv::test {

class ServerProcess {
 public:
  // ARGS: flags after `serve -m <default model> --port 0 -t 2` (shell words).
  explicit ServerProcess(const std::string& args) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    const std::string cmd = fmt::format("exec {} serve -m {} --port 0 -t 2 {}", SNAPKV_BINARY, default_model_path(), args);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fds[1], 1);
      ::close(fds[0]);
      ::close(fds[1]);
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(fds[1]);
    out_ = fds[0];
    const std::string line = read_line(60);
    std::smatch m;
    if (!std::regex_search(line, m, std::regex(R"(listening on http://127\.0\.0\.1:(\d+))"))) {
      ADD_FAILURE() << "no 'listening on' line from: " << cmd << "\ngot: " << line;
      return;
    }
    port_ = std::stoi(m[1]);
  }
  ~ServerProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (out_ >= 0) ::close(out_);
  }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  int port() const { return port_; }
  httplib::Client client(int read_timeout_s = 120) const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(read_timeout_s);
    return c;
  }
  // Sends sig and waits up to timeout_s for the exit; returns the exit status (128 + signal when
  // killed by one, -1 on timeout).
  int stop(int sig = SIGTERM, int timeout_s = 30) {
    signal(sig);
    return wait(timeout_s);
  }
  void signal(int sig) const { ::kill(pid_, sig); }
  // Waits up to timeout_s for the exit (stop() without the signal).
  int wait(int timeout_s) {
    for (int i = 0; i < timeout_s * 100; ++i) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }
  bool alive() const { return pid_ > 0 && ::kill(pid_, 0) == 0 && ::waitpid(pid_, nullptr, WNOHANG) == 0; }

 private:
  std::string read_line(int timeout_s) {
    std::string line;
    pollfd p{out_, POLLIN, 0};
    while (::poll(&p, 1, timeout_s * 1000) > 0) {
      char c;
      if (::read(out_, &c, 1) != 1 || c == '\n') break;
      line += c;
    }
    return line;
  }

  pid_t pid_ = -1;
  int out_ = -1;
  int port_ = 0;
};

}  // namespace snapkv::test
