// debuginfod: with DEBUGINFOD_URLS set, a stripped file whose debug file is
// nowhere on disk gets it from the server (libdwfl's
// dwfl_standard_find_debuginfo dlopens libdebuginfod.so.1, which asks
// <url>/buildid/<id>/debuginfo), for reports and annotate alike; unset,
// nothing is asked. The server is a tiny HTTP/1.1 one on 127.0.0.1 in a
// thread of this process, serving libsymtest.so's debug file
// (build/tests/symfiles, see elf_fixtures.h).
#include <arpa/inet.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tprof/analysis/annotate.h"
#include "tprof/analysis/elf_snapshot.h"
#include "tprof/analysis/profile.h"
#include "tprof/base/scoped_fd.h"
#include "tprof/analysis/symbolizer.h"
#include "elf_fixtures.h"

namespace {

namespace fs = std::filesystem;
using tprof::Location;
using tprof::Profile;
using tprof::ScopedFd;
using tprof::Symbolizer;
using tprof::test::kSymBase;
using tprof::test::kSymPid;
using tprof::test::kSymSpace;
using tprof::test::LibraryProfile;
using tprof::test::SymbolAddress;
using tprof::test::SymFiles;

// An environment variable set (or unset) for a scope, restored after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_.c_str(), old_->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// Serves one body at one path (HTTP/1.1, one request per connection),
// 404 for anything else, and remembers every request's target.
class HttpServer {
 public:
  HttpServer(std::string path, std::string body) : path_(std::move(path)), body_(std::move(body)) {
    listen_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (!listen_ || ::bind(listen_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(listen_.get(), 8) != 0 ||
        ::getsockname(listen_.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      return;
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Run(); });
  }
  ~HttpServer() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // 0 if the socket could not be set up.
  uint16_t port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  void Run() {
    while (!stop_) {
      pollfd p{listen_.get(), POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      ScopedFd conn(::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (conn) Serve(conn.get());
    }
  }

  void Serve(int fd) {
    std::string request;
    char buf[4096];
    while (request.find("\r\n\r\n") == std::string::npos) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 2000) <= 0) return;
      ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n <= 0) return;
      request.append(buf, static_cast<size_t>(n));
    }
    std::istringstream line(request.substr(0, request.find("\r\n")));
    std::string method, target;
    line >> method >> target;
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(target);
    }
    const bool found = method == "GET" && target == path_;
    const std::string& body = found ? body_ : std::string();
    std::string reply = std::string(found ? "HTTP/1.1 200 OK" : "HTTP/1.1 404 Not Found") +
                        "\r\nContent-Type: application/octet-stream\r\nContent-Length: " +
                        std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
    for (size_t done = 0; done < reply.size();) {
      ssize_t n = ::send(fd, reply.data() + done, reply.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  }

  const std::string path_, body_;
  ScopedFd listen_;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<std::string> requests_;
  std::thread thread_;  // last: started when the rest exists, joined first
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// bare/libsymtest.so: stripped, no .gnu_debuglink, and the symbolizer's
// debug_dir has no build-id tree: only the server has its debug file.
class SymbolizerDebuginfod : public ::testing::Test {
 protected:
  void SetUp() override {
    hidden_ = SymbolAddress("st_hidden");
    ASSERT_NE(hidden_, 0u) << "no " << SymFiles() << "/full/libsymtest.so: make unit-tests";
    build_id_ = tprof::FileBuildId(SymFiles() + "/bare/libsymtest.so");
    ASSERT_EQ(build_id_.size(), 40u);
    debug_file_ = ReadFile(SymFiles() + "/link/.debug/libsymtest.so.debug");
    ASSERT_GT(debug_file_.size(), 1000u);
    ASSERT_EQ(tprof::FileBuildId(SymFiles() + "/link/.debug/libsymtest.so.debug"), build_id_);
    cache_ = ::testing::TempDir() + "tprof-debuginfod-" + std::to_string(::getpid());
    fs::remove_all(cache_);
  }
  void TearDown() override { fs::remove_all(cache_); }

  Profile Sampled() const {
    Profile p = LibraryProfile(SymFiles() + "/bare/libsymtest.so");
    p.samples[{kSymPid, kSymSpace, kSymBase + hidden_ + 2, TPROF_SAMPLE_USER}] = 5;
    return p;
  }
  std::string Path() const { return "/buildid/" + build_id_ + "/debuginfo"; }

  uint64_t hidden_ = 0;
  std::string build_id_, debug_file_, cache_;
  tprof::SymbolizerOptions options_{.source_lines = true, .debug_dir = "/nonexistent"};
  // libcurl must not send 127.0.0.1 to a proxy of the environment.
  ScopedEnv no_proxy_{"no_proxy", "127.0.0.1"};
  ScopedEnv http_proxy_{"http_proxy", nullptr};
  ScopedEnv all_proxy_{"all_proxy", nullptr};
};

TEST_F(SymbolizerDebuginfod, WithDebuginfodUrlsTheDebugFileComesFromTheServer) {
  void* client = ::dlopen("libdebuginfod.so.1", RTLD_LAZY);
  ASSERT_TRUE(client) << "libdw's debuginfod client is missing: install libdebuginfod1 (make deps)";
  ::dlclose(client);
  HttpServer server(Path(), debug_file_);
  ASSERT_NE(server.port(), 0) << "no socket on 127.0.0.1";
  ScopedEnv urls("DEBUGINFOD_URLS", server.url().c_str());
  ScopedEnv cache("DEBUGINFOD_CACHE_PATH", cache_.c_str());
  const Profile p = Sampled();
  Symbolizer sym(p, options_);
  const Location& loc = sym.Resolve(kSymPid, kSymSpace, kSymBase + hidden_ + 2, true);
  EXPECT_EQ(loc.symbol, "st_hidden") << "named from the fetched debug file's .symtab";
  EXPECT_EQ(loc.offset, 2u);
  EXPECT_NE(loc.source_file.find("symtest.c"), std::string::npos) << loc.source_file;
  EXPECT_GT(loc.line, 0u);
  const std::vector<std::string> asked = server.requests();
  ASSERT_FALSE(asked.empty()) << "the server was never asked";
  EXPECT_EQ(asked.front(), Path());

  // Annotate reads the same (cached) debug file: extent and lines.
  auto fa = sym.FileAddressOf(kSymPid, kSymSpace, kSymBase + hidden_);
  ASSERT_TRUE(fa);
  EXPECT_EQ(fa->debug_file.rfind(fs::canonical(cache_).string() + "/", 0), 0u)
      << "the client's cached copy: " << fa->debug_file;
  tprof::AnnotateOptions ao;
  ao.debug_dir = "/nonexistent";
  auto a = tprof::Annotate(p, sym, "st_hidden", ao);
  ASSERT_TRUE(a) << a.error().message();
  EXPECT_EQ(a->size, tprof::test::SymbolSize("st_hidden")) << a->disassembly_note;
  EXPECT_EQ(a->source_note, "");
  ASSERT_FALSE(a->files.empty());
  EXPECT_NE(a->files[0].path.find("symtest.c"), std::string::npos) << a->files[0].path;
}

TEST_F(SymbolizerDebuginfod, WithoutDebuginfodUrlsNothingIsFetched) {
  HttpServer server(Path(), debug_file_);
  ASSERT_NE(server.port(), 0) << "no socket on 127.0.0.1";
  ScopedEnv urls("DEBUGINFOD_URLS", nullptr);
  ScopedEnv cache("DEBUGINFOD_CACHE_PATH", cache_.c_str());
  const Profile p = Sampled();
  Symbolizer sym(p, options_);
  const Location& loc = sym.Resolve(kSymPid, kSymSpace, kSymBase + hidden_ + 2, true);
  EXPECT_FALSE(loc.resolved()) << "st_hidden is only in the server's debug file: "
                               << loc.FunctionName();
  auto fa = sym.FileAddressOf(kSymPid, kSymSpace, kSymBase + hidden_);
  ASSERT_TRUE(fa);
  EXPECT_EQ(fa->debug_file, "");
  EXPECT_TRUE(server.requests().empty()) << "asked for " << server.requests().front();
  EXPECT_FALSE(fs::exists(cache_)) << "the client did not even make its cache";
}

}  // namespace
