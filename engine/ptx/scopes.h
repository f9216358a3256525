// The registers of one function as the parser sees them: nested scopes of single names and ranges
// (`.reg .b32 %r<N>`). A range costs nothing until one of its registers is used (a declared count of
// billions is fine), and duplicate declarations are refused as ptxas refuses them.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "ir.h"

namespace stc {

class RegisterScopes {
 public:
  explicit RegisterScopes(Kernel& k) : k_(k), scopes_(1) {}

  void push() { scopes_.emplace_back(); }
  void pop() { scopes_.pop_back(); }
  bool outermost() const { return scopes_.size() == 1; }

  // Declares a register `name`, or the registers prefix0 .. prefix<count-1>, in the innermost scope; returns
  // an error message when one of the names is declared there already, else "".
  std::string declare(const std::string& name, DType type);
  std::string declare_range(const std::string& prefix, uint64_t count, DType type);

  // The index (into Kernel::regs) of register `name` in the innermost scope that declares it, or -1. A range
  // member gets its index on first use.
  int32_t find(const std::string& name);

  // Whether some scope (the outermost one) declares `name`, without giving it an index.
  bool declared(const std::string& name) const;
  bool declares_outermost(const std::string& name) const;
  // Whether the innermost scope declares register `name`, by itself or as a member of a range.
  bool declares_in_innermost(const std::string& name) const;
  // A variable `name` declared in the innermost scope: the registers of enclosing scopes named so are hidden
  // in it (find returns -1 there).
  void hide(const std::string& name) { scopes_.back().hidden.push_back(name); }
  // Whether the innermost scope declares `name` by itself (`.reg .b32 name`), not as a member of a range
  // (ptxas lets a label take the name of a range's register, not of a register declared alone).
  bool declares_innermost(const std::string& name) const;

 private:
  struct Range {
    std::string prefix;
    uint64_t count;
    DType type;
  };
  struct Scope {
    std::unordered_map<std::string, int32_t> names;
    std::vector<Range> ranges;
    std::vector<std::string> hidden;  // variables of this scope (few)
  };

  // Whether `name` is prefix<i> of a range of `s` (i < count, written without leading zeros).
  static const Range* range_of(const Scope& s, const std::string& name);

  Kernel& k_;
  std::vector<Scope> scopes_;
};

}  // namespace stc
