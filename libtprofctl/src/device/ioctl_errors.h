// What an ioctl's errno means, from the ABI's table (<linux/tprof_errors.h>),
// so every part of the library words a refusal the same way. Internal: not
// installed with the public headers.
#pragma once

#include <string>

#include "tprof/base/expected.h"

namespace tprof {

// The meaning of errno `err` from ioctl `cmd`: its row in TPROF_IOCTL_ERRORS,
// else TPROF_COMMON_ERRORS', else nullptr.
const char* IoctlErrorMeaning(unsigned long cmd, int err);

// "what: meaning" (strerror when the table has no row) and then `more`,
// what the caller knows besides, as an Error that keeps err.
Error IoctlFailure(const std::string& what, unsigned long cmd, int err, const std::string& more = {});

}  // namespace tprof
