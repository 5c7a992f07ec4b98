// Annotate against known code: a function of this test binary (built with
// -g) sampled at addresses the test knows (its first byte and two return
// addresses of calls it makes), mapped as /proc/self/maps says; and
// synthetic JIT and kernel samples whose code cannot be read.
#include "tprof/analysis/annotate.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <elf.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "tprof/analysis/profile.h"
#include "tprof/analysis/symbolizer.h"
#include "elf_fixtures.h"

volatile uint64_t tprof_annotate_sink;

// The address the call to it returns to: an instruction boundary inside
// the caller, right after a call instruction.
__attribute__((noinline)) uint64_t tprof_annotate_return_address() {
  uint64_t ra = reinterpret_cast<uint64_t>(__builtin_return_address(0));
  asm volatile("" : "+r"(ra));
  return ra;
}

// The annotated function: two calls on two lines.
extern "C" __attribute__((noinline)) uint64_t tprof_annotate_target(uint64_t* second) {
  uint64_t first = tprof_annotate_return_address();
  tprof_annotate_sink = tprof_annotate_sink + first;
  *second = tprof_annotate_return_address();
  tprof_annotate_sink = tprof_annotate_sink + *second;
  return first;
}

namespace {

using tprof::AnnotatedInstruction;
using tprof::AnnotateOptions;
using tprof::Annotation;
using tprof::Mapping;
using tprof::Profile;
using tprof::SampleKey;
using tprof::Symbolizer;

constexpr uint64_t kSpace = 91;

Profile SelfProfile(uint32_t pid) { return tprof::test::SelfProfile(pid, kSpace); }

SampleKey UserKey(uint32_t pid, uint64_t ip) { return {pid, kSpace, ip, TPROF_SAMPLE_USER}; }

const AnnotatedInstruction* At(const Annotation& a, uint64_t address) {
  for (const AnnotatedInstruction& ins : a.instructions)
    if (ins.address == address) return &ins;
  return nullptr;
}

struct Known {
  uint64_t start, first, second;
};

Known KnownAddresses() {
  uint64_t second = 0;
  uint64_t first = tprof_annotate_target(&second);
  return {reinterpret_cast<uint64_t>(&tprof_annotate_target), first, second};
}

// This process, the annotated function's known addresses, and options for
// kernel code read from a FakeKcore() beside its kallsyms.
class Annotate : public ::testing::Test {
 protected:
  static AnnotateOptions KcoreOptions(const std::string& kcore) {
    AnnotateOptions o;
    o.debug_dir = "/nonexistent";
    o.kcore_path = kcore;
    o.kallsyms_path = kcore.substr(0, kcore.rfind('/')) + "/kallsyms";
    return o;
  }
  const uint32_t pid_ = static_cast<uint32_t>(getpid());
  const Known k_ = KnownAddresses();
};

TEST_F(Annotate, CountsSamplesPerInstructionAndSourceLineOfKnownCode) {
  const uint32_t pid = pid_;
  Profile p = SelfProfile(pid);
  const Known& k = k_;
  ASSERT_LT(k.start, k.first);
  ASSERT_LT(k.first, k.second);
  p.samples[UserKey(pid, k.start)] = 5;
  p.samples[UserKey(pid, k.first)] = 7;
  p.samples[UserKey(pid, k.second)] = 11;
  Symbolizer sym(p);
  auto a = tprof::Annotate(p, sym, "tprof_annotate_target", AnnotateOptions{});
  ASSERT_TRUE(a) << a.error().message();
  EXPECT_EQ(a->function, "tprof_annotate_target");
  EXPECT_EQ(a->space, "main");
  EXPECT_EQ(a->pid, pid);
  EXPECT_EQ(a->start, k.start);
  EXPECT_EQ(a->samples, 23u);
  EXPECT_GT(a->size, k.second - k.start);
  EXPECT_TRUE(a->disassembly_note.empty()) << a->disassembly_note;
#if defined(__x86_64__)
  EXPECT_EQ(a->arch, "x86-64");
  const std::string call = "call";
#else
  EXPECT_EQ(a->arch, "arm64");
  const std::string call = "bl";
#endif

  // Per instruction: exactly the samples at its address, and the
  // instructions cover the function's bytes without gaps.
  uint64_t total = 0, expect_next = k.start;
  const AnnotatedInstruction* before_first = nullptr;
  const AnnotatedInstruction* before_second = nullptr;
  for (const AnnotatedInstruction& ins : a->instructions) {
    EXPECT_EQ(ins.address, expect_next) << "a gap before " << ins.text;
    expect_next = ins.address + ins.size;
    EXPECT_FALSE(ins.text.empty());
    total += ins.samples;
    const uint64_t want = ins.address == k.start ? 5 : ins.address == k.first ? 7
                          : ins.address == k.second ? 11 : 0;
    EXPECT_EQ(ins.samples, want) << "at +" << ins.offset << " " << ins.text;
    if (ins.address + ins.size == k.first) before_first = &ins;
    if (ins.address + ins.size == k.second) before_second = &ins;
  }
  EXPECT_EQ(total, 23u);
  EXPECT_EQ(expect_next, k.start + a->size);
  ASSERT_NE(At(*a, k.first), nullptr);
  ASSERT_NE(before_first, nullptr) << "no instruction ends at the first return address";
  ASSERT_NE(before_second, nullptr);
  // The instruction before a return address is the call.
  EXPECT_EQ(before_first->text.compare(0, call.size(), call), 0) << before_first->text;
  EXPECT_EQ(before_second->text.compare(0, call.size(), call), 0) << before_second->text;

  // Per line: the symbolizer (its own DWARF lookup) says which line each
  // sampled address is on; the main file's lines hold exactly those sums.
  std::map<uint32_t, uint64_t> want_lines;
  std::string file;
  for (auto [ip, n] : {std::pair{k.start, 5}, {k.first, 7}, {k.second, 11}}) {
    const tprof::Location& loc = sym.Resolve(UserKey(pid, ip));
    ASSERT_GT(loc.line, 0u);
    want_lines[loc.line] += n;
    file = loc.source_file;
    EXPECT_EQ(At(*a, ip)->line, loc.line);
  }
  ASSERT_FALSE(a->files.empty());
  const tprof::AnnotatedFile& main = a->files.front();
  // DWARF's name, made absolute with the compilation directory when relative.
  ASSERT_GE(main.path.size(), file.size());
  EXPECT_EQ(main.path.substr(main.path.size() - file.size()), file);
  EXPECT_EQ(main.path[0], '/') << main.path;
  EXPECT_NE(main.path.find("annotate_test.cc"), std::string::npos);
  EXPECT_TRUE(main.read) << a->source_note;
  uint64_t line_total = 0;
  bool saw_second_call = false;
  for (const tprof::AnnotatedLine& l : main.lines) {
    auto it = want_lines.find(l.line);
    EXPECT_EQ(l.samples, it == want_lines.end() ? 0u : it->second) << "line " << l.line;
    line_total += l.samples;
    EXPECT_TRUE(l.has_text);
    if (l.text.find("*second = tprof_annotate_return_address();") != std::string::npos) {
      saw_second_call = true;
      EXPECT_EQ(l.samples, want_lines[l.line]);
    }
  }
  EXPECT_EQ(line_total, 23u);
  EXPECT_TRUE(saw_second_call) << "the window misses the function's lines";
  // The window reaches 3 lines before the signature: the comment above it.
  bool saw_comment = false;
  for (const tprof::AnnotatedLine& l : main.lines)
    saw_comment |= l.text.find("// The annotated function") != std::string::npos;
  EXPECT_TRUE(saw_comment);
}

TEST_F(Annotate, RendersJsonWithDecimalPercentsAndTextWithMarks) {
  const uint32_t pid = pid_;
  Profile p = SelfProfile(pid);
  const Known& k = k_;
  p.samples[UserKey(pid, k.first)] = 1;
  p.samples[UserKey(pid, k.second)] = 3;
  Symbolizer sym(p);
  auto a = tprof::Annotate(p, sym, "tprof_annotate_target", AnnotateOptions{});
  ASSERT_TRUE(a) << a.error().message();
  auto j = nlohmann::json::parse(RenderAnnotation(*a, {}, tprof::AnnotateFormat::kJson));
  EXPECT_EQ(j.at("format_version"), 1);
  EXPECT_EQ(j.at("samples"), 4);
  double sum = 0;
  for (const auto& ins : j.at("instructions")) {
    if (ins.at("address") == k.second) {
      EXPECT_DOUBLE_EQ(ins.at("percent").get<double>(), 75.0);
    }
    sum += ins.at("percent").get<double>();
  }
  EXPECT_DOUBLE_EQ(sum, 100.0);
  EXPECT_EQ(j.at("files").at(0).at("lines").at(0).count("text"), 1u);
  std::string text = RenderAnnotation(*a, {}, tprof::AnnotateFormat::kText);
  EXPECT_NE(text.find("      3   75.00% > +0x" ), std::string::npos) << text;
  EXPECT_NE(text.find("      1   25.00% * +0x"), std::string::npos) << text;
  EXPECT_NE(text.find("annotate_test.cc:"), std::string::npos) << "source not interleaved";
}

TEST_F(Annotate, PicksTheProcessWithMostSamplesOrThePidGiven) {
  Profile p = SelfProfile(100);
  Profile other = SelfProfile(200);
  p.mappings.insert(other.mappings.begin(), other.mappings.end());
  const Known& k = k_;
  p.samples[UserKey(100, k.first)] = 2;
  p.samples[UserKey(200, k.first)] = 9;
  Symbolizer sym(p);
  auto a = tprof::Annotate(p, sym, "tprof_annotate_target", AnnotateOptions{});
  ASSERT_TRUE(a) << a.error().message();
  EXPECT_EQ(a->pid, 200u);
  EXPECT_EQ(a->samples, 9u);
  ASSERT_EQ(a->candidates.size(), 2u);
  EXPECT_EQ(a->candidates[1].pid, 100u);
  AnnotateOptions only;
  only.pid = 100;
  auto b = tprof::Annotate(p, sym, "tprof_annotate_target", only);
  ASSERT_TRUE(b) << b.error().message();
  EXPECT_EQ(b->pid, 100u);
  EXPECT_EQ(b->samples, 2u);
  auto none = tprof::Annotate(p, sym, "no_such_function", AnnotateOptions{});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code().value(), ENOENT);
}

