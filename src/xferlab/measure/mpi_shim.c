/* xferlab's MPI shim: the MPI 5 standard ABI's calling convention, for the few calls the network probe
 * makes, on top of an MPI that does not ship that ABI (the MPICH ABI, libmpi.so.12: MPICH, Intel MPI,
 * Cray MPICH, MVAPICH; Open MPI, libmpi.so.40). xferlab compiles it at first use with that MPI's own
 * wrapper (`mpicc -shared -fPIC -O2`), as the OSU Micro-Benchmarks and mpi4py are built against the
 * site's MPI, and caches it per MPI (measure/mpi_site.py). The probe (native/loaders/mpi_loader.cpp)
 * loads it in place of libmpi_abi.so and finds every entry point as xferlab_<name>: the timing loops
 * stay in the probe, one loop for every ABI; this file only translates handles.
 *
 * Handles: the probe passes the standard ABI's predefined constants (MPI Standard 5.0, the ABI annex;
 * the same values as native/loaders/mpi_loader.hpp), translated here into this MPI's own; handles this
 * MPI returns (requests, a split communicator, an info object) travel in the pointer-sized ABI handle
 * bit for bit (an int for MPICH, a pointer for Open MPI). Statuses: only MPI_STATUS(ES)_IGNORE. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(OPEN_MPI)
#define SHIM_ABI "openmpi"
#elif defined(MPICH_VERSION)
#define SHIM_ABI "mpich"
#else
#define SHIM_ABI "other"
#endif

typedef void* H; /* a standard-ABI handle */

_Static_assert(sizeof(MPI_Request) <= sizeof(H), "MPI_Request wider than a pointer");
_Static_assert(sizeof(MPI_Comm) <= sizeof(H), "MPI_Comm wider than a pointer");
_Static_assert(sizeof(MPI_Info) <= sizeof(H), "MPI_Info wider than a pointer");
_Static_assert(sizeof(MPI_Win) <= sizeof(H), "MPI_Win wider than a pointer");
_Static_assert(sizeof(MPI_Group) <= sizeof(H), "MPI_Group wider than a pointer");
_Static_assert(sizeof(MPI_Aint) == sizeof(intptr_t), "MPI_Aint is not pointer-sized");

#define FROM_BITS(type, h) ({ type v_; uintptr_t u_ = (uintptr_t)(h); memcpy(&v_, &u_, sizeof v_); v_; })
static H to_bits(const void* native, size_t n) {
  uintptr_t u = 0;
  memcpy(&u, native, n);
  return (H)u;
}

static MPI_Comm comm(H h) {
  switch ((uintptr_t)h) {
    case 0x100: return MPI_COMM_NULL;
    case 0x101: return MPI_COMM_WORLD;
    case 0x102: return MPI_COMM_SELF;
    default: return FROM_BITS(MPI_Comm, h);
  }
}
static MPI_Info info(H h) { return (uintptr_t)h == 0x130 ? MPI_INFO_NULL : FROM_BITS(MPI_Info, h); }
static MPI_Datatype type(H h) {
  switch ((uintptr_t)h) {
    case 0x209: return MPI_INT;
    case 0x210: return MPI_FLOAT;
    case 0x214: return MPI_DOUBLE;
    case 0x243: return MPI_CHAR;
    case 0x247: return MPI_BYTE;
    default: return MPI_DATATYPE_NULL;
  }
}
static MPI_Op op(H h) {
  switch ((uintptr_t)h) {
    case 0x21: return MPI_SUM;
    case 0x22: return MPI_MIN;
    case 0x23: return MPI_MAX;
    default: return MPI_OP_NULL;
  }
}

/* One-sided communication: windows and groups travel bit for bit (their null handles translated); lock
 * types and assertions are the standard ABI's values (MPI_LOCK_EXCLUSIVE 301, MPI_LOCK_SHARED 302,
 * MPI_MODE_NOCHECK 1024, NOPRECEDE 2048, NOPUT 4096, NOSTORE 8192, NOSUCCEED 16384), this MPI's below. */
