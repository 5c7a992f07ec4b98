// tprof_fuzz: PMU programs and their generic netlink family (OpPmuNetlink,
// OpPortIdRace, and RootPmuRound for the root parent of --unprivileged).
//
// OpPmuNetlink plays a scene: a burner thread that takes page faults and
// runs tprof_fuzz_spin (events fire on every fault or visit), a few
// programs (on the burner thread, on the process, on every CPU, or
// FillPmuCreate's random ones), a few raw NETLINK_GENERIC sockets (bound
// to random, the process's or the parent's port ids, some with tiny
// receive buffers), and a random sequence of subscriptions (valid; with
// closed, foreign, non-program and nonsense descriptors), malformed
// messages (missing, short, long, duplicated, unknown and nested
// attributes, other commands, flags and families, truncated headers,
// batches, oversized ones), drains, socket and program closes while
// events fire, and forks that subscribe with inherited descriptors. Every
// descriptor is closed at the end, so module cycles find nothing held.
//
// Invariants: every refusal is documented (the handler's EBADF, EINVAL,
// EAGAIN, ENOMEM; generic netlink's EOPNOTSUPP, EINVAL, ERANGE, ENOENT for
// malformed messages; see the uapi header); a request the kernel parsed is
// answered (the send runs the handler synchronously) unless the socket
// overran; events reach only a socket that subscribed, and an unprivileged
// socket only events of its own process tree, with no kernel address; per
// program and socket the sequence numbers increase, and for a program
// with one producer thread and one monitor ever, delivered + lost >= seq.
#include "pmu_netlink.h"

#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/tprof.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace tprof_fuzz::core {
namespace {
constexpr u64 kNoProg = ~0ULL;  // a subscription to a descriptor not of this scene
}  // namespace

std::mutex g_prog_mu;
std::map<int, std::shared_ptr<std::atomic<bool>>> g_prog_fds;

namespace {
bool NlDocumented(int e) {
  return e == EBADF || e == EINVAL || e == EAGAIN || e == ENOMEM || e == EOPNOTSUPP ||
         e == ERANGE || e == ENOENT;
}

// A netlink message under construction: header, generic header, attributes.
struct NlMsg {
  std::vector<unsigned char> b;
  NlMsg(uint16_t type, uint16_t flags, uint32_t seq, uint8_t cmd, uint8_t version = TPROF_PMU_GENL_VERSION) {
    b.resize(NLMSG_HDRLEN + GENL_HDRLEN);
    nlmsghdr h{};
    h.nlmsg_type = type;
    h.nlmsg_flags = flags;
    h.nlmsg_seq = seq;
    std::memcpy(b.data(), &h, sizeof(h));
    genlmsghdr g{};
    g.cmd = cmd;
    g.version = version;
    std::memcpy(b.data() + NLMSG_HDRLEN, &g, sizeof(g));
  }
  void Attr(uint16_t type, const void* data, size_t len) {
    nlattr a{};
    a.nla_len = uint16_t(NLA_HDRLEN + len);
    a.nla_type = type;
    size_t at = b.size();
    b.resize(at + NLA_ALIGN(NLA_HDRLEN + len), 0);
    std::memcpy(b.data() + at, &a, sizeof(a));
    if (len) std::memcpy(b.data() + at + NLA_HDRLEN, data, len);
  }
  void U32(uint16_t type, uint32_t v) { Attr(type, &v, sizeof(v)); }
  // nlmsg_len: the message's size unless told otherwise.
  const unsigned char* Finish(uint32_t len = 0) {
    uint32_t l = len ? len : uint32_t(b.size());
    std::memcpy(b.data() + offsetof(nlmsghdr, nlmsg_len), &l, sizeof(l));
    return b.data();
  }
};

int NlSend(int fd, const void* p, size_t n) {
  sockaddr_nl k{};
  k.nl_family = AF_NETLINK;
  return ::sendto(fd, p, n, 0, reinterpret_cast<sockaddr*>(&k), sizeof(k)) < 0 ? errno : 0;
}

// The family's id through the controller (0: not registered).
uint16_t NlResolve(int fd) {
  NlMsg m(GENL_ID_CTRL, NLM_F_REQUEST, 1, CTRL_CMD_GETFAMILY, 1);
  m.Attr(CTRL_ATTR_FAMILY_NAME, TPROF_PMU_GENL_NAME, sizeof(TPROF_PMU_GENL_NAME));
  if (NlSend(fd, m.Finish(), m.b.size())) return 0;
  alignas(nlmsghdr) unsigned char buf[8192];
  for (int tries = 0; tries < 64; ++tries) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n < 0) return 0;
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, size_t(n)); h = NLMSG_NEXT(h, n)) {
      if (h->nlmsg_type == NLMSG_ERROR) return 0;
      if (h->nlmsg_type != GENL_ID_CTRL || h->nlmsg_seq != 1) continue;
      auto* a = reinterpret_cast<nlattr*>(static_cast<char*>(NLMSG_DATA(h)) + GENL_HDRLEN);
      int left = int(h->nlmsg_len) - int(NLMSG_HDRLEN + GENL_HDRLEN);
      for (; left >= int(NLA_HDRLEN) && a->nla_len >= NLA_HDRLEN && int(a->nla_len) <= left;
           left -= NLA_ALIGN(a->nla_len), a = reinterpret_cast<nlattr*>(reinterpret_cast<char*>(a) + NLA_ALIGN(a->nla_len)))
        if ((a->nla_type & NLA_TYPE_MASK) == CTRL_ATTR_FAMILY_ID && a->nla_len >= NLA_HDRLEN + 2) {
          uint16_t id;
          std::memcpy(&id, reinterpret_cast<char*>(a) + NLA_HDRLEN, 2);
          return id;
        }
      return 0;
    }
  }
  return 0;
}
}  // namespace

