// xferlab's latency-tolerant offload runtime (Zipper-style: seed 002, Chen, Zhang and Austin, "Zipper:
// Latency-Tolerant Optimizations for High-Performance Buses").
//
// An operation returns a pending handle at once. Its result stays in a ring of result slots on the
// device; a later request that uses it names the slot (the device forwards the value), and only a value
// the host reads (conversion, comparison, branch) comes back. Requests are gathered into windows: one
// write carries a window's records (coalesced), one launch runs them (an interpreter kernel over the
// records, ops/interp.h), independent requests of a window run in parallel (levels).
//
// Modes (Mode): sync, each request waits for its result (the baseline); parallel, a window of requests in
// flight together, every result read back with the window, no forwarding (a request that needs a
// pending result flushes the window first); forward, everything above.
//
// Where the bus is: a Bus (the runtime's own term; the probe's devices are its Backend). OpenCL (opencl_backend.cpp)
// and an emulated accelerator on the host (emulated_backend.cpp). Counters say what the runtime sent and read,
// BusCounters what the bus itself saw.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "opencl_programs.hpp"  // cl::ProgramCount: how a backend made its programs

namespace xferlab::runtime {

enum class Mode { sync, parallel, forward };
Mode parse_mode(const std::string& text);  // throws std::invalid_argument naming the value and the choices
const char* mode_name(Mode mode);

// What crossed the bus, counted by the runtime (the same for every backend). Transactions are counted
// as 64-byte lines, the unit a coherent bus such as CCI-P or CXL moves (seed 002's bus), plus one per
// doorbell (the notification that starts a window).
struct Counters {
  uint64_t requests = 0;
  uint64_t windows = 0;         // launches of the interpreter
  uint64_t doorbells = 0;       // notifications to the device (one per window)
  uint64_t operand_writes = 0;  // write transactions (one per window: its records)
  uint64_t bytes_to_device = 0;
  uint64_t lines_written = 0;    // 64-byte lines of request records
  uint64_t coalesced_lines = 0;  // lines carrying parts of two requests or more
  uint64_t result_reads = 0;     // read transactions (a window's out entries, or one slot)
  uint64_t bytes_from_device = 0;
  uint64_t lines_read = 0;
  uint64_t waits = 0;                   // times the host blocked for a value
  uint64_t forwarded = 0;               // operands sent as slot references
  uint64_t drains = 0;                  // results read back because their slot was about to be reused
  uint64_t flushes_for_dependency = 0;  // parallel mode: windows cut short by a pending operand
  // The runtime's accounting of the bus: it follows from the mode and the window alone (sync: 3 a request;
  // forward: 0.625 line + 1/32 doorbell a request plus the reads), so the share it saves is an identity of
  // this formula, not a measurement. BusCounters is what the bus itself counted.
  uint64_t bus_transactions() const { return lines_written + lines_read + doorbells; }
};

// What crossed the bus, counted by the bus (Bus::counted): on the emulated backend by the device thread
// from the messages it received and answered, on the OpenCL backend from the commands the backend
// enqueued. Independent of the runtime's Counters, so the two accounts can be compared: they agree on
// lines written, doorbells and forwarded operands, and differ where the runtime's formula leaves a
// transaction out (the request of a read; OpenCL's reads of the status word).
struct BusCounters {
  uint64_t doorbells = 0;       // windows started on the device (a message, or a kernel enqueued)
  uint64_t records = 0;         // request records received
  uint64_t lines_received = 0;  // 64-byte lines of records received: ceil(bytes / 64) per write
  uint64_t read_requests = 0;   // reads asked of the device (a slot, a window's out entries, the status word)
  uint64_t lines_sent = 0;      // 64-byte lines of answers sent back to the host
  uint64_t values_sent = 0;     // results sent back (8 bytes each)
  uint64_t status_reads = 0;    // reads of the status word that crossed the bus (among read_requests)
  uint64_t forwarded = 0;       // operands the device took from its own slots: results that never crossed
  uint64_t kept = 0;            // results left only in a slot (not sent with their window)
  uint64_t busy_ns = 0;         // emulated: the device thread's time computing windows (not a transaction)
  // Every message on the bus: each write's lines, each doorbell, each read's request and its lines back.
  uint64_t transactions() const { return lines_received + doorbells + read_requests + lines_sent; }
};

// The device side: a slot ring and an interpreter. Calls come from one host thread, in order.
class Bus {
 public:
  virtual ~Bus() = default;
  virtual std::string name() const = 0;
  // Allocate `slots` result slots and room for windows of `max_window` requests; keep enc64's round keys.
  virtual void open(uint32_t slots, uint32_t max_window, const uint32_t round_keys[27]) = 0;
  // Write a window's records (n x XF_WORDS words) and start the interpreter on them; need not wait.
  virtual void launch(const uint64_t* words, uint32_t n, uint32_t levels) = 0;
  // Wait for every window so far; copy the last window's out entries 0..n_out-1.
  virtual void read_out(uint64_t* dst, uint32_t n_out) = 0;
  // Wait for every window so far; the value in slot `slot`.
  virtual uint64_t read_slot(uint32_t slot) = 0;
  // The first device-side error since open (XF_ERR_*, 0 if none) with what it was; checked by the
  // runtime after every read, so an error surfaces instead of a wait for a result that will not come.
  virtual uint32_t status(std::string* detail) = 0;
  // What crossed the bus since open, as the bus counted it (waits for what was sent to be handled).
  virtual BusCounters counted() = 0;
  // How the device's programs were made (from source, a binary or SPIR-V; none for the emulated bus).
  virtual cl::ProgramCount programs() const { return {}; }
};

// device_rounds: the work (work.hpp) the device spends on every request besides interpreting it: the host's
// Options::work / device speed (0: none, the emulator's own pace).
std::unique_ptr<Bus> make_emulated(double latency_seconds, double bandwidth_bytes_per_second, uint32_t device_rounds = 0);
// Throws std::runtime_error if unavailable; cl::ProgramRefused (std::invalid_argument) for a `program`
// (--program FILE|DIR, "" for none) that does not serve, or a device that cannot build from source.
std::unique_ptr<Bus> make_opencl(int device_index, const std::string& program = "");

class Runtime;

// One result: on the host, pending in a device slot, or both. Shared by every handle that copies it.
struct Cell {
  Runtime* rt = nullptr;
  uint64_t value = 0;  // valid when on_host
  bool on_host = false;
  bool on_device = false;  // its slot holds it (a later request may forward it)
  uint32_t slot = 0;
  uint64_t window = 0;     // the window that computes it
  uint32_t level = 0;      // its level in that window
  uint32_t out_index = 0;  // parallel/sync: its place in the window's out entries
  uint64_t request = 0;    // 1-based number of the request that computes it (0: a host value)
};
using CellRef = std::shared_ptr<Cell>;

// An operand: a value the host has, or a result cell.
struct Operand {
  CellRef cell;
  uint64_t value = 0;
  Operand() = default;
  Operand(uint64_t v) : value(v) {}
  Operand(CellRef c) : cell(std::move(c)) {}
};

// The request stream as the program issued it, for the opportunity analysis (seed 002's argument:
// how often operands come from recent requests, how much is independent, what the host reads).
// Off unless asked for (Runtime::trace): two words and two times per request.
struct Trace {
  std::vector<uint64_t> producers;  // per request, 3 entries: the request whose result each operand is (0: none)
  std::vector<uint64_t> read_at;    // per request: requests issued when the host first read its result (0: never)
  std::vector<double> issued_seconds;  // per request: when it was issued, seconds since the trace began (steady clock)
  std::vector<double> read_seconds;    // per request: when the host first asked for its result (-1: never)
  std::chrono::steady_clock::time_point start;
  double now() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); }
};

