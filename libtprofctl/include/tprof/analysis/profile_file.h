// The profile file (default tprof.data): what `tprofctl stop`/`record`
// write and `tprofctl dump` reads.
//
// WriteProfile writes the text below as one gzip member (RFC 1952: `zcat
// tprof.data` shows it; files written before were the text itself, and
// ReadProfile reads both), ParseProfile and SerializeProfile the text.
//
// Format, version 1.7 (1.0 had no stacks, 1.1 no buildid/vdso lines, 1.2
// no per-sample context, 1.3 the vDSO in hex, 1.4 no checksum, 1.5 no
// windows, 1.6 sample lines for every sample; all read):
// UTF-8/byte text, one item per line, fields separated
// by one TAB. The first line is
//     tprof-profile MAJOR MINOR
// and the last is `end` (a file without it was cut short). Readers refuse
// another MAJOR; a MINOR adds line kinds or trailing fields, which older
// readers skip. Addresses, space ids and flags are hex without "0x"
// (START, END, PGOFF, IP, CALLER, SPACE, ADDR, FLAGS, SIZE); the rest is
// decimal. Strings (NAME, PATH, KEY, VALUE, NOTE, TYPE, MODULE) are
// percent-escaped: '%' and bytes below 0x20 (TAB, LF...) or 0x7f are %XX.
// Lines starting with '#' are comments.
//
//   attr     KEY VALUE                          Profile::attributes
//   time     FIRST_NS LAST_NS                   sample time range
//   lost     LOST_SAMPLES LOST_RECORDS          sums of TPROF_REC_LOST
//   records  SAMPLES COMMS EXITS MAPS LOSTS UNKNOWN MALFORMED
//   cpu      CPU SAMPLES HAS_TOTALS TAKEN LOST_SAMPLES LOST_RECORDS
//   process  PID EXITED EXIT_NS
//   name     PID TIME_NS KIND PARENT_PID NAME   name history, oldest first
//   map      PID SPACE START END PGOFF PATH
//   sample   PID SPACE IP FLAGS COUNT            the samples without a stack (1.7;
//            before, every sample: ssample lines were a subset)
//   edge     PID SPACE IP FLAGS CALLER COUNT
//   stack    ID FLAGS SPACE NKERNEL NUSER ADDR...   the stack table (1.1):
//            RawStack ID (from 1, in order), its kernel then user entries
//   ssample  PID SPACE IP FLAGS STACK COUNT    samples with stack STACK (1.1);
//            from 1.7 the reader adds them to the sample's count
//   context  GRANULARITY_NS [IMPLICIT]         the context table follows (1.3);
//            IMPLICIT 1 (1.7): the ssample lines, then the sample lines,
//            in order, are csites 1, 2, ... without csite lines, which
//            number only the other sites from there
//   csite    ID PID SPACE IP FLAGS STACK CALLER a sampled (instruction, stack,
//            caller) of the context table, ID from 1 in order; STACK 0 and
//            CALLER 0: none (1.3)
//   ctx      BUCKET CPU TID SITE[:COUNT]...    the samples thread TID took on
//            CPU in time bucket BUCKET (time_ns / GRANULARITY_NS), per csite
//            (COUNT 1 when left out); (BUCKET, CPU, TID) are one line (1.3)
//   kernel-symbols AVAILABLE NOTE
//   ksym     ADDR TYPE NAME MODULE
//   jit      PID START SIZE NAME
//   buildid  PATH BUILD_ID                      the file's GNU build id (hex) at
//            snapshot (1.2), Profile::build_ids
//   vdso-gz  SIZE IMAGE                         the vDSO ELF image (SIZE bytes,
//            at most 1 MiB) as one gzip member in base64 (RFC 4648, with
//            '=' padding) (1.4), Profile::vdso_image
//   vdso     IMAGE                              the same in hex, two digits a
//            byte: what 1.2 and 1.3 wrote (1.4 writes it only if zlib fails)
//   window   ID KIND PID FLAGS START LENGTH BLOCK SCALE CELLS CELL_BYTES PROCS
//            IN_RANGE OUT_OF_RANGE WAIT UNTRACKED_FORKS CELL:COUNT...
//            a counting window as the session ended (START in hex, the
//            rest decimal: tprof_window_info's fields) and its nonzero
//            cells (1.6), Profile::windows
//   crc32    HEX                                zlib's CRC-32 of every byte
//            before this line, 8 hex digits (1.5); only `end` follows. A
//            reader refuses a file whose bytes disagree; a file without the
//            line (before 1.5, or edited by hand and the line deleted) is
//            read unchecked
//   end
#ifndef TPROF_PROFILE_FILE_H_
#define TPROF_PROFILE_FILE_H_

#include <string>
#include <string_view>

#include "tprof/base/expected.h"
#include "tprof/analysis/profile.h"

namespace tprof {

inline constexpr char kDefaultProfilePath[] = "tprof.data";
inline constexpr int kProfileFormatMajor = 1;
inline constexpr int kProfileFormatMinor = 7;

std::string SerializeProfile(const Profile& profile);
// Parses a profile; `name` is used in error messages. Errors: EBADMSG (not
// a profile, malformed line, cut short, checksum mismatch), EPROTO
// (another major version). Excerpts of bad lines are escaped (\xNN).
Expected<Profile> ParseProfile(std::string_view text, const std::string& name);

// The largest profile text ReadProfile inflates a gzip'd file to.
inline constexpr size_t kMaxProfileTextBytes = size_t{4} << 30;

// Writes the profile gzip'd to a temporary file beside `path` and renames
// it into place, so a reader never sees half a profile.
Status WriteProfile(const Profile& profile, const std::string& path = kDefaultProfilePath);
// As ParseProfile, of a gzip'd file or of the text; ENOENT names the path.
// A corrupt or cut gzip stream is EBADMSG, a text above
// kMaxProfileTextBytes EFBIG.
Expected<Profile> ReadProfile(const std::string& path = kDefaultProfilePath);

}  // namespace tprof

#endif  // TPROF_PROFILE_FILE_H_
