// Minimal JSON-lines writer for probe output: one object per line on stdout.
// Only what the probe needs: strings, integers, doubles, booleans.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "fault.hpp"

namespace xferlab {

class JsonLine {
 public:
  JsonLine& str(const char* key, const std::string& value) {
    field(key);
    out_ += '"';
    for (char c : value) {
      switch (c) {
        case '"': out_ += "\\\""; break;
        case '\\': out_ += "\\\\"; break;
        case '\n': out_ += "\\n"; break;
        case '\t': out_ += "\\t"; break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out_ += buf;
          } else {
            out_ += c;
          }
      }
    }
    out_ += '"';
    return *this;
  }
  JsonLine& integer(const char* key, long long value) {
    field(key);
    out_ += std::to_string(value);
    return *this;
  }
  JsonLine& number(const char* key, double value) {
    field(key);
    if (!std::isfinite(value)) {
      out_ += "null";
    } else {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.10g", value);
      out_ += buf;
    }
    return *this;
  }
  // A value that is already JSON text (an object or array built elsewhere).
  JsonLine& raw(const char* key, const std::string& json) {
    field(key);
    out_ += json;
    return *this;
  }
  JsonLine& boolean(const char* key, bool value) {
    field(key);
    out_ += value ? "true" : "false";
    return *this;
  }
  // The object as text (for nesting inside another record).
  std::string text() const { return out_ + "}"; }
  // Writes the object and a newline to stdout, flushed so a parent process
  // that kills the probe later still keeps every finished line. An injected fault (fault.hpp) may
  // fire after a sample record.
  void emit() {
    std::fputs(out_.c_str(), stdout);
    std::fputs("}\n", stdout);
    std::fflush(stdout);
    fault::after_line(out_);
  }

 private:
  void field(const char* key) {
    out_ += first_ ? "{" : ",";
    first_ = false;
    out_ += '"';
    out_ += key;
    out_ += "\":";
  }
  std::string out_;
  bool first_ = true;
};

}  // namespace xferlab
