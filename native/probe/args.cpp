#include "args.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace xferlab {

Args::Args(int argc, char** argv, int first) {
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) throw BadArgument("unexpected argument '" + arg + "'");
    Item item{arg.substr(2), "", false, false};
    auto eq = item.name.find('=');
    if (eq != std::string::npos) {
      item.value = item.name.substr(eq + 1);
      item.name = item.name.substr(0, eq);
      item.has_value = true;
    } else if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) {
      item.value = argv[++i];
      item.has_value = true;
    }
    items_.push_back(item);
  }
}

Args::Item* Args::find(const std::string& name) {
  for (auto& item : items_)
    if (item.name == name) return &item;
  return nullptr;
}

bool Args::given(const std::string& name) const {
  for (auto& item : items_)
    if (item.name == name) return true;
  return false;
}

std::string Args::text(const std::string& name, const std::string& fallback) {
  Item* item = find(name);
  if (!item) return fallback;
  item->used = true;
  if (!item->has_value) throw BadArgument("--" + name + " needs a value");
  return item->value;
}

long long Args::integer(const std::string& name, long long fallback, long long lo, long long hi) {
  if (!given(name)) return fallback;
  std::string value = text(name, "");
  char* end = nullptr;
  errno = 0;
  long long parsed = std::strtoll(value.c_str(), &end, 10);
  if (errno || end == value.c_str() || *end != '\0' || parsed < lo || parsed > hi)
    throw BadArgument("--" + name + " '" + value + "' is not an integer in " + std::to_string(lo) + ".." +
                      std::to_string(hi));
  return parsed;
}

double Args::real(const std::string& name, double fallback, double lo, double hi) {
  if (!given(name)) return fallback;
  std::string value = text(name, "");
  char* end = nullptr;
  double parsed = std::strtod(value.c_str(), &end);
  if (end == value.c_str() || *end != '\0' || !std::isfinite(parsed) || parsed < lo || parsed > hi) {
    std::ostringstream msg;
    msg << "--" << name << " '" << value << "' is not a number in " << lo << ".." << hi;
    throw BadArgument(msg.str());
  }
  return parsed;
}

std::vector<long long> Args::integers(const std::string& name, const std::string& fallback, long long lo,
                                      long long hi) {
  std::string value = text(name, fallback);
  std::vector<long long> out;
  std::stringstream parts(value);
  std::string part;
  while (std::getline(parts, part, ',')) {
    char* end = nullptr;
    long long parsed = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || parsed < lo || parsed > hi)
      throw BadArgument("--" + name + " item '" + part + "' is not an integer in " + std::to_string(lo) + ".." +
                        std::to_string(hi));
    out.push_back(parsed);
  }
  if (out.empty()) throw BadArgument("--" + name + " is empty");
  return out;
}

std::vector<std::string> Args::words(const std::string& name, const std::string& fallback,
                                     const std::vector<std::string>& allowed) {
  std::string value = text(name, fallback);
  std::vector<std::string> out;
  std::stringstream parts(value);
  std::string part;
  while (std::getline(parts, part, ',')) {
    bool ok = false;
    for (auto& a : allowed) ok = ok || a == part;
    if (!ok) {
      std::string list;
      for (auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      throw BadArgument("--" + name + " '" + part + "' is not allowed; allowed: " + list);
    }
    out.push_back(part);
  }
  if (out.empty()) throw BadArgument("--" + name + " is empty");
  return out;
}

bool Args::flag(const std::string& name) {
  Item* item = find(name);
  if (!item) return false;
  item->used = true;
  if (item->has_value) throw BadArgument("--" + name + " takes no value (got '" + item->value + "')");
  return true;
}

void Args::finish() const {
  for (auto& item : items_)
    if (!item.used) throw BadArgument("unknown option '--" + item.name + "'");
}

std::vector<int> parse_cpu_list(const std::string& text, const std::string& what) {
  std::vector<int> cpus;
  std::stringstream parts(text);
  std::string part;
  while (std::getline(parts, part, ',')) {
    auto dash = part.find('-');
    char* end = nullptr;
    long lo = std::strtol(part.c_str(), &end, 10);
    long hi = lo;
    bool ok = !part.empty() && end != part.c_str();
    if (ok && dash != std::string::npos) {
      ok = end == part.c_str() + dash;
      hi = std::strtol(part.c_str() + dash + 1, &end, 10);
    }
    ok = ok && *end == '\0' && lo >= 0 && hi >= lo && hi < 65536;
    if (!ok) throw BadArgument(what + " '" + text + "' is not a CPU list such as 0-3,6");
    for (long c = lo; c <= hi; ++c) cpus.push_back(static_cast<int>(c));
  }
  if (cpus.empty()) throw BadArgument(what + " is empty");
  return cpus;
}

}  // namespace xferlab
