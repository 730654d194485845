#include "pmdk.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "args.hpp"
#include "region.hpp"  // MAP_SYNC

namespace xferlab {

namespace {

// libpmemobj's types and entry points as its headers declare them (libpmemobj/base.h, pool_base.h, tx_base.h,
// atomic_base.h of PMDK 1.x); only these few are used, so no PMDK headers are needed to build.
struct PMEMoid {
  uint64_t pool_uuid_lo;
  uint64_t off;
};
constexpr int kTxParamNone = 0;  // enum pobj_tx_param: TX_PARAM_NONE ends pmemobj_tx_begin's list
constexpr uint64_t kTypeArray = 1;  // the type number of STREAM's arrays (POBJ_LAYOUT_TOID(array, double))
constexpr size_t kMinPool = 8u << 20;  // PMEMOBJ_MIN_POOL
constexpr const char* kLayout = "xferlab-stream-pmem";

}  // namespace

struct PmdkPool::Api {
  void* (*create)(const char*, const char*, size_t, mode_t) = nullptr;
  void (*close)(void*) = nullptr;
  int (*alloc)(void*, PMEMoid*, size_t, uint64_t, int (*)(void*, void*, void*), void*) = nullptr;
  void* (*direct)(PMEMoid) = nullptr;
  void (*persist)(void*, const void*, size_t) = nullptr;
  int (*tx_begin)(void*, void*, ...) = nullptr;
  int (*tx_add_range_direct)(const void*, size_t) = nullptr;
  void (*tx_commit)() = nullptr;
  int (*tx_end)() = nullptr;
  const char* (*errormsg)() = nullptr;
  int (*is_pmem)(const void*, size_t) = nullptr;  // libpmem's, loaded with libpmemobj
  std::string error;                               // why it could not be loaded ("" when it was)
};

namespace {

template <class F>
void resolve(void* lib, F& slot, const char* name, std::string& missing) {
  slot = reinterpret_cast<F>(dlsym(lib, name));
  if (!slot) missing += std::string(missing.empty() ? "" : ", ") + name;
}

const PmdkPool::Api& api() {
  static PmdkPool::Api loaded = [] {
    PmdkPool::Api a;
    const char* env = std::getenv("XFERLAB_PMEMOBJ_LIB");
    const std::string path = env && *env ? env : "libpmemobj.so.1";
    dlerror();
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* why = dlerror();
      a.error = why ? why : path + ": dlopen failed";
      return a;
    }
    std::string missing;
    resolve(lib, a.create, "pmemobj_create", missing);
    resolve(lib, a.close, "pmemobj_close", missing);
    resolve(lib, a.alloc, "pmemobj_alloc", missing);
    resolve(lib, a.direct, "pmemobj_direct", missing);
    resolve(lib, a.persist, "pmemobj_persist", missing);
    resolve(lib, a.tx_begin, "pmemobj_tx_begin", missing);
    resolve(lib, a.tx_add_range_direct, "pmemobj_tx_add_range_direct", missing);
    resolve(lib, a.tx_commit, "pmemobj_tx_commit", missing);
    resolve(lib, a.tx_end, "pmemobj_tx_end", missing);
    resolve(lib, a.errormsg, "pmemobj_errormsg", missing);
    resolve(lib, a.is_pmem, "pmem_is_pmem", missing);  // found through libpmemobj's dependency, libpmem
    if (!missing.empty()) a.error = path + " lacks " + missing;
    return a;
  }();
  return loaded;
}

std::string errno_text() { return std::strerror(errno); }

// Whether a character device is a device-DAX one: its sysfs subsystem is the dax class (as checks.py's _dax_device).
bool is_devdax(const struct stat& st) {
  char link[64];
  std::snprintf(link, sizeof link, "/sys/dev/char/%u:%u/subsystem", major(st.st_rdev), minor(st.st_rdev));
  char target[PATH_MAX];
  ssize_t n = readlink(link, target, sizeof target - 1);
  if (n <= 0) return false;
  target[n] = '\0';
  const char* base = std::strrchr(target, '/');
  return std::strcmp(base ? base + 1 : target, "dax") == 0;
}

// Whether the file system under `file` is DAX: the kernel grants MAP_SYNC only for DAX mappings (region.cpp).
bool takes_map_sync(const std::string& file) {
  int fd = open(file.c_str(), O_RDWR);
  if (fd < 0) return false;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* p = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_SHARED_VALIDATE | MAP_SYNC, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return false;
  munmap(p, page);
  return true;
}

}  // namespace

bool pmem_emulation_forced() {
  const char* force = std::getenv("PMEM_IS_PMEM_FORCE");
  return force && std::strcmp(force, "1") == 0;
}

