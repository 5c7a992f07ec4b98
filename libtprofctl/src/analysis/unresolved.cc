#include "tprof/analysis/unresolved.h"

#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <map>

namespace tprof {

namespace {

// "/usr/lib/x" <-> "/lib/x" (and bin, sbin, lib64): Debian's merged /usr.
std::string UsrTwin(const std::string& path) {
  static const char* kDirs[] = {"/lib/", "/lib64/", "/bin/", "/sbin/", "/lib32/", "/libx32/"};
  for (const char* dir : kDirs) {
    const std::string d = dir;
    if (path.compare(0, d.size(), d) == 0) return "/usr" + path;
    if (path.compare(0, 4 + d.size(), "/usr" + d) == 0) return path.substr(4);
  }
  return "";
}

}  // namespace

std::vector<std::string> DpkgPackages(const std::vector<std::string>& paths,
                                      const std::string& info_dir) {
  std::vector<std::string> packages(paths.size());
  std::map<std::string, std::vector<size_t>> wanted;  // path or twin -> indexes
  for (size_t i = 0; i < paths.size(); ++i) {
    wanted[paths[i]].push_back(i);
    if (std::string twin = UsrTwin(paths[i]); !twin.empty()) wanted[twin].push_back(i);
  }
  if (wanted.empty()) return packages;
  DIR* dir = ::opendir(info_dir.c_str());
  if (!dir) return packages;
  size_t left = paths.size();
  while (dirent* e = ::readdir(dir)) {
    std::string name = e->d_name;
    if (name.size() <= 5 || name.compare(name.size() - 5, 5, ".list") != 0) continue;
    std::string package = name.substr(0, name.size() - 5);
    package = package.substr(0, package.find(':'));
    std::ifstream list(info_dir + "/" + name);
    std::string line;
    while (std::getline(list, line)) {
      auto it = wanted.find(line);
      if (it == wanted.end()) continue;
      for (size_t i : it->second) {
        if (packages[i].empty()) --left;
        if (packages[i].empty()) packages[i] = package;
      }
    }
    if (left == 0) break;
  }
  ::closedir(dir);
  return packages;
}

std::vector<UnresolvedObject> UnresolvedObjects(const Profile& profile, Symbolizer& symbolizer,
                                                const std::string& dpkg_info_dir) {
  return UnresolvedObjects(profile, symbolizer, std::nullopt, dpkg_info_dir);
}

std::vector<UnresolvedObject> UnresolvedObjects(const Profile& profile, Symbolizer& symbolizer,
                                                std::optional<uint32_t> pid,
                                                const std::string& dpkg_info_dir) {
  std::map<std::string, uint64_t> by_path;
  for (const auto& [key, count] : profile.samples) {
    if (!key.user() || key.idle() || (pid && key.pid != *pid)) continue;
    const Location& loc = symbolizer.Resolve(key);
    if (loc.resolved() || loc.object.empty() || loc.object[0] != '/') continue;
    if (loc.kind != SpaceKind::kMainExecutable && loc.kind != SpaceKind::kSharedLibrary) continue;
    by_path[loc.object] += count;
  }
  std::vector<UnresolvedObject> out;
  std::vector<std::string> paths;
  for (const auto& [path, samples] : by_path) {
    out.push_back({path, samples, ""});
    paths.push_back(path);
  }
  std::vector<std::string> packages = DpkgPackages(paths, dpkg_info_dir);
  for (size_t i = 0; i < out.size(); ++i) out[i].package = std::move(packages[i]);
  std::stable_sort(out.begin(), out.end(), [](const UnresolvedObject& a, const UnresolvedObject& b) {
    return a.samples > b.samples;
  });
  return out;
}

}  // namespace tprof
