// `xferlab-probe collab`: collaborative CPU–device patterns in the manner of CHAI (Gómez-Luna et
// al., ISPASS 2017), the suite seed 001 runs on the AC922 in its 'D' and 'U' versions (Figure 4:
// time split into allocation, copy and kernel, normalized to D). On OpenCL this file creates its
// own context, queue and program through the run-time loader; --backend cuda runs the histogram and
// PAD on the CUDA driver (collab_cuda.cpp, collab_cuda_pad.cpp; --advise: PAD U's cuMemAdvise hints). This file parses the options, builds
// the kernels and writes the records; each pattern is in its own file (collab_histogram.cpp,
// collab_taskqueue.cpp, collab_pad.cpp) and what they share is in collab.hpp.
//
//   histogram  data partitioning (CHAI HSTI): N pseudo-random 32-bit values binned by their top
//              byte into 256 bins; the device takes the first `device-share` of the input, T host
//              threads the rest, all adding into the same histogram. As in CHAI, every work-group
//              and every host thread counts into a private histogram (local memory / stack) and
//              then adds it to the shared one with one atomic add per bin.
//              D: the device's part is copied to a device buffer (clEnqueueWriteBuffer), the device
//                 counts into its own device-buffer histogram, which is read back
//                 (clEnqueueReadBuffer) and added to the host threads' histogram.
//              U: input and the one histogram live in fine-grained SVM; the kernel adds with
//                 atomic_fetch_add_explicit(memory_scope_all_svm_devices) (OpenCL C 2.0 or 3.0;
//                 CL1.2's atomic_add when the compiler refuses them: see build_kernels, and the
//                 setup record's atomics_path) while host threads add with __atomic_fetch_add to
//                 the same bins.
//   pad        CHAI's PAD, in place (collab_pad.cpp): rows x cols floats padded to rows x (cols + pad)
//              in the same buffer, rows moved from the last with a flag a row; D a static split of
//              the rows, U device work-groups and host threads popping rows from one SVM counter.
//   trns       CHAI's TRNS, in-place transposition (collab_trns.cpp): height x width floats as
//              super-elements of --super-element floats, transposed in place by following cycles,
//              a flag a super-element; D the device alone (CHAI's D runs one side alone), U device
//              work-groups and host threads popping cycle starts from one SVM counter.
//   bs         CHAI's BS (collab_bs.cpp): a Bézier surface evaluated tile by tile; D a static split of
//              the tiles, U device work-groups and host threads taking tiles from one SVM counter.
//   taskqueue  task partitioning (CHAI TQH, simplified): N floats in K = N / block tasks; a task
//              transforms its block in place, x <- x*31/32 + x*x/64 + 1/128, `iterations` times.
//              D: static split: the device's first tasks are copied over, transformed by one
//                 work-group per task, read back; host threads take the other tasks.
//              U: data and a task counter in fine-grained SVM; persistent device work-groups and
//                 host threads pop tasks from the same counter (atomic fetch-add) until none are
//                 left, working in place; the device's share is measured, not chosen
//                 (--device-share 0 or 1 runs the host or the device alone).
//
// Timing (std::chrono::steady_clock, per repeat): allocation (buffers / SVM, and initialising the
// inputs), copy (explicit transfers, 0 for U), kernel (from the kernel's enqueue until both it and
// the host threads are done: the wall time of the collaborative compute phase), total (all three,
// wall). The first --warmup repeats (default 10, CHAI's) are warm-ups (the first pays the kernel's
// first-launch compilation), then --repeats (default 100) timed ones. Every repeat is
// validated outside the timed region against a host-only reference computed once.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../loaders/opencl_loader.hpp"
#include "args.hpp"
#include "backend.hpp"
#include "cl_device.hpp"
#include "collab.hpp"
#include "json.hpp"
#include "placement.hpp"
#include "probe.hpp"

