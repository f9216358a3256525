// PTX tokens and literals (lexer.h).
#include "lexer.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "errors.h"

namespace stc {
namespace {

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%' || c == '.';
}
bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%' || c == '.';
}

// The UTF-8 sequence starting at text[i] (one byte when it is not one), as the tokenizer's error shows it.
std::string character_at(const std::string& text, size_t i) {
  const unsigned char c = static_cast<unsigned char>(text[i]);
  const size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
  for (size_t k = 1; k < len; ++k)
    if (i + k >= text.size() || (static_cast<unsigned char>(text[i + k]) >> 6) != 2) return text.substr(i, 1);
  return text.substr(i, len);
}

// Digits of `s` in `base`, accumulated without overflow; false when a character is not a digit of the base
// or the value needs more than 64 bits.
bool digits_value(const std::string& s, int base, uint64_t& v) {
  if (s.empty()) return false;
  v = 0;
  for (char ch : s) {
    const int d = std::isdigit(static_cast<unsigned char>(ch)) ? ch - '0'
                : std::isxdigit(static_cast<unsigned char>(ch)) ? std::tolower(ch) - 'a' + 10 : 99;
    if (d >= base) return false;
    if (v > (UINT64_MAX - static_cast<uint64_t>(d)) / static_cast<uint64_t>(base)) return false;
    v = v * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
  }
  return true;
}

// A blank inside a line marker, as ptxas reads one: a carriage return and a form feed are blanks there (a
// vertical tab is not); only a line feed ends the marker's line.
bool marker_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f'; }

// The line marker `#line N "file"` or `# N "file" flags...` at text[i] (as cpp writes them; ptxas reads them
// anywhere, even after an instruction on its line): moves `i` to the end of its line and returns "", or
// returns why the `#` starts no line marker (ptxas takes no other preprocessor directive). The marker takes
// its whole line: anything but cpp's flags after the file name is refused, and so, in a file whose lines end
// in a bare CR (one line for ptxas), is the rest of the file.
std::string line_marker(const std::string& text, size_t& i) {
  const size_t n = text.size();
  size_t j = i + 1;
  auto blanks = [&] { size_t k = j; while (j < n && marker_blank(text[j])) ++j; return j > k; };
  auto digits = [&] { size_t k = j; while (j < n && std::isdigit(static_cast<unsigned char>(text[j]))) ++j; return j > k; };
  const char* bad = "unsupported preprocessor directive (only line markers #line N \"file\" are read)";
  blanks();
  if (text.compare(j, 4, "line") == 0) j += 4;
  blanks();
  if (!digits() || !blanks() || j >= n || text[j] != '"') return bad;
  const size_t close = text.find('"', j + 1);
  if (close == std::string::npos || text.find('\n', j) < close) return bad;
  j = close + 1;
  while (true) {  // cpp's flags: numbers after the file name
    const bool sep = blanks();
    if (j >= n || text[j] == '\n') break;
    if (!sep || !digits())
      return "malformed line marker: only cpp's flag numbers may follow its file name on its line (a bare CR "
             "does not end a line)";
  }
  i = j;
  return "";
}

// Whether the '#' at text[i] starts a directive of the C preprocessor (a word or a number follows it).
bool preprocessor_directive(const std::string& text, size_t i) {
  size_t j = i + 1;
  while (j < text.size() && marker_blank(text[j])) ++j;
  return j < text.size() && std::isalnum(static_cast<unsigned char>(text[j]));
}

bool all_of(const std::string& s, const char* set) { return !s.empty() && s.find_first_not_of(set) == std::string::npos; }

}  // namespace

