// What a recording keeps of ELF images so that it can be symbolized later
// and elsewhere: files' build ids and the kernel's vDSO image.
#ifndef TPROF_ELF_SNAPSHOT_H_
#define TPROF_ELF_SNAPSHOT_H_

#include <string>

namespace tprof {

// The GNU build id (.note.gnu.build-id) of the ELF file at path, in hex;
// "" if the file cannot be read as ELF or has none.
[[nodiscard]] std::string FileBuildId(const std::string& path);

// The vDSO this process runs with (getauxval(AT_SYSINFO_EHDR)), as bytes:
// the ELF image up to the end of its section headers or last segment,
// whichever is later; "" without a vDSO.
[[nodiscard]] std::string VdsoImage();

}  // namespace tprof

#endif  // TPROF_ELF_SNAPSHOT_H_
