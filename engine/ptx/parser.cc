// PTX parser: tokenizer, module/function structure, declarations, instructions and operands.
#include "parser.h"

#include <cctype>
#include <cstring>
#include <unordered_map>

#include "../func/cfg.h"
#include "../func/decode.h"
#include "errors.h"

namespace stc {
namespace {

struct Tok {
  enum Kind { Ident, Num, Punct, Str, End } kind = End;
  std::string s;
  int line = 0;
};

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%' || c == '.'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%' || c == '.'; }

std::vector<Tok> tokenize(const std::string& text, const std::string& file) {
  std::vector<Tok> out;
  int line = 1;
  size_t i = 0, n = text.size();
  while (i < n) {
    char c = text[i];
    if (c == '\n') { ++line; ++i; continue; }
    if (std::isspace(static_cast<unsigned char>(c))) { ++i; continue; }
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
    if (c == '"') {
      size_t j = i + 1;
      while (j < n && text[j] != '"') { if (text[j] == '\n') ++line; ++j; }
      t.kind = Tok::Str;
      t.s = text.substr(i + 1, j - i - 1);
      i = j + 1;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      while (j < n && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '.' || text[j] == '_')) {
        bool exp = (text[j] == 'e' || text[j] == 'E') && j + 1 < n && (text[j + 1] == '+' || text[j + 1] == '-') &&
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
    } else if (std::strchr(",;:[]{}()+-!|<>=@", c)) {
      t.kind = Tok::Punct;
      t.s = std::string(1, c);
      ++i;
    } else {
      throw PtxError(file, line, std::string(1, c), "unexpected character");
    }
    out.push_back(std::move(t));
  }
  Tok end;
  end.line = line;
  out.push_back(end);
  return out;
}

// Parses an integer or floating literal into an immediate operand.
bool parse_number(const std::string& s, Operand& o) {
  o.kind = OpndKind::Imm;
  try {
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'f' || s[1] == 'F')) {
      if (s.size() != 10) return false;
      o.imm_kind = ImmKind::F32Bits;
      o.imm = std::stoull(s.substr(2), nullptr, 16);
      return true;
    }
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'd' || s[1] == 'D')) {
      if (s.size() != 18) return false;
      o.imm_kind = ImmKind::F64Bits;
      o.imm = std::stoull(s.substr(2), nullptr, 16);
      return true;
    }
    std::string body = s;
    if (!body.empty() && (body.back() == 'U' || body.back() == 'u')) body.pop_back();
    if (body.size() > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X')) {
      o.imm = std::stoull(body.substr(2), nullptr, 16);
      return true;
    }
    if (body.size() > 2 && body[0] == '0' && (body[1] == 'b' || body[1] == 'B')) {
      o.imm = std::stoull(body.substr(2), nullptr, 2);
      return true;
    }
    if (body.find_first_of(".eE") != std::string::npos) {
      size_t used = 0;
      o.imm_kind = ImmKind::Real;
      o.real = std::stod(body, &used);
      return used == body.size();
    }
    size_t used = 0;
    o.imm = std::stoull(body, &used, 10);
    return used == body.size();
  } catch (const std::exception&) {
    return false;
  }
}

const std::unordered_map<std::string, SReg>& special_regs() {
  static const std::unordered_map<std::string, SReg> m = {
      {"%tid", SReg::Tid}, {"%ntid", SReg::Ntid}, {"%ctaid", SReg::Ctaid}, {"%nctaid", SReg::Nctaid},
      {"%laneid", SReg::Laneid}, {"%warpid", SReg::Warpid}, {"%nwarpid", SReg::Nwarpid},
      {"%smid", SReg::Smid}, {"%nsmid", SReg::Nsmid}, {"%gridid", SReg::Gridid}, {"%clock", SReg::Clock},
      {"%clock64", SReg::Clock64}, {"%lanemask_eq", SReg::LanemaskEq}, {"%lanemask_lt", SReg::LanemaskLt},
      {"%lanemask_le", SReg::LanemaskLe}, {"%lanemask_gt", SReg::LanemaskGt},
      {"%lanemask_ge", SReg::LanemaskGe}, {"%globaltimer", SReg::Globaltimer},
      {"%dynamic_smem_size", SReg::DynamicSmemSize}, {"%total_smem_size", SReg::TotalSmemSize}};
  return m;
}

