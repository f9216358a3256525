// Errors raised by the engine: malformed PTX, unsupported instructions, bad launches, memory faults, the
// launch watchdog, and the stop a host signal asks for. docs/errors.md lists what raises each.
#pragma once

#include <stdexcept>
#include <string>

namespace stc {

// `s` with every byte outside printable ASCII written as \xNN, so that a message is always valid text.
inline std::string escaped(const std::string& s) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (const char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f) {
      out += ch;
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// Malformed or unsupported PTX; the message names file, line and the offending text (escaped).
class PtxError : public std::runtime_error {
 public:
  PtxError(const std::string& file, int line, const std::string& text, const std::string& what)
      : std::runtime_error(file + ":" + std::to_string(line) + ": " + escaped(what) + ": `" + escaped(text) + "`") {}
};

// A bad request from the API user (unknown kernel, wrong argument count, bad launch shape).
class LaunchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A simulated memory fault (out of bounds or misaligned); the message names kernel, thread, instruction
// and address.
class SimFault : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A launch passed a watchdog limit (simulated cycles or warp instructions); the message names the kernel,
// the limit and where the unfinished warps are.
class WatchdogError : public SimFault {
 public:
  using SimFault::SimFault;
};

// The host asked the running launch to stop (a signal such as Ctrl-C is pending); the Python binding
// re-raises the pending Python exception (KeyboardInterrupt) in its place.
class Interrupted : public std::exception {
 public:
  const char* what() const noexcept override { return "launch interrupted by a signal"; }
};

}  // namespace stc
