// PTX tokens and literals: the tokenizer, and the syntax and range of numeric literals.
#pragma once

#include <string>
#include <vector>

#include "ir.h"

namespace stc {

struct Tok {
  enum Kind { Ident, Num, Punct, Str, End } kind = End;
  std::string s;
  int line = 0;
  bool joined = false;  // it starts right where the previous token ends (`<<` is two joined '<' tokens)
};

// Splits PTX text into tokens (comments dropped, line numbers kept). A byte that is not ASCII (anywhere, as
// ptxas has it) or a character no token can hold is a PtxError with file and line that shows it escaped (\xNN).
std::vector<Tok> tokenize(const std::string& text, const std::string& file);

// Reads a numeric literal into an immediate operand, as ptxas reads it: decimal, octal (0...), hex (0x...)
// and binary (0b...) integers with an optional U suffix, at most 64 bits; 0fXXXXXXXX / 0dXXXXXXXXXXXXXXXX
// float bit patterns; decimal floats (1.5, 1., 2e10) within the double range. Returns an empty string, or
// what is wrong with the literal.
std::string parse_number(const std::string& s, Operand& o);

}  // namespace stc