std::unique_ptr<PmdkPool> PmdkPool::create(const std::string& path, size_t object_bytes, size_t undo_bytes) {
  const Api& a = api();
  if (!a.error.empty())
    throw BadArgument("--pmdk: PMDK's libpmemobj is not available (" + a.error +
                      "); install it (Debian: libpmemobj1) or set XFERLAB_PMEMOBJ_LIB");
  std::unique_ptr<PmdkPool> pool(new PmdkPool());
  PmdkPool& p = *pool;
  p.api_ = &a;
  // Three objects, the undo log, and the heap's own: a chunk header per 256 KiB and zone metadata, within 1/64
  // of the objects plus a fixed 16 MiB.
  const size_t objects = 3 * object_bytes + undo_bytes;
  size_t size = objects + objects / 64 + (16u << 20);
  if (size < kMinPool) size = kMinPool;

  struct stat st {};
  bool exists = stat(path.c_str(), &st) == 0;
  bool remove = true;
  if (exists && S_ISDIR(st.st_mode)) {
    std::string pattern = path + "/xferlab-pmdk-XXXXXX";
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    int fd = mkstemp(name.data());  // a unique name; pmemobj_create makes the file itself
    if (fd < 0) throw BadArgument("--pmem '" + path + "': cannot create a pool there (" + errno_text() + ")");
    close(fd);
    unlink(name.data());
    p.file_ = name.data();
  } else if (exists && S_ISCHR(st.st_mode)) {
    if (!is_devdax(st))
      throw BadArgument("--pmem '" + path + "' is a character device that is not device-DAX (its "
                        "/sys/dev/char/MAJ:MIN/subsystem is not dax); allowed: a directory, a new file, or a DAX device");
    p.file_ = path;
    p.dax_ = true;
    remove = false;
    size = 0;  // a device-DAX pool spans the whole device
  } else if (exists) {
    throw BadArgument("--pmem '" + path + "' is an existing file; give a directory (xferlab creates and removes "
                      "its own pool there), a new file name, or a DAX device");
  } else {
    p.file_ = path;
  }
  p.pop_ = a.create(p.file_.c_str(), kLayout, size, 0600);
  if (!p.pop_) {
    const char* why = a.errormsg ? a.errormsg() : nullptr;
    throw BadArgument("--pmem '" + path + "': PMDK cannot make a pool of " + std::to_string(size) + " bytes there (" +
                      (why && *why ? why : errno_text()) + ")");
  }
  p.pool_bytes_ = size;
  if (!p.dax_) p.dax_ = takes_map_sync(p.file_);
  // The pool stays mapped; its name goes now, so that no crash or kill leaves the file behind.
  if (remove) unlink(p.file_.c_str());
  for (int i = 0; i < 3; ++i) {
    PMEMoid oid{0, 0};
    // POBJ_ALLOC(pop, &a, double, bytes, NULL, NULL), as STREAM-PMem allocates each array.
    if (a.alloc(p.pop_, &oid, object_bytes, kTypeArray, nullptr, nullptr) != 0)
      throw std::runtime_error("pmemobj_alloc of " + std::to_string(object_bytes) + " bytes failed: " +
                               p.last_error());
    p.arrays_[i] = static_cast<double*>(a.direct(oid));
  }
  p.is_pmem_ = a.is_pmem(p.arrays_[0], object_bytes) != 0;
  return pool;
}

PmdkPool::~PmdkPool() {
  if (pop_) api_->close(pop_);  // the objects go with the pool, whose file has no name left
}

void PmdkPool::persist(const void* p, size_t n) const { api_->persist(pop_, p, n); }

bool PmdkPool::tx_begin(void* p, size_t n) const {
  if (api_->tx_begin(pop_, nullptr, kTxParamNone) != 0) return false;
  return api_->tx_add_range_direct(p, n) == 0;  // on failure the transaction is aborted
}

bool PmdkPool::tx_end(bool begun) const {
  if (begun) api_->tx_commit();  // only in the work stage: past an abort PMDK would stop the process
  return api_->tx_end() == 0 && begun;
}

std::string PmdkPool::mechanism(bool tx) const {
  return std::string(tx ? "pmemobj_tx (undo log of each thread's chunk, commit)" : "pmemobj_persist") +
         (is_pmem_ ? ": cache-line write-back + fence" : ": msync (libpmem: not persistent memory)");
}

std::string PmdkPool::last_error() const {
  const char* why = api_ && api_->errormsg ? api_->errormsg() : nullptr;
  return why ? why : "";
}

}  // namespace xferlab
