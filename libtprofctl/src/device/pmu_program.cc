// PMU programs: the program descriptor and the generic netlink monitor
// (libnl-genl-3), see tprof/pmu_program.h.
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/netlink.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstring>
#include <utility>

#include "tprof/device/pmu_program.h"
#include "device/ioctl_errors.h"

namespace tprof::pmu {

namespace {

// Modules before ABI 1.10 took one watchpoint of 1, 2, 4 or 8 bytes.
bool OlderThanWideWatchpoints(const Device& device, const tprof_pmu_program& program) {
  bool wide = false;
  for (uint32_t i = 0; i < program.nr_counters && i < TPROF_PMU_MAX_COUNTERS; i++)
    wide |= program.counters[i].kind == TPROF_PMU_EV_WATCHPOINT && program.counters[i].len > 8;
  if (!wide) return false;
  auto info = device.GetInfo();
  return info && !info->Has(TPROF_FEAT_PMU_WIDE_WATCHPOINTS);
}

// Modules before ABI 1.11 took no data range (TPROF_PMU_CTR_DATA_RANGE).
bool OlderThanDataRanges(const Device& device, const tprof_pmu_program& program) {
  bool data = false;
  for (uint32_t i = 0; i < program.nr_counters && i < TPROF_PMU_MAX_COUNTERS; i++)
    data |= (program.counters[i].flags & TPROF_PMU_CTR_DATA_RANGE) != 0;
  if (!data) return false;
  auto info = device.GetInfo();
  return info && !info->Has(TPROF_FEAT_PMU_DATA_RANGES);
}

}  // namespace

Expected<Program> Program::Create(const Device& device, const tprof_pmu_program& program) {
  tprof_pmu_program arg = program;
  if (::ioctl(device.fd(), TPROF_IOC_PMU_CREATE, &arg) != 0) {
    int err = errno;
    // What this machine or program adds to the table's meaning.
    std::string more;
#if defined(__aarch64__)
    if (err == EINVAL) more = " (or a kernel breakpoint kprobes cannot probe, or one inside tprof.ko)";
#endif
    if (err == ENOSPC)
      more = " (a watchpoint takes one per piece of its range, x86 has 4 in all; on arm64 a threshold, "
             "rule, range, arming or every-CPU scope takes 3 per piece and 2 per breakpoint)";
    if (err == EDQUOT)
      more = " (close some, count fewer threads, or have root raise /sys/module/tprof/parameters/"
             "pmu_user_events)";
    if (err == ENOTTY) more = " (PMU programs need ABI 1.7)";
    if (err == EINVAL && OlderThanWideWatchpoints(device, program))
      more = " (a watchpoint longer than 8 bytes needs a module of ABI 1.10 or later)";
    if (err == EINVAL && OlderThanDataRanges(device, program))
      more = " (a data range (@data:) needs a module of ABI 1.11 or later)";
    return IoctlFailure("creating the PMU program", TPROF_IOC_PMU_CREATE, err, more);
  }
  return Program(ScopedFd(arg.fd));
}

Expected<tprof_pmu_values> Program::Read() const {
  tprof_pmu_values v{};
  if (::ioctl(fd_.get(), TPROF_IOC_PMU_READ, &v) != 0)
    return Error::FromErrno(errno, std::string("reading the PMU program: ") + std::strerror(errno));
  return v;
}

Expected<std::vector<uint64_t>> Program::ReadSubranges(uint32_t counter) const {
  std::vector<uint64_t> out(TPROF_PMU_MAX_SUBRANGES);
  tprof_pmu_subranges a{};
  a.counter = counter;
  a.capacity = uint32_t(out.size());
  a.values = reinterpret_cast<uint64_t>(out.data());
  if (::ioctl(fd_.get(), TPROF_IOC_PMU_READ_SUBRANGES, &a) != 0)
    return Error::FromErrno(errno, std::string("reading subranges: ") + std::strerror(errno));
  out.resize(a.nr_subranges);
  return out;
}

void Monitor::SockDeleter::operator()(nl_sock* s) const { nl_socket_free(s); }

namespace {

Error NlError(int nlerr, const std::string& what) {
  // libnl's errors are negative NLE_* codes; keep the kernel's errno when
  // it sent one (nl_syserr2nlerr's inverse is not public).
  int err = EIO;
  switch (-nlerr) {
    case NLE_OBJ_NOTFOUND: err = ENOENT; break;
    case NLE_BAD_SOCK: err = EBADF; break;
    case NLE_INVAL: err = EINVAL; break;
    case NLE_NOMEM: err = ENOMEM; break;
    case NLE_PERM: err = EPERM; break;
    case NLE_NOACCESS: err = EACCES; break;
    case NLE_AGAIN: err = EAGAIN; break;
    case NLE_OPNOTSUPP: err = EOPNOTSUPP; break;
  }
  return Error::FromErrno(err, what + ": " + nl_geterror(nlerr));
}

// The kernel's errno of an ACK (nlmsgerr), kept exactly.
int OnAckError(sockaddr_nl*, nlmsgerr* e, void* arg) {
  *static_cast<int*>(arg) = -e->error;
  return NL_STOP;
}
int OnAck(nl_msg*, void* arg) {
  *static_cast<int*>(arg) = 0;
  return NL_STOP;
}

struct Dispatch {
  const Monitor::Callback* cb;
  size_t n = 0;
};

int OnEvent(nl_msg* msg, void* arg) {
  auto* d = static_cast<Dispatch*>(arg);
  nlattr* attrs[TPROF_PMU_A_MAX + 1];
  if (genlmsg_parse(nlmsg_hdr(msg), 0, attrs, TPROF_PMU_A_MAX, nullptr) != 0 || !attrs[TPROF_PMU_A_EVENT] ||
      nla_len(attrs[TPROF_PMU_A_EVENT]) < int(sizeof(tprof_pmu_event)))
    return NL_SKIP;
  tprof_pmu_event e;
  std::memcpy(&e, nla_data(attrs[TPROF_PMU_A_EVENT]), sizeof(e));
  d->n++;
  (*d->cb)(e);
  return NL_OK;
}

// Events carry no sequence number: no check on any of our callback sets.
int NoSeqCheck(nl_msg*, void*) { return NL_OK; }

int SkipAck(nl_msg*, void*) { return NL_OK; }

// While a subscription waits for its answer: the module's reply (ABI 1.9)
// ends the wait; events of the socket's other programs are kept.
struct Subscribing {
  int* result;
  std::vector<tprof_pmu_event>* pending;
};

int OnSubscribingMessage(nl_msg* msg, void* arg) {
  auto* s = static_cast<Subscribing*>(arg);
  if (genlmsg_hdr(nlmsg_hdr(msg))->cmd == TPROF_PMU_CMD_SUBSCRIBE) {
    *s->result = 0;
    return NL_STOP;
  }
  Monitor::Callback keep = [s](const tprof_pmu_event& e) { s->pending->push_back(e); };
  Dispatch d{&keep};
  return OnEvent(msg, &d);
}

}  // namespace

Expected<Monitor> Monitor::Open() {
  std::unique_ptr<nl_sock, SockDeleter> sock(nl_socket_alloc());
  if (!sock) return Error::FromErrno(ENOMEM, "cannot allocate a netlink socket");
  if (int r = genl_connect(sock.get()); r < 0) return NlError(r, "cannot open a generic netlink socket");
  int family = genl_ctrl_resolve(sock.get(), TPROF_PMU_GENL_NAME);
  if (family < 0)
    return Error::FromErrno(ENOENT, "no generic netlink family " TPROF_PMU_GENL_NAME
                                    " (the tprof module, ABI 1.7 or later, is not loaded)");
  // Events come unsolicited: no sequence check; a large receive buffer so
  // bursts wait in the socket (what does not fit is counted as lost).
  nl_socket_disable_seq_check(sock.get());
  nl_socket_set_buffer_size(sock.get(), 4 << 20, 0);
  nl_socket_set_nonblocking(sock.get());
  // A full receive buffer must not turn into ENOBUFS errors on receive:
  // the kernel counts every event it could not deliver (lost).
  int one = 1;
  ::setsockopt(nl_socket_get_fd(sock.get()), SOL_NETLINK, NETLINK_NO_ENOBUFS, &one, sizeof(one));
  return Monitor(std::move(sock), family);
}

int Monitor::fd() const { return nl_socket_get_fd(sock_.get()); }

Status Monitor::SubscribeFd(int program_fd) {
  nl_msg* msg = nlmsg_alloc();
  if (!msg) return Error::FromErrno(ENOMEM, "cannot allocate a netlink message");
  if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family_, 0, NLM_F_ACK, TPROF_PMU_CMD_SUBSCRIBE,
                   TPROF_PMU_GENL_VERSION) ||
      nla_put_u32(msg, TPROF_PMU_A_PROGRAM_FD, uint32_t(program_fd)) < 0) {
    nlmsg_free(msg);
    return Error::FromErrno(ENOMEM, "cannot build the subscription");
  }
  int r = nl_send_auto(sock_.get(), msg);
  nlmsg_free(msg);
  if (r < 0) return NlError(r, "cannot send the subscription");
  // Wait for the module's reply (ABI 1.9; it is queued ahead of this
  // program's events), the ACK (older modules) or the kernel's errno.
  // Events of the socket's other programs may come first: they are kept
  // for Receive(). The wait is bounded: a module before 1.9 whose ACK was
  // dropped behind a full receive buffer never sends one, while events
  // keep coming.
  int result = EINPROGRESS;
  Subscribing subscribing{&result, &pending_};
  nl_cb* cb = nl_cb_alloc(NL_CB_DEFAULT);
  if (!cb) return Error::FromErrno(ENOMEM, "cannot allocate netlink callbacks");
  nl_cb_err(cb, NL_CB_CUSTOM, OnAckError, &result);
  nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, OnAck, &result);
  nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, OnSubscribingMessage, &subscribing);
  nl_cb_set(cb, NL_CB_SEQ_CHECK, NL_CB_CUSTOM, NoSeqCheck, nullptr);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (result == EINPROGRESS) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd(), POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, int(left.count())) <= 0) {
      result = ETIMEDOUT;
      break;
    }
    int rr = nl_recvmsgs(sock_.get(), cb);
    if (rr < 0 && rr != -NLE_AGAIN && result == EINPROGRESS) result = EIO;
  }
  nl_cb_put(cb);
  if (result != 0)
    return Error::FromErrno(result, std::string("subscribing to the PMU program: ") + std::strerror(result));
  return OkStatus();
}

