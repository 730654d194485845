// STREAM-PMem's memory: STREAM's three arrays as persistent objects in a PMDK libpmemobj pool (seed 003:
// Technion/Intel, "CXL Memory as Persistent Memory for Disaggregated HPC", the STREAM-PMem slide: the arrays
// allocated with POBJ_ALLOC in a pool and reached through pmemobj_direct pointers).
//
// libpmemobj is loaded at run time with dlopen ($XFERLAB_PMEMOBJ_LIB, else Debian's libpmemobj.so.1 from the
// libpmemobj1 package), so the probe builds and runs without it; `--pmdk` without it is a bad argument (exit 2)
// that says so. The pool is a new file (in a directory, or at a new path) on any file system, or a device-DAX
// device (checked: /sys/dev/char/MAJ:MIN/subsystem is "dax"). The pool's file loses its name as soon as it is
// made (the mapping keeps its blocks), as region.cpp does with raw App-Direct files.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

namespace xferlab {

// PMEM_IS_PMEM_FORCE=1: PMDK's pmem emulation is forced (libpmem then treats any mapping as persistent memory
// and persists with cache-line write-backs and a fence instead of msync). The raw App-Direct rows follow the same
// setting so that both are counted alike.
bool pmem_emulation_forced();

class PmdkPool {
 public:
  // A pool at `path` holding three objects of `object_bytes` each, and room for a transaction's undo log of
  // `undo_bytes`. Throws BadArgument (PMDK absent, a path that cannot hold a pool, a character device that is
  // not device-DAX) or std::runtime_error.
  static std::unique_ptr<PmdkPool> create(const std::string& path, size_t object_bytes, size_t undo_bytes);
  ~PmdkPool();
  PmdkPool(const PmdkPool&) = delete;
  PmdkPool& operator=(const PmdkPool&) = delete;

  double* array(int i) const { return arrays_[i]; }     // pmemobj_direct of the i-th object
  bool dax() const { return dax_; }                       // a devdax device, or a file that takes MAP_SYNC
  bool is_pmem() const { return is_pmem_; }               // libpmem's verdict (pmem_is_pmem) on the pool
  bool emulated() const { return is_pmem_ && !dax_; }     // persistent only by PMEM_IS_PMEM_FORCE
  const std::string& file() const { return file_; }
  size_t pool_bytes() const { return pool_bytes_; }

  // pmemobj_persist: the range's cache lines written back and fenced on pmem, msync'ed otherwise.
  void persist(const void* p, size_t n) const;
  // One transaction of the calling thread: tx_begin opens it and snapshots [p, p + n) into the undo log
  // (pmemobj_tx_begin, pmemobj_tx_add_range_direct); tx_end(begun) commits it (persisting the range) when
  // tx_begin returned true, and ends it always (an aborted one too). Both return false when PMDK refused.
  bool tx_begin(void* p, size_t n) const;
  bool tx_end(bool begun) const;
  std::string last_error() const;  // pmemobj_errormsg
  std::string mechanism(bool tx) const;  // how the stores are made persistent, for the setup record

  struct Api;  // libpmemobj's entry points, resolved once (pmdk.cpp)

 private:
  PmdkPool() = default;
  const Api* api_ = nullptr;
  void* pop_ = nullptr;
  double* arrays_[3] = {nullptr, nullptr, nullptr};
  bool dax_ = false, is_pmem_ = false;
  std::string file_;
  size_t pool_bytes_ = 0;
};

}  // namespace xferlab
