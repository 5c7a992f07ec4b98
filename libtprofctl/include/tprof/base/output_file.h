// Writing a file so that a reader never sees half of it.
#ifndef TPROF_OUTPUT_FILE_H_
#define TPROF_OUTPUT_FILE_H_

#include <string>
#include <string_view>

#include "tprof/base/expected.h"

namespace tprof {

// Writes data to a temporary file beside path (PATH.tmp.PID), then renames
// it into place (mode 0644 before the umask). Errors: the errno of open,
// write, close or rename, with the file named.
[[nodiscard]] Status WriteFileAtomically(const std::string& path, std::string_view data);

// Whether WriteFileAtomically(path, ...) could create its temporary file
// now: creates and removes it. For a command that would otherwise learn
// only at its end that its output cannot be written (a missing directory,
// no permission, a read-only file system). Errors as WriteFileAtomically's,
// naming path.
[[nodiscard]] Status CheckWritable(const std::string& path);

}  // namespace tprof

#endif  // TPROF_OUTPUT_FILE_H_