Expected<size_t> Monitor::Receive(const Callback& cb) {
  Dispatch d{&cb};
  for (const tprof_pmu_event& e : std::exchange(pending_, {})) {
    d.n++;
    cb(e);
  }
  nl_cb* c = nl_cb_alloc(NL_CB_DEFAULT);
  if (!c) return Error::FromErrno(ENOMEM, "cannot allocate netlink callbacks");
  nl_cb_set(c, NL_CB_VALID, NL_CB_CUSTOM, OnEvent, &d);
  nl_cb_set(c, NL_CB_SEQ_CHECK, NL_CB_CUSTOM, NoSeqCheck, nullptr);
  // A subscription's ACK arrives here, behind the events its reply let
  // through (ABI 1.9): skipped, where libnl's default would stop the drain.
  nl_cb_set(c, NL_CB_ACK, NL_CB_CUSTOM, SkipAck, nullptr);
  // nl_recvmsgs_report(): messages handled in one datagram, 0 once the
  // (non-blocking) socket is empty. nl_recvmsgs() says 0 for both, and a
  // drain that stopped at the first datagram returned 0 events when that
  // one was a subscription's ACK.
  for (;;) {
    int r = nl_recvmsgs_report(sock_.get(), c);
    if (r == -NLE_AGAIN || r == 0) break;  // drained
    if (r < 0) {
      nl_cb_put(c);
      return NlError(r, "receiving PMU events");
    }
  }
  nl_cb_put(c);
  return d.n;
}

