// What the fuzzer's core (its workers, accounting and violations; this side
// of it is in core.cc) offers the scenes that live in files of their own
// (scenes_exec.cc), and what those scenes offer the core. The core keeps
// everything else to itself (tprof_fuzz::core: core.h, and each file's
// anonymous namespace).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace tprof_fuzz {

// ---- the core, for the scenes ----------------------------------------------------

// Prints "VIOLATION: [pid tid op ...] msg" and fails the run (in a forked
// child marked with MarkForkedChild(): exits 66, which the parent turns
// into a violation with ChildReportedViolation()).
void ReportViolation(const char* msg);
void ReportViolationf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void ChildReportedViolation();
void MarkForkedChild();
// Statistics printed at the end ("what happened").
void CountStat(const std::string& what, uint64_t n = 1);
// The name of the current operation in violation messages (a literal).
void SetOp(const char* name);
bool Unprivileged();  // this process runs the unprivileged workers
uint64_t MonotonicNs();
std::string ErrnoName(int e);
std::string DescribeProcess(uint32_t pid);  // name, state and parent chain
int OpenTprof();                            // /dev/tprof, O_RDWR | O_CLOEXEC
int PerfParanoidLevel();                    // kernel.perf_event_paranoid, as read once
// Forks a process of the workers' tree (registered as theirs, so records
// of it are not foreign).
pid_t ForkOwnProcess();

// ---- the scenes of scenes_exec.cc, for the core --------------------------------

// As root, before the halves split (every tprof_fuzz process starts as
// root in the guest): the setuid-root helper in /tmp, user namespaces
// enabled, the syscall tracepoints' ids read.
void ExecScenesSetUpAsRoot();
// As root, in --unprivileged's root parent before it forks the workers: a
// process of the workers' uid that kept a capability (the user-namespace
// scene's forbidden target); and its end.
void ExecScenesStartCapableStranger();
void ExecScenesStopCapableStranger();
// Worker operations (each draws from its own generator, seeded here).
void OpExecRace(uint64_t seed);
void OpUserNamespace(uint64_t seed);

}  // namespace tprof_fuzz
