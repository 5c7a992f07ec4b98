// The ABI's error table (uapi/linux/tprof_errors.h) against the text it
// tabulates (tprof.h's "Ioctls" comment), and the library's wording of it.
#include <linux/tprof.h>
#include <linux/tprof_errors.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "../../libtprofctl/src/device/ioctl_errors.h"

namespace {

// The errno names the header's text may use.
const std::map<std::string, int> kErrnoNames = {
    {"EPERM", EPERM},   {"ENOENT", ENOENT}, {"ESRCH", ESRCH},   {"EINTR", EINTR},         {"E2BIG", E2BIG},
    {"EBUSY", EBUSY},   {"EFAULT", EFAULT}, {"EINVAL", EINVAL}, {"EMFILE", EMFILE},       {"ENOTTY", ENOTTY},
    {"ENOSPC", ENOSPC}, {"ENOMEM", ENOMEM}, {"EACCES", EACCES}, {"EOPNOTSUPP", EOPNOTSUPP}, {"ENODATA", ENODATA},
    {"EDQUOT", EDQUOT},
};

using ErrnoSets = std::map<std::string, std::set<int>>;  // ioctl name (no TPROF_IOC_) -> errnos

// Per ioctl, the errnos its paragraph of tprof.h names: from the line that
// starts with "TPROF_IOC_NAME (" to the next such line or blank line.
ErrnoSets FromHeaderText() {
  std::ifstream in(TPROF_UAPI_HEADER);
  EXPECT_TRUE(in) << TPROF_UAPI_HEADER;
  const std::regex heading(R"(^\s*\*\s+TPROF_IOC_([A-Z0-9_]+) \()"), blank(R"(^\s*\*\s*$|^\s*\*/)"),
      name(R"(\bE[A-Z0-9]+\b)");
  ErrnoSets sets;
  std::string current, line;
  for (std::smatch m; std::getline(in, line);) {
    if (std::regex_search(line, m, heading)) {
      current = m[1];
      sets[current];
    } else if (std::regex_search(line, blank)) {
      current.clear();
    }
    if (current.empty()) continue;
    for (std::sregex_iterator it(line.begin(), line.end(), name), end; it != end; ++it)
      if (auto e = kErrnoNames.find(it->str()); e != kErrnoNames.end()) sets[current].insert(e->second);
  }
  return sets;
}

ErrnoSets FromTable() {
  ErrnoSets sets;
#define TPROF_ROW(ioctl, e, meaning) sets[#ioctl].insert(e);
  TPROF_IOCTL_ERRORS(TPROF_ROW)
#undef TPROF_ROW
  return sets;
}

std::string Names(const std::set<int>& errnos) {
  std::string out;
  for (int e : errnos)
    for (const auto& [n, v] : kErrnoNames)
      if (v == e) out += n + " ";
  return out;
}

TEST(IoctlErrorTable, TableHasARowForEveryErrnoTheHeaderNamesAndNoOther) {
  const ErrnoSets text = FromHeaderText(), table = FromTable();
  ASSERT_GE(text.size(), 19u) << "the parser found too few ioctl paragraphs";
  for (const auto& [ioctl, errnos] : text) {
    auto row = table.find(ioctl);
    const std::set<int> rows = row == table.end() ? std::set<int>{} : row->second;
    EXPECT_EQ(Names(errnos), Names(rows)) << "TPROF_IOC_" << ioctl << ": tprof.h's text vs tprof_errors.h";
  }
  for (const auto& [ioctl, errnos] : table)
    EXPECT_TRUE(text.count(ioctl)) << "tprof_errors.h has rows for TPROF_IOC_" << ioctl
                                   << ", which tprof.h does not describe";
}

TEST(IoctlErrorTable, MeaningsAreTheTablesPerIoctl) {
  // ENODATA means another thing to the metrics and the sampling ioctls.
  EXPECT_STREQ(tprof::IoctlErrorMeaning(TPROF_IOC_DRAIN, ENODATA), "per-thread metrics are off (ENODATA)");
  EXPECT_STREQ(tprof::IoctlErrorMeaning(TPROF_IOC_SAMPLING_STOP, ENODATA), "no sampling session on this descriptor");
  // Common rows for what any ioctl may return; nothing for the rest.
  EXPECT_NE(std::string(tprof::IoctlErrorMeaning(TPROF_IOC_GET_INFO, ENOTTY)).find("not a tprof device"),
            std::string::npos);
  EXPECT_EQ(tprof::IoctlErrorMeaning(TPROF_IOC_GET_INFO, EDQUOT), nullptr);
  // The numbers the windows' rows spell out are the header's.
  EXPECT_NE(std::string(tprof::IoctlErrorMeaning(TPROF_IOC_WINDOW_ADD, ENOSPC)).find(std::to_string(TPROF_MAX_WINDOWS)),
            std::string::npos);
  for (int e : {EINVAL, ENOMEM})
    EXPECT_NE(std::string(tprof::IoctlErrorMeaning(TPROF_IOC_WINDOW_ADD, e)).find(std::to_string(TPROF_WINDOW_MAX_CELLS)),
              std::string::npos);

  tprof::Error e = tprof::IoctlFailure("stopping sampling", TPROF_IOC_SAMPLING_STOP, EPERM);
  EXPECT_EQ(e.code(), std::errc::operation_not_permitted);
  EXPECT_EQ(e.message(), "stopping sampling: the sampling session belongs to another descriptor");
  EXPECT_EQ(tprof::IoctlFailure("x", TPROF_IOC_GET_INFO, EDQUOT).message(), std::string("x: ") + std::strerror(EDQUOT));
}

}  // namespace