struct Options {
  Mode mode = Mode::forward;
  uint32_t ring = 256;           // result slots on the device
  uint32_t window = 32;          // requests per launch, at most (sync: 1)
  uint32_t work = 0;             // rounds of work (work.hpp) the host's plain computation spends on each operation
  uint32_t round_keys[27] = {};  // enc64 (speck64_expand of the device's key)
};

class Runtime {
 public:
  Runtime(std::unique_ptr<Bus> backend, const Options& options);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Issue one operation (XF_OP_*); returns its result's cell, pending unless the mode waits.
  CellRef submit(uint32_t op, const Operand& a, const Operand& b = Operand(), const Operand& c = Operand());
  // A value the host already has, as a cell (no bus traffic).
  CellRef constant(uint64_t value);
  // The value of a cell; blocks (and counts a wait) if it is not on the host.
  uint64_t read(const CellRef& cell);
  // Send the open window now.
  void flush();
  // Wait until every launched window has run (reads nothing; checks for device errors).
  void drain();

  // Record the request stream from now on (Trace); the host's reads count when it asks for a value.
  void trace(bool on) {
    if (on && !tracing_ && trace_.read_at.empty()) trace_.start = std::chrono::steady_clock::now();
    tracing_ = on;
  }
  const Trace& traced() const { return trace_; }
  void note_read(const Cell& cell) {
    if (tracing_ && cell.request && cell.request <= trace_.read_at.size() && !trace_.read_at[cell.request - 1]) {
      trace_.read_at[cell.request - 1] = counters_.requests;
      trace_.read_seconds[cell.request - 1] = trace_.now();
    }
  }