class Parser {
 public:
  Parser(const std::string& text, const std::string& file) : file_(file), toks_(tokenize(text, file)) {}

  std::unique_ptr<Module> run() {
    mod_ = std::make_unique<Module>();
    mod_->file = file_;
    while (peek().kind != Tok::End) module_statement();
    return std::move(mod_);
  }

 private:
  std::string file_;
  std::vector<Tok> toks_;
  size_t pos_ = 0;
  std::unique_ptr<Module> mod_;
  Kernel* k_ = nullptr;
  std::vector<std::unordered_map<std::string, int32_t>> scopes_;
  std::unordered_map<std::string, int32_t> sym_index_;
  std::vector<std::pair<int32_t, std::string>> label_refs_;  // (pc, label)

  const Tok& peek(size_t ahead = 0) const { return toks_[std::min(pos_ + ahead, toks_.size() - 1)]; }
  const Tok& next() { const Tok& t = toks_[pos_]; if (pos_ + 1 < toks_.size()) ++pos_; return t; }
  bool is(const char* s, size_t ahead = 0) const { return peek(ahead).kind != Tok::Str && peek(ahead).s == s; }

  [[noreturn]] void fail(const Tok& t, const std::string& what) const {
    throw PtxError(file_, t.line, t.kind == Tok::End ? "<end of file>" : t.s, what);
  }
  void expect(const char* s) {
    if (!is(s)) fail(peek(), std::string("expected '") + s + "'");
    next();
  }
  std::string ident(const char* what) {
    if (peek().kind != Tok::Ident) fail(peek(), std::string("expected ") + what);
    return next().s;
  }
  uint64_t integer(const char* what) {
    Operand o;
    if (peek().kind != Tok::Num || !parse_number(peek().s, o) || o.imm_kind != ImmKind::Int)
      fail(peek(), std::string("expected ") + what);
    next();
    return o.imm;
  }
  void skip_line(int line) { while (peek().kind != Tok::End && peek().line == line) next(); }
  void skip_to_semicolon() { while (peek().kind != Tok::End && !is(";")) next(); expect(";"); }

  // ---- module level -------------------------------------------------------------------------
  void module_statement() {
    const Tok& t = peek();
    if (t.kind != Tok::Ident) fail(t, "expected a directive");
    const std::string d = t.s;
    if (d == ".version") {
      next();
      const Tok& v = next();
      mod_->version = v.s;
      mod_->ptx = ptx_version(v);
      return;
    }
    if (d == ".target") {
      next();
      const Tok& name = peek();
      mod_->target = ident("target");
      mod_->sm = sm_of_target(name);
      while (is(",")) { next(); ident("target option"); }
      return;
    }
    if (d == ".address_size") {
      next();
      mod_->address_size = static_cast<uint32_t>(integer("address size"));
      if (mod_->address_size != 64) fail(t, "only .address_size 64 is supported");
      return;
    }
    if (d == ".file" || d == ".loc") { skip_line(t.line); return; }
    if (d == ".pragma") { skip_to_semicolon(); return; }
    if (d == ".section") {
      next();
      ident("section name");
      expect("{");
      int depth = 1;
      while (depth > 0 && peek().kind != Tok::End) { if (is("{")) ++depth; if (is("}")) --depth; next(); }
      return;
    }
    bool is_extern = false;
    while (is(".visible") || is(".weak") || is(".extern") || is(".common")) {
      if (is(".extern")) is_extern = true;
      next();
    }
    if (is(".entry") || is(".func")) { function(); return; }
    if (is(".global") || is(".const") || is(".shared") || is(".local")) {
      Variable v = variable(is_extern);
      mod_->globals.push_back(std::move(v));
      return;
    }
    fail(peek(), "unsupported module-level directive");
  }

