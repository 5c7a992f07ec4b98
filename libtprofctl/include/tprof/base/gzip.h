// gzip (RFC 1952 framing) with zlib: what pprof files are, and the vDSO
// image in a profile file (profile_file.h).
#ifndef TPROF_GZIP_H_
#define TPROF_GZIP_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "tprof/base/expected.h"

namespace tprof {

// The bytes as one gzip member. Errors: EIO (zlib failed), EOVERFLOW
// (more than zlib's 4 GiB per call).
[[nodiscard]] Expected<std::string> Gzip(std::string_view data);
// The bytes of one gzip member (its CRC checked). Errors: EBADMSG (not
// gzip, corrupt, cut short or followed by more), EFBIG (more than
// max_bytes uncompressed).
[[nodiscard]] Expected<std::string> Gunzip(std::string_view data, size_t max_bytes);

}  // namespace tprof

#endif  // TPROF_GZIP_H_