// The same on a socket of its own: -1 without a socket (fds may run out).
int NlFamily() {
  int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
  if (fd < 0) return -1;
  int family = NlResolve(fd);
  ::close(fd);
  return family;
}

namespace {
// One event on socket s: where it may go, what it may say.
void NlCheckEvent(NlScene& sc, NlSock& s, const nlattr* a, int left) {
  const tprof_pmu_event* evp = nullptr;
  for (; left >= int(NLA_HDRLEN) && a->nla_len >= NLA_HDRLEN && int(a->nla_len) <= left;
       left -= NLA_ALIGN(a->nla_len), a = reinterpret_cast<const nlattr*>(reinterpret_cast<const char*>(a) + NLA_ALIGN(a->nla_len))) {
    if (a->nla_type != TPROF_PMU_A_EVENT || a->nla_len != NLA_HDRLEN + sizeof(tprof_pmu_event)) {
      VIOLATION("pmu event: attribute type %u length %u (want %u, %zu bytes)", a->nla_type, a->nla_len,
                TPROF_PMU_A_EVENT, NLA_HDRLEN + sizeof(tprof_pmu_event));
      return;
    }
    evp = reinterpret_cast<const tprof_pmu_event*>(reinterpret_cast<const char*>(a) + NLA_HDRLEN);
  }
  if (!evp) {
    VIOLATION("pmu event without a TPROF_PMU_A_EVENT attribute");
    return;
  }
  tprof_pmu_event ev;
  std::memcpy(&ev, evp, sizeof(ev));
  Count("pmu nl events");
  if (ev.lost) Count("pmu nl events announced lost", ev.lost);
  if (s.progs_ever.empty()) {
    VIOLATION("pmu event (seq %llu, pid %u tid %u) reached socket port %u, which never subscribed", ev.seq,
              ev.pid, ev.tid, s.portid);
    return;
  }
  if (ev.seq == 0 || (ev.kind != TPROF_PMU_EVENT_THRESHOLD && ev.kind != TPROF_PMU_EVENT_RULE) ||
      ev.nr_counters < 1 || ev.nr_counters > TPROF_PMU_MAX_COUNTERS ||
      ev.index >= (ev.kind == TPROF_PMU_EVENT_THRESHOLD ? ev.nr_counters : TPROF_PMU_MAX_RULES) ||
      !AllZero(ev.resv, sizeof(ev.resv)))
    VIOLATION("pmu event malformed: seq %llu kind %u index %u nr_counters %u resv %d", ev.seq, ev.kind,
              ev.index, ev.nr_counters, !AllZero(ev.resv, sizeof(ev.resv)));
  for (uint32_t k = ev.nr_counters; k < TPROF_PMU_MAX_COUNTERS; ++k)
    if (ev.values[k]) VIOLATION("pmu event: unused counter %u is %llu", k, ev.values[k]);
  if (g_unpriv) {
    CheckNoKernelPointers("pmu event", &ev, {U64F(tprof_pmu_event, ip), U64F(tprof_pmu_event, values),
                                             U64F(tprof_pmu_event, addr)});
    // A forked subscriber's own-pid set is a copy from the fork: the events
    // it reads are of its parent's programs, whose later children it cannot
    // know but finds under the parent.
    if (ev.pid && !IsOwnPid(ev.pid) && !DescendsFrom(ev.pid, uint32_t(::getpid())) &&
        !(g_in_child.load() && DescendsFrom(ev.pid, uint32_t(::getppid()))))
      VIOLATION("pmu event of pid %u (tid %u), not of this process tree, reached an unprivileged socket (seq %llu "
                "kind %u index %u; the pid: %s; this process's parent %d)",
                ev.pid, ev.tid, ev.seq, ev.kind, ev.index, DescribePid(ev.pid).c_str(), int(::getppid()));
  }
  if (s.progs_ever.size() != 1 || *s.progs_ever.begin() == kNoProg) return;
  NlProg* p = sc.Prog(*s.progs_ever.begin());
  if (!p) return;
  if (p->nr_counters && ev.nr_counters != p->nr_counters)  // 0: not known (a forked child's)
    VIOLATION("pmu event: nr_counters %u, the program has %u", ev.nr_counters, p->nr_counters);
  // A program of this process's scope counts this process and what it
  // forks afterwards, never another process running the same code.
  if (p->own_process && ev.pid &&
      (sc.strangers.count(ev.pid) || (!IsOwnPid(ev.pid) && !DescendsFrom(ev.pid, uint32_t(::getpid())))))
    VIOLATION("pmu event of pid %u (tid %u) for a program of this process's scope, but pid %u is %s", ev.pid, ev.tid,
              ev.pid, sc.strangers.count(ev.pid) ? "a stranger running the same binary" : "not of this process tree");
  if (!p->single_producer) return;
  if (p->target_tid && (ev.pid != uint32_t(::getpid()) || ev.tid != p->target_tid))
    VIOLATION("pmu event of a program on thread %u says pid %u tid %u", p->target_tid, ev.pid, ev.tid);
  s.delivered++;
  s.lost_sum += ev.lost;
  if (ev.seq <= s.last_seq)
    VIOLATION("pmu event seq %llu after %llu on the same program and socket", ev.seq, s.last_seq);
  s.last_seq = ev.seq;
  if (p->stolen->load() || p->sockets_ever.size() != 1) return;
  Count("pmu nl events accounted");
  if (s.delivered + s.lost_sum < ev.seq)
    VIOLATION("pmu event seq %llu but only %llu delivered + %llu announced lost on its one monitor",
              ev.seq, s.delivered, s.lost_sum);
}
}  // namespace

