// Folded stacks as `tprofctl dump --format folded` writes them
// ("process;root;...;leaf N"), read back for the stack tests.
#ifndef TPROF_TESTS_INTEGRATION_FOLDED_STACKS_H_
#define TPROF_TESTS_INTEGRATION_FOLDED_STACKS_H_

#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace tprof::test {

inline bool IsKernelFrame(const std::string& f) {
  return f.size() > 4 && f.compare(f.size() - 4, 4, "_[k]") == 0;
}

// The folded stacks of one process name: frames root first (without the
// process) and their samples.
struct Stack {
  std::vector<std::string> frames;
  uint64_t samples = 0;

  bool Has(const std::string& f) const {
    for (const std::string& x : frames)
      if (x == f) return true;
    return false;
  }
  // The innermost user frame (kernel time belongs to it), "" if none.
  std::string UserLeaf() const {
    for (auto it = frames.rbegin(); it != frames.rend(); ++it)
      if (!IsKernelFrame(*it)) return *it;
    return "";
  }
  // The user frames, root first, as "a;b;c".
  std::string UserPath() const {
    std::string s;
    for (const std::string& f : frames)
      if (!IsKernelFrame(f)) s += (s.empty() ? "" : ";") + f;
    return s;
  }
  bool KernelLeaf() const { return !frames.empty() && IsKernelFrame(frames.back()); }
};

// The folded stacks of one process name ("": of every process).
inline std::vector<Stack> ParseFolded(const std::string& folded, const std::string& process) {
  std::vector<Stack> out;
  std::istringstream in(folded);
  std::string line;
  while (std::getline(in, line)) {
    const size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    std::istringstream frames(line.substr(0, space));
    std::string frame;
    std::getline(frames, frame, ';');
    if (!process.empty() && frame != process) continue;
    Stack s;
    while (std::getline(frames, frame, ';')) s.frames.push_back(frame);
    s.samples = std::stoull(line.substr(space + 1));
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace tprof::test

#endif  // TPROF_TESTS_INTEGRATION_FOLDED_STACKS_H_
