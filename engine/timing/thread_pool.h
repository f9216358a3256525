#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

namespace stc {

// The host threads of one launch (TimingModel::run_parallel): run(job) calls job(0) on the caller and job(i)
// on each pool thread i that comes in time, and returns once every call returned; the first exception (by
// index) is rethrown. A job takes its work from a shared queue, so a thread that comes late need not come at
// all: once the caller's job returned, the phase is closed, and a thread that comes after that skips it (on a
// host whose cores are busy with other work, a pool thread may get no core for milliseconds). A thread
// waiting for the next phase, or the caller for the threads in a phase, spins a little, then yields, then
// sleeps.
class ThreadPool {
 public:
  explicit ThreadPool(uint32_t n) : errors_(n) {
    for (uint32_t i = 1; i < n; ++i) threads_.emplace_back([this, i] { loop(i); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_.store(true);
    }
    start_.notify_all();
    for (auto& t : threads_) t.join();
  }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void run(const std::function<void(uint32_t)>& job) {
    job_ = &job;
    finished_.store(0, std::memory_order_relaxed);
    gate_.store(0, std::memory_order_release);  // open: a thread that comes adds one
    {
      std::lock_guard<std::mutex> lock(mu_);
      generation_.fetch_add(1, std::memory_order_release);
    }
    start_.notify_all();
    call(0);
    const int64_t entered = gate_.exchange(kClosed, std::memory_order_acq_rel);
    const auto all_done = [&] { return finished_.load(std::memory_order_acquire) == entered; };
    for (uint32_t k = 0; !all_done(); ++k) {
      if (pause(k)) continue;
      std::unique_lock<std::mutex> lock(mu_);
      done_.wait(lock, all_done);
    }
    for (auto& e : errors_)
      if (e) {
        const std::exception_ptr first = e;
        for (auto& x : errors_) x = nullptr;
        std::rethrow_exception(first);
      }
  }

 private:
  static constexpr uint32_t kSpins = 256, kYields = 256;
  static constexpr int64_t kClosed = std::numeric_limits<int64_t>::min() / 2;
  // A wait's k-th round: true after a spin or a yield, false once it should sleep.
  static bool pause(uint32_t k) {
    if (k < kSpins) {
      __builtin_ia32_pause();
      return true;
    }
    if (k < kSpins + kYields) {
      std::this_thread::yield();
      return true;
    }
    return false;
  }
  void call(uint32_t i) {
    try {
      (*job_)(i);
    } catch (...) {
      errors_[i] = std::current_exception();
    }
  }
  void loop(uint32_t i) {
    uint64_t seen = 0;
    for (;;) {
      for (uint32_t k = 0;; ++k) {
        if (stop_.load(std::memory_order_acquire)) return;
        if (const uint64_t g = generation_.load(std::memory_order_acquire); g != seen) {
          seen = g;
          break;
        }
        if (pause(k)) continue;
        std::unique_lock<std::mutex> lock(mu_);
        start_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
      }
      if (gate_.fetch_add(1, std::memory_order_acq_rel) < 0) continue;  // the phase is closed
      call(i);
      finished_.fetch_add(1, std::memory_order_acq_rel);
      std::lock_guard<std::mutex> lock(mu_);
      done_.notify_one();
    }
  }

  std::mutex mu_;
  std::condition_variable start_, done_;
  const std::function<void(uint32_t)>* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int64_t> gate_{kClosed};  // threads in the phase (kClosed and below: closed)
  std::atomic<int64_t> finished_{0};    // threads of the phase whose job returned
  std::atomic<bool> stop_{false};
  std::vector<std::exception_ptr> errors_;
  std::vector<std::thread> threads_;
};

}  // namespace stc
