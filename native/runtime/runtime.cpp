// The runtime: windows of requests, the slot ring, forwarding, and what crossed the bus (runtime.hpp).
#include "runtime.hpp"

#include <algorithm>

#include "xf_portable.h"
#include "posit32.h"
#include "enc64.h"
#include "interp.h"

namespace xferlab::runtime {

namespace {
constexpr uint64_t kRecordBytes = XF_WORDS * 8;
constexpr uint64_t kLine = 64;

uint64_t lines(uint64_t bytes) { return (bytes + kLine - 1) / kLine; }

// Lines of a window's records that carry bytes of two requests or more (one line, several requests:
// the coalescing a write-combining store or a DMA of the whole window gives).
uint64_t coalesced(uint64_t n) {
  uint64_t shared = 0;
  for (uint64_t k = 0; k < lines(n * kRecordBytes); k++) {
    uint64_t first = k * kLine / kRecordBytes;
    uint64_t last = std::min(n - 1, (k * kLine + kLine - 1) / kRecordBytes);
    shared += last > first;
  }
  return shared;
}
}  // namespace

Mode parse_mode(const std::string& text) {
  if (text == "sync") return Mode::sync;
  if (text == "parallel") return Mode::parallel;
  if (text == "forward") return Mode::forward;
  throw std::invalid_argument("mode '" + text + "' is not known; allowed: sync, parallel, forward");
}

const char* mode_name(Mode mode) {
  switch (mode) {
    case Mode::sync: return "sync";
    case Mode::parallel: return "parallel";
    default: return "forward";
  }
}

Runtime::Runtime(std::unique_ptr<Bus> backend, const Options& options)
    : backend_(std::move(backend)), options_(options) {
  if (!backend_) throw std::invalid_argument("no backend");
  if (options_.ring == 0) throw std::invalid_argument("ring size 0: the device needs at least one result slot");
  if (options_.window == 0) throw std::invalid_argument("window size 0: a window holds at least one request");
  if (options_.mode == Mode::sync) options_.window = 1;
  // Each request of a window writes its own slot, so a window never holds more requests than slots.
  options_.window = std::min(options_.window, options_.ring);
  owner_.resize(options_.ring);
  used_in_window_.assign(options_.ring, 0);
  backend_->open(options_.ring, options_.window, options_.round_keys);
}

Runtime::~Runtime() {
  try {
    flush();
    drain();
  } catch (...) {
  }
  for (auto& weak : owner_)
    if (auto cell = weak.lock()) cell->rt = nullptr;  // a later read says the runtime is gone
}

void Runtime::check_status() {
  std::string detail;
  if (uint32_t code = backend_->status(&detail))
    throw std::runtime_error("device error " + std::to_string(code) + ": " + detail);
}

CellRef Runtime::constant(uint64_t value) {
  auto cell = std::make_shared<Cell>();
  cell->rt = this;
  cell->value = value;
  cell->on_host = true;
  return cell;
}

uint32_t Runtime::allocate_slot() {
  // A free slot first: one whose result no handle holds any more, or that the host already has, and
  // that the open window does not name. Only when every slot holds a live pending result is one
  // drained (read back) to make room: the oldest, round-robin.
  for (uint32_t k = 0; k < options_.ring; k++) {
    uint32_t slot = (next_slot_ + k) % options_.ring;
    if (used_in_window_[slot] == window_id_) continue;
    auto owner = owner_[slot].lock();
    if (!owner || owner->on_host || !owner->on_device) {
      if (owner) owner->on_device = false;
      next_slot_ = (slot + 1) % options_.ring;
      return slot;
    }
  }
  uint32_t slot = next_slot_;
  if (used_in_window_[slot] == window_id_) flush();  // the open window names this slot: send it first
  if (auto owner = owner_[slot].lock()) {
    if (owner->on_device && !owner->on_host) {  // still wanted: bring it back before reuse
      read_back(*owner);
      counters_.drains++;
    }
    owner->on_device = false;
  }
  next_slot_ = (slot + 1) % options_.ring;
  return slot;
}

void Runtime::add_operand(uint64_t* words, int k, const Operand& op, uint32_t* level, uint32_t* kinds) {
  const Cell* cell = op.cell.get();
  if (!cell) {
    words[2 + k] = op.value;
    return;
  }
  if (cell->on_host) {
    words[2 + k] = cell->value;
    return;
  }
  // Pending on the device (forward mode only: the other modes have every earlier result on the host).
  words[2 + k] = cell->slot;
  *kinds |= XF_SLOT << (2 * k);
  used_in_window_[cell->slot] = window_id_;
  counters_.forwarded++;
  if (cell->window == window_id_) *level = std::max(*level, cell->level + 1);
}

CellRef Runtime::submit(uint32_t op, const Operand& a, const Operand& b, const Operand& c) {
  for (const Operand* o : {&a, &b, &c}) {
    if (o->cell && o->cell->rt != this)
      throw std::invalid_argument("an operand belongs to another runtime, or to one that was closed");
  }
  if (options_.mode != Mode::forward) {
    // No forwarding: a pending operand must come back first, and with it its whole window.
    for (const Operand* o : {&a, &b, &c}) {
      if (o->cell && !o->cell->on_host) {
        counters_.flushes_for_dependency++;
        flush();
        break;
      }
    }
  }
  uint32_t dst = allocate_slot();
  uint64_t words[XF_WORDS] = {};
  uint32_t level = 0, kinds = 0;
  add_operand(words, 0, a, &level, &kinds);
  add_operand(words, 1, b, &level, &kinds);
  add_operand(words, 2, c, &level, &kinds);
  auto cell = std::make_shared<Cell>();
  cell->rt = this;
  cell->slot = dst;
  cell->on_device = true;
  cell->window = window_id_;
  cell->level = level;
  cell->out_index = static_cast<uint32_t>(pending_.size());
  cell->request = counters_.requests + 1;
  if (tracing_) {
    for (const Operand* o : {&a, &b, &c}) trace_.producers.push_back(o->cell ? o->cell->request : 0);
    trace_.read_at.push_back(0);
    trace_.issued_seconds.push_back(trace_.now());
    trace_.read_seconds.push_back(-1.0);
  }
  uint64_t want = options_.mode == Mode::forward ? 0 : XF_WANT;
  words[0] = (op & 0xFFFFu) | (static_cast<uint64_t>(kinds) << 16) | want | (static_cast<uint64_t>(level) << 32);
  words[1] = dst | (static_cast<uint64_t>(cell->out_index) << 32);
  words_.insert(words_.end(), words, words + XF_WORDS);
  owner_[dst] = cell;
  used_in_window_[dst] = window_id_;
  pending_.push_back(cell);
  levels_ = std::max(levels_, level + 1);
  counters_.requests++;
  if (pending_.size() >= options_.window) flush();
  return cell;
}

void Runtime::flush() {
  if (pending_.empty()) return;
  uint32_t n = static_cast<uint32_t>(pending_.size());
  backend_->launch(words_.data(), n, levels_);
  counters_.windows++;
  counters_.doorbells++;
  counters_.operand_writes++;
  counters_.bytes_to_device += n * kRecordBytes;
  counters_.lines_written += lines(n * kRecordBytes);
  counters_.coalesced_lines += coalesced(n);
  std::vector<CellRef> done;
  done.swap(pending_);
  words_.clear();
  levels_ = 0;
  window_id_++;
  if (options_.mode == Mode::forward) {
    launched_unread_ = true;
    return;
  }
  std::vector<uint64_t> values(n);
  backend_->read_out(values.data(), n);
  launched_unread_ = false;
  counters_.result_reads++;
  counters_.bytes_from_device += 8ull * n;
  counters_.lines_read += lines(8ull * n);
  counters_.waits++;
  check_status();
  for (auto& cell : done) {
    cell->value = values[cell->out_index];
    cell->on_host = true;
  }
}

void Runtime::drain() {
  flush();
  if (launched_unread_) {
    check_status();  // waits for every launched window
    launched_unread_ = false;
  }
}

uint64_t Runtime::read(const CellRef& cell) {
  if (!cell) throw std::invalid_argument("no value");
  if (cell->rt == this) note_read(*cell);
  if (cell->on_host) return cell->value;
  if (cell->rt != this) throw std::runtime_error("the runtime that computes this value was closed before it was read");
  if (cell->window == window_id_) flush();
  if (cell->on_host) return cell->value;  // parallel and sync read every result with its window
  read_back(*cell);
  counters_.waits++;
  return cell->value;
}

void Runtime::read_back(Cell& cell) {
  cell.value = backend_->read_slot(cell.slot);  // waits for every launched window
  cell.on_host = true;
  launched_unread_ = false;
  counters_.result_reads++;
  counters_.bytes_from_device += 8;
  counters_.lines_read += 1;
  check_status();
}

// -- typed handles -----------------------------------------------------------------------------

Posit::Posit(Runtime& rt, double value) : rt_(&rt), cell_(rt.constant(p32_from_f64(value))) {}
Posit Posit::from_bits(Runtime& rt, uint32_t bits) { return Posit(rt, rt.constant(bits)); }
Posit Posit::operator+(const Posit& o) const { return Posit(*rt_, rt_->submit(XF_OP_P_ADD, cell_, o.cell_)); }
Posit Posit::operator-(const Posit& o) const { return Posit(*rt_, rt_->submit(XF_OP_P_SUB, cell_, o.cell_)); }
Posit Posit::operator*(const Posit& o) const { return Posit(*rt_, rt_->submit(XF_OP_P_MUL, cell_, o.cell_)); }
Posit Posit::operator/(const Posit& o) const { return Posit(*rt_, rt_->submit(XF_OP_P_DIV, cell_, o.cell_)); }
Posit Posit::operator-() const { return Posit(*rt_, rt_->submit(XF_OP_P_NEG, cell_)); }
bool Posit::operator<(const Posit& o) const { return rt_->read(rt_->submit(XF_OP_P_LT, cell_, o.cell_)) != 0; }
bool Posit::operator<=(const Posit& o) const { return rt_->read(rt_->submit(XF_OP_P_LE, cell_, o.cell_)) != 0; }
bool Posit::operator==(const Posit& o) const { return rt_->read(rt_->submit(XF_OP_P_EQ, cell_, o.cell_)) != 0; }
Posit sqrt(const Posit& x) { return Posit(*x.rt_, x.rt_->submit(XF_OP_P_SQRT, x.cell_)); }
Posit fma(const Posit& a, const Posit& b, const Posit& c) {
  return Posit(*a.rt_, a.rt_->submit(XF_OP_P_FMA, a.cell_, b.cell_, c.cell_));
}
uint64_t value_of(const CellRef& cell) {
  if (cell->rt) cell->rt->note_read(*cell);
  if (cell->on_host) return cell->value;
  if (!cell->rt) throw std::runtime_error("the runtime that computes this value was closed before it was read");
  return cell->rt->read(cell);
}

uint32_t Posit::bits() const { return static_cast<uint32_t>(value_of(cell_)); }
double Posit::to_double() const { return p32_to_f64(bits()); }

Enc Enc::encrypt(Runtime& rt, int64_t plain) {
  return Enc(rt, rt.constant(enc_encrypt_i64(rt.options().round_keys, plain)));
}
Enc Enc::operator+(const Enc& o) const { return Enc(*rt_, rt_->submit(XF_OP_E_ADD, cell_, o.cell_)); }
Enc Enc::operator-(const Enc& o) const { return Enc(*rt_, rt_->submit(XF_OP_E_SUB, cell_, o.cell_)); }
Enc Enc::operator*(const Enc& o) const { return Enc(*rt_, rt_->submit(XF_OP_E_MUL, cell_, o.cell_)); }
Enc Enc::lt(const Enc& o) const { return Enc(*rt_, rt_->submit(XF_OP_E_LT, cell_, o.cell_)); }
Enc Enc::eq(const Enc& o) const { return Enc(*rt_, rt_->submit(XF_OP_E_EQ, cell_, o.cell_)); }
Enc min(const Enc& a, const Enc& b) { return Enc(*a.rt_, a.rt_->submit(XF_OP_E_MIN, a.cell_, b.cell_)); }
Enc max(const Enc& a, const Enc& b) { return Enc(*a.rt_, a.rt_->submit(XF_OP_E_MAX, a.cell_, b.cell_)); }
Enc select(const Enc& c, const Enc& a, const Enc& b) {
  return Enc(*c.rt_, c.rt_->submit(XF_OP_E_SELECT, a.cell_, b.cell_, c.cell_));
}
int64_t Enc::decrypt() const { return static_cast<int64_t>(rt_->read(rt_->submit(XF_OP_E_DECRYPT, cell_))); }
uint64_t Enc::ciphertext() const { return value_of(cell_); }

}  // namespace xferlab::runtime
