// What a recording keeps of ELF images so that it can be symbolized later
// and elsewhere: files' build ids and the kernel's vDSO image.
#ifndef TPROF_ELF_SNAPSHOT_H_
#define TPROF_ELF_SNAPSHOT_H_

#include <string>
#include <vector>

#include "tprof/analysis/profile.h"

struct Elf;  // libelf's handle

namespace tprof {

// The GNU build id of an open ELF handle, in hex; "" without one.
[[nodiscard]] std::string ElfBuildId(Elf* elf);

// The GNU build id (.note.gnu.build-id) of the ELF file at path, in hex;
// "" if the file cannot be read as ELF or has none.
[[nodiscard]] std::string FileBuildId(const std::string& path);

// The vDSO this process runs with (getauxval(AT_SYSINFO_EHDR)), as bytes:
// the ELF image up to the end of its section headers or last segment,
// whichever is later; "" without a vDSO.
[[nodiscard]] std::string VdsoImage();

struct RebuiltFile {
  std::string path;
  std::string recorded_build_id;  // at the recording (Profile::build_ids)
  std::string current_build_id;   // on disk now, "" if unreadable or gone
};

// The files whose build id on disk is not the one the profile recorded:
// rebuilt (or removed) after the recording, so their symbols may be wrong.
[[nodiscard]] std::vector<RebuiltFile> RebuiltFiles(const Profile& profile);

}  // namespace tprof

#endif  // TPROF_ELF_SNAPSHOT_H_
