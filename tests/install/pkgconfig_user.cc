// A program outside the tree, built by tests/install_test.sh against an
// installed libtprofctl with nothing but `pkg-config --cflags --libs
// tprofctl`: the installed headers (and the ABI header they include as
// <linux/tprof.h>) compile, and library code runs without /dev/tprof: a
// profile through the profile file's text and back, zlib through Gzip, an
// error code across the library boundary.
#include <linux/tprof.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include "tprof/base/gzip.h"
#include "tprof/analysis/profile.h"
#include "tprof/analysis/profile_file.h"

int main() {
  tprof::Profile profile;
  tprof::ProcessInfo& process = profile.processes[4242];
  process.pid = 4242;
  process.names.push_back({.time_ns = 1, .kind = TPROF_COMM_EXISTING, .parent_pid = 0,
                           .name = "pkgdemo"});
  profile.samples[{.pid = 4242, .space_id = 1, .ip = 0x401000, .flags = TPROF_SAMPLE_USER}] = 7;

  tprof::Expected<tprof::Profile> back =
      tprof::ParseProfile(tprof::SerializeProfile(profile), "in memory");
  if (!back) {
    std::fprintf(stderr, "pkgconfig_user: %s\n", back.error().message().c_str());
    return 1;
  }
  tprof::Expected<std::string> gz = tprof::Gzip("tprof");
  if (!gz || gz->size() < 2) {
    std::fprintf(stderr, "pkgconfig_user: gzip failed\n");
    return 1;
  }
  tprof::Expected<tprof::Profile> bad = tprof::ParseProfile("not a profile\n", "bad");
  std::printf("samples %llu, process %s; gzip magic %02x%02x; bad file %s\n",
              static_cast<unsigned long long>(back->TotalSamples()),
              back->ProcessDisplayName(4242).c_str(), static_cast<unsigned char>((*gz)[0]),
              static_cast<unsigned char>((*gz)[1]),
              !bad && bad.error().code().value() == EBADMSG ? "EBADMSG" : "not refused");
  return 0;
}
