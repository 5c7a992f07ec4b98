#include "tprof/base/output_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tprof/base/scoped_fd.h"

namespace tprof {

namespace {
std::string TempPath(const std::string& path) { return path + ".tmp." + std::to_string(::getpid()); }
}  // namespace

Status CheckWritable(const std::string& path) {
  const std::string tmp = TempPath(path);
  ScopedFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd) {
    int err = errno;
    return Error::FromErrno(err, "cannot write " + path + ": " + std::strerror(err));
  }
  ::unlink(tmp.c_str());
  return OkStatus();
}

Status WriteFileAtomically(const std::string& path, std::string_view data) {
  const std::string tmp = TempPath(path);
  ScopedFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd) {
    int err = errno;
    return Error::FromErrno(err, "cannot write " + tmp + ": " + std::strerror(err));
  }
  for (size_t done = 0; done < data.size();) {
    ssize_t n = ::write(fd.get(), data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : EIO;
      ::unlink(tmp.c_str());
      return Error::FromErrno(err, "cannot write " + tmp + ": " + std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd.release()) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return Error::FromErrno(err, "cannot write " + path + ": " + std::strerror(err));
  }
  return OkStatus();
}

}  // namespace tprof
