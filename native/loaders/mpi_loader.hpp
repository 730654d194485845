// MPI through the MPI 5.0 standard ABI, resolved from libmpi_abi.so with dlopen/dlsym at run time:
// no MPI header or library is needed to build xferlab, and one probe binary runs on any MPI that
// ships the standard ABI (MPICH 5 does, as libmpi_abi.so.1; so does the `mpich` wheel on PyPI).
//
// The handle types and the constants below were written for xferlab from the MPI Standard 5.0
// (MPI Forum, 2025), chapter "Application Binary Interface (ABI)" and its Annex with the ABI's
// constant values: handles are pointers to incomplete structs, predefined handles small integer
// constants, MPI_STATUS_IGNORE the null pointer. Only what the probe uses is declared.
//
// The library is $XFERLAB_MPI_LIB when set (xferlab's Python side sets it to the library it
// found), else "libmpi_abi.so.1" on the loader's search path. An MPI without the standard ABI (the
// MPICH ABI, libmpi.so.12; Open MPI, libmpi.so.40) is reached through xferlab's shim
// (src/xferlab/measure/mpi_shim.c, compiled with that MPI's mpicc): the same calls and handles,
// each exported as xferlab_<name>; load() takes whichever it finds.
#pragma once
#include <cstdint>
#include <string>

