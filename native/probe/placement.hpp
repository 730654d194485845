// Where threads run and where memory lives: CPU affinity, NUMA memory policy through the raw
// system calls (no libnuma at build time), and a check of where pages actually landed.
#pragma once
#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace xferlab {

// CPUs this process may run on (sched_getaffinity).
std::vector<int> allowed_cpus();
// Throws BadArgument naming any CPU of `cpus` this process may not run on.
void check_cpus(const std::vector<int>& cpus);
// Pins the calling thread to one CPU; returns false if the kernel refused.
bool pin_to_cpu(int cpu);
// Confines the calling thread to the CPUs of `cpus` (one of them, as the scheduler picks); returns false
// if the kernel refused. Call it once the device is open: threads inherit the affinity of the thread that
// creates them, so placing the host thread before a runtime starts its own would confine those too.
bool place_on_cpus(const std::vector<int>& cpus);
// `cpus` as a list such as "0-3,8" (the form --cpus takes).
std::string cpu_list_text(const std::vector<int>& cpus);
// --cpus LIST for a probe whose device opens deep inside its modes (kernels, collab): remember the
// set, checked against the allowed CPUs now; place_requested() then places the calling thread on it
// once, when a device has been opened (ClDevice::open, the CUDA context's creation). Threads the
// probe starts afterwards (collab's host threads) inherit the set. placed_cpus_text(): the calling
// thread's CPUs as the kernel reports them once placed ("" when it was not).
void request_placement(const std::vector<int>& cpus);
void place_requested();
std::string placed_cpus_text();

// NUMA nodes that exist (/sys/devices/system/node/nodeN).
std::vector<int> numa_nodes();
// Throws BadArgument if `node` does not exist.
void check_node(int node);
// Binds [addr, addr+len) to `node` with MPOL_BIND (mbind(2)) before it is touched.
// Returns an empty string on success, else the reason.
std::string bind_to_node(void* addr, size_t len, int node);
// Where the pages of [addr, addr+len) are: node → pages, from move_pages(2) on up to
// `samples` pages spread over the range. Node -1 counts pages the kernel could not place
// (not yet faulted) and -2 pages it would not report.
std::map<int, long> page_nodes(void* addr, size_t len, int samples = 1024);
std::string page_nodes_json(const std::map<int, long>& nodes);

}  // namespace xferlab