  // `.version X.Y` (one of the versions ptxas 13 knows) as 10 * X + Y.
  uint16_t ptx_version(const Tok& v) const {
    static const std::pair<int, int> known[] = {{1, 5}, {2, 3}, {3, 2}, {4, 3}, {5, 0}, {6, 5}, {7, 8}, {8, 8}, {9, 0}};
    const size_t dot = v.s.find('.');
    const bool digits = v.kind == Tok::Num && dot != std::string::npos && dot > 0 && dot + 1 < v.s.size() &&
                        v.s.find_first_not_of("0123456789.") == std::string::npos && v.s.find('.', dot + 1) == std::string::npos &&
                        v.s.size() < 8;
    if (!digits) fail(v, "expected a PTX version X.Y");
    std::string frac = v.s.substr(dot + 1);  // decimal: "7.10" is 7.1, "8.00" is 8.0
    while (frac.size() > 1 && frac.back() == '0') frac.pop_back();
    const int major = std::stoi(v.s.substr(0, dot)), minor = std::stoi(frac);
    for (const auto& [mj, last] : known)
      if (major == mj && minor <= last && frac.size() == 1) return static_cast<uint16_t>(10 * major + minor);
    fail(v, "unsupported .version (the engine reads PTX ISA 1.0 to 9.0)");
  }

  // `.target sm_XX[a|f]` (or compute_XX): the SM number, checked against the module's .version.
  uint16_t sm_of_target(const Tok& t) const {
    static const std::pair<uint16_t, uint16_t> min_ptx[] = {  // sm, first PTX version that knows it
        {20, 10}, {30, 31}, {32, 40}, {35, 31}, {37, 41}, {50, 40}, {52, 41}, {53, 42}, {60, 50}, {61, 50},
        {62, 50}, {70, 60}, {72, 61}, {75, 63}, {80, 70}, {86, 71}, {87, 74}, {88, 90}, {89, 78}, {90, 78},
        {100, 86}, {101, 86}, {103, 88}, {110, 90}, {120, 87}, {121, 88}};
    std::string s = t.s;
    const size_t us = s.find('_');
    const std::string family = s.substr(0, us);
    if (us == std::string::npos || (family != "sm" && family != "compute")) fail(t, "unsupported .target");
    std::string num = s.substr(us + 1);
    uint16_t need_extra = 0;
    if (!num.empty() && (num.back() == 'a' || num.back() == 'f')) { num.pop_back(); need_extra = 2; }
    if (num.empty() || num.size() > 3 || num.find_first_not_of("0123456789") != std::string::npos)
      fail(t, "unsupported .target");
    const uint16_t sm = static_cast<uint16_t>(std::stoi(num));
    for (const auto& [known, ptx] : min_ptx) {
      if (known != sm) continue;
      if (need_extra && sm < 90) fail(t, "unsupported .target");
      if (mod_->ptx && mod_->ptx < ptx + need_extra)
        fail(t, "PTX .version " + mod_->version + " does not support .target " + s);
      return sm;
    }
    fail(t, "unsupported .target");
  }

  Space space_of(const std::string& d) const {
    if (d == ".global") return Space::Global;
    if (d == ".const") return Space::Const;
    if (d == ".shared") return Space::Shared;
    if (d == ".local") return Space::Local;
    return Space::Param;
  }

