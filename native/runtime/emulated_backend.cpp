// An emulated accelerator: a device thread on the host behind a message queue, with a bus of
// configurable one-way latency and bandwidth, so that one can ask what the runtime buys on a bus one
// does not have (CCI-P ~500 ns a leg, PCIe Gen3 738.77 ns, CXL 40 ns: see `xferlab runtime bench`).
//
// The bus model, per transaction (seed 002's coherent-bus view; seed 000's t = n/b + t_s per leg):
//   write a window of B bytes: the host is busy B / bandwidth pushing it; the doorbell reaches the device
//     one latency later, and the device runs the window then (posted: the host does not wait);
//   read B bytes: the request reaches the device one latency later, after every earlier window has run;
//     the data reaches the host one latency + B / bandwidth after the device answers; the host waits.
// Waiting is a spin on the steady clock (sleeping is far coarser than these latencies); the device
// thread also spins on its queue for a while (kIdleSpin) before it sleeps, so that a message is picked up
// in well under a microsecond (a condition-variable wake-up alone costs several). The device executes
// with the same interpreter as the OpenCL kernel (ops/interp.h), in request order.
//
// Its compute speed (issue 29): with device_rounds > 0 the device also spends that many rounds of work
// (work.hpp) on every request after interpreting it, real computation on this CPU, where the host's plain
// computation spends Options::work rounds on every operation: device_rounds = work / speed makes the
// device compute a request `speed` times faster than the host (its interpreter's own cost on top). The
// time the device thread spends computing windows is measured (BusCounters::busy_ns).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cmath>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>

#include <sched.h>

#include "runtime.hpp"
#include "device_errors.hpp"
#include "xf_portable.h"
#include "posit32.h"
#include "enc64.h"
#include "interp.h"
#include "bus_count.hpp"
#include "work.hpp"

static_assert(XF_ERR_NONE == 0 && XF_ERR_OPCODE == 1 && XF_ERR_SLOT == 2 && XF_ERR_INJECTED == 3,
              "device_errors.hpp describes the codes of ops/interp.h by number");

namespace xferlab::runtime {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kIdleSpin = std::chrono::milliseconds(2);

// One iteration of a busy wait: tells the core (and a sibling hyper-thread) that this is a spin.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  asm volatile("yield" ::: "memory");
#endif
}

void spin_until(Clock::time_point t) {
  while (Clock::now() < t) cpu_relax();
}

// CPUs this process may run on: the host and the device thread both spin, so with fewer than two
// they time-slice and every wait grows by a scheduler quantum.
unsigned usable_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return static_cast<unsigned>(CPU_COUNT(&set));
  return std::thread::hardware_concurrency();
}

struct Reply {
  std::atomic<bool> ready{false};
  Clock::time_point arrives;
  std::vector<uint64_t> values;
};

struct Message {
  enum Kind { window, read_slot, read_out, barrier } kind;
  Clock::time_point delivered;
  std::vector<uint64_t> words;  // window: its records
  uint32_t n = 0;               // window: requests; read_out: entries
  uint32_t slot = 0;            // read_slot
  Reply* reply = nullptr;       // reads and barriers
};

class Emulated final : public Bus {
 public:
  Emulated(double latency, double bandwidth, uint32_t rounds)
      : latency_(checked(latency)), bandwidth_(bandwidth), rounds_(rounds) {
    if (!(bandwidth > 0) || !std::isfinite(bandwidth))
      throw std::invalid_argument("emulated bandwidth must be a finite rate above 0 B/s");
  }