Expected<size_t> Monitor::Wait(std::chrono::milliseconds timeout, const Callback& cb) {
  if (!pending_.empty()) return Receive(cb);
  // A wake-up may bring no event (a subscription's late ACK): wait on
  // until one comes or the time is up.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd(), POLLIN, 0};
    int r = ::poll(&p, 1, int(std::max<int64_t>(left.count(), 0)));
    if (r < 0) return Error::FromErrno(errno, "waiting for PMU events");
    if (r == 0) return size_t(0);
    auto n = Receive(cb);
    if (!n || *n > 0 || left.count() <= 0) return n;
  }
}

std::string FormatEvent(const tprof_pmu_event& e, const ProgramSpec& spec) {
  std::string s;
  char buf[128];
  if (e.kind == TPROF_PMU_EVENT_RULE) {
    s = "rule " + std::to_string(e.index);
    if (e.index < spec.rule_texts().size()) s += " (" + spec.rule_texts()[e.index] + ")";
  } else {
    s = "threshold of " +
        (e.index < spec.counter_names().size() ? spec.counter_names()[e.index] : std::to_string(e.index));
  }
  std::snprintf(buf, sizeof(buf), " #%" PRIu64 ":", uint64_t(e.seq));
  s += buf;
  for (uint32_t i = 0; i < e.nr_counters && i < TPROF_PMU_MAX_COUNTERS; i++)
    s += " " + (i < spec.counter_names().size() ? spec.counter_names()[i] : "c" + std::to_string(i)) + "=" +
         std::to_string(e.values[i]);
  std::snprintf(buf, sizeof(buf), " pid %u tid %u cpu %u ip 0x%" PRIx64, e.pid, e.tid, e.cpu, uint64_t(e.ip));
  s += buf;
  if (e.addr) {  // raised by a data-ranged counter: the fault's address
    std::snprintf(buf, sizeof(buf), " addr 0x%" PRIx64, uint64_t(e.addr));
    s += buf;
  }
  if (e.lost) s += " (" + std::to_string(e.lost) + " lost before)";
  return s;
}

}  // namespace tprof::pmu