  // `.space [.align N] .type name[dims] [= init];`
  Variable variable(bool is_extern) {
    const Tok& start = peek();
    Variable v;
    v.space = space_of(next().s);
    v.is_extern = is_extern;
    while (peek().kind == Tok::Ident && peek().s[0] == '.') {
      std::string m = next().s;
      if (m == ".align") { v.align = static_cast<uint32_t>(integer("alignment")); continue; }
      if (m == ".v2" || m == ".v4") { fail(start, "vector-typed variables are not supported"); }
      DType t = dtype_from_name(m.substr(1));
      if (t == DType::None) fail(start, "unknown variable type " + m);
      v.type = t;
    }
    v.name = ident("variable name");
    uint64_t count = 1;
    bool unsized = false;
    while (is("[")) {
      next();
      if (is("]")) { unsized = true; next(); continue; }
      count *= integer("array size");
      expect("]");
    }
    const int esize = dtype_bytes(v.type);
    v.size = unsized ? 0 : count * static_cast<uint64_t>(esize);
    if (v.align < static_cast<uint32_t>(esize)) v.align = static_cast<uint32_t>(esize);
    if (is("=")) {
      next();
      initializer(v, esize, start);
      if (unsized) v.size = v.init.size();
    }
    if (!v.init.empty() && v.init.size() < v.size) v.init.resize(v.size, 0);
    if (v.init.size() > v.size && v.size) fail(start, "too many initialisers for " + v.name);
    expect(";");
    return v;
  }

  void initializer(Variable& v, int esize, const Tok& start) {
    int depth = 0;
    do {
      if (is("{")) { ++depth; next(); continue; }
      if (is("}")) { --depth; next(); continue; }
      if (is(",")) { next(); continue; }
      bool neg = false;
      if (is("-")) { neg = true; next(); }
      Operand o;
      if (peek().kind != Tok::Num || !parse_number(peek().s, o)) fail(peek(), "unsupported initialiser");
      next();
      uint64_t bits = o.imm;
      if (dtype_is_float(v.type)) {
        double val = o.imm_kind == ImmKind::Real ? o.real
                   : o.imm_kind == ImmKind::F64Bits ? bits_as_f64(o.imm)
                   : o.imm_kind == ImmKind::F32Bits ? static_cast<double>(bits_as_f32(o.imm))
                                                    : static_cast<double>(o.imm);
        if (neg) val = -val;
        bits = v.type == DType::F64 ? f64_bits(val) : f32_bits(static_cast<float>(val));
        if (v.type != DType::F64 && v.type != DType::F32) fail(start, "unsupported initialiser type");
      } else if (neg) {
        bits = ~bits + 1;
      }
      for (int b = 0; b < esize; ++b) v.init.push_back(static_cast<uint8_t>(bits >> (8 * b)));
    } while (depth > 0 && peek().kind != Tok::End);
  }

  static double bits_as_f64(uint64_t b) { double d; std::memcpy(&d, &b, 8); return d; }
  static float bits_as_f32(uint64_t b) { uint32_t u = static_cast<uint32_t>(b); float f; std::memcpy(&f, &u, 4); return f; }
  static uint64_t f64_bits(double d) { uint64_t b; std::memcpy(&b, &d, 8); return b; }
  static uint64_t f32_bits(float f) { uint32_t b; std::memcpy(&b, &f, 4); return b; }

  // ---- functions ------------------------------------------------------------------------------
  void function() {
    const bool entry = next().s == ".entry";
    auto kernel = std::make_unique<Kernel>();
    k_ = kernel.get();
    k_->file = file_;
    k_->is_entry = entry;
    k_->sm = mod_->sm;
    k_->ptx = mod_->ptx;
    if (!entry && is("(")) {  // return parameter list of a .func
      next();
      while (!is(")")) next();
      next();
    }
    k_->name = ident("function name");
    sym_index_.clear();
    scopes_.assign(1, {});
    label_refs_.clear();
    if (is("(")) {
      next();
      while (!is(")")) {
        param();
        if (is(",")) next();
      }
      next();
    }
    while (peek().kind == Tok::Ident && peek().s[0] == '.' && !is("{")) {
      const std::string d = next().s;
      if (d == ".maxntid" || d == ".reqntid") {
        uint32_t* dst = d == ".maxntid" ? k_->maxntid : k_->reqntid;
        for (int i = 0; i < 3; ++i) {
          dst[i] = static_cast<uint32_t>(integer("thread count"));
          if (!is(",")) break;
          next();
        }
      } else if (d == ".minnctapersm" || d == ".maxnreg" || d == ".maxnctapersm") {
        integer("count");
      } else if (d == ".noreturn") {
      } else if (d == ".pragma") {
        skip_to_semicolon();
      } else {
        fail(toks_[pos_ - 1], "unsupported function directive");
      }
    }
    if (is(";")) {  // prototype only
      next();
      k_ = nullptr;
      return;
    }
    expect("{");
    body();
    finish_function();
    mod_->kernels.push_back(std::move(kernel));
    k_ = nullptr;
  }