struct NlAnswer {
  bool replied = false;  // the SUBSCRIBE reply
  bool acked = false;    // an NLMSG_ERROR for the request
  int err = 0;           // its errno
};

// Reads what socket s holds (waiting up to wait_ms for the first message);
// the answer to request seq `want` goes to *ans.
void NlPump(NlScene& sc, NlSock& s, uint32_t want, NlAnswer* ans, int wait_ms) {
  static thread_local std::vector<unsigned char> buf(256 * 1024);
  for (int rounds = 0; rounds < 512; ++rounds) {
    if (wait_ms) {
      pollfd pf{s.fd, POLLIN, 0};
      (void)::poll(&pf, 1, wait_ms);
      wait_ms = 0;
    }
    ssize_t n = ::recv(s.fd, buf.data(), buf.size(), MSG_DONTWAIT);
    if (n < 0) {
      if (errno == ENOBUFS) {
        s.overran = true;
        Count("pmu nl receive overrun (ENOBUFS)");
        continue;
      }
      if (errno != EAGAIN && errno != EINTR) VIOLATION("pmu nl recv: %s", ErrName(errno).c_str());
      return;
    }
    int len = int(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf.data()); NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
      if (h->nlmsg_type == NLMSG_ERROR) {
        auto* e = static_cast<nlmsgerr*>(NLMSG_DATA(h));
        int err = -e->error;
        if (err && !NlDocumented(err))
          VIOLATION("pmu nl request %u refused with %s, not documented", h->nlmsg_seq, ErrName(err).c_str());
        if (ans && h->nlmsg_seq == want) {
          ans->acked = true;
          ans->err = err;
        }
        if (err) s.pending.erase(h->nlmsg_seq);
        continue;
      }
      if (h->nlmsg_type != sc.family || h->nlmsg_len < NLMSG_HDRLEN + GENL_HDRLEN) {
        VIOLATION("pmu nl: unexpected message type %u length %u (family %u)", h->nlmsg_type, h->nlmsg_len,
                  sc.family);
        continue;
      }
      auto* g = static_cast<genlmsghdr*>(NLMSG_DATA(h));
      if (g->cmd == TPROF_PMU_CMD_SUBSCRIBE) {
        auto it = s.pending.find(h->nlmsg_seq);
        if (it == s.pending.end()) {
          VIOLATION("pmu nl: a subscription reply (seq %u) for no request of this socket", h->nlmsg_seq);
          continue;
        }
        s.progs_ever.insert(it->second);
        if (NlProg* p = sc.Prog(it->second)) p->sockets_ever.insert(s.id);
        s.pending.erase(it);
        if (ans && h->nlmsg_seq == want) ans->replied = true;
      } else if (g->cmd == TPROF_PMU_CMD_EVENT) {
        NlCheckEvent(sc, s, reinterpret_cast<const nlattr*>(reinterpret_cast<const char*>(g) + GENL_HDRLEN),
                     int(h->nlmsg_len) - int(NLMSG_HDRLEN + GENL_HDRLEN));
      } else {
        VIOLATION("pmu nl: message with command %u", g->cmd);
      }
    }
  }
}

namespace {
// Sends a request and reads its answer: the handler runs inside sendto(),
// so the answer is queued by then, unless the socket overran. silent: a
// message generic netlink may drop without an answer (bad lengths).
// Returns the errno (0: success), or -1 without an answer.
int NlRequest(NlScene& sc, NlSock& s, NlMsg& m, uint32_t len, u64 prog, bool silent, const char* what) {
  const uint32_t seq = sc.next_seq++;
  std::memcpy(m.b.data() + offsetof(nlmsghdr, nlmsg_seq), &seq, sizeof(seq));
  const uint16_t cmd = reinterpret_cast<genlmsghdr*>(m.b.data() + NLMSG_HDRLEN)->cmd;
  if (cmd == TPROF_PMU_CMD_SUBSCRIBE) s.pending[seq] = prog;
  NlPump(sc, s, 0, nullptr);  // room for the answer
  s.overran = false;
  int err = NlSend(s.fd, m.Finish(len), m.b.size());
  if (err) {
    Count(std::string("pmu nl send ") + what + " " + ErrName(err));
    if (err != ENOBUFS && err != ENOMEM && err != EAGAIN && err != EMSGSIZE)
      VIOLATION("pmu nl sendto (%s): %s", what, ErrName(err).c_str());
    s.pending.erase(seq);
    return err;
  }
  NlAnswer ans;
  NlPump(sc, s, seq, &ans);
  bool want_ack = m.b[offsetof(nlmsghdr, nlmsg_flags)] & NLM_F_ACK;
  int result = ans.acked ? ans.err : ans.replied && !want_ack ? 0 : -1;
  if (ans.acked && ans.err == 0 && !ans.replied && cmd == TPROF_PMU_CMD_SUBSCRIBE && !s.overran && !silent &&
      len == 0 && s.pending.count(seq))
    VIOLATION("pmu nl %s: acknowledged without the subscription reply", what);
  // A monitor's events may fill its buffer without another ENOBUFS (netlink
  // reports an overrun once until the queue is empty): only a socket that
  // never subscribed must have its answer.
  const bool quiet_socket = s.progs_ever.empty() && s.pending.size() <= 1;
  if (result == -1 && !s.overran && !silent && quiet_socket && (want_ack || cmd == TPROF_PMU_CMD_SUBSCRIBE))
    VIOLATION("pmu nl %s (seq %u): no answer although the socket did not overrun", what, seq);
  Count(std::string("pmu nl ") + what + " " + (result < 0 ? "no answer" : ErrName(result)));
  return result;
}
}  // namespace

