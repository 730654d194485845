#include "region.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "args.hpp"
#include "placement.hpp"

namespace xferlab {

namespace {
constexpr size_t kHuge = 2u << 20;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

std::string errno_text() { return std::strerror(errno); }
}  // namespace

std::unique_ptr<Region> Region::map(const RegionOptions& options) {
  std::unique_ptr<Region> region(new Region());
  Region& r = *region;
  r.bytes_ = options.bytes;
  r.mapped_ = round_up(options.bytes, kHuge);

  if (options.path.empty()) {
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
    if (options.hugepages == "hugetlb") flags |= MAP_HUGETLB;
    void* p = mmap(nullptr, r.mapped_, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (p == MAP_FAILED) {
      if (options.hugepages == "hugetlb")
        throw BadArgument("--hugepages hugetlb: no huge pages available for " + std::to_string(r.mapped_) +
                          " bytes (" + errno_text() + "); reserve them in /proc/sys/vm/nr_hugepages");
      throw std::runtime_error("mmap of " + std::to_string(r.mapped_) + " bytes failed: " + errno_text());
    }
    r.base_ = static_cast<char*>(p);
    if (options.hugepages == "thp") madvise(p, r.mapped_, MADV_HUGEPAGE);
    if (options.node >= 0) r.binding_ = bind_to_node(p, r.mapped_, options.node);
    return region;
  }

  // App-Direct: a DAX character device, a new file, or a new file inside a directory.
  struct stat st {};
  std::string target = options.path;
  bool exists = stat(target.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) {
    std::string pattern = target + "/xferlab-pmem-XXXXXX";
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    r.fd_ = mkstemp(name.data());
    if (r.fd_ < 0) throw BadArgument("--pmem '" + target + "': cannot create a file there (" + errno_text() + ")");
    r.file_ = name.data();
    r.remove_ = true;
  } else if (exists && S_ISCHR(st.st_mode)) {
    r.fd_ = open(target.c_str(), O_RDWR);
    if (r.fd_ < 0) throw BadArgument("--pmem '" + target + "': cannot open the device (" + errno_text() + ")");
    r.file_ = target;
    r.dax_ = true;  // device DAX: loads and stores go straight to the medium
  } else if (exists) {
    throw BadArgument("--pmem '" + target + "' is an existing file; give a directory (xferlab creates and removes "
                      "its own file there), a new file name, or a DAX device");
  } else {
    r.fd_ = open(target.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (r.fd_ < 0) throw BadArgument("--pmem '" + target + "': cannot create the file (" + errno_text() + ")");
    r.file_ = target;
    r.remove_ = true;
  }
  if (!r.dax_) {
    int rc = posix_fallocate(r.fd_, 0, static_cast<off_t>(r.mapped_));
    if (rc != 0)
      throw BadArgument("--pmem '" + target + "': cannot reserve " + std::to_string(r.mapped_) + " bytes (" +
                        std::strerror(rc) + ")");
  }
  void* p = mmap(nullptr, r.mapped_, PROT_READ | PROT_WRITE, MAP_SHARED_VALIDATE | MAP_SYNC, r.fd_, 0);
  if (p != MAP_FAILED) {
    r.map_sync_ = true;
    r.dax_ = true;  // MAP_SYNC is only granted for DAX mappings
  } else {
    p = mmap(nullptr, r.mapped_, PROT_READ | PROT_WRITE, MAP_SHARED, r.fd_, 0);
    if (p == MAP_FAILED)
      throw std::runtime_error("mmap of '" + r.file_ + "' failed: " + errno_text());
  }
  r.base_ = static_cast<char*>(p);
  if (r.remove_) {
    // The mapping keeps the file's blocks; its name goes now, so that no crash or kill leaves it.
    unlink(r.file_.c_str());
    r.remove_ = false;
  }
  return region;
}

void Region::sync(const void* p, size_t n) const {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  auto start = reinterpret_cast<uintptr_t>(p) & ~(page - 1);
  auto end = reinterpret_cast<uintptr_t>(p) + n;
  // A failed msync means the stores were not made persistent: the sample would claim what did not happen.
  if (msync(reinterpret_cast<void*>(start), end - start, MS_SYNC) != 0)
    throw std::runtime_error("msync of " + std::to_string(end - start) + " bytes failed: " + errno_text());
}

Region::~Region() {
  if (base_) munmap(base_, mapped_);
  if (fd_ >= 0) close(fd_);
  if (remove_ && !file_.empty()) unlink(file_.c_str());
}

size_t last_level_cache_bytes() {
  size_t best = 0;
  for (int index = 0; index < 16; ++index) {
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
    if (!in) break;
    std::string text;
    in >> text;
    size_t value = std::strtoull(text.c_str(), nullptr, 10);
    if (!text.empty() && (text.back() == 'K')) value <<= 10;
    if (!text.empty() && (text.back() == 'M')) value <<= 20;
    if (value > best) best = value;
  }
  return best;
}

}  // namespace xferlab