std::vector<Tok> tokenize(const std::string& text, const std::string& file) {
  // PTX is ASCII, comments included (ptxas refuses any other byte): the first such character is an error
  // that shows its line (escaped) and the character's bytes.
  for (size_t b = 0; b < text.size(); ++b) {
    if (static_cast<unsigned char>(text[b]) < 0x80) continue;
    const size_t from = text.rfind('\n', b) == std::string::npos ? 0 : text.rfind('\n', b) + 1;
    const size_t to = std::min(text.find('\n', b), text.size());
    const int at = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(b), '\n'));
    throw PtxError(file, at, text.substr(from, to - from), "non-ASCII character " + character_at(text, b));
  }
  // A NUL byte ends the file for ptxas ("Unexpected EOF"), comments included: refused wherever it is.
  if (const size_t b = text.find('\0'); b != std::string::npos) {
    const size_t from = text.rfind('\n', b) == std::string::npos ? 0 : text.rfind('\n', b) + 1;
    const size_t to = std::min(text.find('\n', b), text.size());
    const int at = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(b), '\n'));
    throw PtxError(file, at, text.substr(from, to - from), "NUL character (ptxas reads it as the end of the file)");
  }
  std::vector<Tok> out;
  int line = 1;
  size_t i = 0, n = text.size();
  size_t last_end = SIZE_MAX;  // where the last token ended
  while (i < n) {
    char c = text[i];
    if (c == '\n') { ++line; ++i; continue; }
    // Blanks as ptxas has them: a vertical tab is none (it is refused outside comments).
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f') { ++i; continue; }
    if (c == '#' && preprocessor_directive(text, i)) {
      const std::string why = line_marker(text, i);  // a line marker is skipped, anything else refused
      if (!why.empty()) {
        const size_t len = std::min(text.find('\n', i), n) - i;  // the rest of its line, at most 80 characters
        throw PtxError(file, line, len > 80 ? text.substr(i, 77) + "..." : text.substr(i, len), why);
      }
      continue;
    }
    if (c == '/' && i + 1 < n && text[i + 1] == '/') {
      while (i < n && text[i] != '\n') ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && text[i + 1] == '*') {
      i += 2;
      while (i + 1 < n && !(text[i] == '*' && text[i + 1] == '/')) { if (text[i] == '\n') ++line; ++i; }
      i += 2;
      continue;
    }
    Tok t;
    t.line = line;
    t.joined = i == last_end;
    if (c == '"') {
      size_t j = i + 1;
      while (j < n && text[j] != '"' && text[j] != '\n') ++j;
      if (j >= n || text[j] != '"') throw PtxError(file, line, text.substr(i, j - i), "unterminated string");
      t.kind = Tok::Str;
      t.s = text.substr(i + 1, j - i - 1);
      i = j + 1;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      while (j < n && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '.' || text[j] == '_')) {
        const bool exp = (text[j] == 'e' || text[j] == 'E') && j + 1 < n && (text[j + 1] == '+' || text[j + 1] == '-') &&
                         !(text[i] == '0' && i + 1 < n && std::strchr("xXfFdD", text[i + 1]));
        j += exp ? 2 : 1;
      }
      t.kind = Tok::Num;
      t.s = text.substr(i, j - i);
      i = j;
    } else if (ident_start(c)) {
      size_t j = i;
      // Identifiers include "::" qualifiers of modifiers (.shared::cta, .sp::ordered_metadata, .L2::128B).
      while (j < n && (ident_char(text[j]) || (text[j] == ':' && j + 2 < n && text[j + 1] == ':' &&
                                               ident_char(text[j + 2]) && text[j + 2] != '%')))
        j += text[j] == ':' ? 2 : 1;
      t.kind = Tok::Ident;
      t.s = text.substr(i, j - i);
      i = j;
    } else if (std::strchr(",;:[]{}()+-!|<>=@*/&^~?", c)) {  // (the last six: constant expressions)
      t.kind = Tok::Punct;
      t.s = std::string(1, c);
      ++i;
    } else {
      throw PtxError(file, line, character_at(text, i), "unexpected character");
    }
    out.push_back(std::move(t));
    last_end = i;
  }
  Tok end;
  end.line = line;
  out.push_back(end);
  return out;
}

std::string parse_number(const std::string& s, Operand& o) {
  o.kind = OpndKind::Imm;
  o.imm_kind = ImmKind::Int;
  const bool prefixed = s.size() >= 2 && s[0] == '0' && std::isalpha(static_cast<unsigned char>(s[1]));
  const char p = prefixed ? static_cast<char>(std::tolower(s[1])) : 0;
  if (p == 'f' || p == 'd') {  // 0fXXXXXXXX, 0dXXXXXXXXXXXXXXXX: exactly 8 / 16 hex digits
    const std::string hex = s.substr(2);
    if (hex.size() != (p == 'f' ? 8u : 16u) || !digits_value(hex, 16, o.imm))
      return std::string("malformed ") + (p == 'f' ? "0f (f32 bits)" : "0d (f64 bits)") + " literal";
    o.imm_kind = p == 'f' ? ImmKind::F32Bits : ImmKind::F64Bits;
    return "";
  }
  const bool real = !prefixed && s.find_first_of(".eE") != std::string::npos;
  if (real) {  // digits [. digits] [e [+-] digits], or digits e [+-] digits
    const size_t e = s.find_first_of("eE");
    const std::string mant = s.substr(0, e), expo = e == std::string::npos ? "" : s.substr(e + 1);
    const size_t dot = mant.find('.');
    const bool mant_ok = all_of(mant, "0123456789.") && mant.find('.', dot == std::string::npos ? 0 : dot + 1) == std::string::npos;
    const std::string ex_digits = !expo.empty() && (expo[0] == '+' || expo[0] == '-') ? expo.substr(1) : expo;
    if (!mant_ok || (e != std::string::npos && !all_of(ex_digits, "0123456789"))) return "malformed number";
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    const bool zero = s.find_first_of("123456789") >= (e == std::string::npos ? s.size() : e);
    if (end != s.c_str() + s.size()) return "malformed number";
    if (!std::isfinite(v) || (v == 0 && !zero) || errno == ERANGE) return "floating-point literal out of range";
    o.imm_kind = ImmKind::Real;
    o.real = v;
    return "";
  }
  std::string body = s;
  if (!body.empty() && body.back() == 'U') body.pop_back();
  int base = 10;
  std::string digits = body;
  if (p == 'x') { base = 16; digits = body.substr(2); }
  else if (p == 'b') { base = 2; digits = body.substr(2); }
  else if (body.size() > 1 && body[0] == '0') { base = 8; digits = body.substr(1); }
  else if (prefixed) return "malformed number";
  if (digits.empty() || !all_of(digits, base == 16 ? "0123456789abcdefABCDEF" : base == 8 ? "01234567" : base == 2 ? "01" : "0123456789"))
    return "malformed number";
  if (!digits_value(digits, base, o.imm))
    return "integer literal out of range (more than 64 bits; not supported: ptxas wraps some such literals, "
           "stcsim takes none)";
  return "";
}

}  // namespace stc