TEST_F(Annotate, JitCodeHasItsSampledAddressesAndSaysWhyNoDisassembly) {
  Profile p;
  p.jit_symbols[42] = {{0x7000, 0x40, "jit_hot_loop"}};
  p.samples[UserKey(42, 0x7008)] = 4;
  p.samples[UserKey(42, 0x7010)] = 6;
  Symbolizer sym(p);
  auto a = tprof::Annotate(p, sym, "jit_hot_loop", AnnotateOptions{});
  ASSERT_TRUE(a) << a.error().message();
  EXPECT_EQ(a->space, "jit");
  EXPECT_EQ(a->start, 0x7000u);
  EXPECT_EQ(a->size, 0x40u);  // the perf map's
  ASSERT_EQ(a->instructions.size(), 2u);
  EXPECT_EQ(a->instructions[0].offset, 8u);
  EXPECT_EQ(a->instructions[0].samples, 4u);
  EXPECT_EQ(a->instructions[1].samples, 6u);
  EXPECT_TRUE(a->instructions[1].text.empty());
  EXPECT_NE(a->disassembly_note.find("JIT"), std::string::npos) << a->disassembly_note;
}

TEST_F(Annotate, KernelCodeWithoutVmlinuxOrKcoreSaysSo) {
  Profile p;
  p.kernel_symbols.available = true;
  p.kernel_symbols.symbols = {{0xffffffff81000000, 't', "k_hot", ""},
                              {0xffffffff81000100, 't', "k_next", ""}};
  p.samples[{7, 0, 0xffffffff81000010, 0}] = 3;
  p.samples[{8, 0, 0xffffffff81000010, 0}] = 2;
  Symbolizer sym(p);
  AnnotateOptions o;
  o.debug_dir = "/nonexistent";
  o.kallsyms_path = "/nonexistent/kallsyms";
  auto a = tprof::Annotate(p, sym, "k_hot", o);
  ASSERT_TRUE(a) << a.error().message();
  EXPECT_EQ(a->space, "kernel");
  EXPECT_EQ(a->pid, 0u);
  EXPECT_EQ(a->samples, 5u);  // every process's
  EXPECT_EQ(a->size, 0x100u);
  EXPECT_NE(a->disassembly_note.find("not disassembled"), std::string::npos)
      << a->disassembly_note;
  EXPECT_NE(a->source_note.find("vmlinux"), std::string::npos) << a->source_note;
  ASSERT_EQ(a->instructions.size(), 1u);
  EXPECT_EQ(a->instructions[0].samples, 5u);
}

