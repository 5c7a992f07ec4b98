// Names a sampled address: which space it is in (kernel, a module, the
// main executable, a shared library, JIT code), the object, the enclosing
// function and, with DWARF, the source line. Everything comes from the
// profile (mappings, kallsyms snapshot, perf-map copies) plus the ELF files
// the mappings name, read with elfutils.
//
// Spaces
//   kernel addresses (no TPROF_SAMPLE_USER): the kallsyms snapshot; a
//     symbol with a "[mod]" column is in "module:<mod>", else "kernel".
//   user addresses: the mapping of <pid, space_id> that covers the address
//     (if that pid never reported one: another pid's mappings of the same
//     space_id, as threads share a space). file offset = ip - start + pgoff,
//     turned into the ELF's link-time address with its PT_LOAD headers,
//     which handles PIE executables and shared libraries alike.
//   main executable: among the space's mappings of real files, the lowest
//     one whose name does not look like a shared object ("*.so", "*.so.N",
//     "ld-*.so*"); the kernel maps an exec'd binary below its libraries and
//     loader, and the name test covers `ld.so ./prog`, where they are mixed.
//     If every file looks like a shared object, the lowest one.
//   shared library: any other mapping, including pseudo files ("[vdso]").
//     "[vdso]" is symbolized from the vDSO image the profile carries
//     (Profile::vdso_image), the kernel's own, like a file.
// A file whose build id on disk differs from the one the profile recorded
// (Profile::build_ids: rebuilt since) takes its functions and lines from
// <debug_dir>/.build-id/ of the recorded id when that debug file exists.
//   jit: not in a file mapping, but in the pid's perf-<pid>.map copy.
//   unresolved: none of these. Such addresses are reported as
//     "[unknown] ..." and counted in stats(), never dropped.
// An address in a file (or pseudo file) without a function name is named
// "<file name>+0x<object-relative address>", one row per address.
//
// Symbols and lines come from libdwfl: the file's .symtab/.dynsym, a
// separate debug file (build id under debug_dir/.build-id, .gnu_debuglink),
// MiniDebugInfo (.gnu_debugdata) and, when DEBUGINFOD_URLS is set,
// debuginfod. Tools that read the debug file themselves (annotate) take it
// from FileAddressOf(), so that they find what the reports find.
#ifndef TPROF_SYMBOLIZER_H_
#define TPROF_SYMBOLIZER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "tprof/analysis/profile.h"

namespace tprof {

enum class SpaceKind { kKernel, kModule, kMainExecutable, kSharedLibrary, kJit, kUnresolved };

// A space name (Location::SpaceName()) as text tables show it:
// "shared:<path>" by its file name, "shared:libc.so.6"; others unchanged.
[[nodiscard]] std::string ShortSpaceName(const std::string& space_name);

// "kernel", "module", "main", "shared", "jit", "unresolved".
const char* SpaceKindName(SpaceKind kind);

struct Location {
  SpaceKind kind = SpaceKind::kUnresolved;
  uint64_t address = 0;     // as sampled
  std::string object;       // "[kernel]", a module name, a path, "[jit]", or ""
  std::string symbol;       // the function (demangled), "" if not found
  uint64_t offset = 0;      // address - function start; without a function:
                            // the object-relative address (ELF vaddr)
  std::string source_file;  // "" without DWARF line information
  uint32_t line = 0;
  // Functions DWARF says are inlined at the address, innermost first (the
  // innermost holds source_file:line); symbol is the function they were
  // inlined into. Empty without DWARF or inlining.
  std::vector<std::string> inlined;
  // Where each of them is called from, in the function it was inlined into
  // (inlined[i + 1], or symbol after the last): DWARF's DW_AT_call_file and
  // DW_AT_call_line; as many as inlined, {"", 0} where DWARF has none.
  struct CallSite {
    std::string file;
    uint32_t line = 0;
    bool operator==(const CallSite&) const = default;
  };
  std::vector<CallSite> inlined_calls;
  // The function's size from its ELF symbol (user code in a file), 0 if
  // unknown.
  uint64_t symbol_size = 0;

