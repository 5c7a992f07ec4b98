// gzip compression (RFC 1952 framing) with zlib: what pprof files are.
#ifndef TPROF_GZIP_H_
#define TPROF_GZIP_H_

#include <string>
#include <string_view>

#include "tprof/expected.h"

namespace tprof {

// The bytes as one gzip member. Errors: EIO (zlib failed), EOVERFLOW
// (more than zlib's 4 GiB per call).
[[nodiscard]] Expected<std::string> Gzip(std::string_view data);

}  // namespace tprof

#endif  // TPROF_GZIP_H_
