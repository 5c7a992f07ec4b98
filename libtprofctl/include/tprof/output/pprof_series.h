// A directory of gzipped pprof profiles, one per interval of a continuous
// recording (tprofctl record --continuous), as fleet profilers ship them.
// Each file is written whole under a temporary name and renamed into
// place, so a reader (an uploader, a backend's agent) never sees half of
// one, and a recorder killed mid-interval loses only that interval. Names
// sort in time and carry the host: tprof-HOST-YYYYmmddTHHMMSS.NNNNNNNNNZ.pb.gz
// (the interval's end, UTC), so a restarted recorder adds to the same
// series. Beyond `keep` files, the oldest of the series are removed
// (other files in the directory are left alone).
#ifndef TPROF_PPROF_SERIES_H_
#define TPROF_PPROF_SERIES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tprof/analysis/profile.h"
#include "tprof/analysis/symbolizer.h"
#include "tprof/base/expected.h"

namespace tprof {

struct PprofSeriesOptions {
  std::string dir;
  std::string host;  // the files' names and every sample's "host" label
  size_t keep = 100;  // files kept; 0: all
};

class PprofSeries {
 public:
  explicit PprofSeries(PprofSeriesOptions options);

  // Writes one interval's profile (SamplesSince the previous one), which
  // ended at end_ns (CLOCK_REALTIME) after duration_ns, then removes the
  // oldest files beyond `keep`. Returns the file's path. Errors: those of
  // EncodePprof and of writing the file.
  [[nodiscard]] Expected<std::string> Write(const Profile& interval, Symbolizer& symbolizer,
                                            int64_t end_ns, int64_t duration_ns);

  // The series' files in the directory, oldest first.
  std::vector<std::string> Files() const;

  // The file name an interval ending at end_ns gets.
  std::string NameAt(int64_t end_ns) const;

 private:
  PprofSeriesOptions options_;
};

}  // namespace tprof

#endif  // TPROF_PPROF_SERIES_H_
