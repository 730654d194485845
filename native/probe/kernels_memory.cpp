// `xferlab-probe kernels` modes that run on OpenCL only, beside device STREAM and first touch
// (kernels.cpp): copies by host offset and allocator (align), device to device between two devices
// (d2d), CSR SpMV from a matrix file (spmv). Every result is checked; one JSON line per timed sample.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "json.hpp"
#include "kernels_cl.hpp"
#include "kernels_driver.hpp"

namespace xferlab::kcl {

int run_align_mode(Args& args, int device) {
  const auto offsets = args.integers("offsets", "0,1,8,16,32,64,256,4096", 0, 1 << 20);
  const auto allocators = args.words("allocators", "runtime,application", {"runtime", "application"});
  const auto directions = args.words("directions", "h2d,d2h", {"h2d", "d2h"});
  const long long size = args.integer("size", 16 << 20, 1, 1ll << 40);
  const int iterations = static_cast<int>(args.integer("iterations", 10, 1, 1000000));
  args.finish();
  ClDevice dev(device);
  dev.open(1, true);
  const auto& api = dev.api();
  cl::cl_command_queue q = dev.queue(0);
  const size_t bytes = static_cast<size_t>(size);
  const long long most = *std::max_element(offsets.begin(), offsets.end());
  const size_t span = bytes + static_cast<size_t>(most) + 4096;
  ClDevice::Buffer target = dev.buffer(bytes);
  for (const std::string& allocator : allocators) {
    // Runtime: a CL_MEM_ALLOC_HOST_PTR buffer mapped for its host pointer (what the vendors advise
    // for DMA-speed copies); application: posix_memalign'ed pages, as seed 004's engineer used.
    std::unique_ptr<AppMemory> app;
    cl::cl_mem pinned = nullptr;
    unsigned char* base = nullptr;
    cl::cl_int err = cl::CL_SUCCESS;
    if (allocator == "runtime") {
      pinned = api.CreateBuffer(dev.context(), cl::CL_MEM_READ_WRITE | cl::CL_MEM_ALLOC_HOST_PTR, span, nullptr, &err);
      cl_check(err, "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR)");
      base = static_cast<unsigned char*>(api.EnqueueMapBuffer(q, pinned, cl::CL_TRUE, cl::CL_MAP_READ | cl::CL_MAP_WRITE, 0,
                                                              span, 0, nullptr, nullptr, &err));
      cl_check(err, "clEnqueueMapBuffer");
    } else {
      app = std::make_unique<AppMemory>(span);
      base = static_cast<unsigned char*>(app->p);
    }
    const uintptr_t page = (reinterpret_cast<uintptr_t>(base) + 4095) / 4096 * 4096;
    for (long long offset : offsets) {
      unsigned char* host = reinterpret_cast<unsigned char*>(page + static_cast<uintptr_t>(offset));
      for (const std::string& direction : directions) {
        for (size_t i = 0; i < bytes; ++i) host[i] = static_cast<unsigned char>(i * 7 + offset);
        if (direction == "d2h") {
          dev.write(target, host, bytes);  // the device holds the pattern; the host side is cleared
          std::memset(host, 0, bytes);
        }
        for (int it = 0; it < iterations + 1; ++it) {
          cl::cl_event e = nullptr;
          const auto t0 = Clock::now();
          if (direction == "h2d")
            err = api.EnqueueWriteBuffer(q, target.get(), cl::CL_TRUE, 0, bytes, host, 0, nullptr, &e);
          else
            err = api.EnqueueReadBuffer(q, target.get(), cl::CL_TRUE, 0, bytes, host, 0, nullptr, &e);
          cl_check(err, direction == "h2d" ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer");
          const double host_seconds = since(t0);
          const double device_seconds = device_span(api, {e});
          api.ReleaseEvent(e);
          if (it == 0) continue;  // warm-up
          JsonLine()
              .str("record", "sample")
              .str("allocator", allocator)
              .integer("offset_bytes", offset)
              .str("direction", direction)
              .integer("size_bytes", size)
              .integer("iteration", it - 1)
              .number("host_seconds", host_seconds)
              .number("device_seconds", device_seconds)
              .emit();
        }
        std::vector<unsigned char> check(bytes);
        if (direction == "h2d")
          dev.read(target, check.data(), bytes);
        else
          std::memcpy(check.data(), host, bytes);
        long long wrong = -1;
        for (size_t i = 0; i < bytes && wrong < 0; ++i)
          if (check[i] != static_cast<unsigned char>(i * 7 + offset)) wrong = static_cast<long long>(i);
        JsonLine()
            .str("record", "validation")
            .str("allocator", allocator)
            .integer("offset_bytes", offset)
            .str("direction", direction)
            .boolean("ok", wrong < 0)
            .str("what", wrong < 0 ? "every byte as sent" : "byte " + std::to_string(wrong) + " wrong")
            .emit();
      }
    }
    if (pinned) {
      api.EnqueueUnmapMemObject(q, pinned, base, 0, nullptr, nullptr);
      api.Finish(q);
      api.ReleaseMemObject(pinned);
    }
  }
  return 0;
}

template <class T>
void spmv_run(ClDevice& dev, std::ifstream& in, uint64_t rows, uint64_t cols, uint64_t nnz,
              const std::vector<long long>& groups_list, const std::vector<long long>& instances_list, int iterations,
              const std::string& output) {
  std::vector<uint64_t> row_ptr(rows + 1);
  std::vector<uint32_t> col(nnz);
  std::vector<T> val(nnz), x(cols);
  in.read(reinterpret_cast<char*>(row_ptr.data()), static_cast<std::streamsize>(row_ptr.size() * 8));
  in.read(reinterpret_cast<char*>(col.data()), static_cast<std::streamsize>(col.size() * 4));
  in.read(reinterpret_cast<char*>(val.data()), static_cast<std::streamsize>(val.size() * sizeof(T)));
  in.read(reinterpret_cast<char*>(x.data()), static_cast<std::streamsize>(x.size() * sizeof(T)));
  if (!in) throw BadArgument("--matrix: the file ends early (not a matrix xferlab wrote?)");
  if (row_ptr[0] != 0 || row_ptr[rows] != nnz) throw BadArgument("--matrix: row pointers do not span the entries");
  for (uint32_t c : col)
    if (c >= cols) throw BadArgument("--matrix: a column index is out of range");
  const int most = static_cast<int>(*std::max_element(instances_list.begin(), instances_list.end()));
  struct Copy {
    ClDevice::Buffer r, c, v, x, y;
  };
  std::vector<Copy> copies;
  cl::cl_kernel kern_proto = nullptr;
  (void)kern_proto;
  for (int k = 0; k < most; ++k) {
    copies.push_back(Copy{dev.buffer(row_ptr.size() * 8), dev.buffer(col.size() * 4), dev.buffer(val.size() * sizeof(T)),
                          dev.buffer(x.size() * sizeof(T)), dev.buffer(rows * sizeof(T))});
    dev.write(copies[k].r, row_ptr.data(), row_ptr.size() * 8);
    dev.write(copies[k].c, col.data(), col.size() * 4);
    dev.write(copies[k].v, val.data(), val.size() * sizeof(T));
    dev.write(copies[k].x, x.data(), x.size() * sizeof(T));
  }
  const size_t local = pick_local(dev, "spmv");
  // Bytes: the matrix (values, column indices, row pointers), x once, y once: the least an SpMV moves.
  const double moved = static_cast<double>(nnz) * (sizeof(T) + 4) + static_cast<double>(rows + 1) * 8 +
                       static_cast<double>(cols + rows) * sizeof(T);
  for (long long g : groups_list) {
    const size_t groups = g ? static_cast<size_t>(g) : std::max<size_t>(1, (rows + local - 1) / local);
    const size_t global = groups * local;
    for (long long instances : instances_list) {
      std::vector<cl::cl_kernel> kernels;
      for (int k = 0; k < instances; ++k) {
        cl::cl_kernel kern = dev.kernel("spmv");
        dev.arg(kern, 0, copies[k].r), dev.arg(kern, 1, copies[k].c), dev.arg(kern, 2, copies[k].v);
        dev.arg(kern, 3, copies[k].x), dev.arg(kern, 4, copies[k].y), dev.arg(kern, 5, static_cast<cl::cl_ulong>(rows));
        kernels.push_back(kern);
      }
      for (int it = 0; it < iterations + 1; ++it) {
        const Timing timed = launch_all(dev, kernels, global, local);
        if (it == 0) continue;
        JsonLine()
            .str("record", "sample")
            .str("kernel", "spmv")
            .str("type", sizeof(T) == 8 ? "double" : "float")
            .integer("rows", static_cast<long long>(rows))
            .integer("nnz", static_cast<long long>(nnz))
            .integer("groups", static_cast<long long>(groups))
            .integer("local", static_cast<long long>(local))
            .integer("instances", instances)
            .integer("iteration", it - 1)
            .number("host_seconds", timed.host_seconds)
            .number("device_seconds", timed.device_seconds)
            .number("bytes", moved * static_cast<double>(instances))
            .number("flops", 2.0 * static_cast<double>(nnz) * static_cast<double>(instances))
            .emit();
      }
      // Every instance's y to the output file, one after the other, for the caller to check.
      std::ofstream out(output + "." + std::to_string(groups) + "x" + std::to_string(instances), std::ios::binary);
      std::vector<T> y(rows);
      for (int k = 0; k < instances; ++k) {
        dev.read(copies[k].y, y.data(), rows * sizeof(T));
        out.write(reinterpret_cast<const char*>(y.data()), static_cast<std::streamsize>(rows * sizeof(T)));
      }
      if (!out) throw std::runtime_error("cannot write " + output);
      JsonLine()
          .str("record", "result")
          .integer("groups", static_cast<long long>(groups))
          .integer("instances", instances)
          .str("file", output + "." + std::to_string(groups) + "x" + std::to_string(instances))
          .emit();
    }
  }
}

int run_spmv_mode(Args& args, int device) {
  const std::string matrix = args.text("matrix", "");
  const std::string output = args.text("output", "");
  const auto groups_list = args.integers("groups", "0", 0, 1 << 24);
  const auto instances_list = args.integers("instances", "1", 1, 64);
  const int iterations = static_cast<int>(args.integer("iterations", 20, 1, 1000000));
  args.finish();
  if (matrix.empty() || output.empty()) throw BadArgument("spmv needs --matrix FILE and --output PREFIX");
  std::ifstream in(matrix, std::ios::binary);
  if (!in) throw BadArgument("--matrix '" + matrix + "' cannot be read");
  char magic[8] = {0};
  uint64_t head[4] = {0};  // rows, cols, nnz, value bytes (4 or 8)
  in.read(magic, 8);
  in.read(reinterpret_cast<char*>(head), sizeof head);
  if (!in || std::memcmp(magic, "XFCSR1\0\0", 8) != 0 || (head[3] != 4 && head[3] != 8))
    throw BadArgument("--matrix '" + matrix + "' is not a CSR file xferlab wrote");
  const int most = static_cast<int>(*std::max_element(instances_list.begin(), instances_list.end()));
  ClDevice dev(device);
  dev.open(static_cast<size_t>(most), true);
  dev.build("stream", kSource, {options(head[3] == 8 ? "double" : "float", 1)});
  JsonLine()
      .str("record", "setup")
      .str("device_name", dev.text(cl::CL_DEVICE_NAME))
      .integer("device_index", device)
      .integer("compute_units", dev.units)
      .integer("rows", static_cast<long long>(head[0]))
      .integer("cols", static_cast<long long>(head[1]))
      .integer("nnz", static_cast<long long>(head[2]))
      .emit();
  if (head[3] == 8)
    spmv_run<double>(dev, in, head[0], head[1], head[2], groups_list, instances_list, iterations, output);
  else
    spmv_run<float>(dev, in, head[0], head[1], head[2], groups_list, instances_list, iterations, output);
  return 0;
}

// Device to device between two OpenCL devices: "runtime" (both in one context, clEnqueueCopyBuffer
// on the destination's queue: the runtime moves the bytes as it can, peer or through the host; a
// write on the source's queue first puts the data there) and "staged" (a read on the source's queue
// into pinned host memory, a write on the destination's). Both timed with the host clock, checked.
int run_d2d_mode(Args& args, int device) {
  using namespace cl;
  const PeerOptions o = peer_options(args);
  const int peer = o.peer, iterations = o.iterations;
  const long long size = o.size;
  Api api{};
  std::string why = load(api);
  if (!why.empty()) throw NotAvailable(why);
  auto all = all_devices(api, why);
  if (all.size() < 2)
    throw NotAvailable("device to device needs two OpenCL devices; this machine has " + std::to_string(all.size()) +
                       " (PoCL 3 gives two with POCL_DEVICES=\"pthread pthread\"; newer PoCL \"cpu cpu\")");
  for (int d : {device, peer})
    if (d >= static_cast<int>(all.size()))
      throw BadArgument("device " + std::to_string(d) + " does not exist; OpenCL devices: 0.." + std::to_string(all.size() - 1));
  if (device == peer) throw BadArgument("--peer " + std::to_string(peer) + " is the source device itself");
  const cl_device_id ids[2] = {all[device].second, all[peer].second};
  const bool one_platform = all[device].first == all[peer].first;
  cl_int err = CL_SUCCESS;
  const size_t bytes = static_cast<size_t>(size);
  const std::vector<unsigned char> pattern = peer_pattern(bytes);
  std::vector<unsigned char> back(bytes);
  // One context per device for the staged path (also across platforms), one for both otherwise.
  struct Side {
    cl_context context = nullptr;
    cl_command_queue queue = nullptr;
    cl_mem buffer = nullptr;
  };
  JsonLine()
      .str("record", "setup")
      .str("device_name", device_text(api, ids[0], CL_DEVICE_NAME))
      .integer("device_index", device)
      .str("peer_name", device_text(api, ids[1], CL_DEVICE_NAME))
      .integer("peer_index", peer)
      .boolean("one_platform", one_platform)
      .emit();
  for (const std::string path : {"staged", "runtime"}) {
    if (path == "runtime" && !one_platform) {
      JsonLine().str("record", "unavailable").str("path", path)
          .str("reason", "the two devices are on different platforms: no context holds both").emit();
      continue;
    }
    Side side[2];
    cl_context shared = nullptr;
    if (path == "runtime") {
      shared = api.CreateContext(nullptr, 2, ids, nullptr, nullptr, &err);
      cl_check(err, "clCreateContext (two devices)");
    }
    cl_mem pinned = nullptr;
    void* host = nullptr;
    for (int k = 0; k < 2; ++k) {
      side[k].context = shared ? shared : api.CreateContext(nullptr, 1, &ids[k], nullptr, nullptr, &err);
      cl_check(err, "clCreateContext");
      side[k].queue = make_queue(api, side[k].context, ids[k], false, err);
      cl_check(err, "clCreateCommandQueue");
      side[k].buffer = api.CreateBuffer(side[k].context, CL_MEM_READ_WRITE, bytes, nullptr, &err);
      cl_check(err, "clCreateBuffer");
    }
    place_requested();  // --cpus, once the contexts exist (only the first path's call places)
    if (path == "staged") {
      pinned = api.CreateBuffer(side[0].context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, nullptr, &err);
      cl_check(err, "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR)");
      host = api.EnqueueMapBuffer(side[0].queue, pinned, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, nullptr,
                                  nullptr, &err);
      cl_check(err, "clEnqueueMapBuffer");
    }
    for (int it = 0; it < iterations + 1; ++it) {
      // The source device gets the data (untimed), the destination is cleared.
      cl_check(api.EnqueueWriteBuffer(side[0].queue, side[0].buffer, CL_TRUE, 0, bytes, pattern.data(), 0, nullptr, nullptr),
               "clEnqueueWriteBuffer");
      std::fill(back.begin(), back.end(), 0);
      cl_check(api.EnqueueWriteBuffer(side[1].queue, side[1].buffer, CL_TRUE, 0, bytes, back.data(), 0, nullptr, nullptr),
               "clEnqueueWriteBuffer");
      const auto t0 = Clock::now();
      if (path == "staged") {
        cl_check(api.EnqueueReadBuffer(side[0].queue, side[0].buffer, CL_TRUE, 0, bytes, host, 0, nullptr, nullptr),
                 "clEnqueueReadBuffer");
        cl_check(api.EnqueueWriteBuffer(side[1].queue, side[1].buffer, CL_TRUE, 0, bytes, host, 0, nullptr, nullptr),
                 "clEnqueueWriteBuffer");
      } else {
        cl_check(api.EnqueueCopyBuffer(side[1].queue, side[0].buffer, side[1].buffer, 0, 0, bytes, 0, nullptr, nullptr),
                 "clEnqueueCopyBuffer");
        cl_check(api.Finish(side[1].queue), "clFinish");
      }
      const double seconds = since(t0);
      if (it > 0) emit_peer_sample(path, size, it - 1, seconds);
    }
    cl_check(api.EnqueueReadBuffer(side[1].queue, side[1].buffer, CL_TRUE, 0, bytes, back.data(), 0, nullptr, nullptr),
             "clEnqueueReadBuffer");
    emit_peer_validation(path, back, pattern);
    if (pinned) {
      api.EnqueueUnmapMemObject(side[0].queue, pinned, host, 0, nullptr, nullptr);
      api.Finish(side[0].queue);
      api.ReleaseMemObject(pinned);
    }
    for (int k = 0; k < 2; ++k) {
      if (side[k].buffer) api.ReleaseMemObject(side[k].buffer);
      if (side[k].queue) api.ReleaseCommandQueue(side[k].queue);
    }
    if (shared)
      api.ReleaseContext(shared);
    else
      for (int k = 0; k < 2; ++k) api.ReleaseContext(side[k].context);
  }
  return 0;
}

}  // namespace xferlab::kcl
