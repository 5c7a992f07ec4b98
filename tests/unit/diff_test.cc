// Diffs of two synthetic profiles whose shares are known exactly:
//   A: 100 samples taken (90 delivered, 10 lost). "app" (pid 100): alpha 50,
//      beta 20; "old" (pid 200): delta 10; idle 10.
//   B: 200 samples taken, none lost, 1000 Hz. "app" (pid 300, another pid
//      than in A): alpha 40, beta 60, gamma 60; idle 40.
// Per function: alpha 50% -> 20% (-30), gamma 0 -> 30% (+30, only in B),
// beta 20% -> 30% (+10), default_idle 10% -> 20% (+10), delta 10% -> 0
// (-10, only in A).
#include "tprof/analysis/diff.h"

#include <gtest/gtest.h>

#include <string>

#include "../common/json.h"
#include "../common/records.h"

namespace {

using tprof::DiffBy;
using tprof::DiffData;
using tprof::DiffFormat;
using tprof::DiffOptions;
using tprof::DiffRow;
using tprof::Profile;
using tprof::ProfileBuilder;
using tprof::Symbolizer;
using tprof::test::CommRec;
using tprof::test::ParseJson;
using tprof::test::Records;
using tprof::test::SampleRec;

constexpr uint64_t kBase = 0xffffffff81000000;
constexpr uint64_t kAlpha = kBase + 0x010;
constexpr uint64_t kBeta = kBase + 0x110;
constexpr uint64_t kGamma = kBase + 0x210;
constexpr uint64_t kDelta = kBase + 0x310;
constexpr uint64_t kIdle = kBase + 0x410;

void AddKernelSymbols(Profile* p) {
  p->kernel_symbols.available = true;
  p->kernel_symbols.symbols = {{kBase, 'T', "alpha", ""},         {kBase + 0x100, 'T', "beta", ""},
                               {kBase + 0x200, 'T', "gamma", ""}, {kBase + 0x300, 'T', "delta", ""},
                               {kBase + 0x400, 'T', "default_idle", ""},
                               {kBase + 0x500, 'T', "next", ""}};
}

Profile ProfileA() {
  ProfileBuilder b;
  Records r;
  r.Add(CommRec(100, TPROF_COMM_EXISTING, "app")).Add(CommRec(200, TPROF_COMM_EXISTING, "old"));
  r.AddN(50, SampleRec(100, 1, kAlpha, 0));
  r.AddN(20, SampleRec(100, 1, kBeta, 0));
  r.AddN(10, SampleRec(200, 2, kDelta, 0));
  r.AddN(10, SampleRec(0, 0, kIdle, TPROF_SAMPLE_IDLE));
  b.AddRecords(r.data(), r.size());
  b.SetCpuTotals(0, 100, 10, 0);
  Profile p = b.Finish();
  AddKernelSymbols(&p);
  return p;
}

Profile ProfileB() {
  ProfileBuilder b;
  Records r;
  r.Add(CommRec(300, TPROF_COMM_EXISTING, "app"));
  r.AddN(40, SampleRec(300, 1, kAlpha, 0, 0, 0, 1'000'000));
  r.AddN(60, SampleRec(300, 1, kBeta, 0, 0, 0, 2'000'000));
  r.AddN(60, SampleRec(300, 1, kGamma, 0, 1, 0, 3'000'000));
  r.AddN(40, SampleRec(0, 0, kIdle, TPROF_SAMPLE_IDLE, 1, 0, 1'501'000'000));
  b.AddRecords(r.data(), r.size());
  b.SetCpuTotals(0, 100, 0, 0);
  b.SetCpuTotals(1, 100, 0, 0);
  b.SetAttribute("frequency_hz", "1000");
  Profile p = b.Finish();
  AddKernelSymbols(&p);
  return p;
}

// Builds both profiles and their symbolizers, and diffs them.
class Diff : public ::testing::Test {
 protected:
  DiffData Build(const DiffOptions& options = {}) {
    return tprof::BuildDiff({a_, sym_a_, "a.data"}, {b_, sym_b_, "b.data"}, options);
  }

  Profile a_ = ProfileA();
  Profile b_ = ProfileB();
  Symbolizer sym_a_{a_};
  Symbolizer sym_b_{b_};
};

void ExpectRow(const DiffRow& r, const std::string& process, const std::string& function,
               uint64_t samples_a, uint64_t samples_b, double percent_a, double percent_b) {
  SCOPED_TRACE(process + " " + function);
  EXPECT_EQ(r.process, process);
  EXPECT_EQ(r.function, function);
  EXPECT_EQ(r.samples_a, samples_a);
  EXPECT_EQ(r.samples_b, samples_b);
  EXPECT_DOUBLE_EQ(r.percent_a, percent_a);
  EXPECT_DOUBLE_EQ(r.percent_b, percent_b);
  EXPECT_DOUBLE_EQ(r.delta_points(), percent_b - percent_a);
  EXPECT_EQ(r.delta_samples(), static_cast<int64_t>(samples_b) - static_cast<int64_t>(samples_a));
}

TEST_F(Diff, FunctionSharesOfEachProfileGiveExactDeltasLargestFirst) {
  DiffData d = Build();
  EXPECT_EQ(d.a.samples_taken, 100u);
  EXPECT_EQ(d.a.lost_samples, 10u);
  EXPECT_EQ(d.b.samples_taken, 200u);
  ASSERT_EQ(d.rows.size(), 5u);
  // |delta| 30, 30, 10, 10, 10: equal changes by samples in both, busiest first.
  ExpectRow(d.rows[0], "app", "alpha", 50, 40, 50.0, 20.0);
  ExpectRow(d.rows[1], "app", "gamma", 0, 60, 0.0, 30.0);
  ExpectRow(d.rows[2], "app", "beta", 20, 60, 20.0, 30.0);
  ExpectRow(d.rows[3], "idle", "default_idle", 10, 40, 10.0, 20.0);
  ExpectRow(d.rows[4], "old", "delta", 10, 0, 10.0, 0.0);
  EXPECT_EQ(d.rows[0].space, "kernel");
  EXPECT_DOUBLE_EQ(d.rows[0].delta_points(), -30.0);
  EXPECT_EQ(d.rows[0].delta_samples(), -10);
}

TEST_F(Diff, ProcessesAreMatchedByNameAcrossPids) {
  DiffData d = Build({DiffBy::kProcess, std::nullopt, 0});
  ASSERT_EQ(d.rows.size(), 3u);
  ExpectRow(d.rows[0], "app", "", 70, 160, 70.0, 80.0);
  ExpectRow(d.rows[1], "idle", "", 10, 40, 10.0, 20.0);
  ExpectRow(d.rows[2], "old", "", 10, 0, 10.0, 0.0);
}

TEST_F(Diff, PidSelectsTheSameProcessInBothProfiles) {
  DiffData d = Build({DiffBy::kFunction, 0u, 0});
  ASSERT_EQ(d.rows.size(), 1u);
  ExpectRow(d.rows[0], "idle", "default_idle", 10, 40, 10.0, 20.0);
  EXPECT_EQ(d.a.samples_taken, 100u) << "shares stay of the whole profile";
  EXPECT_EQ(d.a.samples, 10u);
}

TEST_F(Diff, TextHasBothHeadersTheTableAndWhatTopLeftOut) {
  DiffOptions o;
  o.top = 2;
  std::string text = tprof::RenderDiff(Build(o), o, DiffFormat::kText);
  EXPECT_NE(text.find("A: a.data: 100 samples taken (90 delivered, 10 lost)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("B: b.data: 200 samples taken (200 delivered, 0 lost), 1.500 s, 1000 Hz\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  -30.00   50.00   20.00         50         40        -10  app             "
                      " kernel               alpha\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  +30.00    0.00   30.00          0         60        +60  app"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("beta"), std::string::npos) << "--top 2 shows two rows: " << text;
  EXPECT_NE(text.find("(3 more rows: raise --top)"), std::string::npos) << text;
}

TEST_F(Diff, JsonHasFormatVersionSidesAndDecimalPercentages) {
  DiffOptions o;
  o.top = 3;
  std::string json = tprof::RenderDiff(Build(o), o, DiffFormat::kJson);
  std::string error;
  auto v = ParseJson(json, &error);
  ASSERT_TRUE(v) << error << "\n" << json;
  EXPECT_EQ((*v).at("format_version").get<double>(), tprof::kDiffJsonFormatVersion);
  EXPECT_EQ((*v).at("by").get<std::string>(), "function");
  EXPECT_EQ((*v).at("a").at("path").get<std::string>(), "a.data");
  EXPECT_EQ((*v).at("a").at("samples_taken").get<double>(), 100);
  EXPECT_EQ((*v).at("a").at("lost_samples").get<double>(), 10);
  EXPECT_FALSE((*v).at("a").contains("frequency_hz")) << "A's frequency is not known";
  EXPECT_EQ((*v).at("b").at("frequency_hz").get<double>(), 1000);
  EXPECT_EQ((*v).at("b").at("duration_ns").get<double>(), 1'500'000'000);
  EXPECT_EQ((*v).at("rows_total").get<double>(), 5);
  const auto& rows = (*v).at("rows");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].at("process").get<std::string>(), "app");
  EXPECT_EQ(rows[0].at("space").get<std::string>(), "kernel");
  EXPECT_EQ(rows[0].at("function").get<std::string>(), "alpha");
  EXPECT_EQ(rows[0].at("samples_a").get<double>(), 50);
  EXPECT_EQ(rows[0].at("samples_b").get<double>(), 40);
  EXPECT_EQ(rows[0].at("delta_samples").get<double>(), -10);
  EXPECT_EQ(rows[0].at("percent_a").get<double>(), 50.0);
  EXPECT_EQ(rows[0].at("percent_b").get<double>(), 20.0);
  EXPECT_EQ(rows[0].at("delta_points").get<double>(), -30.0);
  EXPECT_EQ(rows[2].at("function").get<std::string>(), "beta");
  EXPECT_NE(json.find(R"("percent_a":50.0,"percent_b":20.0,"delta_points":-30.0)"),
            std::string::npos)
      << "percentages are decimals: " << json;

  DiffOptions by_process{DiffBy::kProcess, std::nullopt, 0};
  auto p = ParseJson(tprof::RenderDiff(Build(by_process), by_process, DiffFormat::kJson), &error);
  ASSERT_TRUE(p) << error;
  EXPECT_EQ((*p).at("by").get<std::string>(), "process");
  EXPECT_FALSE((*p).at("rows").at(0).contains("function"));
}

TEST_F(Diff, EqualChangesTieExactlyWhateverTheirRounding) {
  // Of 70 and 30 samples: beta 20 -> 20 and alpha 50 -> 10 both change by
  // 800/21 points, which doubles compute a bit apart; the busier row leads.
  auto make = [](int alpha, int beta) {
    ProfileBuilder b;
    Records r;
    r.Add(CommRec(100, TPROF_COMM_EXISTING, "app"));
    r.AddN(alpha, SampleRec(100, 1, kAlpha, 0)).AddN(beta, SampleRec(100, 1, kBeta, 0));
    b.AddRecords(r.data(), r.size());
    Profile p = b.Finish();
    AddKernelSymbols(&p);
    return p;
  };
  Profile x = make(50, 20), y = make(10, 20);
  Symbolizer sx(x), sy(y);
  DiffData d = tprof::BuildDiff({x, sx, "x"}, {y, sy, "y"}, {});
  ASSERT_EQ(d.rows.size(), 2u);
  EXPECT_EQ(d.rows[0].function, "alpha");
  EXPECT_EQ(d.rows[1].function, "beta");
  EXPECT_NEAR(d.rows[0].delta_points(), -800.0 / 21.0, 1e-9);
  EXPECT_NEAR(d.rows[1].delta_points(), 800.0 / 21.0, 1e-9);
}

TEST_F(Diff, ShareIsThirdsNotRoundedInRows) {
  // 1 of 3 samples: the row keeps the exact share; JSON rounds to 4 places.
  ProfileBuilder b;
  Records r;
  r.Add(CommRec(100, TPROF_COMM_EXISTING, "app"));
  r.AddN(1, SampleRec(100, 1, kAlpha, 0)).AddN(2, SampleRec(100, 1, kBeta, 0));
  b.AddRecords(r.data(), r.size());
  Profile c = b.Finish();
  AddKernelSymbols(&c);
  Symbolizer sym_c(c);
  DiffData d = tprof::BuildDiff({a_, sym_a_, "a"}, {c, sym_c, "c"}, {});
  ASSERT_FALSE(d.rows.empty());
  const DiffRow* alpha = nullptr;
  for (const DiffRow& row : d.rows)
    if (row.function == "alpha") alpha = &row;
  ASSERT_TRUE(alpha);
  EXPECT_DOUBLE_EQ(alpha->percent_b, 100.0 / 3.0);
  std::string json = tprof::RenderDiff(d, {}, DiffFormat::kJson);
  EXPECT_NE(json.find("\"percent_b\":33.3333"), std::string::npos) << json;
}

}  // namespace