// A file laid out as /proc/kcore is: an ELF core header, one PT_LOAD
// segment at `vaddr` holding `code`.
std::string FakeKcore(uint16_t machine, uint64_t vaddr, const std::vector<uint8_t>& code) {
  char dir[] = "/tmp/tprof_annotate_XXXXXX";
  if (!::mkdtemp(dir)) return "";
  const std::string path = std::string(dir) + "/kcore";
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_CORE;
  eh.e_machine = machine;
  eh.e_version = EV_CURRENT;
  eh.e_phoff = sizeof(eh);
  eh.e_ehsize = sizeof(eh);
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = 1;
  Elf64_Phdr ph{};
  ph.p_type = PT_LOAD;
  ph.p_offset = 0x1000;
  ph.p_vaddr = vaddr;
  ph.p_filesz = ph.p_memsz = code.size();
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(&eh), sizeof(eh));
  out.write(reinterpret_cast<const char*>(&ph), sizeof(ph));
  out.seekp(0x1000);
  out.write(reinterpret_cast<const char*>(code.data()), static_cast<std::streamsize>(code.size()));
  std::ofstream(std::string(dir) + "/kallsyms") << "ffffffff81000000 t k_loop\n"
                                                   "ffffffff81000100 T k_next\n";
  return out ? path : "";
}

