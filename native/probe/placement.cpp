#include "placement.hpp"

#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <stdexcept>
#include <string>

#include "args.hpp"

namespace xferlab {

namespace {
// From <linux/mempolicy.h>; spelled out so that no NUMA headers are needed to build.
constexpr int kMpolBind = 2;
constexpr unsigned kMpolMfStrict = 1u << 0;
constexpr unsigned kMpolMfMove = 1u << 1;
constexpr int kMaxNodes = 1024;
}  // namespace

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

void check_cpus(const std::vector<int>& cpus) {
  auto allowed = allowed_cpus();
  for (int c : cpus) {
    bool ok = false;
    for (int a : allowed) ok = ok || a == c;
    if (!ok) {
      std::string list;
      for (int a : allowed) list += (list.empty() ? "" : ",") + std::to_string(a);
      throw BadArgument("CPU " + std::to_string(c) + " does not exist or is not allowed; allowed: " + list);
    }
  }
}

bool pin_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

bool place_on_cpus(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

std::string cpu_list_text(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(cpus[i]) + (j > i ? "-" + std::to_string(cpus[j]) : "");
    i = j + 1;
  }
  return out;
}

namespace {
std::vector<int> requested;
bool placed = false;
}  // namespace

void request_placement(const std::vector<int>& cpus) {
  check_cpus(cpus);
  requested = cpus;
  placed = false;
}

void place_requested() {
  if (requested.empty() || placed) return;
  if (!place_on_cpus(requested)) throw std::runtime_error("could not place the host thread on --cpus " + cpu_list_text(requested));
  placed = true;
}

std::string placed_cpus_text() { return placed ? cpu_list_text(allowed_cpus()) : ""; }

std::vector<int> numa_nodes() {
  std::vector<int> nodes;
  DIR* dir = opendir("/sys/devices/system/node");
  if (!dir) return {0};
  while (dirent* entry = readdir(dir)) {
    int n = -1;
    if (std::sscanf(entry->d_name, "node%d", &n) == 1) nodes.push_back(n);
  }
  closedir(dir);
  if (nodes.empty()) nodes.push_back(0);
  return nodes;
}

void check_node(int node) {
  auto nodes = numa_nodes();
  std::string list;
  for (int n : nodes) {
    if (n == node) return;
    list += (list.empty() ? "" : ",") + std::to_string(n);
  }
  throw BadArgument("memory node " + std::to_string(node) + " does not exist; nodes: " + list);
}

std::string bind_to_node(void* addr, size_t len, int node) {
  if (node < 0 || node >= kMaxNodes) return "node out of range";
  unsigned long mask[kMaxNodes / (8 * sizeof(unsigned long))] = {};
  mask[node / (8 * sizeof(unsigned long))] |= 1ul << (node % (8 * sizeof(unsigned long)));
  long rc = syscall(SYS_mbind, addr, len, kMpolBind, mask, static_cast<unsigned long>(kMaxNodes),
                    kMpolMfStrict | kMpolMfMove);
  if (rc != 0) return std::string("mbind: ") + std::strerror(errno);
  return "";
}

std::map<int, long> page_nodes(void* addr, size_t len, int samples) {
  std::map<int, long> counts;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t pages = (len + page - 1) / page;
  if (pages == 0) return counts;
  size_t step = pages > static_cast<size_t>(samples) ? pages / samples : 1;
  std::vector<void*> where;
  for (size_t p = 0; p < pages; p += step) where.push_back(static_cast<char*>(addr) + p * page);
  std::vector<int> status(where.size(), -1);
  long rc = syscall(SYS_move_pages, 0, where.size(), where.data(), nullptr, status.data(), 0);
  if (rc != 0) {
    counts[-2] = static_cast<long>(where.size());
    return counts;
  }
  for (int s : status) counts[s >= 0 ? s : -1] += 1;
  return counts;
}

std::string page_nodes_json(const std::map<int, long>& nodes) {
  std::string out = "{";
  for (auto& [node, count] : nodes) {
    if (out.size() > 1) out += ",";
    out += "\"" + (node >= 0 ? std::to_string(node) : node == -1 ? std::string("unplaced") : std::string("unknown")) +
           "\":" + std::to_string(count);
  }
  return out + "}";
}

}  // namespace xferlab
