// Memory for measurements: anonymous memory (optionally huge pages, optionally bound to a NUMA
// node) or a shared mapping of a file or DAX device (App-Direct mode).
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include <sys/mman.h>

// MAP_SYNC (a DAX mapping whose metadata is durable at each page fault) and the MAP_SHARED_VALIDATE it needs,
// for C libraries whose headers predate them (Linux 4.15); region.cpp and pmdk.cpp map with them.
#ifndef MAP_SHARED_VALIDATE
#define MAP_SHARED_VALIDATE 0x03
#endif
#ifndef MAP_SYNC
#define MAP_SYNC 0x80000
#endif

namespace xferlab {

struct RegionOptions {
  size_t bytes = 0;
  int node = -1;                     // bind to this NUMA node (anonymous memory only)
  std::string hugepages = "none";    // none | thp (madvise) | hugetlb (MAP_HUGETLB)
  std::string path;                  // App-Direct: a directory, a new file, or a DAX character device
};

class Region {
 public:
  static std::unique_ptr<Region> map(const RegionOptions& options);  // throws BadArgument / runtime_error
  ~Region();
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

  char* data() const { return base_; }
  size_t bytes() const { return bytes_; }
  bool file_backed() const { return fd_ >= 0; }
  bool dax() const { return dax_; }          // stores persist once written back from the caches
  bool map_sync() const { return map_sync_; }
  const std::string& file() const { return file_; }
  const std::string& binding() const { return binding_; }  // "" or why binding failed
  // Persists [p, p + n) by the only means a non-DAX mapping has: msync(MS_SYNC).
  void sync(const void* p, size_t n) const;

 private:
  Region() = default;
  char* base_ = nullptr;
  size_t bytes_ = 0;
  size_t mapped_ = 0;
  int fd_ = -1;
  bool dax_ = false, map_sync_ = false, remove_ = false;
  std::string file_, binding_;
};

size_t last_level_cache_bytes();  // the largest cache of CPU 0 (sysfs), 0 if unknown

}  // namespace xferlab
