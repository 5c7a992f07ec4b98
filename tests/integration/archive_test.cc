// tprofctl archive: a recording reported after the sampled binary is gone,
// from the archive (dump, annotate and diff --symfs), as on another machine.
#include <fstream>
#include <iterator>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "../common/json.h"
#include "../common/temp_dir.h"
#include "guest_env.h"
#include "tprof/analysis/elf_snapshot.h"

namespace tprof::test {
namespace {

// Samples of `function` over every process's table of a dump's JSON.
uint64_t FunctionSamples(const Json& j, const std::string& function) {
  uint64_t n = 0;
  for (const Json& pf : j.at("functions"))
    for (const Json& f : pf.at("functions"))
      if (f.at("function").get<std::string>() == function) n += f.at("samples").get<uint64_t>();
  return n;
}

Json CommandJson(const std::string& command) {
  std::string out;
  const int rc = RunCommand(command + " 2>/dev/null", &out);
  EXPECT_EQ(rc, 0) << command << ": " << out;
  std::string error;
  auto doc = ParseJson(out, &error);
  EXPECT_TRUE(doc) << command << ": " << error << "\n" << out.substr(0, 2000);
  return doc ? *doc : Json();
}

// A recording of a copy of tprof-wl-shares, archived into DIR/arch; the
// copy is removed.
void RecordArchiveAndRemove(const std::string& d) {
  std::string out;
  ASSERT_EQ(RunCommand("cd " + d + " && cp \"$(command -v tprof-wl-shares)\" ./wl && tprofctl record "
                       "-o rec.data -- ./wl --ms 500 >/dev/null 2>&1 && tprofctl archive -i rec.data "
                       "-o arch 2>&1",
                       &out),
            0)
      << out;
  EXPECT_NE(out.find(" 0 not packed"), std::string::npos) << out;
  ASSERT_EQ(RunCommand("rm " + d + "/wl", &out), 0) << out;
}

Json DumpJson(const std::string& args) { return CommandJson("tprofctl dump --format json " + args); }

TEST(Archive, ADumpWithSymfsNamesFunctionsOfARemovedBinary) {
  TempDir dir;
  const std::string d = dir.path();
  // A copy of the workload, run from a path that will be gone at report time.
  RecordArchiveAndRemove(d);
  if (HasFatalFailure()) return;

  Json with = DumpJson("--symfs " + d + "/arch -i " + d + "/arch/tprof.data");
  ASSERT_TRUE(with.is_object());
  const uint64_t alpha = FunctionSamples(with, "wl_alpha");
  EXPECT_GT(alpha, 0u) << "the archived binary names wl_alpha";

  Json without = DumpJson("-i " + d + "/arch/tprof.data");
  ASSERT_TRUE(without.is_object());
  EXPECT_EQ(FunctionSamples(without, "wl_alpha"), 0u) << "the binary is gone: only the archive has it";

  // The hint at the unnamed rows (wl+0x...): once, where function rows are
  // shown, and only of the process shown.
  auto hints = [&](const std::string& args) {
    std::string err;
    EXPECT_EQ(RunCommand("tprofctl dump " + args + " -i " + d + "/arch/tprof.data 2>&1 >/dev/null",
                         &err),
              0)
        << err;
    size_t n = 0;
    for (size_t at = err.find(d + "/wl have no function name"); at != std::string::npos;
         at = err.find(d + "/wl have no function name", at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(hints(""), 1u) << "the default report: process and function tables, one hint";
  EXPECT_EQ(hints("--by symbol"), 1u);
  EXPECT_EQ(hints("--by process"), 0u) << "no function rows to explain";
  EXPECT_EQ(hints("--pid 0"), 0u) << "the idle row has no files";
  // With the archive every sample has a function name, a PLT stub's too
  // ("clock_gettime@plt": the workload's clock reads call through one).
  EXPECT_EQ(hints("--symfs " + d + "/arch"), 0u) << "the archive names them";
}

TEST(Archive, AnnotateWithSymfsDisassemblesTheArchivedBinary) {
  TempDir dir;
  const std::string d = dir.path();
  RecordArchiveAndRemove(d);
  if (HasFatalFailure()) return;
  Json a = CommandJson("tprofctl annotate --format json --symfs " + d + "/arch -i " + d +
                       "/arch/tprof.data wl_alpha");
  ASSERT_TRUE(a.is_object());
  EXPECT_EQ(a.at("code_source").get<std::string>().rfind(d + "/arch/.build-id/", 0), 0u)
      << "the bytes come from the archive: " << a.at("code_source");
  uint64_t samples = 0, disassembled = 0;
  for (const Json& ins : a.at("instructions")) {
    samples += ins.at("samples").get<uint64_t>();
    disassembled += !ins.at("text").get<std::string>().empty();
  }
  EXPECT_GT(samples, 0u);
  EXPECT_GT(disassembled, 3u) << "wl_alpha's loop is disassembled";
  EXPECT_FALSE(a.at("files").empty()) << "source lines from the archived binary's DWARF";

  std::string out;
  EXPECT_NE(RunCommand("tprofctl annotate -i " + d + "/arch/tprof.data wl_alpha 2>&1", &out), 0)
      << "the binary is gone: without --symfs nothing names wl_alpha\n" << out;
}

// Samples of `function` in a diff's JSON rows, A's and B's.
std::pair<uint64_t, uint64_t> DiffSamples(const Json& j, const std::string& function) {
  std::pair<uint64_t, uint64_t> n{0, 0};
  for (const Json& row : j.at("rows")) {
    if (row.at("function").get<std::string>() != function) continue;
    n.first += row.at("samples_a").get<uint64_t>();
    n.second += row.at("samples_b").get<uint64_t>();
  }
  return n;
}

TEST(Archive, DiffWithSymfsReadsOneArchiveForBothOrEachItsOwn) {
  TempDir dir;
  const std::string d = dir.path();
  RecordArchiveAndRemove(d);
  if (HasFatalFailure()) return;
  const std::string ab = " " + d + "/arch/tprof.data " + d + "/rec.data";
  Json both = CommandJson("tprofctl diff --format json --symfs " + d + "/arch" + ab);
  ASSERT_TRUE(both.is_object());
  const auto [a, b] = DiffSamples(both, "wl_alpha");
  EXPECT_GT(a, 0u) << "one --symfs serves A";
  EXPECT_EQ(b, a) << "and B, the same recording";

  Json own = CommandJson("tprofctl diff --format json --symfs " + d + "/arch --symfs /nonexistent" + ab);
  ASSERT_TRUE(own.is_object());
  EXPECT_EQ(DiffSamples(own, "wl_alpha"), std::make_pair(a, uint64_t{0}))
      << "the second --symfs is B's (which has no archive here)";

  Json none = CommandJson("tprofctl diff --format json" + ab);
  ASSERT_TRUE(none.is_object());
  EXPECT_EQ(DiffSamples(none, "wl_alpha"), std::make_pair(uint64_t{0}, uint64_t{0}));
}

// Gives the ELF file at path another build id (its code unchanged) by
// changing one byte of the id where it is stored, as a rebuild would.
void ChangeBuildId(const std::string& path) {
  const std::string id = FileBuildId(path);
  ASSERT_EQ(id.size(), 40u) << path;
  std::string bytes;
  for (size_t i = 0; i < id.size(); i += 2)
    bytes += static_cast<char>(std::stoi(id.substr(i, 2), nullptr, 16));
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t at = data.find(bytes);
  ASSERT_NE(at, std::string::npos) << "the build id's bytes in " << path;
  f.clear();
  f.seekp(static_cast<std::streamoff>(at));
  f.put(static_cast<char>(bytes[0] ^ 0x5a));
  f.close();
  ASSERT_NE(FileBuildId(path), id);
}

TEST(Archive, DumpAndAnnotateWarnAboutABinaryRebuiltAfterTheRecording) {
  TempDir dir;
  const std::string d = dir.path();
  std::string out;
  ASSERT_EQ(RunCommand("cd " + d + " && cp \"$(command -v tprof-wl-shares)\" ./wl && tprofctl "
                       "record -o rec.data -- ./wl --ms 300 >/dev/null 2>&1",
                       &out),
            0)
      << out;
  const std::string recorded = FileBuildId(d + "/wl");
  ChangeBuildId(d + "/wl");
  if (HasFatalFailure()) return;
  const std::string warning = "tprofctl: warning: " + d + "/wl was rebuilt after the recording: "
                              "its symbols may be wrong (build id " + recorded + " when recorded, " +
                              FileBuildId(d + "/wl") + " now)";
  std::string err;
  ASSERT_EQ(RunCommand("tprofctl dump -i " + d + "/rec.data 2>&1 >/dev/null", &err), 0) << err;
  EXPECT_NE(err.find(warning), std::string::npos) << err;
  std::string annotate_err;  // (RunCommand appends)
  ASSERT_EQ(RunCommand("tprofctl annotate -i " + d + "/rec.data wl_alpha 2>&1 >/dev/null",
                       &annotate_err),
            0)
      << annotate_err;
  EXPECT_NE(annotate_err.find(warning), std::string::npos)
      << "annotate warns as dump does: " << annotate_err;
  EXPECT_EQ(annotate_err.find("warning: /"), annotate_err.rfind("warning: /"))
      << "once, about the annotated file only: " << annotate_err;
}

}  // namespace
}  // namespace tprof::test
