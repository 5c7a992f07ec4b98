// What the breakpoint scene (probes.cc) shares with the PMU programs'
// generic netlink scene (pmu_netlink.cc): the scene's programs and
// sockets, and the requests and reads on them.
#pragma once

#include "core.h"

#include <linux/netlink.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

namespace tprof_fuzz::core {
// Program descriptors of this process that a random-descriptor subscription
// could hit: marked "stolen" (their monitor may have moved) before it is
// sent. Creation, close and such subscriptions hold g_prog_mu, so a number
// cannot change hands in between.
extern std::mutex g_prog_mu;
extern std::map<int, std::shared_ptr<std::atomic<bool>>> g_prog_fds;

struct NlProg {
  u64 id;
  int fd = -1;
  uint32_t scope = 0, nr_counters = 0, nr_rules = 0;
  uint32_t target_tid = 0;           // THREAD scope: the thread counted
  bool single_producer = false;      // one thread raises its events: they are queued in seq order
  bool own_process = false;          // thread or process scope in this process: events of its tree only
  std::shared_ptr<std::atomic<bool>> stolen = std::make_shared<std::atomic<bool>>(false);
  std::set<u64> sockets_ever;        // sockets whose subscription to it was confirmed
};

struct NlSock {
  u64 id;
  int fd = -1;
  uint32_t portid = 0;
  std::set<u64> progs_ever;          // confirmed subscriptions (kNoProg: some other program)
  std::map<uint32_t, u64> pending;   // request seq -> program id, until its reply
  u64 delivered = 0, lost_sum = 0, last_seq = 0;
  bool overran = false;              // ENOBUFS since the last request
};

struct NlScene {
  uint16_t family = 0;
  std::vector<NlProg> progs;
  std::vector<NlSock> socks;
  std::set<uint32_t> strangers;      // processes outside every program's scope (OpProbes)
  uint32_t next_seq = 1;
  u64 next_id = 1;
  NlProg* Prog(u64 id) {
    for (NlProg& p : progs)
      if (p.id == id) return &p;
    return nullptr;
  }
};

struct NlAnswer;  // what a request got (pmu_netlink.cc)

int NlFamily();  // the family's id (0: not registered), -1 without a socket
void NlPump(NlScene& sc, NlSock& s, uint32_t want, NlAnswer* ans, int wait_ms = 0);
int NlSubscribe(NlScene& sc, NlSock& s, int fd, u64 prog, const char* what, uint16_t flags = NLM_F_REQUEST | NLM_F_ACK);
bool NlOpenSocket(Rng& r, NlScene& sc, bool autobind = false);
void NlCloseProgram(NlProg& p);
void NlCheckBooks(NlScene& sc, const NlProg& p);

}  // namespace tprof_fuzz::core