static MPI_Win win(H h) { return (uintptr_t)h == 0x110 ? MPI_WIN_NULL : FROM_BITS(MPI_Win, h); }
static H win_out(MPI_Win w) { return w == MPI_WIN_NULL ? (H)0x110 : to_bits(&w, sizeof w); }
static MPI_Group group(H h) {
  switch ((uintptr_t)h) {
    case 0x108: return MPI_GROUP_NULL;
    case 0x109: return MPI_GROUP_EMPTY;
    default: return FROM_BITS(MPI_Group, h);
  }
}
static H group_out(MPI_Group g) {
  return g == MPI_GROUP_NULL ? (H)0x108 : g == MPI_GROUP_EMPTY ? (H)0x109 : to_bits(&g, sizeof g);
}
static int lock_type(int t) { return t == 301 ? MPI_LOCK_EXCLUSIVE : t == 302 ? MPI_LOCK_SHARED : -1; }
static int assertion(int a) {
  return (a & 1024 ? MPI_MODE_NOCHECK : 0) | (a & 2048 ? MPI_MODE_NOPRECEDE : 0) | (a & 4096 ? MPI_MODE_NOPUT : 0) |
         (a & 8192 ? MPI_MODE_NOSTORE : 0) | (a & 16384 ? MPI_MODE_NOSUCCEED : 0);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wstringop-overflow" /* gcc reads MPICH's MPI_STATUSES_IGNORE as an empty array */
#endif
#define EXPORT __attribute__((visibility("default")))

EXPORT const char* xferlab_shim_abi(void) { return SHIM_ABI; }
/* The MPI library this shim calls (its path as the dynamic loader opened it). */
EXPORT const char* xferlab_shim_mpi_library(void) {
  Dl_info where;
  if (dladdr((void*)&MPI_Init, &where) && where.dli_fname) return where.dli_fname;
  return "";
}

EXPORT int xferlab_MPI_Init(int* argc, char*** argv) { return MPI_Init(argc, argv); }
EXPORT int xferlab_MPI_Initialized(int* flag) { return MPI_Initialized(flag); }
EXPORT int xferlab_MPI_Finalize(void) { return MPI_Finalize(); }
EXPORT int xferlab_MPI_Abort(H c, int code) { return MPI_Abort(comm(c), code); }
/* No standard ABI underneath: -1.-1 (the probe records the ABI by name, xferlab_shim_abi). */
EXPORT int xferlab_MPI_Abi_get_version(int* major, int* minor) {
  *major = -1;
  *minor = -1;
  return MPI_SUCCESS;
}
EXPORT int xferlab_MPI_Get_version(int* major, int* minor) { return MPI_Get_version(major, minor); }
EXPORT int xferlab_MPI_Get_library_version(char* text, int* length) { return MPI_Get_library_version(text, length); }
EXPORT int xferlab_MPI_Get_processor_name(char* name, int* length) { return MPI_Get_processor_name(name, length); }
EXPORT int xferlab_MPI_Error_string(int code, char* text, int* length) { return MPI_Error_string(code, text, length); }
EXPORT int xferlab_MPI_Comm_set_errhandler(H c, H handler) {
  return MPI_Comm_set_errhandler(comm(c), (uintptr_t)handler == 0x143 ? MPI_ERRORS_RETURN : MPI_ERRORS_ARE_FATAL);
}
EXPORT int xferlab_MPI_Comm_rank(H c, int* rank) { return MPI_Comm_rank(comm(c), rank); }
EXPORT int xferlab_MPI_Comm_size(H c, int* size) { return MPI_Comm_size(comm(c), size); }
EXPORT int xferlab_MPI_Comm_split_type(H c, int split, int key, H i, H* out) {
  MPI_Comm made = MPI_COMM_NULL;
  const int code = MPI_Comm_split_type(comm(c), split == 221 ? MPI_COMM_TYPE_SHARED : split, key, info(i), &made);
  *out = made == MPI_COMM_NULL ? (H)0x100 : to_bits(&made, sizeof made);
  return code;
}
EXPORT int xferlab_MPI_Comm_free(H* c) {
  MPI_Comm native = comm(*c);
  const int code = MPI_Comm_free(&native);
  *c = (H)0x100;
  return code;
}
EXPORT int xferlab_MPI_Send(const void* buf, int count, H t, int dest, int tag, H c) {
  return MPI_Send(buf, count, type(t), dest, tag, comm(c));
}
EXPORT int xferlab_MPI_Recv(void* buf, int count, H t, int source, int tag, H c, void* status) {
  (void)status;
  return MPI_Recv(buf, count, type(t), source, tag, comm(c), MPI_STATUS_IGNORE);
}
EXPORT int xferlab_MPI_Isend(const void* buf, int count, H t, int dest, int tag, H c, H* request) {
  MPI_Request r;
  const int code = MPI_Isend(buf, count, type(t), dest, tag, comm(c), &r);
  *request = to_bits(&r, sizeof r);
  return code;
}
EXPORT int xferlab_MPI_Irecv(void* buf, int count, H t, int source, int tag, H c, H* request) {
  MPI_Request r;
  const int code = MPI_Irecv(buf, count, type(t), source, tag, comm(c), &r);
  *request = to_bits(&r, sizeof r);
  return code;
}
EXPORT int xferlab_MPI_Waitall(int count, H* requests, void* statuses) {
  (void)statuses;
  if (sizeof(MPI_Request) == sizeof(H)) /* Open MPI: the ABI's array is this MPI's, bit for bit */
    return MPI_Waitall(count, (MPI_Request*)(void*)requests, MPI_STATUSES_IGNORE);
  MPI_Request local[256];
  MPI_Request* native = count <= 256 ? local : (MPI_Request*)malloc(sizeof(MPI_Request) * (size_t)count);
  if (!native) return MPI_ERR_NO_MEM;
  for (int k = 0; k < count; ++k) native[k] = FROM_BITS(MPI_Request, requests[k]);
  const int code = MPI_Waitall(count, native, MPI_STATUSES_IGNORE);
  for (int k = 0; k < count; ++k) requests[k] = to_bits(&native[k], sizeof native[k]);
  if (native != local) free(native);
  return code;
}
EXPORT int xferlab_MPI_Barrier(H c) { return MPI_Barrier(comm(c)); }
EXPORT int xferlab_MPI_Bcast(void* buf, int count, H t, int root, H c) { return MPI_Bcast(buf, count, type(t), root, comm(c)); }
EXPORT int xferlab_MPI_Reduce(const void* in, void* out, int count, H t, H o, int root, H c) {
  return MPI_Reduce(in, out, count, type(t), op(o), root, comm(c));
}
EXPORT int xferlab_MPI_Allreduce(const void* in, void* out, int count, H t, H o, H c) {
  return MPI_Allreduce(in, out, count, type(t), op(o), comm(c));
}
EXPORT int xferlab_MPI_Alltoall(const void* in, int n, H t, void* out, int m, H u, H c) {
  return MPI_Alltoall(in, n, type(t), out, m, type(u), comm(c));
}
EXPORT int xferlab_MPI_Allgather(const void* in, int n, H t, void* out, int m, H u, H c) {
  return MPI_Allgather(in, n, type(t), out, m, type(u), comm(c));
}
EXPORT int xferlab_MPI_Gather(const void* in, int n, H t, void* out, int m, H u, int root, H c) {
  return MPI_Gather(in, n, type(t), out, m, type(u), root, comm(c));
}
EXPORT int xferlab_MPI_Gatherv(const void* in, int n, H t, void* out, const int* counts, const int* displs, H u, int root,
                               H c) {
  return MPI_Gatherv(in, n, type(t), out, counts, displs, type(u), root, comm(c));
}
EXPORT int xferlab_MPI_Comm_get_info(H c, H* out) {
  MPI_Info made = MPI_INFO_NULL;
  const int code = MPI_Comm_get_info(comm(c), &made);
  *out = made == MPI_INFO_NULL ? (H)0x130 : to_bits(&made, sizeof made);
  return code;
}
EXPORT int xferlab_MPI_Info_get_string(H i, const char* key, int* length, char* value, int* flag) {
#if MPI_VERSION >= 4
  return MPI_Info_get_string(info(i), key, length, value, flag);
#else /* MPI 3.1 (Open MPI 4): MPI_Info_get, whose valuelen excludes the terminating null */
  const int code = MPI_Info_get(info(i), key, *length > 0 ? *length - 1 : 0, value, flag);
  if (code == MPI_SUCCESS && *flag) *length = (int)strlen(value) + 1;
  return code;
#endif
}
EXPORT int xferlab_MPI_Info_free(H* i) {
  MPI_Info native = info(*i);
  const int code = MPI_Info_free(&native);
  *i = (H)0x130;
  return code;
}

EXPORT int xferlab_MPI_Comm_split(H c, int color, int key, H* out) {
  MPI_Comm made = MPI_COMM_NULL;
  const int code = MPI_Comm_split(comm(c), color, key, &made);
  *out = made == MPI_COMM_NULL ? (H)0x100 : to_bits(&made, sizeof made);
  return code;
}
EXPORT int xferlab_MPI_Comm_group(H c, H* out) {
  MPI_Group made = MPI_GROUP_NULL;
  const int code = MPI_Comm_group(comm(c), &made);
  *out = group_out(made);
  return code;
}
EXPORT int xferlab_MPI_Group_incl(H g, int n, const int* ranks, H* out) {
  MPI_Group made = MPI_GROUP_NULL;
  const int code = MPI_Group_incl(group(g), n, ranks, &made);
  *out = group_out(made);
  return code;
}
EXPORT int xferlab_MPI_Group_free(H* g) {
  MPI_Group native = group(*g);
  const int code = MPI_Group_free(&native);
  *g = (H)0x108;
  return code;
}
EXPORT int xferlab_MPI_Win_create(void* base, intptr_t size, int unit, H i, H c, H* out) {
  MPI_Win made = MPI_WIN_NULL;
  const int code = MPI_Win_create(base, (MPI_Aint)size, unit, info(i), comm(c), &made);
  *out = win_out(made);
  return code;
}
EXPORT int xferlab_MPI_Win_allocate(intptr_t size, int unit, H i, H c, void* base, H* out) {
  MPI_Win made = MPI_WIN_NULL;
  const int code = MPI_Win_allocate((MPI_Aint)size, unit, info(i), comm(c), base, &made);
  *out = win_out(made);
  return code;
}
EXPORT int xferlab_MPI_Win_free(H* w) {
  MPI_Win native = win(*w);
  const int code = MPI_Win_free(&native);
  *w = (H)0x110;
  return code;
}
EXPORT int xferlab_MPI_Win_set_errhandler(H w, H handler) {
  return MPI_Win_set_errhandler(win(w), (uintptr_t)handler == 0x143 ? MPI_ERRORS_RETURN : MPI_ERRORS_ARE_FATAL);
}
EXPORT int xferlab_MPI_Put(const void* buf, int n, H t, int target, intptr_t disp, int m, H u, H w) {
  return MPI_Put(buf, n, type(t), target, (MPI_Aint)disp, m, type(u), win(w));
}
EXPORT int xferlab_MPI_Get(void* buf, int n, H t, int target, intptr_t disp, int m, H u, H w) {
  return MPI_Get(buf, n, type(t), target, (MPI_Aint)disp, m, type(u), win(w));
}
EXPORT int xferlab_MPI_Win_lock(int lock, int rank, int a, H w) { return MPI_Win_lock(lock_type(lock), rank, assertion(a), win(w)); }
EXPORT int xferlab_MPI_Win_unlock(int rank, H w) { return MPI_Win_unlock(rank, win(w)); }
EXPORT int xferlab_MPI_Win_lock_all(int a, H w) { return MPI_Win_lock_all(assertion(a), win(w)); }
EXPORT int xferlab_MPI_Win_unlock_all(H w) { return MPI_Win_unlock_all(win(w)); }
EXPORT int xferlab_MPI_Win_flush(int rank, H w) { return MPI_Win_flush(rank, win(w)); }
EXPORT int xferlab_MPI_Win_flush_local(int rank, H w) { return MPI_Win_flush_local(rank, win(w)); }
EXPORT int xferlab_MPI_Win_fence(int a, H w) { return MPI_Win_fence(assertion(a), win(w)); }
EXPORT int xferlab_MPI_Win_post(H g, int a, H w) { return MPI_Win_post(group(g), assertion(a), win(w)); }
EXPORT int xferlab_MPI_Win_start(H g, int a, H w) { return MPI_Win_start(group(g), assertion(a), win(w)); }
EXPORT int xferlab_MPI_Win_complete(H w) { return MPI_Win_complete(win(w)); }
EXPORT int xferlab_MPI_Win_wait(H w) { return MPI_Win_wait(win(w)); }

/* Whether this MPI moves CUDA device memory itself, where it says (Open MPI's and MPICH's extension). */
extern int MPIX_Query_cuda_support(void) __attribute__((weak));
EXPORT int xferlab_MPIX_Query_cuda_support(void) { return MPIX_Query_cuda_support ? MPIX_Query_cuda_support() : 0; }

/* The other collectives OSU has, and the non-blocking ones (native/probe/network_nbc.cpp). A request
 * travels bit for bit, except the null request: the standard ABI's MPI_REQUEST_NULL (0x180) here. */
static MPI_Request req_in(H h) { return (uintptr_t)h == 0x180 ? MPI_REQUEST_NULL : FROM_BITS(MPI_Request, h); }
static H req_out(MPI_Request r) { return r == MPI_REQUEST_NULL ? (H)0x180 : to_bits(&r, sizeof r); }
EXPORT int xferlab_MPI_Scatter(const void* in, int n, H t, void* out, int m, H u, int root, H c) {
  return MPI_Scatter(in, n, type(t), out, m, type(u), root, comm(c));
}
EXPORT int xferlab_MPI_Reduce_scatter_block(const void* in, void* out, int count, H t, H o, H c) {
  return MPI_Reduce_scatter_block(in, out, count, type(t), op(o), comm(c));
}
EXPORT int xferlab_MPI_Alltoallv(const void* in, const int* counts, const int* displs, H t, void* out, const int* rcounts,
                                 const int* rdispls, H u, H c) {
  return MPI_Alltoallv(in, counts, displs, type(t), out, rcounts, rdispls, type(u), comm(c));
}
EXPORT int xferlab_MPI_Allgatherv(const void* in, int n, H t, void* out, const int* counts, const int* displs, H u, H c) {
  return MPI_Allgatherv(in, n, type(t), out, counts, displs, type(u), comm(c));
}
EXPORT int xferlab_MPI_Wait(H* request, void* status) {
  (void)status;
  MPI_Request r = req_in(*request);
  const int code = MPI_Wait(&r, MPI_STATUS_IGNORE);
  *request = req_out(r);
  return code;
}
#define NBC_START(call)     \
  MPI_Request r_;           \
  const int code_ = (call); \
  *request = req_out(r_);   \
  return code_
EXPORT int xferlab_MPI_Iallreduce(const void* in, void* out, int count, H t, H o, H c, H* request) {
  NBC_START(MPI_Iallreduce(in, out, count, type(t), op(o), comm(c), &r_));
}
EXPORT int xferlab_MPI_Ireduce(const void* in, void* out, int count, H t, H o, int root, H c, H* request) {
  NBC_START(MPI_Ireduce(in, out, count, type(t), op(o), root, comm(c), &r_));
}
EXPORT int xferlab_MPI_Ibcast(void* buf, int count, H t, int root, H c, H* request) {
  NBC_START(MPI_Ibcast(buf, count, type(t), root, comm(c), &r_));
}
EXPORT int xferlab_MPI_Ialltoall(const void* in, int n, H t, void* out, int m, H u, H c, H* request) {
  NBC_START(MPI_Ialltoall(in, n, type(t), out, m, type(u), comm(c), &r_));
}
EXPORT int xferlab_MPI_Iallgather(const void* in, int n, H t, void* out, int m, H u, H c, H* request) {
  NBC_START(MPI_Iallgather(in, n, type(t), out, m, type(u), comm(c), &r_));
}
EXPORT int xferlab_MPI_Igather(const void* in, int n, H t, void* out, int m, H u, int root, H c, H* request) {
  NBC_START(MPI_Igather(in, n, type(t), out, m, type(u), root, comm(c), &r_));
}
EXPORT int xferlab_MPI_Iscatter(const void* in, int n, H t, void* out, int m, H u, int root, H c, H* request) {
  NBC_START(MPI_Iscatter(in, n, type(t), out, m, type(u), root, comm(c), &r_));
}
EXPORT int xferlab_MPI_Ibarrier(H c, H* request) { NBC_START(MPI_Ibarrier(comm(c), &r_)); }
