// Annotating one function of a recorded profile (tprofctl annotate, as
// perf annotate): its source lines and its instructions with the samples
// that landed on each.
//
// Which function: the samples whose address resolves (Symbolizer) to a
// function of that name, demangled or raw, or the demangled name without
// its parameters ("ns::f" for "ns::f(int)"). User code is grouped per
// (process, object): when several have the function, the one with the most
// samples is annotated and the others are listed as candidates (--pid
// chooses). Kernel code is one group over every process (or --pid's).
//
// Where the code comes from:
//   user ELF code: the mapped file (through the profile's mappings; its
//     archived copy when the symbolizer has a symfs, SymbolizerOptions), its
//     symbol table for the function's extent, libdw's line table for source
//     lines, the source file read from disk when it is there. What the file
//     lacks comes from the separate debug file the symbolizer found for it
//     (Symbolizer::FileAddressOf: by build id, .gnu_debuglink or debuginfod,
//     under the symbolizer's symfs and debug_dir; the recorded build's for a
//     file rebuilt since), and the extent of a function only MiniDebugInfo
//     names from the symbolizer's symbol.
//   JIT code (a perf map names it): only the sampled addresses; the code
//     bytes lived in the process's anonymous memory, which the recording
//     does not hold, so there is no disassembly (the note says so).
//   kernel and modules: the function's extent from the kallsyms snapshot;
//     bytes and source lines from a vmlinux with debug info
//     (/usr/lib/debug/boot/vmlinux-RELEASE or
//     /usr/lib/debug/lib/modules/RELEASE/vmlinux, moved by the KASLR
//     offset), else bytes from /proc/kcore (root, and only while the kernel
//     that was recorded still runs with the same addresses), else a note.
//
// Disassembly is capstone's (x86-64 and arm64, from the ELF machine).
#ifndef TPROF_ANNOTATE_H_
#define TPROF_ANNOTATE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tprof/base/expected.h"
#include "tprof/analysis/profile.h"
#include "tprof/analysis/symbolizer.h"

namespace tprof {

struct AnnotateOptions {
  std::optional<uint32_t> pid;  // only this process's samples
  size_t context_lines = 3;     // source lines shown around the function's
  // Kernel code: where to look. Empty kernel_release: the profile's
  // "kernel_release" attribute (the recorder's uname), else uname's.
  std::string kernel_release;
  // Where the vmlinux is looked for (user code's debug files: where the
  // symbolizer looks, SymbolizerOptions::debug_dir).
  std::string debug_dir = "/usr/lib/debug";
  // Where a source file DWARF names but that is not there is looked for
  // by its file name, in order (sources moved since the build).
  std::vector<std::string> source_dirs;
  std::string kcore_path = "/proc/kcore";
  std::string kallsyms_path = "/proc/kallsyms";  // to check kcore's addresses
};

// A process/object that has the function, with its samples of it.
struct AnnotateCandidate {
  uint32_t pid = 0;  // 0 for kernel code over every process
  std::string process;
  std::string object;
  uint64_t samples = 0;
};

struct AnnotatedLine {
  uint32_t line = 0;
  uint64_t samples = 0;  // samples at instructions of this line
  bool has_text = false;
  std::string text;      // the line as read from the file
};

// One source file's lines: the function's main file shows a window of
// consecutive lines; other files (inlined headers) only their sampled lines.
struct AnnotatedFile {
  std::string path;
  bool read = false;  // the file was found and read
  std::vector<AnnotatedLine> lines;  // by line number
};

struct AnnotatedInstruction {
  uint64_t address = 0;  // as sampled (runtime)
  uint64_t offset = 0;   // from the function's start
  uint32_t size = 0;     // bytes; 0 when not disassembled
  std::string text;      // "mov rax, rdi"; "" when not disassembled
  uint64_t samples = 0;
  std::string file;      // its source line, "" without one
  uint32_t line = 0;
};

struct Annotation {
  std::string function;  // as the symbolizer names it
  std::string space;     // Location::SpaceName()
  std::string object;    // the ELF path, "[kernel]", a module, "[jit]"
  uint32_t pid = 0;      // 0 for kernel code
  std::string process;
  uint64_t start = 0;    // runtime address of the function's first byte
  uint64_t size = 0;     // bytes; 0 if unknown
  uint64_t samples = 0;  // the function's samples in this group
  std::vector<AnnotateCandidate> candidates;  // every group, by samples
  std::string arch;      // "x86-64", "arm64", "" if unknown
  std::string code_source;  // where the bytes came from: a path, "/proc/kcore", ""
  std::string disassembly_note;  // why there is no (or partial) disassembly
  std::string source_note;       // why there are no (or partial) source lines
  std::vector<AnnotatedFile> files;  // main file first
  std::vector<AnnotatedInstruction> instructions;  // by address
};

// Finds `symbol` among the profile's samples and annotates it. ENOENT if no
// sample resolves to it (with --pid: in that process).
[[nodiscard]] Expected<Annotation> Annotate(const Profile& profile, Symbolizer& symbolizer,
                                            const std::string& symbol,
                                            const AnnotateOptions& options);

enum class AnnotateFormat { kText, kJson };

struct AnnotateRenderOptions {
  bool source = true;       // the source section
  bool disassembly = true;  // the instruction section
  // Text: instructions sorted by samples (hottest first, sampled only)
  // instead of by address.
  bool sort_by_samples = false;
};

// Text: a header, the source lines with samples and percentages of the
// function's samples (blank when none), then the instructions with the
// source lines interleaved where they change; instructions holding at
// least kHotPercent of the samples are marked "*", the hottest ">".
// JSON: format_version, the same fields, decimal percentages.
inline constexpr double kHotPercent = 10.0;
[[nodiscard]] std::string RenderAnnotation(const Annotation& annotation,
                                           const AnnotateRenderOptions& options,
                                           AnnotateFormat format);

}  // namespace tprof

#endif  // TPROF_ANNOTATE_H_