  const Counters& counters() const { return counters_; }
  const Options& options() const { return options_; }
  Bus& backend() { return *backend_; }

 private:
  void check_status();
  void read_back(Cell& cell);  // one result read: the cell's slot to the host
  uint32_t allocate_slot();
  void add_operand(uint64_t* words, int k, const Operand& op, uint32_t* level, uint32_t* kinds);

  std::unique_ptr<Bus> backend_;
  Options options_;
  Counters counters_;
  std::vector<std::weak_ptr<Cell>> owner_;  // per slot: the cell whose value it holds
  std::vector<uint64_t> used_in_window_;    // per slot: last window that named it (read or write)
  uint32_t next_slot_ = 0;
  uint64_t window_id_ = 1;        // the open window
  std::vector<uint64_t> words_;   // the open window's records
  std::vector<CellRef> pending_;  // the open window's results
  uint32_t levels_ = 0;
  bool launched_unread_ = false;  // a window was launched since the last blocking read
  bool tracing_ = false;
  Trace trace_;
};

// The value of a cell: at once if the host has it, else read from its runtime's device (blocks); a cell
// whose runtime was destroyed before its value came back raises std::runtime_error.
uint64_t value_of(const CellRef& cell);

// Typed handles over cells: C++ operators issue requests; conversions block for the value.
class Posit {
 public:
  Posit(Runtime& rt, double value);
  Posit(Runtime& rt, CellRef cell) : rt_(&rt), cell_(std::move(cell)) {}
  static Posit from_bits(Runtime& rt, uint32_t bits);
  Posit operator+(const Posit& o) const;
  Posit operator-(const Posit& o) const;
  Posit operator*(const Posit& o) const;
  Posit operator/(const Posit& o) const;
  Posit operator-() const;
  bool operator<(const Posit& o) const;
  bool operator<=(const Posit& o) const;
  bool operator==(const Posit& o) const;
  friend Posit sqrt(const Posit& x);
  friend Posit fma(const Posit& a, const Posit& b, const Posit& c);
  uint32_t bits() const;     // blocks
  double to_double() const;  // blocks
  const CellRef& cell() const { return cell_; }
  Runtime& runtime() const { return *rt_; }

 private:
  Runtime* rt_;
  CellRef cell_;
};

// An encrypted 64-bit integer (SPECK-64/128, key on the device side); the host sees ciphertexts only,
// except through decrypt (a result the program is allowed to reveal).
class Enc {
 public:
  Enc(Runtime& rt, CellRef cell) : rt_(&rt), cell_(std::move(cell)) {}
  static Enc encrypt(Runtime& rt, int64_t plain);  // the data owner's side: encrypts with the key
  Enc operator+(const Enc& o) const;
  Enc operator-(const Enc& o) const;
  Enc operator*(const Enc& o) const;
  Enc lt(const Enc& o) const;  // an encrypted 0/1
  Enc eq(const Enc& o) const;
  friend Enc min(const Enc& a, const Enc& b);
  friend Enc max(const Enc& a, const Enc& b);
  friend Enc select(const Enc& c, const Enc& a, const Enc& b);  // c ? a : b, data-obliviously
  int64_t decrypt() const;      // blocks: reveals the plaintext (computed on the device)
  uint64_t ciphertext() const;  // blocks
  const CellRef& cell() const { return cell_; }

 private:
  Runtime* rt_;
  CellRef cell_;
};

}  // namespace xferlab::runtime