int NlSubscribe(NlScene& sc, NlSock& s, int fd, u64 prog, const char* what, uint16_t flags) {
  NlMsg m(sc.family, flags, 0, TPROF_PMU_CMD_SUBSCRIBE);
  m.U32(TPROF_PMU_A_PROGRAM_FD, uint32_t(fd));
  return NlRequest(sc, s, m, 0, prog, false, what);
}

// A socket bound to a random, the process's, the parent's or an automatic
// port id; sometimes with a tiny receive buffer, so events overrun it.
bool NlOpenSocket(Rng& r, NlScene& sc, bool autobind) {
  int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
  if (fd < 0) {
    Count("pmu nl socket " + ErrName(errno));
    return false;
  }
  sockaddr_nl a{};
  a.nl_family = AF_NETLINK;
  switch (autobind ? 4 : r.Below(5)) {
    case 0: a.nl_pid = uint32_t(::getppid()); break;  // the parent's (the root parent's, unprivileged)
    case 1: a.nl_pid = uint32_t(::getpid()); break;
    case 2: a.nl_pid = uint32_t(r.Next()); break;
    case 3: a.nl_pid = uint32_t(::getppid()) + uint32_t(r.Below(4)); break;
    default: break;
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    Count("pmu nl bind " + ErrName(errno));
    a.nl_pid = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      ::close(fd);
      return false;
    }
  }
  socklen_t al = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &al);
  if (!autobind && r.OneIn(3)) {
    int sz = int(r.Pick<u64>({256, 1024, 4096, 16384}));
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
  }
  NlSock s;
  s.id = sc.next_id++;
  s.fd = fd;
  s.portid = a.nl_pid;
  sc.socks.push_back(std::move(s));
  return true;
}

namespace {
// The thread events come from: page faults on fresh pages, spin visits,
// writes of the watched word.
struct Burner {
  std::atomic<bool> stop{false};
  std::atomic<uint32_t> tid{0};
  std::thread t;
  // relentless: no pause, so that events are in flight at any moment.
  explicit Burner(bool relentless = false) {
    t = std::thread([this, relentless] {
      tid = Gettid();
      while (!stop.load()) {
        void* m = ::mmap(nullptr, size_t(kPage) * 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m != MAP_FAILED) {
          for (int i = 0; i < 8; ++i) static_cast<volatile char*>(m)[i * kPage] = 1;
          ::munmap(m, size_t(kPage) * 8);
        }
        tprof_fuzz_spin(3);
        g_pmu_word = g_pmu_word + 1;
        // A few thousand events a second are enough; a busier loop on
        // every worker starves the other operations in a TCG guest.
        if (!relentless) std::this_thread::sleep_for(std::chrono::microseconds(500));
      }
    });
    while (!tid.load()) std::this_thread::yield();
  }
  ~Burner() {
    stop = true;
    t.join();
  }
};

// A program that fires often: every page fault (or spin visit) of the
// burner thread, or of the process, or of every CPU; or a random one.
void NlCreateProgram(Rng& r, Worker& w, NlScene& sc, int dev, uint32_t burner_tid) {
  tprof_pmu_program in{};
  NlProg p;
  p.id = sc.next_id++;
  const u64 kind = r.Below(6);
  if (kind == 5) {  // FillPmuCreate's: any shape, valid or not
    Call c;
    FillPmuCreate(r, w, &in, c);
  } else {
    in.scope = kind <= 2 ? TPROF_PMU_SCOPE_THREAD : kind == 3 ? TPROF_PMU_SCOPE_PROCESS : TPROF_PMU_SCOPE_CPUS;
    in.pid = in.scope == TPROF_PMU_SCOPE_THREAD && kind != 2 ? burner_tid : 0;
    in.nr_counters = 1;
    tprof_pmu_counter& k = in.counters[0];
    if (kind == 1) {
      k.kind = TPROF_PMU_EV_BREAKPOINT;
      k.addr = u64(uintptr_t(&tprof_fuzz_spin));
    } else {
      k.kind = TPROF_PMU_EV_SOFTWARE;
      k.config = 2;  // PERF_COUNT_SW_PAGE_FAULTS
    }
    k.threshold = 1 + r.Below(3);
    k.threshold_every = r.OneIn(4) ? 1 + r.Below(8) : 1;
    if (in.scope == TPROF_PMU_SCOPE_CPUS) k.threshold_every = 16 + r.Below(48);  // every fault of every process
    if (r.OneIn(2)) {  // a rule over the same counter
      in.nr_rules = 1;
      tprof_pmu_rule& rule = in.rules[0];
      rule.nr_terms = 1;
      rule.op = TPROF_PMU_OP_GE;
      rule.rearm = TPROF_PMU_REARM_ON_FALSE;
      rule.constant = int64_t(r.Below(50));
      rule.terms[0].counter = 0;
      rule.terms[0].multiplier = 1;
    }
  }
  p.scope = in.scope;
  p.nr_counters = in.nr_counters;
  p.nr_rules = in.nr_rules;
  p.target_tid = in.scope == TPROF_PMU_SCOPE_THREAD ? (in.pid ? in.pid : Gettid()) : 0;
  // Every event of a program on one thread of this process is raised by
  // that thread, one after another: they are queued in seq order.
  p.single_producer = in.scope == TPROF_PMU_SCOPE_THREAD && (p.target_tid == burner_tid || p.target_tid == Gettid());
  std::lock_guard<std::mutex> l(g_prog_mu);
  int err = RawIoctl("PMU_CREATE", dev, TPROF_IOC_PMU_CREATE, &in);
  Count("pmu nl program create " + ErrName(err));
  if (err) {
    if (err != EINVAL && err != EPERM && err != EACCES && err != ESRCH && err != ENOENT && err != EOPNOTSUPP &&
        err != ENOSPC && err != ENOMEM && err != E2BIG && err != EMFILE && err != EFAULT && err != kBreakpointBusy)
      VIOLATION("PMU_CREATE (scene) failed with %s, not documented", ErrName(err).c_str());
    return;
  }
  p.fd = in.fd;
  g_prog_fds[p.fd] = p.stolen;
  sc.progs.push_back(std::move(p));
}
}  // namespace

