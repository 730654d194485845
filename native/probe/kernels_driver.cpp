// The drivers of `xferlab-probe kernels`, for every model (see kernels_driver.hpp): device STREAM's
// options, sweep, timed loop of a point and its check; first touch's options, timed touches and check.
#include "kernels_driver.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "clock.hpp"
#include "json.hpp"

namespace xferlab {

namespace {

const std::vector<std::string> kKernels = {"copy", "mul", "add", "triad", "dot", "read"};

// One (kernel, memory, type, width, groups, instances) point: the initial arrays, the model's copy
// of them, warm-up and timed launches (one sample each; --max-time ends the loop once two are
// taken), then every instance's output against the host's replay of the kernel.
template <class T>
void run_point(StreamModel& model, StreamPoint point, size_t elements, const StreamOptions& o) {
  std::vector<T> a, b, c;
  stream_initial(elements, a, b, c);
  const std::unique_ptr<StreamArrays> arrays = model.load(point, elements, a.data(), b.data(), c.data());
  point.grid_stride = arrays->grid_stride;
  const auto started = Clock::now();
  int done = 0;
  for (int it = 0; it < o.warmup + o.iterations; ++it) {
    const Timing timed = arrays->launch();
    if (it < o.warmup) continue;
    stream_sample(point, it - o.warmup, timed.host_seconds, timed.device_seconds);
    ++done;
    if (o.max_seconds > 0 && since(started) > o.max_seconds && done >= 2) break;
  }
  const bool reduces = stream_reduces(point.kernel);
  std::string what;
  for (int k = 0; k < point.instances && what.empty(); ++k) {
    std::vector<T> out(reduces ? arrays->partials : elements);
    arrays->read(k, reduces ? 's' : stream_output(point.kernel), out.data());
    what = stream_check(point.kernel, k, a, b, c, out);
  }
  stream_validation(point, what);
}

void unavailable(const std::string& memory, const std::string* type, const std::string& reason) {
  JsonLine line;
  line.str("record", "unavailable").str("memory", memory);
  if (type) line.str("type", *type);
  line.str("reason", reason).emit();
}

}  // namespace

int StreamOptions::most_instances() const {
  return static_cast<int>(*std::max_element(instances.begin(), instances.end()));
}

StreamOptions stream_options(Args& args, const std::vector<std::string>& memories) {
  StreamOptions o;
  o.kernels = args.words("kernels", "copy,mul,add,triad,dot,read", kKernels);
  o.memories = args.words("memory", memories.front(), memories);
  o.types = args.words("types", "float", {"float", "double"});
  o.widths = args.integers("widths", "1", 1, 16);
  o.size = args.integer("size", 64 << 20, 1024, 1ll << 40);
  o.groups = args.integers("groups", "0", 0, 1 << 24);
  o.instances = args.integers("instances", "1", 1, 64);
  o.iterations = static_cast<int>(args.integer("iterations", 20, 1, 1000000));
  o.warmup = static_cast<int>(args.integer("warmup", 2, 0, 1000));
  o.max_seconds = args.real("max-time", 0.0, 0.0, 3600.0);
  args.finish();
  for (long long w : o.widths)
    if (w != 1 && w != 2 && w != 4 && w != 8 && w != 16)
      throw BadArgument("--widths " + std::to_string(w) + " is not a vector width; allowed: 1, 2, 4, 8, 16");
  return o;
}

int drive_stream(StreamModel& model, const StreamOptions& o) {
  std::vector<long long> widths;  // those the model has; the others are named first
  const std::string any;
  for (long long w : o.widths) {
    const std::string why = model.lacks_width(static_cast<int>(w));
    if (why.empty())
      widths.push_back(w);
    else
      unavailable(any, &any, why);
  }
  if (widths.empty()) return 0;
  for (const std::string& memory : o.memories) {
    const std::string no_memory = model.lacks_memory(memory);
    if (!no_memory.empty()) {
      unavailable(memory, nullptr, no_memory);
      continue;
    }
    for (const std::string& type : o.types) {
      const std::string no_type = model.lacks_type(type);
      if (!no_type.empty()) {
        unavailable(memory, &type, no_type);
        continue;
      }
      const bool f64 = type == "double";
      for (long long width : widths) {
        const size_t local = model.prepare(type, static_cast<int>(width));
        const size_t w = static_cast<size_t>(width);
        const size_t elements = static_cast<size_t>(o.size) / (f64 ? 8 : 4) / w * w;  // whole vectors
        for (long long g : o.groups) {
          for (long long instances : o.instances) {
            for (const std::string& kname : o.kernels) {
              const size_t groups = g ? static_cast<size_t>(g) : model.auto_groups(kname, elements / w, local);
              const StreamPoint point{kname,
                                      memory,
                                      f64,
                                      static_cast<int>(width),
                                      static_cast<long long>(groups),
                                      static_cast<long long>(local),
                                      static_cast<int>(instances),
                                      true,
                                      static_cast<long long>(elements * (f64 ? 8 : 4))};
              if (f64)
                run_point<double>(model, point, elements, o);
              else
                run_point<float>(model, point, elements, o);
            }
          }
        }
      }
    }
  }
  return 0;
}

TouchOptions touch_options(Args& args, const std::vector<std::string>& memories) {
  TouchOptions o;
  std::string all;
  for (const std::string& m : memories) all += (all.empty() ? "" : ",") + m;
  o.memories = args.words("memory", all, memories);
  o.size = args.integer("size", 64 << 20, 4096, 1ll << 40);
  o.strides = args.integers("strides", "4096", 1, 1 << 30);
  o.repeats = static_cast<int>(args.integer("repeats", 5, 1, 100000));
  args.finish();
  return o;
}

int drive_touch(TouchModel& model, const TouchOptions& o) {
  for (const std::string& memory : o.memories) {
    const std::string why = model.lacks_memory(memory);
    if (!why.empty()) {
      unavailable(memory, nullptr, why);
      continue;
    }
    for (long long stride : o.strides) {
      const auto touches = static_cast<unsigned long long>(o.size / stride);
      for (int r = 0; r < o.repeats; ++r) {
        const auto fresh = model.fresh(memory, static_cast<size_t>(o.size), static_cast<unsigned long long>(stride), touches);
        const Timing first = fresh->touch(), second = fresh->touch();
        // The host reads back what the device wrote, one byte per stride, and checks it.
        const auto t0 = Clock::now();
        const unsigned char* p = fresh->map();
        long long wrong = -1;
        for (unsigned long long i = 0; i < touches && wrong < 0; ++i)
          if (p[i * stride] != static_cast<unsigned char>(i + 1)) wrong = static_cast<long long>(i);
        fresh->unmap();
        const double back = since(t0);
        JsonLine line;
        line.str("record", "sample")
            .str("memory", memory)
            .integer("size_bytes", o.size)
            .integer("stride_bytes", stride)
            .integer("touches", static_cast<long long>(touches))
            .integer("repeat", r)
            .number("first_seconds", first.host_seconds)
            .number("second_seconds", second.host_seconds);
        if (model.device_clock())
          line.number("first_device_seconds", first.device_seconds).number("second_device_seconds", second.device_seconds);
        line.number("host_back_seconds", back)
            .boolean("ok", wrong < 0)
            .str("what", wrong < 0 ? "every touched byte read back" : "touch " + std::to_string(wrong) + " wrong")
            .emit();
      }
    }
  }
  return 0;
}

PeerOptions peer_options(Args& args) {
  PeerOptions o;
  o.peer = static_cast<int>(args.integer("peer", 1, 0, 1023));
  o.size = args.integer("size", 64 << 20, 1, 1ll << 40);
  o.iterations = static_cast<int>(args.integer("iterations", 10, 1, 1000000));
  args.finish();
  return o;
}

std::vector<unsigned char> peer_pattern(size_t bytes) {
  std::vector<unsigned char> pattern(bytes);
  for (size_t i = 0; i < bytes; ++i) pattern[i] = static_cast<unsigned char>(i * 13 + 5);
  return pattern;
}

void emit_peer_sample(const std::string& path, long long size, int iteration, double host_seconds, double device_seconds) {
  JsonLine line;
  line.str("record", "sample").str("path", path).integer("size_bytes", size).integer("iteration", iteration)
      .number("host_seconds", host_seconds);
  if (device_seconds >= 0) line.number("device_seconds", device_seconds);
  line.emit();
}

void emit_peer_validation(const std::string& path, const std::vector<unsigned char>& back,
                          const std::vector<unsigned char>& pattern) {
  const bool ok = back == pattern;
  JsonLine().str("record", "validation").str("path", path).boolean("ok", ok)
      .str("what", ok ? "every byte on the peer as written on the source" : "the peer holds other bytes").emit();
}

}  // namespace xferlab
