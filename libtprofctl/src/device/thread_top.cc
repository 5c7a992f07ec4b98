// The live per-thread table: see tprof/thread_top.h.
#include "tprof/device/thread_top.h"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <unordered_map>

namespace tprof {

namespace {

// The numeric entries of a /proc directory, or nothing if it is gone.
std::vector<uint32_t> NumericEntries(const std::string& dir) {
  std::vector<uint32_t> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    unsigned long v = std::strtoul(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0' && v > 0 && v < TPROF_PID_ALL)
      out.push_back(static_cast<uint32_t>(v));
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

Expected<ThreadTotals> ReadThreadTotals(const Device& device, uint32_t pid,
                                        const std::string& proc_root) {
  std::vector<uint32_t> pids =
      pid == TPROF_PID_ALL ? NumericEntries(proc_root) : std::vector<uint32_t>{pid};
  ThreadTotals out;
  for (uint32_t p : pids) {
    for (uint32_t tid : NumericEntries(proc_root + "/" + std::to_string(p) + "/task")) {
      auto t = device.ReadThreadTotals(tid);
      if (t) {
        out.threads.push_back(std::move(*t));
        continue;
      }
      int err = t.error().code().value();
      if (err == EACCES || err == EPERM) {
        ++out.unreadable;
      } else if (err != ESRCH) {  // ESRCH: exited, or not tracked
        return t.error();
      }
    }
  }
  return out;
}

ThreadTopFrame DiffThreadTotals(const ThreadTotals& before, const ThreadTotals& now,
                                uint64_t interval_ns, int time_metric) {
  std::unordered_map<uint64_t, const ThreadMetrics*> previous;
  for (const ThreadMetrics& t : before.threads) previous[t.identity] = &t;
  ThreadTopFrame frame;
  frame.interval_ns = interval_ns;
  frame.threads = now.threads.size();
  frame.unreadable = now.unreadable;
  for (const ThreadMetrics& t : now.threads) {
    ThreadTopRow row;
    row.thread = t;
    auto it = previous.find(t.identity);
    bool moved = false;
    for (size_t m = 0; m < row.thread.values.size(); ++m) {
      uint64_t was = 0;
      if (it != previous.end() && m < it->second->values.size()) was = it->second->values[m];
      // Totals only grow; a smaller one would be a restarted accounting.
      row.thread.values[m] = row.thread.values[m] >= was ? row.thread.values[m] - was : 0;
      moved |= row.thread.values[m] != 0;
    }
    if (!moved) continue;
    if (time_metric >= 0 && static_cast<size_t>(time_metric) < row.thread.values.size() &&
        interval_ns > 0)
      row.cpu_percent = 100.0 * static_cast<double>(row.thread.values[time_metric]) /
                        static_cast<double>(interval_ns);
    frame.rows.push_back(std::move(row));
  }
  const size_t key = time_metric >= 0 ? static_cast<size_t>(time_metric) : 0;
  std::sort(frame.rows.begin(), frame.rows.end(), [key](const ThreadTopRow& a, const ThreadTopRow& b) {
    uint64_t va = key < a.thread.values.size() ? a.thread.values[key] : 0;
    uint64_t vb = key < b.thread.values.size() ? b.thread.values[key] : 0;
    if (va != vb) return va > vb;
    return a.thread.tid < b.thread.tid;
  });
  return frame;
}

int TimeMetricIndex(const std::vector<MetricSpec>& metrics) {
  for (size_t i = 0; i < metrics.size(); ++i)
    if (metrics[i].type == TPROF_METRIC_TIME) return static_cast<int>(i);
  return -1;
}

}  // namespace tprof