void NlCloseProgram(NlProg& p) {
  std::lock_guard<std::mutex> l(g_prog_mu);
  g_prog_fds.erase(p.fd);
  ::close(p.fd);
  p.fd = -1;
}

// A program's books before it closes: the kernel sent at least what its
// one monitor read, and never more than it queued.
void NlCheckBooks(NlScene& sc, const NlProg& p) {
  tprof_pmu_values v{};
  if (::ioctl(p.fd, TPROF_IOC_PMU_READ, &v) != 0) {
    VIOLATION("PMU_READ on a live program: %s", ErrName(errno).c_str());
    return;
  }
  if (v.events_sent > v.events_queued)
    VIOLATION("PMU_READ: sent %llu > queued %llu", v.events_sent, v.events_queued);
  if (p.stolen->load() || p.sockets_ever.size() != 1 || !p.single_producer) return;
  for (const NlSock& s : sc.socks)
    if (s.id == *p.sockets_ever.begin() && s.progs_ever.size() == 1 && s.delivered > v.events_sent)
      VIOLATION("PMU_READ: sent %llu but its one monitor read %llu", v.events_sent, s.delivered);
  Count("pmu nl program books checked");
}

namespace {
// Malformed or odd messages; only the errno set and the answer are checked.
void NlMalformed(Rng& r, NlScene& sc, NlSock& s, int some_fd) {
  const uint32_t other_fd = uint32_t(r.Edgy());
  // Whatever program these numbers name may get this socket as its monitor.
  std::lock_guard<std::mutex> l(g_prog_mu);
  for (int fd : {some_fd, int(other_fd)}) {
    auto it = g_prog_fds.find(fd);
    if (it != g_prog_fds.end()) it->second->store(true);
  }
  const uint16_t req = NLM_F_REQUEST | (r.OneIn(4) ? 0 : NLM_F_ACK);
  NlMsg m(sc.family, req, 0, TPROF_PMU_CMD_SUBSCRIBE);
  uint32_t len = 0;
  bool silent = false;
  const char* what;
  switch (r.Below(14)) {
    case 0: what = "no attribute"; break;
    case 1: { uint16_t v = 3; m.Attr(TPROF_PMU_A_PROGRAM_FD, &v, 2); what = "short fd attribute"; break; }
    case 2: { u64 v = uint32_t(some_fd); m.Attr(TPROF_PMU_A_PROGRAM_FD, &v, 8); what = "long fd attribute"; break; }
    case 3: m.U32(TPROF_PMU_A_PROGRAM_FD, uint32_t(some_fd)); m.U32(TPROF_PMU_A_PROGRAM_FD, other_fd); what = "duplicated fd attribute"; break;
    case 4: m.U32(uint16_t(3 + r.Below(0x7ff0)), uint32_t(some_fd)); what = "unknown attribute"; break;
    case 5: m.U32(TPROF_PMU_A_PROGRAM_FD | NLA_F_NESTED, uint32_t(some_fd)); what = "nested flag"; break;
    case 6: {
      std::vector<unsigned char> junk(r.Below(2) ? sizeof(tprof_pmu_event) : sizeof(tprof_pmu_event) + 1 + r.Below(64));
      for (auto& c : junk) c = static_cast<unsigned char>(r.Next());
      m.Attr(TPROF_PMU_A_EVENT, junk.data(), junk.size());
      what = "event attribute sent";
      break;
    }
    case 7: {
      NlMsg o(sc.family, req, 0, uint8_t(r.OneIn(2) ? u64(TPROF_PMU_CMD_EVENT) : r.OneIn(2) ? 0 : 3 + r.Below(253)));
      o.U32(TPROF_PMU_A_PROGRAM_FD, uint32_t(some_fd));
      m = o;
      what = "other command";
      break;
    }
    case 8: {
      NlMsg o(sc.family, uint16_t(req | NLM_F_DUMP), 0, TPROF_PMU_CMD_SUBSCRIBE);
      o.U32(TPROF_PMU_A_PROGRAM_FD, uint32_t(some_fd));
      m = o;
      what = "dump";
      break;
    }
    case 9: {
      // Ids are handed out from the bottom: one near the top is no family.
      NlMsg o(uint16_t(0xffe0 + r.Below(16)), req, 0, 1);
      o.U32(1, uint32_t(some_fd));
      m = o;
      what = "no such family id";
      break;
    }
    case 10:  // nlmsg_len too long or too short for what follows
      m.U32(TPROF_PMU_A_PROGRAM_FD, uint32_t(some_fd));
      len = r.OneIn(2) ? uint32_t(m.b.size() + 4 + r.Below(64)) : uint32_t(NLMSG_HDRLEN + r.Below(GENL_HDRLEN + 4));
      what = "bad nlmsg_len";
      silent = true;
      break;
    case 11: {  // an attribute whose length runs past the message
      m.U32(TPROF_PMU_A_PROGRAM_FD, uint32_t(some_fd));
      uint16_t bad = uint16_t(8 + 4 * (1 + r.Below(100)));
      std::memcpy(m.b.data() + NLMSG_HDRLEN + GENL_HDRLEN, &bad, 2);
      what = "attribute past the end";
      break;
    }
    case 12: {  // 32 KiB of attributes, the fd last
      std::vector<unsigned char> pad(1000, 0x5a);
      for (int i = 0; i < 32; ++i) m.Attr(uint16_t(3 + i), pad.data(), pad.size());
      m.U32(TPROF_PMU_A_PROGRAM_FD, uint32_t(some_fd));
      what = "oversized";
      break;
    }
    default:  // no NLM_F_REQUEST: acknowledged, not handled
      m = NlMsg(sc.family, uint16_t(req & ~NLM_F_REQUEST), 0, TPROF_PMU_CMD_SUBSCRIBE);
      m.U32(TPROF_PMU_A_PROGRAM_FD, uint32_t(some_fd));
      what = "no request flag";
      silent = true;
      break;
  }
  // A subscription this message may make is to some program, maybe not of
  // this scene: the socket's accounting ends.
  (void)NlRequest(sc, s, m, len, kNoProg, silent, what);
}

// Subscribes with a descriptor number that is not (or no longer) one of
// this scene's programs: closed, a device or socket, nonsense, or the
// numbers in /proc/<parent>/fd (another process's, root's when
// unprivileged). Refused with EBADF or EINVAL unless the number is a
// program of this process (another worker's, now stolen).
void NlSubscribeForeign(Rng& r, NlScene& sc, NlSock& s, int dev, int closed_fd) {
  int fd;
  const char* what;
  switch (r.Below(6)) {
    case 0: fd = closed_fd; what = "subscribe closed fd"; break;
    case 1: fd = dev; what = "subscribe device fd"; break;
    case 2: fd = s.fd; what = "subscribe socket fd"; break;
    case 3: fd = int(r.Pick<u64>({~0ULL, 0x7fffffff, 1u << 20, 65535})); what = "subscribe nonsense fd"; break;
    default: fd = 3 + int(r.Below(64)); what = "subscribe parent's fd number"; break;
  }
  std::lock_guard<std::mutex> l(g_prog_mu);
  auto it = g_prog_fds.find(fd);
  bool program = it != g_prog_fds.end();
  if (program) it->second->store(true);
  int err = NlSubscribe(sc, s, fd, kNoProg, what);
  if (err == 0 && (fd == dev || fd == s.fd || fd < 0))
    VIOLATION("pmu nl %s (%d) succeeded: not a program", what, fd);
}

// The unprivileged worker tries to open root's descriptors through /proc:
// holding a descriptor is the permission, so that must fail.
void NlTryParentFds() {
  const uint32_t ppid = uint32_t(::getppid());
  for (int n = 0; n < 16; ++n) {
    std::string path = "/proc/" + std::to_string(ppid) + "/fd/" + std::to_string(n);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    Count("pmu nl open parent's fd " + ErrName(fd < 0 ? errno : 0));
    if (fd >= 0) {
      VIOLATION("opened %s, a descriptor of the root parent, unprivileged", path.c_str());
      ::close(fd);
    }
  }
}

// A child holds the scene's descriptors: it subscribes a socket of its own
// with an inherited program descriptor (that is the permission), reads
// what comes (events of its parent's burner: pid and tid of the parent),
// and exits. The parent's programs may have a new monitor now.
void NlForkSubscriber(Rng& r, NlScene& sc) {
  std::vector<int> fds;
  for (NlProg& p : sc.progs)
    if (p.fd >= 0) {
      fds.push_back(p.fd);
      p.stolen->store(true);
    }
  if (fds.empty()) return;
  const int fd = fds[r.Below(fds.size())];
  const u64 seed = r.Next();
  pid_t pid = ForkOwn();
  if (pid < 0) return;
  if (pid == 0) {
    g_in_child = true;
    AddOwnPid(uint32_t(::getppid()));
    t_op = "pmu nl forked subscriber";
    Rng cr(seed, kWorkerStream);
    NlScene child;
    child.family = sc.family;
    child.next_seq = 1;
    if (!NlOpenSocket(cr, child)) ::_exit(0);
    NlProg p;
    p.id = child.next_id++;
    p.fd = fd;
    child.progs.push_back(p);
    int err = NlSubscribe(child, child.socks[0], fd, p.id, "child subscribe");
    if (err > 0 && err != ENOMEM && err != EAGAIN)
      VIOLATION("a forked child's subscription with an inherited program descriptor: %s", ErrName(err).c_str());
    for (int i = 0; i < 5; ++i) NlPump(child, child.socks[0], 0, nullptr, 10);
    ::_exit(0);
  }
  if (g_unpriv) AddOwnPid(uint32_t(pid));
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(st) && WEXITSTATUS(st) == 66) g_violations++;
  else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    VIOLATION("pmu nl forked subscriber ended with status 0x%x", st);
  Count("pmu nl forked subscribers");
}
}  // namespace

