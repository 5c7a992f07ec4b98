// The symbolizer remembers libdwfl's function answers per interval between
// two symbol or section bounds (symbolizer.cc, FindFunction): at every
// address around each bound, and along the text between them, its answer
// must be the one libdwfl gives when asked directly.
#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "elf_fixtures.h"
#include "tprof/analysis/profile.h"
#include "tprof/analysis/symbolizer.h"

namespace tprof::test {
namespace {

// One ELF file opened by libdwfl as the symbolizer opens it (at 0, with
// separate debug files by debuglink and build id under debug_dir).
class DirectDwfl {
 public:
  DirectDwfl(const std::string& path, const std::string& debug_dir)
      : debuginfo_path_(":.debug:" + debug_dir), path_ptr_(debuginfo_path_.data()) {
    callbacks_.find_elf = dwfl_build_id_find_elf;
    callbacks_.find_debuginfo = dwfl_standard_find_debuginfo;
    callbacks_.section_address = dwfl_offline_section_address;
    callbacks_.debuginfo_path = &path_ptr_;
    dwfl_ = dwfl_begin(&callbacks_);
    if (!dwfl_) return;
    dwfl_report_begin(dwfl_);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) module_ = dwfl_report_elf(dwfl_, "f", path.c_str(), fd, 0, true);
    if (fd >= 0 && !module_) ::close(fd);
    dwfl_report_end(dwfl_, nullptr, nullptr);
  }
  ~DirectDwfl() {
    if (dwfl_) dwfl_end(dwfl_);
  }
  DirectDwfl(const DirectDwfl&) = delete;
  DirectDwfl& operator=(const DirectDwfl&) = delete;

  bool ok() const { return module_ != nullptr; }

  // libdwfl's function start for address, 0 without one.
  uint64_t FunctionStart(uint64_t address) const {
    GElf_Off offset = 0;
    GElf_Sym sym;
    const char* name =
        dwfl_module_addrinfo(module_, address, &offset, &sym, nullptr, nullptr, nullptr);
    return name && *name ? address - offset : 0;
  }

  // Every symbol's start and end and every section's, sorted, within
  // [low, high); and the executable sections' ranges.
  std::vector<uint64_t> Bounds(uint64_t low, uint64_t high) const {
    std::vector<uint64_t> out;
    const int n = dwfl_module_getsymtab(module_);
    for (int i = 1; i < n; ++i) {
      GElf_Sym sym;
      GElf_Addr value = 0;
      if (!dwfl_module_getsym_info(module_, i, &sym, &value, nullptr, nullptr, nullptr)) continue;
      for (uint64_t b : {value, value + sym.st_size})
        if (b >= low && b < high) out.push_back(b);
    }
    for (const auto& [from, to] : TextRanges()) {
      if (from >= low && from < high) out.push_back(from);
      if (to >= low && to < high) out.push_back(to);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

  std::vector<std::pair<uint64_t, uint64_t>> TextRanges() const {
    std::vector<std::pair<uint64_t, uint64_t>> out;
    GElf_Addr bias = 0;
    Elf* elf = dwfl_module_getelf(module_, &bias);
    for (Elf_Scn* scn = elf ? elf_nextscn(elf, nullptr) : nullptr; scn;
         scn = elf_nextscn(elf, scn)) {
      GElf_Shdr shdr;
      if (gelf_getshdr(scn, &shdr) && (shdr.sh_flags & SHF_EXECINSTR) && shdr.sh_size)
        out.emplace_back(shdr.sh_addr + bias, shdr.sh_addr + bias + shdr.sh_size);
    }
    return out;
  }

 private:
  std::string debuginfo_path_;
  char* path_ptr_;
  Dwfl_Callbacks callbacks_{};
  Dwfl* dwfl_ = nullptr;
  Dwfl_Module* module_ = nullptr;
};

// Compares the symbolizer with libdwfl at each bound of the text and the
// two addresses beside it, and every `stride` bytes of the text, up to
// `limit` addresses. PLT stubs are the symbolizer's own (plt_stubs.h).
void ExpectSameAnswers(const std::string& path, const std::string& debug_dir, uint64_t stride,
                       size_t limit) {
  SCOPED_TRACE(path);
  DirectDwfl direct(path, debug_dir);
  ASSERT_TRUE(direct.ok());
  Profile profile = LibraryProfile(path);
  Symbolizer symbolizer(profile, SymbolizerOptions{.source_lines = false, .debug_dir = debug_dir});
  std::vector<uint64_t> addresses;
  for (const auto& [from, to] : direct.TextRanges()) {
    for (uint64_t b : direct.Bounds(from, to))
      for (uint64_t a : {b - 1, b, b + 1})
        if (a >= from && a < to) addresses.push_back(a);
    for (uint64_t a = from; a < to; a += stride) addresses.push_back(a);
  }
  std::sort(addresses.begin(), addresses.end());
  addresses.erase(std::unique(addresses.begin(), addresses.end()), addresses.end());
  if (addresses.size() > limit) {  // evenly thinned
    std::vector<uint64_t> some;
    for (size_t i = 0; i < limit; ++i) some.push_back(addresses[i * addresses.size() / limit]);
    addresses.swap(some);
  }
  ASSERT_GT(addresses.size(), 100u);
  size_t named = 0, mismatches = 0;
  for (uint64_t a : addresses) {
    const Location& loc = symbolizer.Resolve(kSymPid, kSymSpace, kSymBase + a, true);
    if (loc.symbol.ends_with("@plt") || loc.symbol == ".plt") continue;
    const uint64_t expected = direct.FunctionStart(a);
    const uint64_t got = loc.symbol.empty() ? 0 : a - loc.offset;
    named += got != 0;
    if (got != expected && ++mismatches <= 5)
      ADD_FAILURE() << std::hex << "at 0x" << a << ": libdwfl's function starts at 0x" << expected
                    << ", the symbolizer's (" << loc.symbol << ") at 0x" << got;
  }
  EXPECT_EQ(mismatches, 0u) << "of " << addresses.size() << " addresses";
  EXPECT_GT(named, addresses.size() / 2);
}

TEST(SymbolizerLookup, AgreesWithLibdwflInAFileWithASymbolTable) {
  ExpectSameAnswers(SymFiles() + "/full/libsymtest.so", "/usr/lib/debug", 1, 20000);
}

TEST(SymbolizerLookup, AgreesWithLibdwflInAFileWithMiniDebugInfo) {
  ExpectSameAnswers(SymFiles() + "/mini/libsymtest.so", "/usr/lib/debug", 1, 20000);
}

// libc: in Debian only .dynsym (or libc6-dbg's .symtab when installed),
// where unnamed internal functions lie between the exported ones.
TEST(SymbolizerLookup, AgreesWithLibdwflInLibc) {
  Dl_info info{};
  ASSERT_NE(::dladdr(reinterpret_cast<void*>(&::getpid), &info), 0);
  ASSERT_NE(info.dli_fname, nullptr);
  ExpectSameAnswers(info.dli_fname, "/usr/lib/debug", 61, 3000);
}

}  // namespace
}  // namespace tprof::test
