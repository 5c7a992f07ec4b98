// The flame graph (SVG) and speedscope exports of the folded stacks, from a
// synthetic profile like report_test.cc's: the SVG is well-formed XML with
// its script and style inside, frames as wide as their samples, names
// escaped; the speedscope JSON holds the stacks and weights as given.
#include "tprof/output/flamegraph.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "../common/json.h"
#include "../common/records.h"
#include "../common/xml_parser.h"
#include "tprof/output/report.h"
#include "tprof/output/speedscope.h"

namespace {

using tprof::FlameGraphOptions;
using tprof::Profile;
using tprof::ProfileBuilder;
using tprof::StackRow;
using tprof::Symbolizer;
using tprof::test::CommRec;
using tprof::test::Json;
using tprof::test::ParseJson;
using tprof::test::Records;
using tprof::test::SampleRec;
using tprof::test::XmlElement;
using tprof::test::XmlParser;

constexpr uint64_t kSyscall = 0xffffffff81000110;  // in do_syscall_64
constexpr uint64_t kEntry = 0xffffffff81000020;    // in entry_SYSCALL_64
constexpr uint64_t kIdle = 0xffffffff81000310;     // in default_idle
constexpr uint32_t U = TPROF_SAMPLE_USER;

// pid 100 "app": 6 + 4 (from entry_SYSCALL_64) in do_syscall_64, 5 JIT,
// 5 unmapped = 20; pid 200 "w;rk": 10 in do_syscall_64; idle: 15. 45 in all.
Profile TestProfile() {
  ProfileBuilder b;
  Records r;
  r.Add(CommRec(100, TPROF_COMM_EXISTING, "app")).Add(CommRec(200, TPROF_COMM_EXISTING, "w;rk"));
  r.AddN(6, SampleRec(100, 1, kSyscall, 0));
  r.AddN(4, SampleRec(100, 1, kSyscall, 0, 1, kEntry + 5));
  r.AddN(5, SampleRec(100, 1, 0x9000010, U));
  r.AddN(5, SampleRec(100, 1, 0x12345, U));
  r.AddN(10, SampleRec(200, 2, kSyscall, 0));
  r.AddN(15, SampleRec(0, 0, kIdle, TPROF_SAMPLE_IDLE));
  b.AddRecords(r.data(), r.size());
  Profile p = b.Finish();
  p.kernel_symbols.available = true;
  p.kernel_symbols.symbols = {{0xffffffff81000000, 'T', "entry_SYSCALL_64", ""},
                              {0xffffffff81000100, 't', "do_syscall_64", ""},
                              {0xffffffff81000300, 'T', "default_idle", ""},
                              {0xffffffff81000400, 'T', "next", ""}};
  p.jit_symbols[100] = {{0x9000000, 0x100, "JIT:loop"}};
  return p;
}

std::vector<StackRow> TestRows() {
  Profile p = TestProfile();
  Symbolizer sym(p);
  return tprof::FoldedStackRows(p, sym, {});
}

XmlElement ParseSvg(const std::string& svg) {
  std::string error;
  auto doc = XmlParser::Parse(svg, &error);
  EXPECT_TRUE(doc) << "not well-formed XML: " << error << "\n" << svg;
  return doc ? *doc : XmlElement{};
}

// The frames: <g class="f"> by their title's name ("NAME (N samples, P%)").
std::map<std::string, const XmlElement*> Frames(const XmlElement& svg) {
  std::vector<const XmlElement*> groups;
  svg.FindAll("g", &groups);
  std::map<std::string, const XmlElement*> out;
  for (const XmlElement* g : groups) {
    if (g->Attr("class") != "f") continue;
    const XmlElement* title = g->Child("title");
    EXPECT_NE(title, nullptr) << "a frame without a <title> (the hover text)";
    if (!title) continue;
    out[title->text.substr(0, title->text.rfind(" ("))] = g;
  }
  return out;
}

double RectNumber(const XmlElement& g, const char* attr) {
  const XmlElement* rect = g.Child("rect");
  EXPECT_NE(rect, nullptr);
  return rect ? std::stod(rect->Attr(attr)) : -1;
}

TEST(FlameGraph, IsWellFormedSvgWithItsScriptStyleAndControlsInside) {
  const std::string svg = tprof::RenderFlameGraph(TestRows(), {"My <graph>", "tprof.data", 1200});
  XmlElement doc = ParseSvg(svg);
  EXPECT_EQ(doc.name, "svg");
  EXPECT_EQ(doc.Attr("xmlns"), "http://www.w3.org/2000/svg");
  const XmlElement* style = doc.Child("style");
  ASSERT_NE(style, nullptr) << "no embedded <style>";
  EXPECT_NE(style->text.find("g.f"), std::string::npos);
  const XmlElement* script = doc.Child("script");
  ASSERT_NE(script, nullptr) << "no embedded <script>";
  for (const char* piece : {"function zoom", "function search", "new RegExp", "Matched: ",
                            "mouseover", "click", "FG_TOTAL = 45"})
    EXPECT_NE(script->text.find(piece), std::string::npos) << "script lacks " << piece;
  std::vector<const XmlElement*> texts;
  doc.FindAll("text", &texts);
  std::map<std::string, std::string> by_id;
  for (const XmlElement* t : texts)
    if (!t->Attr("id").empty()) by_id[t->Attr("id")] = t->text;
  EXPECT_EQ(by_id["title"], "My <graph>");
  EXPECT_EQ(by_id["subtitle"], "tprof.data");
  EXPECT_EQ(by_id["search"], "Search");
  EXPECT_EQ(by_id["unzoom"], "Reset Zoom");
  EXPECT_TRUE(by_id.count("details") && by_id.count("matched"));
  // Self-contained: no links, images or imports; only the namespace is a URL.
  EXPECT_EQ(svg.find("href"), std::string::npos);
  EXPECT_EQ(svg.find("@import"), std::string::npos);
  EXPECT_EQ(svg.find("url("), std::string::npos);
  EXPECT_EQ(svg.find("://"), svg.rfind("://")) << "a URL besides xmlns";
}

TEST(FlameGraph, EachFrameIsAsWideAsItsSamplesAndSitsOnItsCaller) {
  const std::string svg = tprof::RenderFlameGraph(TestRows(), {"t", "", 1200});
  XmlElement doc = ParseSvg(svg);
  auto frames = Frames(doc);
  const std::map<std::string, uint64_t> expected = {
      {"all", 45},          {"app", 20},          {"entry_SYSCALL_64_[k]", 4},
      {"JIT:loop", 5},      {"idle", 15},         {"default_idle_[k]", 15},
      {"w:rk", 10},         {"[unknown] 0x12345", 5}};
  const double graph_width = 1200 - 2 * 10;
  for (const auto& [name, samples] : expected) {
    ASSERT_TRUE(frames.count(name)) << "no frame " << name << "\n" << svg;
    const XmlElement& g = *frames[name];
    EXPECT_EQ(g.Attr("data-s"), std::to_string(samples)) << name;
    EXPECT_NEAR(RectNumber(g, "width"), samples / 45.0 * graph_width, 0.01) << name;
    char hover[64];
    std::snprintf(hover, sizeof(hover), " (%llu samples, %.2f%%)",
                  static_cast<unsigned long long>(samples), 100.0 * samples / 45.0);
    EXPECT_EQ(g.Child("title")->text, name + hover);
  }
  // Every frame: width = samples / all * graph width, x from its offset.
  std::vector<const XmlElement*> groups;
  doc.FindAll("g", &groups);
  size_t n = 0;
  for (const XmlElement* g : groups) {
    if (g->Attr("class") != "f") continue;
    ++n;
    EXPECT_NEAR(RectNumber(*g, "width"), std::stod(g->Attr("data-s")) / 45.0 * graph_width, 0.01);
    EXPECT_NEAR(RectNumber(*g, "x"), 10 + std::stod(g->Attr("data-x")) / 45.0 * graph_width, 0.01);
  }
  // all; app, idle, w:rk; app's 3 + 1 do_syscall_64 frames, idle's, w:rk's;
  // do_syscall_64 above entry_SYSCALL_64.
  EXPECT_EQ(n, 1u + 3u + 4u + 1u + 1u + 1u);
  // A callee starts inside its caller, one level up.
  const XmlElement& entry = *frames["entry_SYSCALL_64_[k]"];
  const XmlElement& app = *frames["app"];
  EXPECT_GE(RectNumber(entry, "x"), RectNumber(app, "x"));
  EXPECT_LE(RectNumber(entry, "x") + RectNumber(entry, "width"),
            RectNumber(app, "x") + RectNumber(app, "width") + 0.01);
  EXPECT_EQ(RectNumber(app, "y") - RectNumber(entry, "y"), 16);
}

TEST(FlameGraph, EscapesNamesAndReplacesWhatXmlCannotHold) {
  std::vector<StackRow> rows = {
      {1, {"p", "a<b>&\"c\"", "x'y"}, 30},
      {1, {"p", std::string("ctl\x01 bad\xff utf\xc3\xa9"), "]]>"}, 10},
  };
  const std::string svg = tprof::RenderFlameGraph(rows);
  EXPECT_NE(svg.find("a&lt;b&gt;&amp;&quot;c&quot;"), std::string::npos) << svg;
  XmlElement doc = ParseSvg(svg);
  auto frames = Frames(doc);
  EXPECT_TRUE(frames.count("a<b>&\"c\"")) << svg;
  EXPECT_TRUE(frames.count("x'y")) << svg;
  EXPECT_TRUE(frames.count("]]>")) << svg;
  EXPECT_TRUE(frames.count("ctl\xef\xbf\xbd bad\xef\xbf\xbd utf\xc3\xa9"))
      << "a control character and a stray byte read U+FFFD, valid UTF-8 stays\n"
      << svg;
  // The label inside the frame is escaped as well.
  const XmlElement* text = frames["a<b>&\"c\""]->Child("text");
  ASSERT_NE(text, nullptr);
  EXPECT_EQ(text->text, "a<b>&\"c\"");
}

TEST(FlameGraph, LeavesOutFramesNarrowerThanTheMinimumWithTheirCallees) {
  std::vector<StackRow> rows = {{1, {"p", "big"}, 100000}, {1, {"p", "tiny", "tinier"}, 1}};
  XmlElement doc = ParseSvg(tprof::RenderFlameGraph(rows));
  auto frames = Frames(doc);
  EXPECT_TRUE(frames.count("big"));
  EXPECT_FALSE(frames.count("tiny")) << "0.01 px wide";
  EXPECT_FALSE(frames.count("tinier"));
  EXPECT_EQ(frames["p"]->Attr("data-s"), "100001") << "the parent still counts them";
}

TEST(FlameGraph, NoSamplesIsStillAValidImage) {
  XmlElement doc = ParseSvg(tprof::RenderFlameGraph({}));
  EXPECT_TRUE(Frames(doc).empty());
  std::vector<const XmlElement*> texts;
  doc.FindAll("text", &texts);
  bool said = false;
  for (const XmlElement* t : texts) said |= t->text == "no samples";
  EXPECT_TRUE(said);
}

// The frame names of one speedscope stack.
std::vector<std::string> Names(const Json& doc, const Json& stack) {
  std::vector<std::string> out;
  for (const Json& i : stack)
    out.push_back(doc.at("shared")
                      .at("frames")
                      .at(static_cast<size_t>(i.get<double>()))
                      .at("name")
                      .get<std::string>());
  return out;
}

TEST(Speedscope, OneSampledProfilePerProcessWithTheStacksAndWeightsAsGiven) {
  const std::vector<StackRow> rows = TestRows();
  const std::string json = tprof::RenderSpeedscope(rows, {"tprof.data", true});
  std::string error;
  auto v = ParseJson(json, &error);
  ASSERT_TRUE(v) << error << "\n" << json;
  const Json& doc = *v;
  EXPECT_EQ(doc.at("$schema").get<std::string>(),
            "https://www.speedscope.app/file-format-schema.json");
  EXPECT_EQ(doc.at("name").get<std::string>(), "tprof.data");
  EXPECT_EQ(doc.at("exporter").get<std::string>(), "tprofctl");
  EXPECT_EQ(doc.at("activeProfileIndex").get<double>(), 0);
  const auto& profiles = doc.at("profiles");
  ASSERT_EQ(profiles.size(), 3u);
  EXPECT_EQ(profiles[0].at("name").get<std::string>(), "app (pid 100)") << "by samples, descending";
  EXPECT_EQ(profiles[1].at("name").get<std::string>(), "idle");
  EXPECT_EQ(profiles[2].at("name").get<std::string>(), "w:rk (pid 200)");
  // Each profile's stacks are its rows' frames without the process frame.
  std::map<std::string, uint32_t> pids = {
      {"app (pid 100)", 100}, {"idle", 0}, {"w:rk (pid 200)", 200}};
  double all = 0;
  for (const Json& p : profiles) {
    EXPECT_EQ(p.at("type").get<std::string>(), "sampled");
    EXPECT_EQ(p.at("unit").get<std::string>(), "none");
    EXPECT_EQ(p.at("startValue").get<double>(), 0);
    ASSERT_EQ(p.at("samples").size(), p.at("weights").size());
    std::multiset<std::pair<std::vector<std::string>, double>> got, want;
    double sum = 0;
    for (size_t i = 0; i < p.at("samples").size(); ++i) {
      got.insert({Names(doc, p.at("samples")[i]), p.at("weights")[i].get<double>()});
      sum += p.at("weights")[i].get<double>();
    }
    for (const StackRow& r : rows)
      if (r.pid == pids[p.at("name").get<std::string>()])
        want.insert({std::vector<std::string>(r.frames.begin() + 1, r.frames.end()),
                     static_cast<double>(r.samples)});
    EXPECT_EQ(got, want) << p.at("name").get<std::string>();
    EXPECT_EQ(p.at("endValue").get<double>(), sum);
    all += sum;
  }
  EXPECT_EQ(all, 45) << "the weights add up to the profile's samples";
  // Frames are shared: do_syscall_64_[k] once for app and w:rk.
  size_t syscalls = 0;
  for (const Json& f : doc.at("shared").at("frames"))
    syscalls += f.at("name").get<std::string>() == "do_syscall_64_[k]";
  EXPECT_EQ(syscalls, 1u);
}

TEST(Speedscope, OneProfileForAllKeepsTheProcessFrameFirst) {
  const std::vector<StackRow> rows = TestRows();
  std::string error;
  auto v = ParseJson(tprof::RenderSpeedscope(rows, {"x", false}), &error);
  ASSERT_TRUE(v) << error;
  const auto& profiles = (*v).at("profiles");
  ASSERT_EQ(profiles.size(), 1u);
  const Json& p = profiles[0];
  ASSERT_EQ(p.at("samples").size(), rows.size());
  double sum = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(Names(*v, p.at("samples")[i]), rows[i].frames) << "root first, in row order";
    EXPECT_EQ(p.at("weights")[i].get<double>(), static_cast<double>(rows[i].samples));
    sum += p.at("weights")[i].get<double>();
  }
  EXPECT_EQ(sum, 45);
  EXPECT_EQ(p.at("endValue").get<double>(), 45);
}