void OpPmuNetlink(Worker& w) {
  t_op = "pmu netlink";
  Rng& r = w.rng;
  NlScene sc;
  const int family = NlFamily();
  if (family < 0) return;
  sc.family = uint16_t(family);
  if (!sc.family) {
    VIOLATION("generic netlink family %s not found while the module is loaded", TPROF_PMU_GENL_NAME);
    return;
  }
  if (!NlOpenSocket(r, sc)) return;
  int dev = OpenDevice();
  if (dev < 0) {
    ::close(sc.socks[0].fd);
    return;
  }
  std::optional<Burner> burner;
  burner.emplace();
  const uint32_t btid = burner->tid.load();
  for (u64 i = 1 + r.Below(3); i > 0; --i) NlCreateProgram(r, w, sc, dev, btid);
  for (u64 i = r.Below(3); i > 0; --i) NlOpenSocket(r, sc);
  if (g_unpriv && r.OneIn(4)) NlTryParentFds();
  int closed_fd = -1;
  const int steps = 8 + int(r.Below(24));
  for (int step = 0; step < steps; ++step) {
    auto live_prog = [&]() -> NlProg* {
      std::vector<NlProg*> v;
      for (NlProg& p : sc.progs)
        if (p.fd >= 0) v.push_back(&p);
      return v.empty() ? nullptr : v[r.Below(v.size())];
    };
    auto live_sock = [&]() -> NlSock* {
      std::vector<NlSock*> v;
      for (NlSock& s : sc.socks)
        if (s.fd >= 0) v.push_back(&s);
      return v.empty() ? nullptr : v[r.Below(v.size())];
    };
    NlSock* s = live_sock();
    if (!s) {
      if (!NlOpenSocket(r, sc)) break;
      continue;
    }
    switch (r.Below(12)) {
      case 0: case 1: case 2: {  // a program's own descriptor: the permission
        NlProg* p = live_prog();
        if (!p) break;
        int err = NlSubscribe(sc, *s, p->fd, p->id, "subscribe",
                              uint16_t(NLM_F_REQUEST | (r.OneIn(3) ? 0 : NLM_F_ACK)));
        if (err > 0 && err != EAGAIN && err != ENOMEM)
          VIOLATION("pmu nl subscription with the program's own descriptor: %s", ErrName(err).c_str());
        break;
      }
      case 3: NlSubscribeForeign(r, sc, *s, dev, closed_fd); break;
      case 4: {
        NlProg* p = live_prog();
        NlMalformed(r, sc, *s, p ? p->fd : dev);
        break;
      }
      case 5: case 6: NlPump(sc, *s, 0, nullptr, int(r.Below(30))); break;
      case 7:  // events fire meanwhile; receive buffers fill
        std::this_thread::sleep_for(std::chrono::milliseconds(r.Below(40)));
        break;
      case 8:  // close a socket, perhaps a monitor with events in flight
        if (r.OneIn(2)) NlPump(sc, *s, 0, nullptr);
        ::close(s->fd);
        s->fd = -1;
        Count("pmu nl socket closed");
        if (r.OneIn(2)) NlOpenSocket(r, sc);
        break;
      case 9: {  // close a program while it fires
        NlProg* p = live_prog();
        if (!p) break;
        if (r.OneIn(2)) {
          for (NlSock& o : sc.socks)
            if (o.fd >= 0) NlPump(sc, o, 0, nullptr);
          NlCheckBooks(sc, *p);
        }
        closed_fd = p->fd;
        NlCloseProgram(*p);
        Count("pmu nl program closed");
        if (r.OneIn(2)) NlCreateProgram(r, w, sc, dev, btid);
        break;
      }
      case 10:
        if (r.OneIn(3)) NlForkSubscriber(r, sc);
        else if (r.OneIn(2)) NlOpenSocket(r, sc);
        break;
      default:  // the burner stops and starts (a thread program's target exits)
        if (r.OneIn(4)) burner.reset();
        if (!burner) burner.emplace();
        break;
    }
  }
  // The end: programs and sockets close in either order.
  const bool programs_first = r.OneIn(2);
  for (int pass = 0; pass < 2; ++pass) {
    if ((pass == 0) == programs_first) {
      for (NlProg& p : sc.progs)
        if (p.fd >= 0) {
          for (NlSock& o : sc.socks)
            if (o.fd >= 0) NlPump(sc, o, 0, nullptr);
          NlCheckBooks(sc, p);
          NlCloseProgram(p);
        }
    } else {
      for (NlSock& s : sc.socks)
        if (s.fd >= 0) {
          NlPump(sc, s, 0, nullptr);
          ::close(s.fd);
          s.fd = -1;
        }
    }
  }
  burner.reset();
  ::close(dev);
  Count("pmu nl scenes");
}

