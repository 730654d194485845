// xferlab._runtime: the offload runtime for Python (nanobind). xferlab.runtime wraps it.
//
// Runtime(backend, mode, ring, window, latency, bandwidth, device, key, program, work, device_rounds) owns an xferlab::runtime::Runtime (program:
// --program FILE|DIR for the OpenCL backend, "" to build from source). Posit and
// Enc values hold a reference to their Runtime object (not to the values they were computed from, so a
// long chain of operations keeps no history alive); Python operators issue requests; float(), int(),
// comparisons and bool() block for a value. C++ std::invalid_argument arrives as ValueError,
// std::runtime_error (a device error, a closed runtime) as RuntimeError.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "runtime.hpp"
#include "workloads.hpp"
#include "xf_portable.h"
#include "posit32.h"
#include "enc64.h"
#include "interp.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

struct PyRuntime {
  std::unique_ptr<xferlab::runtime::Runtime> rt;
  xferlab::runtime::Runtime& get() {
    if (!rt) throw std::runtime_error("the runtime is closed");
    return *rt;
  }
};

struct PyPosit {
  xferlab::runtime::Posit value;
  nb::object owner;  // the PyRuntime
};

struct PyEnc {
  xferlab::runtime::Enc value;
  nb::object owner;
};

PyRuntime& runtime_of(const nb::object& owner) { return nb::cast<PyRuntime&>(owner); }

nb::dict counters(const xferlab::runtime::Counters& c) {
  nb::dict d;
  d["requests"] = c.requests;
  d["windows"] = c.windows;
  d["doorbells"] = c.doorbells;
  d["operand_writes"] = c.operand_writes;
  d["bytes_to_device"] = c.bytes_to_device;
  d["lines_written"] = c.lines_written;
  d["coalesced_lines"] = c.coalesced_lines;
  d["result_reads"] = c.result_reads;
  d["bytes_from_device"] = c.bytes_from_device;
  d["lines_read"] = c.lines_read;
  d["waits"] = c.waits;
  d["forwarded"] = c.forwarded;
  d["drains"] = c.drains;
  d["flushes_for_dependency"] = c.flushes_for_dependency;
  d["bus_transactions"] = c.bus_transactions();
  return d;
}

nb::dict bus_counters(const xferlab::runtime::BusCounters& c) {
  nb::dict d;
  d["doorbells"] = c.doorbells;
  d["records"] = c.records;
  d["lines_received"] = c.lines_received;
  d["read_requests"] = c.read_requests;
  d["lines_sent"] = c.lines_sent;
  d["values_sent"] = c.values_sent;
  d["status_reads"] = c.status_reads;
  d["forwarded"] = c.forwarded;
  d["kept"] = c.kept;
  d["transactions"] = c.transactions();
  d["busy_seconds"] = c.busy_ns * 1e-9;
  return d;
}

template <class Op>
PyPosit posit_op(const PyPosit& a, Op op) {
  runtime_of(a.owner).get();  // a closed runtime refuses new requests
  return PyPosit{op(a.value), a.owner};
}

template <class Op>
PyEnc enc_op(const PyEnc& a, Op op) {
  runtime_of(a.owner).get();
  return PyEnc{op(a.value), a.owner};
}

}  // namespace

