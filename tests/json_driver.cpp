// Prints JSON lines through the probe's own writer (native/probe/json.hpp), for tests/test_native.py:
// doubles given on the command line (as C hexadecimal floats, so no decimal rounding on the way in)
// and a string holding bytes that are not UTF-8.
#include <cstdlib>
#include <string>

#include "json.hpp"

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) xferlab::JsonLine().str("record", "number").number("value", std::strtod(argv[i], nullptr)).emit();
  const std::string bad = std::string("pthread-\xff\xfe-") + "\xc3\xa9" + "\xe2\x82" + "-\xed\xa0\x80-end";
  xferlab::JsonLine().str("record", "name").str("name", bad).emit();
  return 0;
}