Profile KernelProfile() {
  Profile p;
  p.kernel_symbols.available = true;
  p.kernel_symbols.symbols = {{0xffffffff81000000, 't', "k_loop", ""},
                              {0xffffffff81000100, 'T', "k_next", ""}};
  return p;
}

TEST_F(Annotate, KernelCodeIsDisassembledFromKcoreWhenItsAddressesStillHold) {
  // x86-64: mov %rdi,%rax; dec %rax; jne -5; ret, then int3 padding.
  std::vector<uint8_t> code = {0x48, 0x89, 0xf8, 0x48, 0xff, 0xc8, 0x75, 0xfb, 0xc3};
  code.resize(0x100, 0xcc);
  const std::string kcore = FakeKcore(EM_X86_64, 0xffffffff81000000, code);
  ASSERT_FALSE(kcore.empty());
  Profile p = KernelProfile();
  p.samples[{9, 0, 0xffffffff81000003, 0}] = 40;  // dec
  p.samples[{9, 0, 0xffffffff81000006, 0}] = 2;   // jne
  Symbolizer sym(p);
  AnnotateOptions o = KcoreOptions(kcore);
  auto a = tprof::Annotate(p, sym, "k_loop", o);
  ASSERT_TRUE(a) << a.error().message();
  EXPECT_EQ(a->disassembly_note, "");
  EXPECT_EQ(a->code_source, kcore);
  EXPECT_EQ(a->arch, "x86-64");
  ASSERT_GE(a->instructions.size(), 4u);
  EXPECT_EQ(a->instructions[0].text.rfind("mov", 0), 0u) << a->instructions[0].text;
  EXPECT_EQ(a->instructions[1].text.rfind("dec", 0), 0u) << a->instructions[1].text;
  EXPECT_EQ(a->instructions[1].samples, 40u);
  EXPECT_EQ(a->instructions[2].text.rfind("jne", 0), 0u) << a->instructions[2].text;
  EXPECT_EQ(a->instructions[2].samples, 2u);
  EXPECT_EQ(a->instructions[3].text.rfind("ret", 0), 0u) << a->instructions[3].text;

  // Another boot: kallsyms no longer agrees, so kcore's bytes are not that code.
  std::ofstream(o.kallsyms_path) << "ffffffff82000000 t k_loop\n";
  Symbolizer sym2(p);
  auto moved = tprof::Annotate(p, sym2, "k_loop", o);
  ASSERT_TRUE(moved);
  EXPECT_NE(moved->disassembly_note.find("another boot"), std::string::npos)
      << moved->disassembly_note;
  EXPECT_EQ(moved->instructions.size(), 2u);  // the sampled addresses only
}

TEST_F(Annotate, Arm64CodeIsDisassembledToo) {
  // subs x0, x0, #1; b.ne -4; ret
  std::vector<uint8_t> code = {0x00, 0x04, 0x00, 0xf1, 0xe1, 0xff, 0xff, 0x54,
                               0xc0, 0x03, 0x5f, 0xd6};
  code.resize(0x100, 0);
  const std::string kcore = FakeKcore(EM_AARCH64, 0xffffffff81000000, code);
  ASSERT_FALSE(kcore.empty());
  Profile p = KernelProfile();
  p.samples[{9, 0, 0xffffffff81000004, 0}] = 3;
  Symbolizer sym(p);
  AnnotateOptions o = KcoreOptions(kcore);
  auto a = tprof::Annotate(p, sym, "k_loop", o);
  ASSERT_TRUE(a) << a.error().message();
  EXPECT_EQ(a->arch, "arm64");
  ASSERT_GE(a->instructions.size(), 3u);
  EXPECT_EQ(a->instructions[0].text.rfind("subs", 0), 0u) << a->instructions[0].text;
  EXPECT_EQ(a->instructions[1].text.rfind("b.ne", 0), 0u) << a->instructions[1].text;
  EXPECT_EQ(a->instructions[1].samples, 3u);
  EXPECT_EQ(a->instructions[2].text, "ret");
  EXPECT_EQ(a->instructions[2].size, 4u);
}

}  // namespace
