#include "tprof/device.h"

#include <fcntl.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <cstring>

namespace tprof {

namespace {

std::string ErrnoText(int err) { return std::strerror(err); }

Error OpenError(const std::string& path, int err) {
  switch (err) {
    case ENOENT:
    case ENODEV:
    case ENXIO:
      return Error::FromErrno(
          err, path + " not found: load the module with `sudo insmod kmod/tprof.ko` "
                      "(or `sudo modprobe tprof` after `make dkms-install`)");
    case EACCES:
    case EPERM:
      return Error::FromErrno(
          err, "cannot open " + path + ": " + ErrnoText(err) +
                   ": check its permissions (the module creates it with mode 0666)");
    default:
      return Error::FromErrno(err, "cannot open " + path + ": " + ErrnoText(err));
  }
}

Error IoctlError(const char* what, int err) {
  if (err == ENOTTY)
    return Error::FromErrno(err, std::string(what) +
                                     ": not a tprof device, or a module too old for this "
                                     "library (ENOTTY)");
  return Error::FromErrno(err, std::string(what) + ": " + ErrnoText(err));
}

}  // namespace

std::string Info::ModuleVersionString() const {
  return std::to_string(TPROF_VERSION_MAJOR(module_version)) + "." +
         std::to_string(TPROF_VERSION_MINOR(module_version)) + "." +
         std::to_string(TPROF_VERSION_PATCH(module_version));
}

std::string Info::AbiVersionString() const {
  return std::to_string(abi_major) + "." + std::to_string(abi_minor);
}

std::string Info::StateName() const {
  switch (state) {
    case TPROF_STATE_IDLE:
      return "idle";
    default:
      return "unknown(" + std::to_string(state) + ")";
  }
}

std::vector<std::string> Info::FeatureNames() const {
  std::vector<std::string> names;
  if (features & TPROF_FEAT_SCHED_COUNTERS) names.push_back("sched_counters");
  return names;
}

Expected<Device> Device::Open(const std::string& path) {
  ScopedFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd) return OpenError(path, errno);
  return Device(std::move(fd));
}

Expected<Info> Device::GetInfo() const {
  // First call learns nr_cpu_ids, the second fetches every CPU. CPUs are
  // never added to cpu_possible_mask at run time, so two calls suffice.
  tprof_info raw{};
  if (::ioctl(fd_.get(), TPROF_IOC_GET_INFO, &raw) != 0)
    return IoctlError("TPROF_IOC_GET_INFO", errno);
  if (raw.abi_major != TPROF_ABI_MAJOR)
    return Error::FromErrno(
        EPROTO, "tprof module speaks ABI " + std::to_string(raw.abi_major) + "." +
                    std::to_string(raw.abi_minor) + ", this tool ABI " +
                    std::to_string(TPROF_ABI_MAJOR) + "." + std::to_string(TPROF_ABI_MINOR) +
                    ": load the module built from the same tree as the tool");

  std::vector<tprof_cpu_stats> stats(raw.nr_cpu_ids);
  raw = tprof_info{};
  raw.cpu_stats = reinterpret_cast<uintptr_t>(stats.data());
  raw.cpu_stats_count = static_cast<uint32_t>(stats.size());
  if (::ioctl(fd_.get(), TPROF_IOC_GET_INFO, &raw) != 0)
    return IoctlError("TPROF_IOC_GET_INFO", errno);

  Info info;
  info.abi_major = raw.abi_major;
  info.abi_minor = raw.abi_minor;
  info.module_version = raw.module_version;
  info.state = raw.state;
  info.nr_cpu_ids = raw.nr_cpu_ids;
  info.nr_online_cpus = raw.nr_online_cpus;
  info.features = raw.features;
  info.total = raw.total;
  for (uint32_t i = 0; i < raw.cpu_stats_count && i < stats.size(); ++i)
    info.cpus.push_back(CpuStats{stats[i].cpu, stats[i].online != 0, stats[i].counters});
  return info;
}

}  // namespace tprof