  bool resolved() const { return !symbol.empty(); }
  // "kernel", "module:<name>", "main", "shared:<path>", "jit", "unresolved".
  std::string SpaceName() const;
  // SpaceName() as text tables show it: a shared library by its file name.
  std::string ShortSpaceName() const;
  // The symbol; in a file without one "<file name>+0x<offset>" (the
  // object-relative address, or the file offset when the file could not be
  // read; from the mapping's start in a pseudo file such as "[vdso]");
  // "[unknown] [kernel]" or "[unknown] 0x<address>" otherwise.
  std::string FunctionName() const;
  // The names a stack shows for this frame, leaf first: each inlined
  // function as "<name> (inlined)", innermost first, then FunctionName().
  std::vector<std::string> FrameNames() const;
};

// A mapping as profile formats describe one (pprof's Mapping).
struct MappingInfo {
  uint64_t start = 0;  // [start, limit)
  uint64_t limit = 0;
  uint64_t offset = 0;    // file offset of start
  std::string file;       // a path, a pseudo name ("[vdso]") or "[kernel.kallsyms]"
  std::string build_id;   // the file's GNU build id in hex, "" if unknown
  auto operator<=>(const MappingInfo&) const = default;
};

// The name of the one mapping MappingAt() gives every kernel address
// (perf's name for it).
inline constexpr char kKernelMappingName[] = "[kernel.kallsyms]";

struct SymbolizerOptions {
  bool source_lines = true;  // look up DWARF lines (slower)
  // Where separate debug files are found by build id
  // (<debug_dir>/.build-id/xx/yyyy.debug), as Debian's -dbgsym packages do,
  // and by .gnu_debuglink (<debug_dir>/<file's directory>/<link>); a link
  // next to the file or in its .debug/ is found too.
  std::string debug_dir = "/usr/lib/debug";
  // An archive from ArchiveProfile() (tprof/archive.h), "" for none: a
  // file with a recorded build id is read from <symfs>/.build-id/ when it
  // is there, and debug files are looked for there before debug_dir.
  std::string symfs;
};

struct SymbolizerStats {
  uint64_t addresses = 0;   // distinct addresses looked up
  uint64_t unresolved = 0;  // of these, without a function name
  uint64_t elf_files = 0;   // ELF files opened
  uint64_t elf_failures = 0;  // files that could not be read as ELF
};

class Symbolizer {
 public:
  // The profile must outlive the symbolizer.
  explicit Symbolizer(const Profile& profile, SymbolizerOptions options = {});
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // Resolves ip sampled in pid's address space space_id; user: a user-mode
  // address (TPROF_SAMPLE_USER). Results are cached; the reference stays
  // valid for the symbolizer's lifetime.
  const Location& Resolve(uint32_t pid, uint64_t space_id, uint64_t ip, bool user);
  const Location& Resolve(const SampleKey& key) {
    return Resolve(key.pid, key.space_id, key.ip, key.user());
  }
  // The path of the space's main executable (see above), "" if unknown.
  std::string MainExecutable(uint32_t pid, uint64_t space_id) const;
  // The mapping ip is in. User addresses: the space's mapping that covers
  // ip (found as Resolve() finds it), with the build id of its file when
  // the file is an ELF file with one. Kernel addresses (modules included):
  // kKernelMappingName, from the lowest kallsyms symbol of the snapshot (0
  // without one) to the top of the address space. nullopt for JIT code and
  // user addresses in no mapping.
  std::optional<MappingInfo> MappingAt(uint32_t pid, uint64_t space_id, uint64_t ip, bool user);

  // Whether a user-mode leaf at ip still has its return address where the
  // sample recorded it (TPROF_STACK_LEAF_RA): the word at the stack
  // pointer on x86-64 (CFA = sp + 8: at the entry, or a frameless leaf
  // that has not moved sp), the link register on arm64 (its CFI rule is
  // "same value"). Then the frame-pointer chain does not yet hold the
  // leaf's caller. Decided from the object's .eh_frame; false when
  // unknown.
  bool LeafReturnAddressLive(uint32_t pid, uint64_t space_id, uint64_t ip);

  // A user address in a file mapping as the ELF file sees it: the file's
  // path (the archived copy with SymbolizerOptions::symfs) and the
  // link-time (virtual) address of ip, for tools that read the file
  // themselves (annotate). nullopt for JIT code, pseudo files
  // ("[vdso]") and addresses outside the file's loadable segments.
  struct FileAddress {
    std::string path;
    uint64_t address = 0;
    // The separate debug file this symbolizer takes the file's symbols and
    // lines from: found by build id, .gnu_debuglink or debuginfod (its
    // cache's copy), or the recorded build's for a rebuilt file (see
    // above); "" when the file has its own or none was found.
    std::string debug_file;
  };
  std::optional<FileAddress> FileAddressOf(uint32_t pid, uint64_t space_id, uint64_t ip);

  // For a profile that changes in place (top's view, refreshed every
  // interval with new mappings): forgets every resolved address, so each
  // is looked up again in the profile as it is now, and keeps the ELF
  // files opened (the costly part). References Resolve() returned before
  // are invalid after.
  void ForgetAddresses();

  const SymbolizerStats& stats() const { return stats_; }
  // As given, with symfs made absolute.
  const SymbolizerOptions& options() const { return options_; }

 private:
  class ElfObject;

  Location ResolveKernel(uint64_t ip) const;
  Location ResolveUser(uint32_t pid, uint64_t space_id, uint64_t ip);
  const std::vector<Mapping>* MappingsOf(uint32_t pid, uint64_t space_id) const;
  const Mapping* FindMapping(uint32_t pid, uint64_t space_id, uint64_t ip) const;
  // A file path, or "[vdso]" when the profile carries the vDSO image.
  bool HasElf(const Mapping& mapping) const;
  ElfObject* OpenElf(const std::string& path);
  // The file to read for a mapping's path: its archived copy under symfs
  // when there is one, else the path.
  std::string FileToRead(const std::string& path) const;

  const Profile& profile_;
  SymbolizerOptions options_;
  SymbolizerStats stats_;
  std::map<std::tuple<uint32_t, uint64_t, uint64_t, bool>, Location> cache_;
  std::map<std::tuple<uint32_t, uint64_t, uint64_t>, bool> leaf_cache_;
  std::map<std::string, std::unique_ptr<ElfObject>> elf_files_;  // null: unreadable
};

}  // namespace tprof

#endif  // TPROF_SYMBOLIZER_H_
