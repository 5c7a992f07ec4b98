// RenderAnnotation: an Annotation as text (perf annotate's layout: counts
// and percentages left of the source and of the instructions) or JSON.
#include <algorithm>
#include <string>

#include "base/json.h"
#include "base/text_format.h"
#include "tprof/analysis/annotate.h"

namespace tprof {

namespace {

using text::Appendf;
using text::BaseName;
using text::Percent;

// "   123  45.67%" or blanks of the same width for no samples.
void Counts(std::string* out, uint64_t samples, uint64_t whole) {
  if (samples)
    Appendf(out, "%8llu %7.2f%%", static_cast<unsigned long long>(samples),
            Percent(samples, whole));
  else
    Appendf(out, "%8s %8s", "", "");
}

const AnnotatedLine* FindLine(const Annotation& a, const std::string& file, uint32_t line) {
  for (const AnnotatedFile& f : a.files) {
    if (f.path != file) continue;
    for (const AnnotatedLine& l : f.lines)
      if (l.line == line) return &l;
  }
  return nullptr;
}

void TextHeader(const Annotation& a, std::string* out) {
  Appendf(out, "Annotate %s", a.function.c_str());
  if (a.pid) Appendf(out, ", pid %u (%s)", a.pid, a.process.c_str());
  Appendf(out, ", %s [%s]\n", a.object.c_str(), a.space.c_str());
  Appendf(out, "  start 0x%llx, %llu bytes, %llu samples", static_cast<unsigned long long>(a.start),
          static_cast<unsigned long long>(a.size), static_cast<unsigned long long>(a.samples));
  if (!a.code_source.empty()) Appendf(out, "; %s code from %s", a.arch.c_str(), a.code_source.c_str());
  *out += "\n";
  if (a.candidates.size() > 1) {
    *out += "  also in (--pid chooses):\n";
    for (size_t i = 1; i < a.candidates.size(); ++i) {
      const AnnotateCandidate& c = a.candidates[i];
      Appendf(out, "    pid %u (%s) %s: %llu samples\n", c.pid, c.process.c_str(),
              c.object.c_str(), static_cast<unsigned long long>(c.samples));
    }
  }
}

void TextSource(const Annotation& a, std::string* out) {
  *out += "\nSource";
  if (!a.source_note.empty()) Appendf(out, " (%s)", a.source_note.c_str());
  *out += ":\n";
  for (const AnnotatedFile& f : a.files) {
    Appendf(out, "%s\n", f.path.c_str());
    Appendf(out, "%8s %8s %6s\n", "SAMPLES", "PERCENT", "LINE");
    uint32_t prev = 0;
    for (const AnnotatedLine& l : f.lines) {
      if (prev && l.line != prev + 1) *out += "     ...\n";
      prev = l.line;
      Counts(out, l.samples, a.samples);
      Appendf(out, " %6u", l.line);
      if (!l.text.empty()) Appendf(out, "  %s", l.text.c_str());
      *out += "\n";
    }
  }
}

void TextInstructions(const Annotation& a, bool sorted, std::string* out) {
  *out += "\nDisassembly";
  if (!a.disassembly_note.empty()) Appendf(out, " (%s)", a.disassembly_note.c_str());
  *out += ":\n";
  uint64_t hottest = 0;
  for (const AnnotatedInstruction& ins : a.instructions) hottest = std::max(hottest, ins.samples);
  Appendf(out, "%8s %8s   %-10s %s\n", "SAMPLES", "PERCENT", "OFFSET", "INSTRUCTION");
  std::vector<const AnnotatedInstruction*> rows;
  for (const AnnotatedInstruction& ins : a.instructions)
    if (!sorted || ins.samples) rows.push_back(&ins);
  if (sorted)
    std::stable_sort(rows.begin(), rows.end(),
                     [](const auto* x, const auto* y) { return x->samples > y->samples; });
  std::string file;
  uint32_t line = 0;
  for (const AnnotatedInstruction* ins : rows) {
    if (!sorted && !ins->file.empty() && (ins->file != file || ins->line != line)) {
      file = ins->file;
      line = ins->line;
      const AnnotatedLine* l = FindLine(a, file, line);
      Counts(out, 0, a.samples);
      Appendf(out, "   %s:%u", BaseName(file).c_str(), line);
      if (l && !l->text.empty()) Appendf(out, "  %s", l->text.c_str());
      *out += "\n";
    }
    Counts(out, ins->samples, a.samples);
    const char mark = ins->samples && ins->samples == hottest                ? '>'
                      : ins->samples && Percent(ins->samples, a.samples) >= kHotPercent ? '*'
                                                                                       : ' ';
    Appendf(out, " %c +0x%-7llx  %s", mark, static_cast<unsigned long long>(ins->offset),
            ins->text.empty() ? "(no code)" : ins->text.c_str());
    if (sorted && !ins->file.empty()) Appendf(out, "   %s:%u", BaseName(ins->file).c_str(), ins->line);
    *out += "\n";
  }
}

std::string JsonAnnotation(const Annotation& a, const AnnotateRenderOptions& o) {
  tprof::Json j;
  j["format_version"] = kJsonFormatVersion;
  j["function"] = a.function;
  j["space"] = a.space;
  j["object"] = a.object;
  j["pid"] = a.pid;
  j["process"] = a.process;
  j["start"] = a.start;
  j["size"] = a.size;
  j["samples"] = a.samples;
  j["arch"] = a.arch;
  j["code_source"] = a.code_source;
  tprof::Json candidates = tprof::Json::array();
  for (const AnnotateCandidate& c : a.candidates)
    candidates.push_back({{"pid", c.pid},
                          {"process", c.process},
                          {"object", c.object},
                          {"samples", c.samples}});
  j["candidates"] = std::move(candidates);
  if (o.source) {
    j["source_note"] = a.source_note;
    tprof::Json files = tprof::Json::array();
    for (const AnnotatedFile& f : a.files) {
      tprof::Json lines = tprof::Json::array();
      for (const AnnotatedLine& l : f.lines) {
        tprof::Json line = {{"line", l.line},
                            {"samples", l.samples},
                            {"percent", DecimalPercent(l.samples, a.samples)}};
        if (l.has_text) line["text"] = l.text;
        lines.push_back(std::move(line));
      }
      files.push_back({{"path", f.path}, {"read", f.read}, {"lines", std::move(lines)}});
    }
    j["files"] = std::move(files);
  }
  if (o.disassembly) {
    j["disassembly_note"] = a.disassembly_note;
    tprof::Json instructions = tprof::Json::array();
    for (const AnnotatedInstruction& ins : a.instructions) {
      tprof::Json row = {{"address", ins.address},
                         {"offset", ins.offset},
                         {"size", ins.size},
                         {"text", ins.text},
                         {"samples", ins.samples},
                         {"percent", DecimalPercent(ins.samples, a.samples)}};
      if (!ins.file.empty()) {
        row["file"] = ins.file;
        row["line"] = ins.line;
      }
      instructions.push_back(std::move(row));
    }
    j["instructions"] = std::move(instructions);
  }
  return j.dump() + "\n";
}

}  // namespace

std::string RenderAnnotation(const Annotation& a, const AnnotateRenderOptions& options,
                             AnnotateFormat format) {
  if (format == AnnotateFormat::kJson) return JsonAnnotation(a, options);
  std::string out;
  TextHeader(a, &out);
  if (options.source) TextSource(a, &out);
  if (options.disassembly) TextInstructions(a, options.sort_by_samples, &out);
  return out;
}

}  // namespace tprof