namespace xferlab {

namespace {

using namespace cl;
using namespace collab;


std::string capabilities_json(cl_device_atomic_capabilities caps) {
  std::string out = "[";
  const struct {
    cl_device_atomic_capabilities bit;
    const char* name;
  } names[] = {{CL_DEVICE_ATOMIC_ORDER_RELAXED, "relaxed"},      {CL_DEVICE_ATOMIC_ORDER_ACQ_REL, "acq_rel"},
               {CL_DEVICE_ATOMIC_ORDER_SEQ_CST, "seq_cst"},      {CL_DEVICE_ATOMIC_SCOPE_WORK_ITEM, "work_item"},
               {CL_DEVICE_ATOMIC_SCOPE_WORK_GROUP, "work_group"}, {CL_DEVICE_ATOMIC_SCOPE_DEVICE, "device"},
               {CL_DEVICE_ATOMIC_SCOPE_ALL_DEVICES, "all_devices"}};
  for (auto& n : names)
    if (caps & n.bit) out += std::string(out.size() > 1 ? "," : "") + "\"" + n.name + "\"";
  return out + "]";
}

// Why the U version cannot run on `dev`, or "".
std::string lacks_shared_atomics(ClDevice& dev) {
  if (!dev.svm_api()) return "the OpenCL library has no SVM entry points (clSVMAlloc, clSetKernelArgSVMPointer: OpenCL 2.0)";
  if (!(dev.svm_caps & CL_DEVICE_SVM_FINE_GRAIN_BUFFER) || !(dev.svm_caps & CL_DEVICE_SVM_ATOMICS))
    return "device '" + dev.text(CL_DEVICE_NAME) + "' lacks fine-grained SVM buffers with SVM atomics "
           "(CL_DEVICE_SVM_CAPABILITIES = " + std::to_string(dev.svm_caps) + ")";
  return "";
}

// One word from `allowed` (not a list).
std::string one_of(Args& args, const char* name, const char* fallback, const std::vector<std::string>& allowed) {
  auto words = args.words(name, fallback, allowed);
  if (words.size() != 1) throw BadArgument(std::string("--") + name + " takes one value, not a list");
  return words[0];
}

}  // namespace

// Builds the kernels, trying in turn: OpenCL C 2.0 (the C11 atomics with
// memory_scope_all_svm_devices); OpenCL C 3.0 with them; OpenCL C 3.0 with the feature macro
// __opencl_c_atomic_scope_all_devices defined by us, only when the device reports
// CL_DEVICE_ATOMIC_SCOPE_ALL_DEVICES (OpenCL 3.0 ties the macro to that capability; PoCL 3.x
// reports the capability but its compiler leaves the macro undefined, and its CL2.0 mode lacks the
// C11 atomic functions); last, OpenCL C 1.2's atomic_add. Sets the options and the atomics that
// were built; returns the seconds it took.
double collab::build_kernels(ClDevice& dev, std::string& options, std::string& atomics, std::string& path) {
  auto t0 = Clock::now();
  const std::string c11 = "atomic_fetch_add_explicit(memory_order_relaxed, memory_scope_all_svm_devices)";
  std::vector<std::string> tried = {"-cl-std=CL2.0 -DXFERLAB_C11=1", "-cl-std=CL3.0 -DXFERLAB_C11=1"};
  std::vector<std::string> names = {"OpenCL C 2.0 " + c11, "OpenCL C 3.0 " + c11};
  std::vector<std::string> paths = {"c11-cl2.0", "c11-cl3.0"};
  if (dev.atomic_caps & CL_DEVICE_ATOMIC_SCOPE_ALL_DEVICES) {
    tried.push_back("-cl-std=CL3.0 -DXFERLAB_C11=1 -D__opencl_c_atomic_scope_all_devices=1");
    names.push_back("OpenCL C 3.0 " + c11 +
                    " (feature macro __opencl_c_atomic_scope_all_devices defined by xferlab: the device reports "
                    "CL_DEVICE_ATOMIC_SCOPE_ALL_DEVICES)");
    paths.push_back("c11-cl3.0-feature-defined");
  }
  tried.push_back("-DXFERLAB_C11=0");
  names.push_back("OpenCL C 1.2 atomic_add (no memory scope)");
  paths.push_back("cl1.2-atomic_add");
  const size_t built = dev.build("collab", sources::k_collab, tried);  // src/xferlab/kernels/collab.cl
  options = tried[built];
  atomics = names[built];
  path = paths[built];
  return since(t0);
}

int run_collab(Args& args) {
  const std::string backend = args.text("backend", "opencl");
  Options o;
  o.device = static_cast<int>(args.integer("device", 0, 0, 4096));
  o.pattern = one_of(args, "pattern", "histogram", {"histogram", "taskqueue", "pad", "trns", "bs"});
  o.version = one_of(args, "version", "D", {"D", "U"});
  o.size = static_cast<size_t>(args.integer("size", 16ll << 20, 1, (1ll << 31) - 1));
  o.block = static_cast<size_t>(args.integer("block", 4096, 1, 1 << 24));
  o.iterations = static_cast<int>(args.integer("iterations", 16, 0, 1 << 20));
  o.cols = static_cast<size_t>(args.integer("cols", 8192, 1, (1ll << 31) - 1));  // CHAI's PAD task: 32 x 256 values
  o.pad = static_cast<size_t>(args.integer("pad", 16, 0, (1ll << 31) - 1));
  const bool size_given = args.given("size");
  o.height = static_cast<size_t>(args.integer("height", 197, 1, (1ll << 31) - 1));  // CHAI's -m
  o.width = static_cast<size_t>(args.integer("width", 2048, 1, (1ll << 31) - 1));   // CHAI's -n
  o.super_element = static_cast<size_t>(args.integer("super-element", 32, 1, 4 * kLocal));  // CHAI's -s
  o.resolution = static_cast<size_t>(args.integer("resolution", 300, 2, 16384));  // BS: CHAI's -n 300
  o.tile = static_cast<size_t>(args.integer("tile", 16, 1, 16384));               // BS: CHAI's -i 16
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  o.host_threads = static_cast<int>(args.integer("host-threads", std::max(1u, cores / 2), 1, 1024));
  o.repeats = static_cast<int>(args.integer("repeats", 100, 1, 100000));  // timed runs (CHAI's -r 100)
  o.warmups = static_cast<int>(args.integer("warmup", 10, 0, 100000));   // before them (CHAI's -w 10)
  o.share = args.real("device-share", 0.5, 0.0, 1.0);
  o.seed = static_cast<uint64_t>(args.integer("seed", 1, 0, 1ll << 62));
  o.corrupt = args.flag("corrupt");
  const bool advise_given = args.given("advise");
  o.advise = one_of(args, "advise", "none", {"none", "preferred-device", "accessed-by", "read-mostly", "flags-accessed-by"});
  const std::vector<int> cpus = args.given("cpus") ? parse_cpu_list(args.text("cpus", ""), "--cpus") : std::vector<int>{};
  read_program_option(args);
  args.finish();
  // the host thread, and the host threads it starts, placed on --cpus once the device is open (ClDevice::open)
  o.process_cpus = std::max<int>(1, static_cast<int>(allowed_cpus().size()));  // before --cpus places this thread
  if (!cpus.empty()) request_placement(cpus);
  if (backend != "opencl" && backend != "cuda")
    throw BadArgument("--backend '" + backend + "' is not allowed; collab runs on: opencl, cuda");
  if (advise_given && (backend != "cuda" || o.pattern != "pad" || o.version != "U"))
    throw BadArgument("--advise " + o.advise + ": the cuMemAdvise hints apply only with --backend cuda --pattern pad --version U");
  if (o.pattern == "taskqueue" && (o.size + o.block - 1) / o.block > (1u << 30))
    throw BadArgument("--size / --block gives more than 2^30 tasks");
  if (o.pattern == "pad" && (o.size % o.cols || o.size / o.cols * (o.cols + o.pad) > (1ull << 31) - 1))
    throw BadArgument("--size " + std::to_string(o.size) + " with --cols " + std::to_string(o.cols) + " and --pad " +
                      std::to_string(o.pad) + ": the size must be whole rows and the padded matrix at most 2^31-1 floats");
  if (backend == "cuda") return run_collab_cuda(o);  // collab_cuda.cpp, collab_cuda_pad.cpp: D and U on managed memory

  if (o.pattern == "trns") {
    if (size_given) throw BadArgument("--size does not apply to --pattern trns: its matrix is --height x --width floats");
    if (o.width % o.super_element)
      throw BadArgument("--width " + std::to_string(o.width) + " is not a multiple of --super-element " +
                        std::to_string(o.super_element) + ": TRNS moves whole super-elements");
    if (o.height * o.width > (1ull << 31) - 1 || o.height * (o.width / o.super_element) > (1ull << 30))
      throw BadArgument("--height " + std::to_string(o.height) + " x --width " + std::to_string(o.width) +
                        ": the matrix must hold at most 2^31-1 floats in at most 2^30 super-elements");
    o.size = o.height * o.width;
  }
  if (o.pattern == "bs" && o.tile > o.resolution)
    throw BadArgument("--tile " + std::to_string(o.tile) + " is larger than --resolution " + std::to_string(o.resolution) +
                      "; allowed: 1.." + std::to_string(o.resolution));
  if (o.pattern == "bs") o.size = o.resolution * o.resolution * 3;  // BS: the surface's floats

  ClDevice dev(o.device);
  if (o.version == "U") {
    std::string why = lacks_shared_atomics(dev);
    if (!why.empty()) throw NotAvailable(why);
  }
  const size_t floats = o.pattern == "pad" ? o.size / o.cols * (o.cols + o.pad) : o.size;  // trns: height * width
  if (floats * 4 > dev.max_alloc)
    throw BadArgument("--size " + std::to_string(o.size) + " needs " + std::to_string(floats * 4) +
                      "-byte buffers, above the device's largest allocation of " + std::to_string(dev.max_alloc) + " bytes");
  if (dev.max_group && dev.max_group < kLocal)
    throw NotAvailable("the device's work-groups hold at most " + std::to_string(dev.max_group) + " work-items; collab needs " +
                       std::to_string(kLocal));
  dev.open();
  std::string options, atomics, path;
  const double build_seconds = build_kernels(dev, options, atomics, path);

  std::unique_ptr<Histogram> hist;
  std::unique_ptr<TaskQueue> queue;
  std::unique_ptr<Pad> pad;
  std::unique_ptr<Trns> trns;
  std::unique_ptr<Bs> bs;
  if (o.pattern == "histogram") hist = std::make_unique<Histogram>(o, dev);
  else if (o.pattern == "pad") pad = std::make_unique<Pad>(o, dev);
  else if (o.pattern == "trns") trns = std::make_unique<Trns>(o, dev);
  else if (o.pattern == "bs") bs = std::make_unique<Bs>(o, dev);
  else queue = std::make_unique<TaskQueue>(o, dev);

  const bool u = o.version == "U";
  std::string shared;
  if (o.pattern == "histogram")
    shared = u ? atomics + " on one fine-grained SVM histogram; host: __atomic_fetch_add"
               : "none shared: device histogram in a device buffer, read back and added to the host threads' one";
  else if (pad)
    shared = u ? atomics + " on a fine-grained SVM row counter and row flags; host: __atomic_fetch_add, "
                 "__atomic_load_n/__atomic_store_n (acquire/release)"
               : "none shared: static split, the device's rows copied over and back, flags in device buffers";
  else if (trns)
    shared = u ? atomics + " on a fine-grained SVM counter of cycle starts and a flag a super-element (add of 0, "
                 "exchange: acquire-release); host: __atomic_fetch_add, __atomic_exchange_n"
               : "none shared: one side alone (CHAI's D), the device's matrix, flags and counter copied over, the matrix back";
  else if (bs)
    shared = u ? atomics + " on a fine-grained SVM tile counter; host: __atomic_fetch_add"
               : "none shared: static split, the control points copied over, the device's tiles back";
  else
    shared = u ? atomics + " on a fine-grained SVM task counter; host: __atomic_fetch_add"
               : "none shared: static split, the device's tasks copied over and back";
  JsonLine setup;
  setup.str("probe", "collab")
      .str("record", "setup")
      .str("backend", "opencl")
      .integer("device_index", o.device)
      .str("device_name", dev.text(CL_DEVICE_NAME))
      .str("device_version", dev.text(CL_DEVICE_VERSION))
      .str("opencl_c", dev.text(CL_DEVICE_OPENCL_C_VERSION))
      .integer("compute_units", dev.units)
      .boolean("svm_fine_grain", dev.svm_caps & CL_DEVICE_SVM_FINE_GRAIN_BUFFER)
      .boolean("svm_atomics", dev.svm_caps & CL_DEVICE_SVM_ATOMICS)
      .raw("atomic_memory_capabilities", capabilities_json(dev.atomic_caps))
      .str("build_options", options)
      .str("atomics", atomics)
      .str("atomics_path", path)
      .str("build_refused", dev.refused)
      .number("build_seconds", build_seconds)
      .str("shared_atomics", shared)
      .str("pattern", o.pattern)
      .str("version", o.version)
      .integer("size", static_cast<long long>(o.size))
      .integer("host_threads", o.host_threads)
      .str("host_cpus", placed_cpus_text())
      .number("device_share", o.share)
      .integer("repeats", o.repeats)
      .integer("warmups", o.warmups)
      .integer("seed", static_cast<long long>(o.seed))
      .integer("local_size", kLocal);
  if (pad) {
    setup.integer("rows", static_cast<long long>(pad->rows))
        .integer("cols", static_cast<long long>(o.cols))
        .integer("pad", static_cast<long long>(o.pad))
        .integer("tasks", static_cast<long long>(pad->rows))
        .str("split", u ? "dynamic" : "static")
        .integer("work_groups", static_cast<long long>(pad->groups))
        .str("work_groups_rule", pad->groups_rule);
  } else if (trns) {
    setup.integer("height", static_cast<long long>(o.height))
        .integer("width", static_cast<long long>(o.width))
        .integer("super_element", static_cast<long long>(o.super_element))
        .integer("tasks", static_cast<long long>(trns->cycle_starts()))
        .str("split", u ? "dynamic" : o.share > 0 ? "device alone" : "host alone")
        .integer("work_groups", static_cast<long long>(std::max<cl_uint>(1, dev.units)));
  } else if (bs) {
    setup.integer("resolution", static_cast<long long>(o.resolution))
        .integer("tile", static_cast<long long>(o.tile))
        .integer("degree", kBsDegree)
        .integer("tasks", static_cast<long long>(bs->tasks))
        .str("split", u ? "dynamic" : "static")
        .integer("work_groups", static_cast<long long>(std::max<cl_uint>(1, std::min<size_t>(dev.units, bs->tasks))));
  } else if (o.pattern == "histogram") {
    setup.integer("bins", kBins).integer("work_groups", static_cast<long long>(hist->groups()));
  } else {
    setup.integer("block", static_cast<long long>(o.block))
        .integer("tasks", static_cast<long long>(queue->tasks))
        .integer("iterations", o.iterations)
        .str("split", u ? "dynamic" : "static")
        .integer("work_groups", u ? static_cast<long long>(std::max<cl_uint>(1, dev.units)) : -1);
  }
  setup.str("clock", "std::chrono::steady_clock; kernel = enqueue to completion of kernel and host threads")
      .boolean("corrupt", o.corrupt)
      .emit();

  Repeats repeats(o);
  for (int r = 0; r < o.warmups + o.repeats; ++r)
    repeats.record(r, hist ? hist->run() : pad ? pad->run() : trns ? trns->run() : bs ? bs->run() : queue->run(), !hist);
  return repeats.finish();
}

namespace collab {

void Repeats::record(int r, const Outcome& out, bool tasks) {
  JsonLine sample;
  sample.str("probe", "collab")
      .str("record", "sample")
      .str("pattern", o_.pattern)
      .str("version", o_.version)
      .integer("repeat", r)
      .boolean("warmup", r < o_.warmups)
      .number("allocation_seconds", out.allocation)
      .number("copy_seconds", out.copy)
      .number("kernel_seconds", out.kernel)
      .number("total_seconds", out.total)
      .integer("host_threads", o_.host_threads)
      .number("device_share", out.device_share)
      .integer("copied_bytes", static_cast<long long>(out.copied_bytes));
  if (tasks) sample.integer("device_tasks", out.device_tasks).integer("host_tasks", out.host_tasks);
  sample.emit();
  JsonLine valid;
  valid.str("probe", "collab")
      .str("record", "validation")
      .str("pattern", o_.pattern)
      .str("version", o_.version)
      .integer("repeat", r)
      .boolean("ok", out.ok)
      .integer("wrong", out.wrong)
      .integer("first_wrong_index", out.first_wrong);
  if (!out.ok) valid.number("expected", out.expected).number("got", out.got).str("what", out.what);
  valid.emit();
  if (!out.ok && !failed_++) first_failure_ = "repeat " + std::to_string(r) + ": " + out.what;
}

int Repeats::finish() const {
  if (!failed_) return 0;
  std::fprintf(stderr, "xferlab-probe: collab: validation failed in %d of %d repeats; first, %s\n", failed_, o_.warmups + o_.repeats,
               first_failure_.c_str());
  return 1;
}

}  // namespace collab

}  // namespace xferlab
