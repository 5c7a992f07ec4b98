#include "refresh_thread.h"

#include <pthread.h>
#include <signal.h>

#include <utility>

namespace tprof::cli {

RefreshThread::RefreshThread(std::function<bool(TopInterval&)> show, std::function<void()> last)
    : show_(std::move(show)), last_(std::move(last)) {
  // Ctrl-C and SIGTERM are the recorder's: the thread starts with them
  // blocked, whatever the caller's mask is when it handles them.
  sigset_t stop, old;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &stop, &old);
  thread_ = std::thread([this] { Loop(); });
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

RefreshThread::~RefreshThread() { Stop(); }

bool RefreshThread::Offer(const std::function<TopInterval()>& make) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || busy_ || pending_) return false;
    pending_ = make();
  }
  cv_.notify_one();
  return true;
}

void RefreshThread::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void RefreshThread::StopAfterPending() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    show_pending_ = true;
  }
  Stop();
}

void RefreshThread::Loop() {
  for (;;) {
    TopInterval interval;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || pending_.has_value(); });
      if (stopping_ && !(show_pending_ && pending_)) return;
      interval = std::move(*pending_);
      pending_.reset();
      busy_ = true;
    }
    const bool more = show_(interval);
    {
      std::lock_guard<std::mutex> lock(mu_);
      busy_ = false;
      if (!more) stopping_ = true;
    }
    if (!more) {
      last_();
      return;
    }
  }
}

}  // namespace tprof::cli