  void param() {
    if (!is(".param") && !is(".reg")) fail(peek(), "expected .param");
    next();
    Param p;
    uint32_t align = 0;
    while (peek().kind == Tok::Ident && peek().s[0] == '.') {
      std::string m = next().s;
      if (m == ".align") { align = static_cast<uint32_t>(integer("alignment")); continue; }
      if (m == ".ptr" || m == ".global" || m == ".const" || m == ".shared" || m == ".local") continue;
      DType t = dtype_from_name(m.substr(1));
      if (t == DType::None) fail(toks_[pos_ - 1], "unknown parameter type");
      p.type = t;
    }
    p.name = ident("parameter name");
    uint64_t count = 1;
    while (is("[")) { next(); count *= integer("array size"); expect("]"); }
    p.size = static_cast<uint32_t>(count * dtype_bytes(p.type));
    p.align = align ? align : static_cast<uint32_t>(dtype_bytes(p.type));
    k_->param_bytes = (k_->param_bytes + p.align - 1) / p.align * p.align;
    p.offset = k_->param_bytes;
    k_->param_bytes += p.size;
    SymbolRef s;
    s.name = p.name;
    s.space = Space::Param;
    s.index = static_cast<int32_t>(k_->params.size());
    sym_index_[p.name] = static_cast<int32_t>(k_->symbols.size());
    k_->symbols.push_back(s);
    k_->params.push_back(p);
  }

  void body() {
    int depth = 1;
    while (depth > 0) {
      const Tok& t = peek();
      if (t.kind == Tok::End) fail(t, "unterminated function body");
      if (is("{")) { next(); ++depth; scopes_.emplace_back(); continue; }
      if (is("}")) { next(); --depth; if (depth > 0) scopes_.pop_back(); continue; }
      if (t.kind == Tok::Ident && t.s[0] == '.') { body_directive(); continue; }
      if (t.kind == Tok::Ident && is(":", 1)) {
        if (k_->labels.count(t.s)) fail(t, "duplicate label");
        k_->labels[t.s] = static_cast<int32_t>(k_->code.size());
        next();
        next();
        continue;
      }
      instruction();
    }
  }

  void body_directive() {
    const Tok& t = peek();
    const std::string d = t.s;
    if (d == ".reg" || d.rfind(".reg.", 0) == 0) { reg_decl(); return; }
    if (d == ".loc" || d == ".file") { skip_line(t.line); return; }
    if (d == ".pragma") { skip_to_semicolon(); return; }
    if (d == ".shared" || d == ".local" || d == ".global" || d == ".const") {
      Variable v = variable(false);
      if (v.space == Space::Global || v.space == Space::Const) fail(t, "function-scope .global/.const is not supported");
      SymbolRef s;
      s.name = v.name;
      s.space = v.space;
      s.index = static_cast<int32_t>(k_->locals.size());
      sym_index_[v.name] = static_cast<int32_t>(k_->symbols.size());
      k_->symbols.push_back(s);
      k_->locals.push_back(std::move(v));
      return;
    }
    fail(t, "unsupported directive in function body");
  }