// A monitor socket closes while its program fires on every page fault,
// and another socket binds the freed port id at once: it never subscribed,
// so no event may reach it (the kernel must not deliver by port id to
// whoever holds it now). Unprivileged, the other socket also tries the
// root parent's port id.
void OpPortIdRace(Worker& w) {
  t_op = "pmu nl port id race";
  Rng& r = w.rng;
  NlScene sc;
  const int family = NlFamily();
  if (family < 0) return;
  sc.family = uint16_t(family);
  int dev = OpenDevice();
  if (!sc.family || dev < 0) {
    if (dev >= 0) ::close(dev);
    return;
  }
  Burner burner(true);
  tprof_pmu_program in{};
  in.scope = TPROF_PMU_SCOPE_THREAD;
  in.pid = burner.tid.load();
  in.nr_counters = 1;
  in.counters[0].kind = TPROF_PMU_EV_SOFTWARE;
  in.counters[0].config = 2;  // page faults
  in.counters[0].threshold = 1;
  in.counters[0].threshold_every = 1;
  NlProg p;
  {
    std::lock_guard<std::mutex> l(g_prog_mu);
    if (::ioctl(dev, TPROF_IOC_PMU_CREATE, &in) != 0) {
      Count("pmu nl port id race create " + ErrName(errno));
      ::close(dev);
      return;
    }
    p.fd = in.fd;
    g_prog_fds[p.fd] = p.stolen;
  }
  p.id = sc.next_id++;
  p.nr_counters = 1;
  sc.progs.push_back(p);
  for (int cycle = 0; cycle < 10; ++cycle) {
    int v = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
    int t = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
    if (v < 0 || t < 0) {
      if (v >= 0) ::close(v);
      if (t >= 0) ::close(t);
      break;
    }
    sockaddr_nl a{};
    a.nl_family = AF_NETLINK;
    a.nl_pid = 0x40000000u + uint32_t(r.Below(0x3fffffff));
    if (::bind(v, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      ::close(v);
      ::close(t);
      continue;
    }
    NlSock vs;
    vs.id = sc.next_id++;
    vs.fd = v;
    vs.portid = a.nl_pid;
    sc.socks.push_back(vs);
    NlSock& victim = sc.socks.back();
    (void)NlSubscribe(sc, victim, p.fd, p.id, "port id race subscribe");
    NlPump(sc, victim, 0, nullptr, 1);
    // The other socket spins on bind() while the monitor closes.
    std::atomic<bool> won{false};
    const uint32_t port = g_unpriv && r.OneIn(4) ? uint32_t(::getppid()) : a.nl_pid;
    std::thread thief([&] {
      sockaddr_nl b{};
      b.nl_family = AF_NETLINK;
      b.nl_pid = port;
      const u64 until = NowNs() + 20'000'000;
      while (NowNs() < until)
        if (::bind(t, reinterpret_cast<sockaddr*>(&b), sizeof(b)) == 0) {
          won = true;
          break;
        }
    });
    ::close(v);
    victim.fd = -1;
    thief.join();
    if (won.load()) {
      Count("pmu nl port id race: freed port id taken");
      NlSock ts;
      ts.id = sc.next_id++;
      ts.fd = t;
      ts.portid = port;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      NlPump(sc, ts, 0, nullptr, 2);  // any event here is a violation
    }
    ::close(t);
  }
  {
    std::lock_guard<std::mutex> l(g_prog_mu);
    g_prog_fds.erase(p.fd);
    ::close(p.fd);
  }
  ::close(dev);
  Count("pmu nl port id races");
}

// The root parent of --unprivileged: a program on its own page faults,
// every one an event, with a monitor socket it closes and reopens (its
// port id, the parent's pid, is what the unprivileged sockets try to bind),
// so that root's events are there to leak.
void RootPmuRound(Rng& r) {
  t_op = "root parent pmu";
  NlScene sc;
  const int family = NlFamily();
  if (family < 0) return;
  sc.family = uint16_t(family);
  int dev = OpenDevice();
  if (!sc.family || dev < 0) {
    if (dev >= 0) ::close(dev);
    return;
  }
  tprof_pmu_program in{};
  in.scope = TPROF_PMU_SCOPE_PROCESS;
  in.nr_counters = 1;
  in.counters[0].kind = TPROF_PMU_EV_SOFTWARE;
  in.counters[0].config = 2;  // page faults
  in.counters[0].threshold = 1;
  in.counters[0].threshold_every = 1;
  // A breakpoint in this binary, which the unprivileged workers run and
  // probe too (on arm64 one uprobe with their consumers): root's hits must
  // not reach them.
  const bool bp = r.OneIn(2);
  if (bp) {
    in.nr_counters = 2;
    in.counters[1].kind = TPROF_PMU_EV_BREAKPOINT;
    in.counters[1].addr = u64(uintptr_t(&tprof_fuzz_spin));
    in.counters[1].threshold = 1;
    in.counters[1].threshold_every = 1;
  }
  if (::ioctl(dev, TPROF_IOC_PMU_CREATE, &in) != 0 &&
      (!bp || (in.nr_counters = 1, ::ioctl(dev, TPROF_IOC_PMU_CREATE, &in) != 0))) {
    ::close(dev);
    return;
  }
  NlProg p;
  p.id = sc.next_id++;
  p.fd = in.fd;
  p.scope = in.scope;
  p.nr_counters = in.nr_counters;
  // This process has one thread; but on arm64 its process breakpoint also
  // counts its descendants, the unprivileged workers, wherever their own
  // probes put the same uprobe into their memory.
  p.single_producer = in.nr_counters == 1;
  sc.progs.push_back(p);
  for (int round = 0; round < 20; ++round) {
    NlSock* s = nullptr;
    for (NlSock& o : sc.socks)
      if (o.fd >= 0) s = &o;
    if (!s) {
      if (!NlOpenSocket(r, sc, true)) break;
      s = &sc.socks.back();
      (void)NlSubscribe(sc, *s, p.fd, p.id, "root subscribe");
    }
    void* m = ::mmap(nullptr, size_t(kPage) * 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) {
      for (int i = 0; i < 16; ++i) static_cast<volatile char*>(m)[i * kPage] = 1;
      ::munmap(m, size_t(kPage) * 16);
    }
    for (int i = 0; i < 8; ++i) tprof_fuzz_spin(2);
    if (r.OneIn(2)) NlPump(sc, *s, 0, nullptr, 5);
    if (r.OneIn(4)) {  // the port id is free for a while; events meanwhile are lost
      ::close(s->fd);
      s->fd = -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  ::close(p.fd);
  for (NlSock& o : sc.socks)
    if (o.fd >= 0) ::close(o.fd);
  ::close(dev);
}

}  // namespace tprof_fuzz::core