  // The latency as a clock duration, checked before the conversion (a huge or NaN value is undefined there).
  static Clock::duration checked(double latency) {
    if (!(latency >= 0 && latency <= 1.0)) throw std::invalid_argument("emulated latency must be 0 s to 1 s");
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(latency));
  }

  ~Emulated() override {
    stop_flag_.store(true);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_one();
    if (device_.joinable()) device_.join();
  }

  std::string name() const override {
    char text[160];
    const unsigned cpus = usable_cpus();
    char work[48] = "";
    if (rounds_) std::snprintf(work, sizeof work, ", %u rounds of work a request", rounds_);
    std::snprintf(text, sizeof text, "emulated: one-way latency %.4g ns, %.4g GB/s%s%s",
                  std::chrono::duration<double>(latency_).count() * 1e9, bandwidth_ / 1e9, work,
                  cpus < 2 ? "; time-sliced: one CPU for the host and the device thread, waits are not the bus's" : "");
    return text;
  }

  void open(uint32_t slots, uint32_t max_window, const uint32_t round_keys[27]) override {
    slots_.assign(slots, 0);
    out_.assign(max_window, 0);
    std::copy(round_keys, round_keys + 27, round_keys_);
    device_ = std::thread([this] { run(); });
  }

  void launch(const uint64_t* words, uint32_t n, uint32_t) override {
    Message m{Message::window, {}, std::vector<uint64_t>(words, words + static_cast<size_t>(n) * XF_WORDS), n};
    spin_until(Clock::now() + transfer(n * XF_WORDS * 8.0));  // the host pushes the records
    m.delivered = Clock::now() + latency_;
    post(std::move(m));
  }

  void read_out(uint64_t* dst, uint32_t n_out) override {
    Reply reply;
    Message m{Message::read_out, Clock::now() + latency_, {}, n_out};
    m.reply = &reply;
    post(std::move(m));
    wait(reply);
    std::copy(reply.values.begin(), reply.values.end(), dst);
  }

  uint64_t read_slot(uint32_t slot) override {
    Reply reply;
    Message m{Message::read_slot, Clock::now() + latency_, {}, 0, slot};
    m.reply = &reply;
    post(std::move(m));
    wait(reply);
    return reply.values.at(0);
  }

  // The status word lives in memory both sides share here: reading it only waits for the device to
  // finish what was sent before (no bus time is charged, and no read is counted).
  uint32_t status(std::string* detail) override {
    if (done_.load(std::memory_order_acquire) != posted_) {  // windows still running: wait for them
      Reply reply;
      Message m{Message::barrier, Clock::now(), {}};
      m.reply = &reply;
      post(std::move(m));
      wait(reply);
    }
    uint32_t code = error_.load();
    if (code && detail) *detail = describe_error(code);
    return code;
  }

  // Counted by the device thread as it handles each message; read once the device has handled every
  // message posted (status() waits for that), so the two threads never touch counted_ at once.
  BusCounters counted() override {
    status(nullptr);
    return counted_;
  }

 private:
  Clock::duration transfer(double bytes) const {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(bytes / bandwidth_));
  }

  void post(Message m) {
    bool sleeping;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(m));
      posted_++;
      sleeping = sleeping_;
    }
    if (sleeping) wake_.notify_one();
  }

  void wait(Reply& reply) {
    while (!reply.ready.load(std::memory_order_acquire)) cpu_relax();
    spin_until(reply.arrives);
    std::string failure;
    {
      std::lock_guard<std::mutex> lock(error_mutex_);
      failure = device_error_;
    }
    if (!failure.empty()) throw std::runtime_error("emulated device: " + failure);
  }

  bool take(Message& m) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (queue_.empty()) return false;
    m = std::move(queue_.front());
    queue_.pop_front();
    return true;
  }

  void run() {
    for (;;) {
      Message m;
      auto idle_until = Clock::now() + kIdleSpin;
      bool got = false;
      while (!(got = take(m)) && Clock::now() < idle_until && !stop_flag_.load(std::memory_order_relaxed)) cpu_relax();
      if (!got) {
        std::unique_lock<std::mutex> lock(mutex_);
        sleeping_ = true;
        wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        sleeping_ = false;
        if (queue_.empty()) return;
        m = std::move(queue_.front());
        queue_.pop_front();
      }
      spin_until(m.delivered);
      try {
        handle(m);
      } catch (const std::exception& e) {  // surfaces on the host at its next read; the first error is kept
        {
          std::lock_guard<std::mutex> lock(error_mutex_);
          if (device_error_.empty()) device_error_ = e.what();
        }
        uint32_t none = 0;
        error_.compare_exchange_strong(none, kDeviceThreadFailed);
      }
      done_.fetch_add(1, std::memory_order_release);
      if (m.reply) m.reply->ready.store(true, std::memory_order_release);
    }
  }

  void handle(Message& m) {
    switch (m.kind) {
      case Message::window: {
        count_window(counted_, m.words.data(), m.n);
        const auto t0 = Clock::now();
        for (uint32_t i = 0; i < m.n; i++) {
          xf_u32 err = xf_step(m.words.data(), i, m.n, slots_.data(), static_cast<xf_u32>(slots_.size()), out_.data(),
                               round_keys_);
          uint32_t none = 0;
          if (err) error_.compare_exchange_strong(none, err);
          if (rounds_) {  // the request's work, from its result (its destination slot: word 1's low half)
            const uint32_t dst = static_cast<uint32_t>(m.words[uint64_t(i) * XF_WORDS + 1]);
            spend(dst < slots_.size() ? slots_[dst] : 0, rounds_);
          }
        }
        counted_.busy_ns += static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
        break;
      }
      case Message::read_slot:
        count_read(counted_, 8, 1);
        m.reply->values.assign(1, m.slot < slots_.size() ? slots_[m.slot] : 0);
        m.reply->arrives = Clock::now() + latency_ + transfer(8);
        break;
      case Message::read_out:
        m.reply->values.assign(out_.begin(), out_.begin() + std::min<size_t>(m.n, out_.size()));
        count_read(counted_, 8 * m.reply->values.size(), m.reply->values.size());
        m.reply->arrives = Clock::now() + latency_ + transfer(8.0 * m.n);
        break;
      case Message::barrier: m.reply->arrives = Clock::now(); break;
    }
  }

  Clock::duration latency_;
  double bandwidth_;
  uint32_t rounds_;  // work a request (work.hpp), besides the interpreter
  std::vector<uint64_t> slots_, out_;
  uint32_t round_keys_[27] = {};
  BusCounters counted_;  // device thread only, until counted() has waited for it
  std::thread device_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Message> queue_;
  bool stop_ = false;
  bool sleeping_ = false;
  std::atomic<bool> stop_flag_{false};
  uint64_t posted_ = 0;             // messages posted (host thread only)
  std::atomic<uint64_t> done_{0};   // messages handled (device thread)
  std::atomic<uint32_t> error_{0};  // the first device-side error code
  std::mutex error_mutex_;          // guards device_error_ (set by the device thread, read by the host)
  std::string device_error_;        // the first exception's text
};

}  // namespace

std::unique_ptr<Bus> make_emulated(double latency_seconds, double bandwidth_bytes_per_second, uint32_t device_rounds) {
  return std::make_unique<Emulated>(latency_seconds, bandwidth_bytes_per_second, device_rounds);
}

}  // namespace xferlab::runtime
