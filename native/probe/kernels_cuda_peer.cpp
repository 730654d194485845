// `xferlab-probe kernels --backend cuda --mode d2d --peer J`: device to device between two CUDA
// devices, as nvbandwidth's device_to_device_memcpy_read_ce measures it: the copy is submitted on
// the destination's stream (the destination reads the source), after peer access is enabled in
// both directions where cuDeviceCanAccessPeer allows it. Driver API only (cuda_loader.hpp): a
// context per device (cuCtxCreate, as cuda_backend.cpp makes its one), cuCtxSetCurrent to switch
// between them, cuCtxEnablePeerAccess (CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED is no error: access
// is on), cuMemcpyPeerAsync between two events on the destination's stream.
//
// The path each sample reports: "peer" when the destination's context has peer access to the
// source's memory (cuDeviceCanAccessPeer(destination, source) is 1, the access enabled), "staged"
// when it cannot: cuMemcpyPeerAsync still copies, and the driver stages the bytes through host
// memory. Timed as cuda_backend.cpp's copy_both(): one submission between two events, the host's
// clock around the submission and the wait for the second event, the events' elapsed time as the
// device's. Every copy starts with the destination cleared; the last one's bytes are read back and
// compared with the source's pattern (a "validation" record), as the OpenCL d2d mode does: the
// options, the pattern and the lines are kernels_driver.cpp's, shared with it.
#include <string>
#include <vector>

#include "../loaders/cuda_loader.hpp"
#include "args.hpp"
#include "backend.hpp"
#include "clock.hpp"
#include "json.hpp"
#include "kernels_driver.hpp"
#include "placement.hpp"

namespace xferlab {

using namespace cuda;

namespace {

#define XF_CU(d, fn, ...) cuda_check((d).fn(__VA_ARGS__), #fn)

// One device's side of the copy: its context and its buffer; the destination's also a stream and the
// two events around each copy. Released in its context, the context last.
struct Side {
  const Driver& d;
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUdeviceptr buffer = 0;
  CUstream stream = nullptr;
  CUevent start = nullptr, end = nullptr;
  Side(const Driver& driver, int index, size_t bytes) : d(driver) {
    XF_CU(d, cuDeviceGet, &dev, index);
    XF_CU(d, cuCtxCreate, &ctx, CU_CTX_SCHED_SPIN | CU_CTX_MAP_HOST, dev);
    XF_CU(d, cuMemAlloc, &buffer, bytes);
  }
  ~Side() {
    if (!ctx) return;
    d.cuCtxSetCurrent(ctx);
    d.cuCtxSynchronize();
    if (start) d.cuEventDestroy(start);
    if (end) d.cuEventDestroy(end);
    if (stream) d.cuStreamDestroy(stream);
    if (buffer) d.cuMemFree(buffer);
    d.cuCtxDestroy(ctx);
  }
  Side(const Side&) = delete;
  Side& operator=(const Side&) = delete;
  void current() const { XF_CU(d, cuCtxSetCurrent, ctx); }
  std::string name() const {
    char text[256] = {};
    XF_CU(d, cuDeviceGetName, text, static_cast<int>(sizeof text - 1), dev);
    return text;
  }
};

// Gives `from`'s context access to `to`'s memory where cuDeviceCanAccessPeer says it can; whether it has it.
bool enable_peer_access(const Driver& d, const Side& from, const Side& to) {
  int can = 0;
  XF_CU(d, cuDeviceCanAccessPeer, &can, from.dev, to.dev);
  if (can != 1) return false;
  from.current();
  const CUresult r = d.cuCtxEnablePeerAccess(to.ctx, 0);
  if (r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) cuda_check(r, "cuCtxEnablePeerAccess");
  return true;
}

}  // namespace

// Called by run_kernels_cuda (kernels_cuda.cpp) for --mode d2d.
int run_d2d_cuda(Args& args, int device) {
  const PeerOptions o = peer_options(args);
  const int peer = o.peer, iterations = o.iterations;
  const long long size = o.size;
  if (device == peer) throw BadArgument("--peer " + std::to_string(peer) + " is the source device itself");
  const std::string why = load_cuda();
  if (!why.empty()) throw NotAvailable(why);
  const std::string missing = cuda_peer_missing();
  if (!missing.empty())
    throw NotAvailable(cuda_library() + " does not export " + missing +
                       ": device to device between two CUDA devices needs the driver's peer calls (CUDA 4.0+)");
  const Driver& d = cuda_driver();
  int count = 0;
  XF_CU(d, cuDeviceGetCount, &count);
  if (count < 2)
    throw NotAvailable("device to device needs two CUDA devices; the driver sees " + std::to_string(count));
  for (int k : {device, peer})
    if (k >= count)
      throw BadArgument("device " + std::to_string(k) + " does not exist; CUDA devices: 0.." + std::to_string(count - 1));
  const size_t bytes = static_cast<size_t>(size);
  Side src(d, device, bytes), dst(d, peer, bytes);
  place_requested();  // --cpus: once the contexts (and the driver's threads) exist
  const bool peer_path = enable_peer_access(d, dst, src);  // the destination reads the source
  const bool reverse = enable_peer_access(d, src, dst);    // and the other way, as nvbandwidth enables both
  const std::string path = peer_path ? "peer" : "staged";
  dst.current();
  XF_CU(d, cuStreamCreate, &dst.stream, CU_STREAM_NON_BLOCKING);
  XF_CU(d, cuEventCreate, &dst.start, CU_EVENT_DEFAULT);
  XF_CU(d, cuEventCreate, &dst.end, CU_EVENT_DEFAULT);
  JsonLine()
      .str("record", "setup")
      .str("device_name", src.name())
      .integer("device_index", device)
      .str("peer_name", dst.name())
      .integer("peer_index", peer)
      .str("path", path)
      .boolean("peer_access", peer_path)
      .boolean("reverse_peer_access", reverse)
      .emit();

  const std::vector<unsigned char> pattern = peer_pattern(bytes);
  std::vector<unsigned char> back(bytes, 0);
  src.current();
  XF_CU(d, cuMemcpyHtoD, src.buffer, pattern.data(), bytes);
  XF_CU(d, cuCtxSynchronize);
  dst.current();
  for (int it = 0; it < iterations + 1; ++it) {  // the first copy a warm-up, not reported
    XF_CU(d, cuMemcpyHtoD, dst.buffer, back.data(), bytes);  // the destination cleared, untimed
    XF_CU(d, cuCtxSynchronize);
    const auto t0 = Clock::now();
    XF_CU(d, cuEventRecord, dst.start, dst.stream);
    XF_CU(d, cuMemcpyPeerAsync, dst.buffer, dst.ctx, src.buffer, src.ctx, bytes, dst.stream);
    XF_CU(d, cuEventRecord, dst.end, dst.stream);
    XF_CU(d, cuEventSynchronize, dst.end);
    const double seconds = since(t0);
    float ms = 0.0f;
    XF_CU(d, cuEventElapsedTime, &ms, dst.start, dst.end);
    if (it > 0) emit_peer_sample(path, size, it - 1, seconds, ms * 1e-3);
  }
  XF_CU(d, cuMemcpyDtoH, back.data(), dst.buffer, bytes);
  emit_peer_validation(path, back, pattern);
  return 0;
}

}  // namespace xferlab