  void reg_decl() {
    const Tok& start = next();
    DType type = DType::None;
    int vec = 1;
    // The modifiers: separate tokens (`.reg .b32`) or glued to the directive (`.reg.b32`, as in cuda_fp16.hpp).
    std::vector<std::string> mods;
    for (size_t p = start.s.find('.', 1); p != std::string::npos;) {
      const size_t q = start.s.find('.', p + 1);
      mods.push_back(start.s.substr(p, q == std::string::npos ? std::string::npos : q - p));
      p = q;
    }
    while (peek().kind == Tok::Ident && peek().s[0] == '.') mods.push_back(next().s);
    for (const std::string& m : mods) {
      if (m == ".v2") { vec = 2; continue; }
      if (m == ".v4") { vec = 4; continue; }
      type = dtype_from_name(m.substr(1));
      if (type == DType::None) fail(start, "unknown register type " + m);
    }
    if (vec != 1) fail(start, "vector registers are not supported");
    if (type == DType::None) fail(start, "register declaration without a type");
    while (true) {
      std::string name = ident("register name");
      if (is("<")) {
        next();
        uint64_t n = integer("register count");
        expect(">");
        for (uint64_t i = 0; i < n; ++i) add_reg(name + std::to_string(i), type);
      } else {
        add_reg(name, type);
      }
      if (!is(",")) break;
      next();
    }
    expect(";");
  }

  void add_reg(const std::string& name, DType type) {
    const int32_t idx = static_cast<int32_t>(k_->regs.size());
    k_->regs.push_back({name, type});
    scopes_.back()[name] = idx;
  }

  // Carry instructions (add.cc, addc, ...) read and write CC.CF, which the engine keeps in a hidden
  // per-kernel register (a name no PTX register can have), so that the scoreboard orders them.
  static bool uses_carry(const std::string& opcode) {
    const std::string base = opcode.substr(0, opcode.find('.'));
    return base == "addc" || base == "subc" || base == "madc" || (opcode + ".").find(".cc.") != std::string::npos;
  }
  void ensure_carry_reg() {
    if (k_->carry_reg >= 0) return;
    k_->carry_reg = static_cast<int32_t>(k_->regs.size());
    k_->regs.push_back({"<carry flag>", DType::Pred});
  }