NB_MODULE(_runtime, m) {
  m.doc() = "xferlab's latency-tolerant offload runtime (Zipper-style; seed 002)";

  nb::class_<PyRuntime>(m, "Runtime")
      .def(
          "__init__",
          [](PyRuntime* self, const std::string& backend, const std::string& mode, uint32_t ring, uint32_t window,
             double latency, double bandwidth, int device, std::vector<uint32_t> key, const std::string& program,
             uint32_t work, uint32_t device_rounds) {
            if (key.size() != 4) throw std::invalid_argument("key must be 4 words of 32 bits (SPECK-64/128)");
            if (backend != "emulated" && (work || device_rounds))
              throw std::invalid_argument("work and a device speed are the emulated device's; backend '" + backend +
                                          "' computes at its own speed");
            xferlab::runtime::Options o;
            o.mode = xferlab::runtime::parse_mode(mode);
            o.ring = ring;
            o.window = window;
            o.work = work;
            speck64_expand(key[0], key[1], key[2], key[3], o.round_keys);
            std::unique_ptr<xferlab::runtime::Bus> b;
            if (backend == "emulated")
              b = xferlab::runtime::make_emulated(latency, bandwidth, device_rounds);
            else if (backend == "opencl")
              b = xferlab::runtime::make_opencl(device, program);
            else
              throw std::invalid_argument("backend '" + backend + "' is not known; allowed: emulated, opencl");
            new (self) PyRuntime{std::make_unique<xferlab::runtime::Runtime>(std::move(b), o)};
          },
          "backend"_a = "emulated", "mode"_a = "forward", "ring"_a = 256, "window"_a = 32, "latency"_a = 1e-6,
          "bandwidth"_a = 16e9, "device"_a = 0,
          "key"_a = std::vector<uint32_t>{0x1b1a1918u, 0x13121110u, 0x0b0a0908u, 0x03020100u}, "program"_a = "",
          "work"_a = 0, "device_rounds"_a = 0)
      .def(
          "posit",
          [](nb::object self, double v) { return PyPosit{xferlab::runtime::Posit(runtime_of(self).get(), v), self}; },
          "value"_a, "A posit32 value on the host (rounded from a float).")
      .def(
          "posit_bits",
          [](nb::object self, uint32_t bits) {
            return PyPosit{xferlab::runtime::Posit::from_bits(runtime_of(self).get(), bits), self};
          },
          "bits"_a)
      .def(
          "enc",
          [](nb::object self, int64_t v) {
            return PyEnc{xferlab::runtime::Enc::encrypt(runtime_of(self).get(), v), self};
          },
          "value"_a, "An encrypted 64-bit integer (the data owner encrypts it with the runtime's key).")
      .def(
          "submit_raw",
          [](nb::object self, uint32_t op, uint64_t a, uint64_t b, uint64_t c) {
            return PyPosit{xferlab::runtime::Posit(runtime_of(self).get(), runtime_of(self).get().submit(op, a, b, c)),
                           self};
          },
          "op"_a, "a"_a = 0, "b"_a = 0, "c"_a = 0, "One request by opcode (tests: unknown or failing opcodes).")
      .def(
          "trace", [](PyRuntime& r, bool on) { r.get().trace(on); }, "on"_a = true,
          "Record the request stream from now on (see `traced`).")
      .def_prop_ro(
          "traced",
          [](PyRuntime& r) {
            const xferlab::runtime::Trace& t = r.get().traced();
            nb::dict d;
            d["producers"] = t.producers;
            d["read_at"] = t.read_at;
            d["issued_seconds"] = t.issued_seconds;
            d["read_seconds"] = t.read_seconds;
            return d;
          },
          "The recorded stream: `producers`, 3 per request, the 1-based request whose result each operand is (0: a "
          "host value); `read_at`, per request, how many requests had been issued when the host first read its "
          "result (0: never); `issued_seconds`, per request, when it was issued and `read_seconds` when the host first "
          "asked for its result (-1: never), seconds since the trace began.")
      .def("flush", [](PyRuntime& r) { r.get().flush(); })
      .def("drain", [](PyRuntime& r) { r.get().drain(); })
      .def(
          "close", [](PyRuntime& r) { r.rt.reset(); },
          "Flush, wait for the device, free it; pending values can no longer be read.")
      .def_prop_ro("counters", [](PyRuntime& r) { return counters(r.get().counters()); },
                   "What the runtime sent and read, by its own bookkeeping (bus_transactions: lines written + "
                   "lines read + doorbells).")
      .def_prop_ro("bus_counters", [](PyRuntime& r) { return bus_counters(r.get().backend().counted()); },
                   "What crossed the bus, counted by the bus (the emulated device thread; the OpenCL backend's "
                   "commands): doorbells, records, lines_received, read_requests, lines_sent, values_sent, "
                   "status_reads, forwarded, kept, transactions (lines both ways + doorbells + read requests); busy_seconds: "
                   "the emulated device thread's time computing windows (0 on OpenCL).")
      .def_prop_ro(
          "programs",
          [](PyRuntime& r) {
            const xferlab::cl::ProgramCount c = r.get().backend().programs();
            nb::dict d;
            d["made"] = c.made();
            d["source_builds"] = c.source;
            d["binary_loads"] = c.binary;
            d["il_loads"] = c.il;
            return d;
          },
          "How the device's program was made, as the probe's program record says it: made (none, source, binary, "
          "il), source_builds, binary_loads, il_loads.")
      .def_prop_ro("backend", [](PyRuntime& r) { return r.get().backend().name(); })
      .def_prop_ro("mode",
                   [](PyRuntime& r) { return std::string(xferlab::runtime::mode_name(r.get().options().mode)); })
      .def_prop_ro("ring", [](PyRuntime& r) { return r.get().options().ring; })
      .def_prop_ro("window", [](PyRuntime& r) { return r.get().options().window; })
      .def(
          "run_workload",
          [](PyRuntime& r, const std::string& name, uint64_t size, uint64_t seed) {
            xferlab::runtime::WorkloadResult w = xferlab::runtime::run_workload(r.get(), name, size, seed);
            nb::dict d;
            d["name"] = w.name;
            d["opset"] = w.opset;
            d["ok"] = w.ok;
            d["detail"] = w.detail;
            d["size"] = w.size;
            d["seconds"] = w.seconds;
            d["host_seconds"] = w.host_seconds;
            return d;
          },
          "name"_a, "size"_a = 0, "seed"_a = 1);

  nb::class_<PyPosit>(m, "Posit")
      .def("__add__",
           [](const PyPosit& a, const PyPosit& b) {
             return posit_op(a, [&](const xferlab::runtime::Posit& x) { return x + b.value; });
           })
      .def("__sub__",
           [](const PyPosit& a, const PyPosit& b) {
             return posit_op(a, [&](const xferlab::runtime::Posit& x) { return x - b.value; });
           })
      .def("__mul__",
           [](const PyPosit& a, const PyPosit& b) {
             return posit_op(a, [&](const xferlab::runtime::Posit& x) { return x * b.value; });
           })
      .def("__truediv__",
           [](const PyPosit& a, const PyPosit& b) {
             return posit_op(a, [&](const xferlab::runtime::Posit& x) { return x / b.value; });
           })
      .def("__neg__", [](const PyPosit& a) { return posit_op(a, [](const xferlab::runtime::Posit& x) { return -x; }); })
      .def("sqrt",
           [](const PyPosit& a) { return posit_op(a, [](const xferlab::runtime::Posit& x) { return sqrt(x); }); })
      .def(
          "fma",
          [](const PyPosit& a, const PyPosit& b, const PyPosit& c) {
            return posit_op(a, [&](const xferlab::runtime::Posit& x) { return fma(x, b.value, c.value); });
          },
          "b"_a, "c"_a, "self * b + c with one rounding.")
      .def("__lt__",
           [](const PyPosit& a, const PyPosit& b) { return (void)runtime_of(a.owner).get(), a.value < b.value; })
      .def("__le__",
           [](const PyPosit& a, const PyPosit& b) { return (void)runtime_of(a.owner).get(), a.value <= b.value; })
      .def("__eq__",
           [](const PyPosit& a, const PyPosit& b) { return (void)runtime_of(a.owner).get(), a.value == b.value; })
      .def("__float__", [](const PyPosit& a) { return a.value.to_double(); })
      .def_prop_ro("bits", [](const PyPosit& a) { return a.value.bits(); })
      .def_prop_ro(
          "pending", [](const PyPosit& a) { return !a.value.cell()->on_host; },
          "True while the value is only on the device.")
      .def("__hash__", [](const PyPosit&) -> nb::int_ { throw nb::type_error("posit handles are not hashable"); });

  nb::class_<PyEnc>(m, "Enc")
      .def("__add__",
           [](const PyEnc& a, const PyEnc& b) {
             return enc_op(a, [&](const xferlab::runtime::Enc& x) { return x + b.value; });
           })
      .def("__sub__",
           [](const PyEnc& a, const PyEnc& b) {
             return enc_op(a, [&](const xferlab::runtime::Enc& x) { return x - b.value; });
           })
      .def("__mul__",
           [](const PyEnc& a, const PyEnc& b) {
             return enc_op(a, [&](const xferlab::runtime::Enc& x) { return x * b.value; });
           })
      .def(
          "lt",
          [](const PyEnc& a, const PyEnc& b) {
            return enc_op(a, [&](const xferlab::runtime::Enc& x) { return x.lt(b.value); });
          },
          "An encrypted 0/1.")
      .def("eq",
           [](const PyEnc& a, const PyEnc& b) {
             return enc_op(a, [&](const xferlab::runtime::Enc& x) { return x.eq(b.value); });
           })
      .def("min",
           [](const PyEnc& a, const PyEnc& b) {
             return enc_op(a, [&](const xferlab::runtime::Enc& x) { return min(x, b.value); });
           })
      .def("max",
           [](const PyEnc& a, const PyEnc& b) {
             return enc_op(a, [&](const xferlab::runtime::Enc& x) { return max(x, b.value); });
           })
      .def(
          "select",
          [](const PyEnc& c, const PyEnc& a, const PyEnc& b) {
            return enc_op(c, [&](const xferlab::runtime::Enc& x) { return select(x, a.value, b.value); });
          },
          "a"_a, "b"_a, "self ? a : b (self an encrypted 0/1), without revealing which.")
      .def(
          "decrypt",
          [](const PyEnc& a) {
            runtime_of(a.owner).get();  // a closed runtime takes no new request
            return a.value.decrypt();
          },
          "Reveal the plaintext (decrypted on the device).")
      .def_prop_ro("ciphertext", [](const PyEnc& a) { return a.value.ciphertext(); })
      .def_prop_ro("pending", [](const PyEnc& a) { return !a.value.cell()->on_host; });

  m.def("workload_names", &xferlab::runtime::workload_names);
  m.def("check_workload_size", &xferlab::runtime::check_size, "name"_a, "size"_a);
  m.def("workload_opset", [](const std::string& name) { return std::string(xferlab::runtime::workload_opset(name)); });
  m.attr("OP_FAIL") = XF_OP_FAIL;
}
