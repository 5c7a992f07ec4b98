#include "held_child.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace tprof::cli {

Expected<HeldChild> HeldChild::Fork(const std::vector<std::string>& argv) {
  int go[2], errs[2];
  if (::pipe2(go, O_CLOEXEC) != 0) return Error::FromErrno(errno, "pipe");
  if (::pipe2(errs, O_CLOEXEC) != 0) {
    int err = errno;
    ::close(go[0]);
    ::close(go[1]);
    return Error::FromErrno(err, "pipe");
  }
  // Built before the fork: the child only reads, writes and execs.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    for (int fd : {go[0], go[1], errs[0], errs[1]}) ::close(fd);
    return Error::FromErrno(err, "fork");
  }
  if (pid == 0) {
    ::prctl(PR_SET_NAME, "tprofctl-exec");
    ::close(go[1]);
    ::close(errs[0]);
    char c;
    if (::read(go[0], &c, 1) != 1) _exit(127);
    ::execvp(args[0], args.data());
    int err = errno;
    (void)!::write(errs[1], &err, sizeof(err));
    _exit(127);
  }
  ::close(go[0]);
  ::close(errs[1]);
  return HeldChild(pid, ScopedFd(go[1]), ScopedFd(errs[0]));
}

HeldChild::~HeldChild() {
  if (pid_ <= 0 || !go_) return;  // moved from, or released
  go_ = ScopedFd();               // the child reads EOF and exits
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

int HeldChild::Release() {
  (void)!::write(go_.get(), "g", 1);
  go_ = ScopedFd();
  int err = 0;
  ssize_t n;
  while ((n = ::read(exec_error_.get(), &err, sizeof(err))) < 0 && errno == EINTR) {
  }
  exec_error_ = ScopedFd();
  if (n != sizeof(err)) return 0;
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  return err;
}

}  // namespace tprof::cli