  int32_t find_reg(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return f->second;
    }
    return -1;
  }

  int32_t find_symbol(const std::string& name) {
    auto it = sym_index_.find(name);
    if (it != sym_index_.end()) return it->second;
    for (size_t g = 0; g < mod_->globals.size(); ++g) {
      if (mod_->globals[g].name != name) continue;
      SymbolRef s;
      s.name = name;
      s.space = mod_->globals[g].space;
      s.index = static_cast<int32_t>(g);
      s.module_scope = true;
      const int32_t idx = static_cast<int32_t>(k_->symbols.size());
      k_->symbols.push_back(s);
      sym_index_[name] = idx;
      return idx;
    }
    return -1;
  }

  // ---- instructions ---------------------------------------------------------------------------
  // The tokens [from, to) as PTX text for messages: `ld.global.f32 %f1, [%rd6+4]`, `@!%p1 bra $L1`.
  std::string instr_text(size_t from, size_t to) const {
    std::string out;
    for (size_t i = from; i < to; ++i) {
      const std::string& s = toks_[i].s;
      if (i > from) {
        const std::string& p = toks_[i - 1].s;
        const bool tight_after = p == "[" || p == "{" || p == "(" || p == "!" || p == "@" || p == "|" || p == "+" ||
                                 p == "-";
        const bool tight_before = s == "," || s == "]" || s == "}" || s == ")" || s == "|" ||
                                  ((s == "+" || s == "-") && p != ",");
        if (!tight_after && !tight_before) out += ' ';
      }
      out += s;
    }
    return out;
  }

  void instruction() {
    Instr in;
    const Tok& first = peek();
    in.line = first.line;
    const size_t start = pos_;
    if (is("@")) {
      next();
      if (is("!")) { next(); in.guard_neg = true; }
      const Tok& g = next();
      in.guard = find_reg(g.s);
      if (in.guard < 0) fail(g, "unknown guard predicate");
    }
    in.opcode = ident("an instruction");
    if (uses_carry(in.opcode)) ensure_carry_reg();
    std::vector<std::vector<const Tok*>> operands;
    std::vector<const Tok*> cur;
    int depth = 0;
    while (true) {
      const Tok& t = peek();
      if (t.kind == Tok::End) fail(first, "missing ';'");
      if (depth == 0 && is(";")) break;
      // A name or number that starts a new line right after a complete operand: the ';' was forgotten.
      const Tok& prev = toks_[pos_ - 1];
      if (depth == 0 && t.line != prev.line && (t.kind == Tok::Ident || t.kind == Tok::Num) &&
          prev.kind != Tok::Punct)
        throw PtxError(file_, prev.line, instr_text(start, pos_), "missing ';' at the end of the line");
      if (is("[") || is("{")) ++depth;
      if (is("]") || is("}")) --depth;
      if (depth == 0 && is(",")) { operands.push_back(cur); cur.clear(); next(); continue; }
      cur.push_back(&next());
    }
    if (!cur.empty()) operands.push_back(cur);
    in.text = instr_text(start, pos_);
    next();  // ';'
    const int32_t pc = static_cast<int32_t>(k_->code.size());
    for (auto& toks : operands) in.ops.push_back(operand(toks, in, pc));
    try {
      decode_instruction(in, *k_);
    } catch (const DecodeError& e) {
      throw PtxError(file_, in.line, in.text, e.what());
    }
    k_->code.push_back(std::move(in));
  }

  Operand operand(const std::vector<const Tok*>& t, const Instr& in, int32_t pc) {
    if (t.empty()) throw PtxError(file_, in.line, in.opcode, "empty operand");
    const Tok& f = *t[0];
    auto bad = [&](const std::string& why) -> Operand {
      std::string text;
      for (const Tok* x : t) text += x->s;
      throw PtxError(file_, f.line, in.text, why + " '" + text + "'");
    };
    Operand o;
    if (f.s == "{") {
      o.kind = OpndKind::Vec;
      bool any_imm = false;
      for (size_t i = 1; i + 1 < t.size(); ++i) {
        if (t[i]->s == ",") continue;
        if (t[i]->s == "_") { o.vec.push_back(-1); o.vec_imm.push_back(0); continue; }
        const bool neg = t[i]->s == "-" && i + 2 < t.size();
        const Tok& e = neg ? *t[++i] : *t[i];
        const int32_t r = neg ? -1 : find_reg(e.s);
        if (r >= 0) { o.vec.push_back(r); o.vec_imm.push_back(0); continue; }
        // An immediate element, e.g. `mov.b32 %f1, {0, %rs1};`: vec[i] == -2, its bits in vec_imm[i].
        Operand im;
        if (e.kind != Tok::Num || !parse_number(e.s, im)) bad("unknown register in vector operand");
        if (im.imm_kind == ImmKind::Real) bad("decimal floating-point immediates inside vector operands are not supported");
        uint64_t v = im.imm;
        if (neg) v = im.imm_kind == ImmKind::Int ? ~v + 1
                   : v ^ (im.imm_kind == ImmKind::F32Bits ? 0x80000000ull : 0x8000000000000000ull);
        o.vec.push_back(-2);
        o.vec_imm.push_back(v);
        any_imm = true;
      }
      if (!any_imm) o.vec_imm.clear();
      if (t.back()->s != "}") bad("unterminated vector operand");
      return o;
    }
    if (f.s == "[") {
      o.kind = OpndKind::Mem;
      if (t.back()->s != "]") bad("unterminated address");
      size_t i = 1;
      const Tok& b = *t[i];
      if (b.kind == Tok::Num) {
        Operand im;
        if (!parse_number(b.s, im) || im.imm_kind != ImmKind::Int) bad("bad absolute address");
        o.imm = im.imm;
        ++i;
      } else if (b.kind == Tok::Ident) {
        o.reg = find_reg(b.s);
        if (o.reg < 0) {
          o.sym = find_symbol(b.s);
          if (o.sym < 0) bad("unknown register or variable in address");
        }
        ++i;
      } else {
        bad("bad address");
      }
      if (i + 1 < t.size()) {
        bool neg = false;
        while (i + 1 < t.size() && (t[i]->s == "+" || t[i]->s == "-")) { if (t[i]->s == "-") neg = !neg; ++i; }
        Operand im;
        if (i + 1 >= t.size() || !parse_number(t[i]->s, im) || im.imm_kind != ImmKind::Int) bad("bad address offset");
        o.imm += neg ? (~im.imm + 1) : im.imm;
        ++i;
      }
      if (i + 1 != t.size()) bad("unsupported address expression");
      return o;
    }
    if (f.s == "!" || f.s == "-") {
      if (t.size() != 2) bad("bad operand");
      if (f.s == "!") {
        o.kind = OpndKind::Reg;
        o.reg = find_reg(t[1]->s);
        o.negate = true;
        if (o.reg < 0) bad("unknown predicate register");
        return o;
      }
      if (!parse_number(t[1]->s, o)) bad("bad immediate");
      if (o.imm_kind == ImmKind::Real) o.real = -o.real;
      else if (o.imm_kind == ImmKind::Int) o.imm = ~o.imm + 1;
      else o.imm ^= o.imm_kind == ImmKind::F32Bits ? 0x80000000ull : 0x8000000000000000ull;
      return o;
    }
    if (t.size() == 3 && t[1]->s == "|") {  // shfl / setp dual destination: d|p
      o.kind = OpndKind::Vec;
      o.vec = {find_reg(f.s), t[2]->s == "_" ? -1 : find_reg(t[2]->s)};
      if (o.vec[0] < 0) bad("unknown register");
      return o;
    }
    if (t.size() != 1) bad("unsupported operand expression");
    if (f.kind == Tok::Num) {
      if (!parse_number(f.s, o)) bad("bad immediate");
      return o;
    }
    if (f.s == "_") { o.kind = OpndKind::Reg; o.reg = -1; return o; }
    o.reg = find_reg(f.s);
    if (o.reg >= 0) { o.kind = OpndKind::Reg; return o; }
    if (f.s[0] == '%') {
      const size_t dot = f.s.find('.');
      const std::string base = f.s.substr(0, dot);
      auto it = special_regs().find(base);
      if (it != special_regs().end()) {
        o.kind = OpndKind::Special;
        o.sreg = it->second;
        if (dot != std::string::npos) {
          const std::string c = f.s.substr(dot + 1);
          if (c != "x" && c != "y" && c != "z") bad("bad special register component");
          o.comp = static_cast<uint8_t>(c[0] - 'x');
        }
        return o;
      }
      bad("unknown register");
    }
    o.sym = find_symbol(f.s);
    if (o.sym >= 0) { o.kind = OpndKind::Symbol; return o; }
    o.kind = OpndKind::Label;  // resolved after the body
    label_refs_.emplace_back(pc, f.s);
    return o;
  }

  void finish_function() {
    for (auto& [pc, name] : label_refs_) {
      auto it = k_->labels.find(name);
      Instr& in = k_->code[static_cast<size_t>(pc)];
      if (it == k_->labels.end()) throw PtxError(file_, in.line, in.text, "unknown label or symbol '" + name + "'");
      for (auto& o : in.ops)
        if (o.kind == OpndKind::Label) o.sym = it->second;
      if (in.op == Op::Bra) in.target = it->second;
    }
    for (auto& in : k_->code)
      for (auto& o : in.ops)
        if (o.kind == OpndKind::Label && in.op != Op::Bra)
          throw PtxError(file_, in.line, in.text, "a label is not a valid operand here");
    if (k_->code.empty() || (k_->code.back().op != Op::Ret && k_->code.back().op != Op::Exit &&
                             k_->code.back().op != Op::Bra)) {
      Instr ret;
      ret.text = "ret (implicit)";
      ret.opcode = "ret";
      ret.line = k_->code.empty() ? 0 : k_->code.back().line;
      decode_instruction(ret, *k_);
      k_->code.push_back(std::move(ret));
    }
    compute_reconvergence(*k_);
    k_->regs_per_thread = estimate_registers(*k_);
  }
};

}  // namespace

std::unique_ptr<Module> parse_ptx(const std::string& text, const std::string& file) {
  Parser p(text, file);
  return p.run();
}

}  // namespace stc
