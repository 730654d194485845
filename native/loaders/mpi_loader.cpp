// See mpi_loader.hpp: MPI's standard ABI resolved with dlopen/dlsym.
#include "mpi_loader.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <stdexcept>

namespace xferlab {
namespace mpi {

namespace {

Api g_api{};
std::string g_reason;

std::string g_prefix;  // "" for a standard-ABI library, "xferlab_" for xferlab's shim
std::string g_abi = "standard", g_mpi_library;
std::string g_one_sided_missing;  // the optional one-sided entry points not found, comma-separated

template <class F>
bool resolve(void* lib, F& slot, const char* name) {
  void* symbol = dlsym(lib, (g_prefix + name).c_str());
  slot = reinterpret_cast<F>(symbol);
  return symbol != nullptr;
}

std::string load_once() {
  const std::string path = library();
  dlerror();
  // RTLD_GLOBAL: the MPI's own plugins (network providers) resolve MPI symbols from it.
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    const char* why = dlerror();
    return why ? std::string(why) : path + ": dlopen failed";
  }
  // xferlab's shim (src/xferlab/measure/mpi_shim.c, built with a site MPI's mpicc) exports the same
  // calls with the standard ABI's handles, each named xferlab_<name>, and says which ABI it wraps.
  if (auto shim_abi = reinterpret_cast<const char* (*)()>(dlsym(lib, "xferlab_shim_abi"))) {
    g_prefix = "xferlab_";
    g_abi = shim_abi();
    if (auto under = reinterpret_cast<const char* (*)()>(dlsym(lib, "xferlab_shim_mpi_library"))) g_mpi_library = under();
  } else {
    g_mpi_library = path;
  }
  struct Entry {
    const char* name;
    bool ok;
  };
  Api& a = g_api;
  const Entry entries[] = {
      {"MPI_Init", resolve(lib, a.Init, "MPI_Init")},
      {"MPI_Initialized", resolve(lib, a.Initialized, "MPI_Initialized")},
      {"MPI_Finalize", resolve(lib, a.Finalize, "MPI_Finalize")},
      {"MPI_Abort", resolve(lib, a.Abort, "MPI_Abort")},
      {"MPI_Abi_get_version", resolve(lib, a.Abi_get_version, "MPI_Abi_get_version")},
      {"MPI_Get_version", resolve(lib, a.Get_version, "MPI_Get_version")},
      {"MPI_Get_library_version", resolve(lib, a.Get_library_version, "MPI_Get_library_version")},
      {"MPI_Get_processor_name", resolve(lib, a.Get_processor_name, "MPI_Get_processor_name")},
      {"MPI_Error_string", resolve(lib, a.Error_string, "MPI_Error_string")},
      {"MPI_Comm_set_errhandler", resolve(lib, a.Comm_set_errhandler, "MPI_Comm_set_errhandler")},
      {"MPI_Comm_rank", resolve(lib, a.Comm_rank, "MPI_Comm_rank")},
      {"MPI_Comm_size", resolve(lib, a.Comm_size, "MPI_Comm_size")},
      {"MPI_Comm_split_type", resolve(lib, a.Comm_split_type, "MPI_Comm_split_type")},
      {"MPI_Comm_free", resolve(lib, a.Comm_free, "MPI_Comm_free")},
      {"MPI_Send", resolve(lib, a.Send, "MPI_Send")},
      {"MPI_Recv", resolve(lib, a.Recv, "MPI_Recv")},
      {"MPI_Isend", resolve(lib, a.Isend, "MPI_Isend")},
      {"MPI_Irecv", resolve(lib, a.Irecv, "MPI_Irecv")},
      {"MPI_Waitall", resolve(lib, a.Waitall, "MPI_Waitall")},
      {"MPI_Barrier", resolve(lib, a.Barrier, "MPI_Barrier")},
      {"MPI_Bcast", resolve(lib, a.Bcast, "MPI_Bcast")},
      {"MPI_Reduce", resolve(lib, a.Reduce, "MPI_Reduce")},
      {"MPI_Allreduce", resolve(lib, a.Allreduce, "MPI_Allreduce")},
      {"MPI_Alltoall", resolve(lib, a.Alltoall, "MPI_Alltoall")},
      {"MPI_Allgather", resolve(lib, a.Allgather, "MPI_Allgather")},
      {"MPI_Gather", resolve(lib, a.Gather, "MPI_Gather")},
      {"MPI_Gatherv", resolve(lib, a.Gatherv, "MPI_Gatherv")},
      {"MPI_Scatter", resolve(lib, a.Scatter, "MPI_Scatter")},
      {"MPI_Reduce_scatter_block", resolve(lib, a.Reduce_scatter_block, "MPI_Reduce_scatter_block")},
      {"MPI_Alltoallv", resolve(lib, a.Alltoallv, "MPI_Alltoallv")},
      {"MPI_Allgatherv", resolve(lib, a.Allgatherv, "MPI_Allgatherv")},
      {"MPI_Wait", resolve(lib, a.Wait, "MPI_Wait")},
      {"MPI_Iallreduce", resolve(lib, a.Iallreduce, "MPI_Iallreduce")},
      {"MPI_Ireduce", resolve(lib, a.Ireduce, "MPI_Ireduce")},
      {"MPI_Ibcast", resolve(lib, a.Ibcast, "MPI_Ibcast")},
      {"MPI_Ialltoall", resolve(lib, a.Ialltoall, "MPI_Ialltoall")},
      {"MPI_Iallgather", resolve(lib, a.Iallgather, "MPI_Iallgather")},
      {"MPI_Igather", resolve(lib, a.Igather, "MPI_Igather")},
      {"MPI_Iscatter", resolve(lib, a.Iscatter, "MPI_Iscatter")},
      {"MPI_Ibarrier", resolve(lib, a.Ibarrier, "MPI_Ibarrier")},
      {"MPI_Comm_get_info", resolve(lib, a.Comm_get_info, "MPI_Comm_get_info")},
      {"MPI_Info_get_string", resolve(lib, a.Info_get_string, "MPI_Info_get_string")},
      {"MPI_Info_free", resolve(lib, a.Info_free, "MPI_Info_free")},
  };
  for (const Entry& e : entries)
    if (!e.ok)
      return path + " does not export " + g_prefix + e.name +
             (g_prefix.empty() ? " (not an MPI standard-ABI library?)" : " (a shim of another xferlab?)");
  resolve(lib, a.Query_cuda_support, "MPIX_Query_cuda_support");  // optional
  const Entry one_sided[] = {  // optional too: only the one-sided tests need them
      {"MPI_Comm_split", resolve(lib, a.Comm_split, "MPI_Comm_split")},
      {"MPI_Comm_group", resolve(lib, a.Comm_group, "MPI_Comm_group")},
      {"MPI_Group_incl", resolve(lib, a.Group_incl, "MPI_Group_incl")},
      {"MPI_Group_free", resolve(lib, a.Group_free, "MPI_Group_free")},
      {"MPI_Win_create", resolve(lib, a.Win_create, "MPI_Win_create")},
      {"MPI_Win_allocate", resolve(lib, a.Win_allocate, "MPI_Win_allocate")},
      {"MPI_Win_free", resolve(lib, a.Win_free, "MPI_Win_free")},
      {"MPI_Win_set_errhandler", resolve(lib, a.Win_set_errhandler, "MPI_Win_set_errhandler")},
      {"MPI_Put", resolve(lib, a.Put, "MPI_Put")},
      {"MPI_Get", resolve(lib, a.Get, "MPI_Get")},
      {"MPI_Win_lock", resolve(lib, a.Win_lock, "MPI_Win_lock")},
      {"MPI_Win_unlock", resolve(lib, a.Win_unlock, "MPI_Win_unlock")},
      {"MPI_Win_lock_all", resolve(lib, a.Win_lock_all, "MPI_Win_lock_all")},
      {"MPI_Win_unlock_all", resolve(lib, a.Win_unlock_all, "MPI_Win_unlock_all")},
      {"MPI_Win_flush", resolve(lib, a.Win_flush, "MPI_Win_flush")},
      {"MPI_Win_flush_local", resolve(lib, a.Win_flush_local, "MPI_Win_flush_local")},
      {"MPI_Win_fence", resolve(lib, a.Win_fence, "MPI_Win_fence")},
      {"MPI_Win_post", resolve(lib, a.Win_post, "MPI_Win_post")},
      {"MPI_Win_start", resolve(lib, a.Win_start, "MPI_Win_start")},
      {"MPI_Win_complete", resolve(lib, a.Win_complete, "MPI_Win_complete")},
      {"MPI_Win_wait", resolve(lib, a.Win_wait, "MPI_Win_wait")},
  };
  for (const Entry& e : one_sided)
    if (!e.ok) g_one_sided_missing += (g_one_sided_missing.empty() ? "" : ", ") + g_prefix + e.name;
  return "";
}

}  // namespace

std::string library() {
  const char* env = std::getenv("XFERLAB_MPI_LIB");
  return env && *env ? env : "libmpi_abi.so.1";
}

std::string abi() { return g_abi; }
std::string mpi_library() { return g_mpi_library; }
std::string one_sided_missing() { return g_one_sided_missing; }

const Api* load(std::string& why) {
  static std::once_flag once;
  std::call_once(once, [] { g_reason = load_once(); });
  why = g_reason;
  return g_reason.empty() ? &g_api : nullptr;
}

void check(int code, const char* what) {
  if (code == SUCCESS) return;
  char text[MAX_ERROR_STRING] = {0};
  int length = 0;
  if (g_api.Error_string && g_api.Error_string(code, text, &length) == SUCCESS && length > 0)
    throw std::runtime_error(std::string(what) + ": " + std::string(text, static_cast<size_t>(length)));
  throw std::runtime_error(std::string(what) + ": MPI error " + std::to_string(code));
}

}  // namespace mpi
}  // namespace xferlab
