// Command-line parsing for the probe's subcommands: --name VALUE options and --flag switches.
// A bad value throws BadArgument, which main() prints as one line and exits with code 2.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace xferlab {

struct BadArgument : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Args {
 public:
  Args(int argc, char** argv, int first);
  // Options and switches must be declared before they are read; leftovers are errors.
  std::string text(const std::string& name, const std::string& fallback);
  long long integer(const std::string& name, long long fallback, long long lo, long long hi);
  double real(const std::string& name, double fallback, double lo, double hi);
  std::vector<long long> integers(const std::string& name, const std::string& fallback, long long lo, long long hi);
  std::vector<std::string> words(const std::string& name, const std::string& fallback,
                                 const std::vector<std::string>& allowed);
  bool flag(const std::string& name);
  bool given(const std::string& name) const;
  void finish() const;  // throws on any argument that was not consumed

 private:
  struct Item {
    std::string name, value;
    bool has_value, used;
  };
  std::vector<Item> items_;
  Item* find(const std::string& name);
};

// "0-3,6,8-9" → {0,1,2,3,6,8,9}; throws BadArgument naming the text.
std::vector<int> parse_cpu_list(const std::string& text, const std::string& what);

}  // namespace xferlab
