// The profile file (default tprof.data): what `tprofctl stop`/`record`
// write and `tprofctl dump` reads.
//
// WriteProfile writes the text below as one gzip member (RFC 1952: `zcat
// tprof.data` shows it; files written before were the text itself, and
// ReadProfile reads both), ParseProfile and SerializeProfile the text.
//
// Format, version 1.9 (1.0 had no stacks, 1.1 no buildid/vdso lines, 1.2
// no per-sample context, 1.3 the vDSO in hex, 1.4 no checksum, 1.5 no
// windows, 1.6 sample lines for every sample, 1.7 the stack, ssample, ctx
// and ksym lines instead of 1.8's compact addr, stk, sskey, ss, cx and
// ks, 1.8 no idle line; all read):
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
//   idle     IDLE_TICKS IOWAIT_TICKS            tick sampling's skipped idle
//            ticks (1.9; only when some were), Profile::idle_ticks
//   records  SAMPLES COMMS EXITS MAPS LOSTS UNKNOWN MALFORMED
//   cpu      CPU SAMPLES HAS_TOTALS TAKEN LOST_SAMPLES LOST_RECORDS
//   process  PID EXITED EXIT_NS
//   name     PID TIME_NS KIND PARENT_PID NAME   name history, oldest first
//   map      PID SPACE START END PGOFF PATH
//   sample   PID SPACE IP FLAGS COUNT            the samples without a stack (1.7;
//            before, every sample: ssample lines were a subset)
//   edge     PID SPACE IP FLAGS CALLER COUNT
//   addr     DELTA...                           the address table (1.8): the
//            stacks' entries and the ips of samples with a stack, sorted
//            and distinct, each (hex) the distance from the one before (the
//            first from 0), at most 64 a line; INDEX i is the i-th, from 0
//   stk      FLAGS SPACE NKERNEL NUSER SHARED INDEX...   the stack table
//            (1.8): RawStack ID (from 1, in order). Its entries from the
//            outermost (the user part's last) are the previous stk line's
//            first SHARED, then the INDEXes; the innermost NKERNEL are the
//            kernel part. Written sorted by those entries
//   sskey    PID SPACE FLAGS                    the samples per stack that
//            follow are of this process, space and flags (1.8)
//   ss       DELTA STACK COUNT                  samples of the address with
//            INDEX DELTA past the last ss line's (from 0 after sskey) with
//            stack STACK (1.8); the reader adds them to the sample's count
//   stack    ID FLAGS SPACE NKERNEL NUSER ADDR...   1.1-1.7's stack table:
//            RawStack ID (from 1, in order), its kernel then user entries
//   ssample  PID SPACE IP FLAGS STACK COUNT    1.1-1.7's samples with stack
//            STACK; from 1.7 the reader adds them to the sample's count
//   context  GRANULARITY_NS [IMPLICIT]         the context table follows (1.3);
//            IMPLICIT 1 (1.7): the samples per stack in key order (PID,
//            SPACE, IP, FLAGS, STACK), then the sample lines in order, are
//            csites 1, 2, ... without csite lines, which number only the
//            other sites from there
//   csite    ID PID SPACE IP FLAGS STACK CALLER a sampled (instruction, stack,
//            caller) of the context table, ID from 1 in order; STACK 0 and
//            CALLER 0: none (1.3)
//   ctx      BUCKET CPU TID SITE[:COUNT]...    the samples thread TID took on
//            CPU in time bucket BUCKET (time_ns / GRANULARITY_NS), per csite
//            (COUNT 1 when left out); (BUCKET, CPU, TID) are one line (1.3)
//   cx       BUCKET CPU TID DELTA[:COUNT]...   the same (1.8), the sites in
//            order, each the distance from the one before (the first from 0)
//   kernel-symbols AVAILABLE NOTE
//   ksym     ADDR TYPE NAME MODULE              a kernel symbol (1.0-1.7)
//   ks       DELTA TYPE NAME MODULE             the same, DELTA the distance
//            from the last ks line's address (the first from 0) (1.8)
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
inline constexpr int kProfileFormatMinor = 9;

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
