// `xferlab-probe collab --pattern taskqueue`: task partitioning in the manner of CHAI's TQH,
// simplified (see collab.cpp for the method and the timing). N floats in K = N / block tasks; a task
// transforms its block in place, x <- x*31/32 + x*x/64 + 1/128, `iterations` times.
//   D: static split: the device's first tasks are copied over, transformed by one work-group per
//      task, read back; host threads take the other tasks.
//   U: data and a task counter in fine-grained SVM; persistent device work-groups and host threads
//      pop tasks from the same counter until none are left; the device's share is measured.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "collab.hpp"

namespace xferlab::collab {

using namespace cl;


TaskQueue::TaskQueue(Options& opts, ClDevice& d) : o(opts), dev(d) {
  kd = dev.kernel("tasks_d");
  ku = dev.kernel("tasks_u");
  tasks = (o.size + o.block - 1) / o.block;
  reference.resize(o.size);
  parallel(o.host_threads, tasks, [&](int, size_t lo, size_t hi) {
    for (size_t i = lo * o.block; i < std::min(o.size, hi * o.block); ++i) reference[i] = float_at(i, o.seed);
    for (size_t t = lo; t < hi; ++t) run_task(reference.data(), t);
  });
}

void TaskQueue::run_task(float* data, size_t t) const {
  const size_t first = t * o.block, end = std::min(o.size, first + o.block);
  transform_span(data + first, end - first, o.iterations);
}

void TaskQueue::fill_input(float* data) const {
  parallel(o.host_threads, o.size, [&](int, size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) data[i] = float_at(i, o.seed);
  });
}

// Host threads pop tasks from `next` (host-only in D, shared with the device in U) below `end`.
long long TaskQueue::host_work(float* data, int* next, size_t end) const {
  std::atomic<long long> done{0};
  parallel(o.host_threads, o.host_threads, [&](int, size_t, size_t) {
    long long mine = 0;
    for (;;) {
      const int t = __atomic_fetch_add(next, 1, __ATOMIC_RELAXED);
      if (t < 0 || static_cast<size_t>(t) >= end) break;
      run_task(data, static_cast<size_t>(t));
      ++mine;
    }
    done += mine;
  });
  return done.load();
}

Outcome TaskQueue::run() {
  Outcome out;
  const float* result = nullptr;
  std::unique_ptr<float, void (*)(void*)> host_data(nullptr, std::free);
  float* svm_data = nullptr;
  int* svm_next = nullptr;
  auto t0 = Clock::now();
  if (o.version == "D") {
    const size_t kd_tasks = static_cast<size_t>(std::llround(tasks * o.share));
    const size_t dev_floats = std::min(o.size, kd_tasks * o.block);
    float* data = static_cast<float*>(std::aligned_alloc(4096, (o.size * 4 + 4095) / 4096 * 4096));
    if (!data) throw std::runtime_error("out of host memory for the tasks' data");
    host_data.reset(data);
    auto dbuf = dev.buffer(dev_floats * 4);  // released when this scope ends, however
    fill_input(data);
    out.allocation = since(t0);
    auto t1 = Clock::now();
    dev.write(dbuf, data, dev_floats * 4);
    out.copy = since(t1);
    auto t2 = Clock::now();
    if (kd_tasks) {
      dev.arg(kd, 0, dbuf);
      dev.arg(kd, 1, static_cast<cl_uint>(dev_floats));
      dev.arg(kd, 2, static_cast<cl_uint>(o.block));
      dev.arg(kd, 3, static_cast<cl_int>(o.iterations));
      dev.launch(kd, kd_tasks, kLocal);
    }
    int next = static_cast<int>(kd_tasks);
    out.host_tasks = host_work(data, &next, tasks);
    dev.finish();
    out.kernel = since(t2);
    auto t3 = Clock::now();
    dev.read(dbuf, data, dev_floats * 4);
    out.copy += since(t3);
    out.total = since(t0);
    out.copied_bytes = 2 * dev_floats * 4;
    out.device_tasks = static_cast<long long>(kd_tasks);
    result = data;
  } else {
    try {
      svm_data = static_cast<float*>(dev.svm(o.size * 4, false));
      svm_next = static_cast<int*>(dev.svm(sizeof(int), true));
      *svm_next = 0;
      fill_input(svm_data);
      out.allocation = since(t0);
      auto t2 = Clock::now();
      if (o.share > 0) {  // --device-share 0: the host alone (a baseline)
        dev.svm_arg(ku, 0, svm_data);
        dev.arg(ku, 1, static_cast<cl_uint>(o.size));
        dev.arg(ku, 2, static_cast<cl_uint>(o.block));
        dev.arg(ku, 3, static_cast<cl_int>(o.iterations));
        dev.arg(ku, 4, static_cast<cl_uint>(tasks));
        dev.svm_arg(ku, 5, svm_next);
        dev.launch(ku, std::max<cl_uint>(1, dev.units), kLocal);
      }
      out.host_tasks = o.share < 1 ? host_work(svm_data, svm_next, tasks) : 0;  // 1: the device alone
      dev.finish();
      out.kernel = since(t2);
      out.total = since(t0);
      out.device_tasks = static_cast<long long>(tasks) - out.host_tasks;
      result = svm_data;
    } catch (...) {
      dev.svm_free(svm_next);
      dev.svm_free(svm_data);
      throw;
    }
  }
  out.device_share = tasks ? static_cast<double>(out.device_tasks) / tasks : 0.0;
  if (o.corrupt) const_cast<float*>(result)[o.size / 2] += 1.0f;  // test hook: validation must catch it
  // validation: every element against the host-only reference
  for (size_t i = 0; i < o.size; ++i) {
    const float want = reference[i], have = result[i];
    if (!(std::fabs(have - want) <= 1e-6f * std::max(1.0f, std::fabs(want)))) note_wrong(out, static_cast<long long>(i), want, have);
  }
  if (!out.ok) {
    std::ostringstream msg;
    msg.precision(9);
    msg << out.wrong << " of " << o.size << " elements differ; element " << out.first_wrong << " (task "
        << out.first_wrong / static_cast<long long>(o.block) << "): expected " << out.expected << ", got " << out.got;
    out.what = msg.str();
  }
  dev.svm_free(svm_next);
  dev.svm_free(svm_data);
  return out;
}

}  // namespace xferlab::collab