namespace xferlab {
namespace mpi {

struct Comm_;
struct Datatype_;
struct Op_;
struct Request_;
struct Errhandler_;
struct Info_;
struct Win_;
struct Group_;
using Comm = Comm_*;
using Datatype = Datatype_*;
using Op = Op_*;
using Request = Request_*;
using Errhandler = Errhandler_*;
using Info = Info_*;
using Win = Win_*;      // one-sided communication (network_rma.cpp)
using Group = Group_*;
using Aint = intptr_t;  // MPI_Aint in the standard ABI
struct Status;  // only MPI_STATUS_IGNORE (null) is passed

template <class T>
T handle(uintptr_t value) {
  return reinterpret_cast<T>(value);
}

// Predefined handles and constants of the standard ABI (MPI 5.0, ABI annex).
const Comm COMM_WORLD = handle<Comm>(0x101);
const Comm COMM_NULL = handle<Comm>(0x100);
const Info INFO_NULL = handle<Info>(0x130);
const Errhandler ERRORS_RETURN = handle<Errhandler>(0x143);
const Op SUM = handle<Op>(0x21);
const Op MIN = handle<Op>(0x22);
const Op MAX = handle<Op>(0x23);
const Datatype INT = handle<Datatype>(0x209);
const Datatype FLOAT = handle<Datatype>(0x210);
const Datatype DOUBLE = handle<Datatype>(0x214);
const Datatype CHAR = handle<Datatype>(0x243);
const Datatype BYTE = handle<Datatype>(0x247);
Status* const STATUS_IGNORE = nullptr;
const Request REQUEST_NULL = handle<Request>(0x180);
constexpr int SUCCESS = 0;
constexpr int COMM_TYPE_SHARED = 221;
constexpr int MAX_PROCESSOR_NAME = 256;
constexpr int MAX_LIBRARY_VERSION_STRING = 8192;
constexpr int MAX_ERROR_STRING = 512;
constexpr int MAX_INFO_VAL = 1024;
// One-sided communication (MPI 5.0 ABI annex; mpi_abi.h of the mpich wheel has the same values).
const Win WIN_NULL = handle<Win>(0x110);
const Group GROUP_NULL = handle<Group>(0x108);
constexpr int LOCK_EXCLUSIVE = 301, LOCK_SHARED = 302;
constexpr int MODE_NOCHECK = 1024, MODE_NOPRECEDE = 2048, MODE_NOPUT = 4096, MODE_NOSTORE = 8192,
              MODE_NOSUCCEED = 16384;

// The entry points, resolved once; a missing one makes load() fail with its name.
struct Api {
  int (*Init)(int*, char***);
  int (*Initialized)(int*);
  int (*Finalize)();
  int (*Abort)(Comm, int);
  int (*Abi_get_version)(int*, int*);
  int (*Get_version)(int*, int*);
  int (*Get_library_version)(char*, int*);
  int (*Get_processor_name)(char*, int*);
  int (*Error_string)(int, char*, int*);
  int (*Comm_set_errhandler)(Comm, Errhandler);
  int (*Comm_rank)(Comm, int*);
  int (*Comm_size)(Comm, int*);
  int (*Comm_split_type)(Comm, int, int, Info, Comm*);
  int (*Comm_free)(Comm*);
  int (*Send)(const void*, int, Datatype, int, int, Comm);
  int (*Recv)(void*, int, Datatype, int, int, Comm, Status*);
  int (*Isend)(const void*, int, Datatype, int, int, Comm, Request*);
  int (*Irecv)(void*, int, Datatype, int, int, Comm, Request*);
  int (*Waitall)(int, Request*, Status*);
  int (*Barrier)(Comm);
  int (*Bcast)(void*, int, Datatype, int, Comm);
  int (*Reduce)(const void*, void*, int, Datatype, Op, int, Comm);
  int (*Allreduce)(const void*, void*, int, Datatype, Op, Comm);
  int (*Alltoall)(const void*, int, Datatype, void*, int, Datatype, Comm);
  int (*Allgather)(const void*, int, Datatype, void*, int, Datatype, Comm);
  int (*Gather)(const void*, int, Datatype, void*, int, Datatype, int, Comm);
  int (*Gatherv)(const void*, int, Datatype, void*, const int*, const int*, Datatype, int, Comm);
  // The collectives OSU has beside those above, and the non-blocking ones (native/probe/network_nbc.cpp).
  int (*Scatter)(const void*, int, Datatype, void*, int, Datatype, int, Comm);
  int (*Reduce_scatter_block)(const void*, void*, int, Datatype, Op, Comm);
  int (*Alltoallv)(const void*, const int*, const int*, Datatype, void*, const int*, const int*, Datatype, Comm);
  int (*Allgatherv)(const void*, int, Datatype, void*, const int*, const int*, Datatype, Comm);
  int (*Wait)(Request*, Status*);
  int (*Iallreduce)(const void*, void*, int, Datatype, Op, Comm, Request*);
  int (*Ireduce)(const void*, void*, int, Datatype, Op, int, Comm, Request*);
  int (*Ibcast)(void*, int, Datatype, int, Comm, Request*);
  int (*Ialltoall)(const void*, int, Datatype, void*, int, Datatype, Comm, Request*);
  int (*Iallgather)(const void*, int, Datatype, void*, int, Datatype, Comm, Request*);
  int (*Igather)(const void*, int, Datatype, void*, int, Datatype, int, Comm, Request*);
  int (*Iscatter)(const void*, int, Datatype, void*, int, Datatype, int, Comm, Request*);
  int (*Ibarrier)(Comm, Request*);
  int (*Comm_get_info)(Comm, Info*);
  int (*Info_get_string)(Info, const char*, int*, char*, int*);
  int (*Info_free)(Info*);
  // Optional: whether the MPI moves CUDA device memory itself (an MPICH and Open MPI extension).
  int (*Query_cuda_support)();
  // Optional: one-sided communication (MPI_Win_*, MPI_Put, MPI_Get) and the groups and split communicator
  // its tests take; one_sided_missing() names those this MPI lacks (the tests then refuse to run).
  int (*Comm_split)(Comm, int, int, Comm*);
  int (*Comm_group)(Comm, Group*);
  int (*Group_incl)(Group, int, const int*, Group*);
  int (*Group_free)(Group*);
  int (*Win_create)(void*, Aint, int, Info, Comm, Win*);
  int (*Win_allocate)(Aint, int, Info, Comm, void*, Win*);
  int (*Win_free)(Win*);
  int (*Win_set_errhandler)(Win, Errhandler);
  int (*Put)(const void*, int, Datatype, int, Aint, int, Datatype, Win);
  int (*Get)(void*, int, Datatype, int, Aint, int, Datatype, Win);
  int (*Win_lock)(int, int, int, Win);
  int (*Win_unlock)(int, Win);
  int (*Win_lock_all)(int, Win);
  int (*Win_unlock_all)(Win);
  int (*Win_flush)(int, Win);
  int (*Win_flush_local)(int, Win);
  int (*Win_fence)(int, Win);
  int (*Win_post)(Group, int, Win);
  int (*Win_start)(Group, int, Win);
  int (*Win_complete)(Win);
  int (*Win_wait)(Win);
};

// The library's path as it will be (or was) opened.
std::string library();
// After load(): "standard" (a standard-ABI library), else the ABI the shim wraps ("mpich", "openmpi"),
// and the MPI library whose calls run (the shim's libmpi, or the standard-ABI library itself).
std::string abi();
std::string mpi_library();
// The resolved API, or nullptr with the reason in `why` (library or symbol missing). Loads once.
const Api* load(std::string& why);
// After load(): the one-sided entry points this MPI does not export ("" when it has them all).
std::string one_sided_missing();
// Throws std::runtime_error naming `what` and the MPI's own message when `code` is not SUCCESS.
void check(int code, const char* what);

}  // namespace mpi
}  // namespace xferlab
