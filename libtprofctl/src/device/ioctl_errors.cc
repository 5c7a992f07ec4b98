#include "device/ioctl_errors.h"

#include <linux/tprof.h>
#include <linux/tprof_errors.h>

#include <cerrno>
#include <cstring>

namespace tprof {

const char* IoctlErrorMeaning(unsigned long cmd, int err) {
#define TPROF_ROW(name, e, meaning) \
  if (cmd == TPROF_IOC_##name && err == (e)) return meaning;
  TPROF_IOCTL_ERRORS(TPROF_ROW)
#undef TPROF_ROW
#define TPROF_ROW(e, meaning) \
  if (err == (e)) return meaning;
  TPROF_COMMON_ERRORS(TPROF_ROW)
#undef TPROF_ROW
  return nullptr;
}

Error IoctlFailure(const std::string& what, unsigned long cmd, int err, const std::string& more) {
  const char* meaning = IoctlErrorMeaning(cmd, err);
  return Error::FromErrno(err, what + ": " + (meaning ? meaning : std::strerror(err)) + more);
}

}  // namespace tprof