// On the clock a sample stands for its period of CPU time: speedscope
// shows nanoseconds, as pprof does, instead of bare counts.
TEST(Speedscope, ClockSamplesWeighTheirPeriodInNanoseconds) {
  tprof::SpeedscopeOptions o;
  o.period_ns = 1000000;  // 1 kHz
  std::string error;
  auto v = ParseJson(tprof::RenderSpeedscope(TestRows(), o), &error);
  ASSERT_TRUE(v) << error;
  double all = 0;
  for (const Json& p : (*v).at("profiles")) {
    EXPECT_EQ(p.at("unit").get<std::string>(), "nanoseconds");
    double sum = 0;
    for (const Json& w : p.at("weights")) sum += w.get<double>();
    EXPECT_EQ(p.at("endValue").get<double>(), sum);
    all += sum;
  }
  EXPECT_EQ(all, 45e6) << "45 samples of 1 ms";
}

TEST(Speedscope, EscapesNamesAsJson) {
  std::string error;
  auto v = ParseJson(tprof::RenderSpeedscope({{1, {"p", "a<b>&\"c\"\\"}, 2}}), &error);
  ASSERT_TRUE(v) << error;
  EXPECT_EQ((*v).at("shared").at("frames").at(0).at("name").get<std::string>(), "a<b>&\"c\"\\");
}

}  // namespace
