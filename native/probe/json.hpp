// Minimal JSON-lines writer for probe output: one object per line on stdout.
// Only what the probe needs: strings, integers, doubles, booleans.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "fault.hpp"

namespace xferlab {

// ``text`` with every byte that is not part of a well-formed UTF-8 sequence replaced by U+FFFD: a
// device or driver name in another encoding still gives valid JSON.
inline std::string valid_utf8(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = s[i];
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len > 0 && i + len <= n && !(len == 2 && c < 0xC2);
    for (size_t k = 1; ok && k < len; ++k) ok = (s[i + k] & 0xC0) == 0x80;
    if (ok && len == 3) {  // no overlong forms, no surrogates
      const unsigned cp = ((c & 0x0Fu) << 12) | ((s[i + 1] & 0x3Fu) << 6) | (s[i + 2] & 0x3Fu);
      ok = cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF);
    }
    if (ok && len == 4) {
      const unsigned cp = ((c & 0x07u) << 18) | ((s[i + 1] & 0x3Fu) << 12) | ((s[i + 2] & 0x3Fu) << 6) | (s[i + 3] & 0x3Fu);
      ok = cp >= 0x10000 && cp <= 0x10FFFF;
    }
    if (ok) {
      out.append(text, i, len);
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

class JsonLine {
 public:
  JsonLine& str(const char* key, const std::string& value) {
    field(key);
    out_ += '"';
    for (char c : valid_utf8(value)) {
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
      std::snprintf(buf, sizeof buf, "%.17g", value);  // 17 significant digits: reads back as the same double
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
