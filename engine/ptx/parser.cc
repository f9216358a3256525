// PTX parser: module and function structure, declarations (checked as ptxas checks them), instructions and
// operands. Tokens and literals are lexer.cc's, register scopes scopes.cc's.
#include "parser.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "../func/cfg.h"
#include "../func/decode.h"
#include "errors.h"
#include "lexer.h"
#include "scopes.h"
#include "targets.h"

namespace stc {
namespace {

// Limits of the loader (docs/errors.md): ptxas's where it has one, else the engine's, far above any kernel of
// the suite; every size is computed with overflow checks before anything is allocated.
// ptxas 13 takes an array size beyond 64 bits modulo 2^64 (a[2^62 + 1][8] is an 8-byte array); the engine
// refuses it.
constexpr const char* kSizeOverflow = "array size overflows 64 bits (not supported: ptxas wraps it modulo 2^64)";
constexpr uint64_t kMaxStaticShared = 48 * 1024;         // ptxas: static .shared per entry
constexpr uint64_t kMaxConstBytes = 64 * 1024;           // ptxas: .const per module
constexpr uint64_t kMaxParamBytes = 4352;                // ptxas: .param space of an entry
constexpr uint64_t kMaxLocalBytes = 512 * 1024;          // CUDA's local memory per thread (engine limit)
constexpr uint64_t kMaxGlobalBytes = uint64_t{1} << 30;  // .global variables of a module (engine limit)
constexpr uint64_t kMaxCount = 0xffffffffu;              // ptxas: launch bounds
constexpr uint64_t kMaxRegCount = uint64_t{1} << 31;     // ptxas runs out of memory above, the engine refuses

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

bool power_of_two(uint64_t v) { return v && !(v & (v - 1)); }
uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

class Parser {
 public:
  Parser(const std::string& text, const std::string& file) : file_(file), toks_(tokenize(text, file)) {}

  std::unique_ptr<Module> run() {
    mod_ = std::make_unique<Module>();
    mod_->file = file_;
    while (peek().kind != Tok::End) module_statement();
    if (header_ == Header::Start) fail(peek(), "missing .version directive at the start of the module");
    if (header_ == Header::Version) fail(peek(), "missing .target directive after .version");
    if (debug_line_ && !has_section_)
      throw PtxError(file_, debug_line_, ".target debug",
                     "'.target debug' needs debug information (a .section) in the module, as ptxas requires");
    return std::move(mod_);
  }

 private:
  std::string file_;
  std::vector<Tok> toks_;
  size_t pos_ = 0;
  std::unique_ptr<Module> mod_;
  std::unordered_set<std::string> module_names_;  // module variables and defined functions
  uint64_t const_bytes_ = 0, global_bytes_ = 0;
  Kernel* k_ = nullptr;
  int name_line_ = 0;  // the line of the function's name
  std::unique_ptr<RegisterScopes> regs_;
  std::unordered_set<std::string> fn_names_;  // parameters and variables of the function being parsed
  // The function's parameters and variables as ptxas scopes them: per open `{ }` scope (depth 0: the body,
  // with the parameters), name -> index into Kernel::symbols. A variable of a nested scope is seen in it
  // only and hides a register, variable or parameter of an enclosing scope of the same name.
  std::vector<std::unordered_map<std::string, int32_t>> var_scopes_;
  std::unordered_map<std::string, int32_t> module_syms_;  // module variables the function uses, by name
  // The module header as ptxas reads it: `.version`, then one or more `.target`, then at most one
  // `.address_size`, before anything else.
  enum class Header { Start, Version, Target, AddressSize, Body } header_ = Header::Start;
  int debug_line_ = 0;        // the line of a `.target ..., debug` (0: none)
  bool has_section_ = false;  // the module has a .section (debug information)
  std::string texmode_;       // texmode_unified / texmode_independent, once given
  // Labels are scoped like registers: a `{ }` block's labels are seen inside it only, and a nested block may
  // define a label of an enclosing one again. Scope 0 is the function body.
  std::vector<int32_t> scope_parent_;  // parent scope of each scope (-1 for the body)
  std::vector<int32_t> scope_stack_;   // the open scopes, innermost last
  std::map<std::pair<int32_t, std::string>, int32_t> scoped_labels_;  // (scope, label) -> pc
  struct LabelRef {
    int32_t pc;
    std::string name;
    int32_t scope;
  };
  std::vector<LabelRef> label_refs_;

  const Tok& peek(size_t ahead = 0) const { return toks_[std::min(pos_ + ahead, toks_.size() - 1)]; }
  const Tok& next() { const Tok& t = toks_[pos_]; if (pos_ + 1 < toks_.size()) ++pos_; return t; }
  bool is(const char* s, size_t ahead = 0) const { return peek(ahead).kind != Tok::Str && peek(ahead).s == s; }
  bool at_end() const { return peek().kind == Tok::End; }

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
    if (peek().kind != Tok::Num) fail(peek(), std::string("expected ") + what);
    const std::string err = parse_number(peek().s, o);
    if (!err.empty()) fail(peek(), err);
    if (o.imm_kind != ImmKind::Int) fail(peek(), std::string("expected ") + what + " (an integer)");
    next();
    return o.imm;
  }
  // An integer in 1 .. 2^32 - 1 (launch bounds, counts).
  uint32_t positive(const char* what) {
    const Tok& t = peek();
    const uint64_t v = integer(what);
    if (v == 0 || v > kMaxCount) fail(t, std::string(what) + " must be in 1 .. 4294967295");
    return static_cast<uint32_t>(v);
  }
  // A `.target` architecture (the .target name or an option naming one): the module's target from now on.
  void target_name(const Tok& at, const std::string& name) {
    uint16_t min_ptx = 0;
    const uint16_t sm = target_sm(name, min_ptx);
    if (!sm) fail(at, "unsupported .target");
    if (mod_->ptx && mod_->ptx < min_ptx) fail(at, "PTX .version " + mod_->version + " does not support this .target");
    mod_->target = name;
    mod_->sm = sm;
    mod_->arch_specific = name.rfind("sm_", 0) == 0 && name.back() == 'a';
  }
  // The name a declaration introduces: an identifier that is not a directive (`.reg`, `.foo`).
  std::string declared_name(const char* what) {
    if (peek().kind == Tok::Ident && peek().s[0] == '.')
      fail(peek(), std::string("expected ") + what + " (a name cannot start with '.')");
    check_name(peek());
    return ident(what);
  }
  // PTX identifiers have no '.' in them (`%a.b`, `x.y:` are refused by ptxas).
  void check_name(const Tok& t) const {
    if (t.kind == Tok::Ident && t.s.find('.') != std::string::npos)
      fail(t, "'" + t.s + "' is not a valid name (a name cannot contain '.')");
  }
  void skip_line(int line) { while (!at_end() && peek().line == line) next(); }
  // `.pragma "a"{, "b"};`: returns the strings
  std::vector<std::string> pragma() {
    next();
    std::vector<std::string> strings;
    while (true) {
      if (peek().kind != Tok::Str) fail(peek(), "expected a string");
      strings.push_back(next().s);
      if (!is(",")) break;
      next();
    }
    expect(";");
    return strings;
  }

  // ---- module level -------------------------------------------------------------------------
  // `.target` and its list: architectures (the last one counts, as for ptxas), texmode_*, debug. In the
  // header the list starts with an architecture; ptxas also reads the directive inside a function body
  // (without a ';'), where it sets the target of what follows, this function's rest and the later ones,
  // and the texture mode is texmode_unified unless the header said otherwise.
  void target_directive(bool in_body) {
    next();
    for (bool first = true;; first = false) {
      if (!first) {
        if (!is(",")) break;
        next();
      }
      const Tok& opt = peek();
      const std::string o = ident(first ? "target" : "target option");
      if (o.rfind("sm_", 0) == 0 || o.rfind("compute_", 0) == 0 || (first && !in_body)) {
        target_name(opt, o);
      } else if (o == "texmode_unified" || o == "texmode_independent") {
        const std::string given = texmode_.empty() && in_body ? "texmode_unified" : texmode_;
        if (!given.empty() && given != o) fail(opt, "conflicting .target option '" + o + "' (" + given + " given)");
        texmode_ = o;
      } else if (o == "debug") {
        debug_line_ = opt.line;
      } else if (o == "map_f64_to_f32") {
        fail(opt, ".target option map_f64_to_f32 is not supported on sm_13 or higher");
      } else {
        fail(opt, first ? "unsupported .target" : "unknown .target option");
      }
    }
  }

  void module_statement() {
    const Tok& t = peek();
    if (t.kind != Tok::Ident) fail(t, "expected a directive");
    const std::string d = t.s;
    if (header_ == Header::Start && d != ".version")
      fail(t, "the module must start with .version (then .target), as ptxas requires");
    if (header_ == Header::Version && d != ".target") fail(t, "missing .target directive after .version");
    if (d == ".version") {
      if (header_ != Header::Start) fail(t, "'.version' may appear only once, at the start of the module");
      header_ = Header::Version;
      next();
      const Tok& v = next();
      mod_->version = v.s;
      mod_->ptx = v.kind == Tok::Num ? ptx_version_number(v.s) : 0;
      if (!mod_->ptx) fail(v, "unsupported .version (ptxas 13 reads 1.0 to 9.0)");
      return;
    }
    if (d == ".target") {
      if (header_ != Header::Version && header_ != Header::Target)
        fail(t, "'.target' must come right after .version (before .address_size and the module's contents)");
      header_ = Header::Target;
      target_directive(false);
      return;
    }
    if (d == ".address_size") {
      if (header_ != Header::Target) fail(t, "'.address_size' must come right after .target, once");
      header_ = Header::AddressSize;
      next();
      mod_->address_size = static_cast<uint32_t>(integer("address size"));
      if (mod_->address_size != 64) fail(t, "only .address_size 64 is supported");
      return;
    }
    header_ = Header::Body;
    if (d == ".file" || d == ".loc") { skip_line(t.line); return; }
    if (d == ".pragma") { pragma(); return; }
    if (d == ".section") {
      has_section_ = true;
      next();
      ident("section name");
      expect("{");
      int depth = 1;
      while (depth > 0 && !at_end()) { if (is("{")) ++depth; if (is("}")) --depth; next(); }
      return;
    }
    bool is_extern = false;
    std::unordered_set<std::string> linkage;
    while (is(".visible") || is(".weak") || is(".extern") || is(".common")) {
      if (is(".extern")) is_extern = true;
      if (!linkage.insert(peek().s).second) fail(peek(), "duplicate " + peek().s);
      next();
    }
    if (is(".entry") || is(".func")) { function(); return; }
    if (is(".global") || is(".const") || is(".shared") || is(".local")) {
      if (is(".local")) fail(peek(), "module-scope .local variables are not allowed");
      const Tok& start = peek();
      Variable v = variable(is_extern);
      if (!module_names_.insert(v.name).second) {
        // An .extern declaration may be repeated (the same variable declared again), nothing else.
        const auto same = std::find_if(mod_->globals.begin(), mod_->globals.end(), [&](const Variable& g) {
          return g.name == v.name && g.is_extern && v.is_extern && g.space == v.space && g.type == v.type;
        });
        if (same == mod_->globals.end()) fail(start, "duplicate definition of '" + v.name + "'");
        return;
      }
      uint64_t& total = v.space == Space::Const ? const_bytes_ : global_bytes_;
      if (v.space == Space::Const || v.space == Space::Global) {
        total = align_up(total, v.align) + v.size;
        if (v.space == Space::Const && total > kMaxConstBytes)
          fail(start, const_overflow(total));
        if (v.space == Space::Global && total > kMaxGlobalBytes)
          fail(start, "the module's .global variables exceed the engine's limit of " + std::to_string(kMaxGlobalBytes) + " bytes");
      }
      mod_->globals.push_back(std::move(v));
      return;
    }
    fail(peek(), "unsupported module-level directive");
  }

  Space space_of(const std::string& d) const {
    if (d == ".global") return Space::Global;
    if (d == ".const") return Space::Const;
    if (d == ".shared") return Space::Shared;
    if (d == ".local") return Space::Local;
    return Space::Param;
  }

  // `[N]...` dimensions of a variable or parameter: the element count (0 for `[]`), overflow-checked.
  uint64_t dimensions(const Tok& start, bool& unsized) {
    uint64_t count = 1;
    unsized = false;
    while (is("[")) {
      next();
      if (is("]")) { unsized = true; next(); continue; }
      const uint64_t n = integer("array size");
      if (__builtin_mul_overflow(count, n, &count)) fail(start, kSizeOverflow);
      expect("]");
    }
    return count;
  }

  // `.space [.align N] .type name[dims] [= init];`
  Variable variable(bool is_extern) {
    const Tok& start = peek();
    Variable v;
    v.space = space_of(next().s);
    v.is_extern = is_extern;
    uint32_t align = 0;
    bool typed = false;
    while (peek().kind == Tok::Ident && peek().s[0] == '.') {
      std::string m = next().s;
      if (m == ".align") { align = static_cast<uint32_t>(alignment()); continue; }
      if (m == ".v2" || m == ".v4") { fail(start, "vector-typed variables are not supported"); }
      DType t = dtype_from_name(m.substr(1));
      if (t == DType::None) fail(start, "unknown variable type " + m);
      check_declared_type(toks_[pos_ - 1], t, Space::Global);
      if (typed) fail(toks_[pos_ - 1], "a declaration takes one type");
      typed = true;
      v.type = t;
    }
    if (!typed) fail(start, "variable without a type");
    v.name = declared_name("variable name");
    bool unsized = false;
    const uint64_t count = dimensions(start, unsized);
    const int esize = dtype_bytes(v.type);
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(esize), &v.size)) fail(start, kSizeOverflow);
    if (unsized) v.size = 0;
    v.align = std::max<uint32_t>(align, static_cast<uint32_t>(esize));
    check_variable_size(v, start);
    if (is("=")) {
      if (v.space != Space::Global && v.space != Space::Const) fail(start, "no initial value is allowed in this state space");
      next();
      initializer(v, esize, start);
      if (unsized) v.size = v.init.size();
      check_variable_size(v, start);
    }
    if (v.init.size() > v.size && v.size) fail(start, "too many initialisers for " + v.name);
    if (!v.init.empty() && v.init.size() < v.size) v.init.resize(v.size, 0);
    if (v.size == 0 && !(is_extern && v.space == Space::Shared && unsized))
      fail(start, "variable '" + v.name + "' has no size (only .extern .shared arrays [] may)");
    expect(";");
    return v;
  }

  // ptxas: "File uses too much global constant data (0x10004 bytes, 0x10000 max)": one 64 KiB bank.
  static std::string const_overflow(uint64_t bytes) {
    return "the module uses too much global constant data (" + std::to_string(bytes) + " bytes, " +
           std::to_string(kMaxConstBytes) + " max: one constant bank, as ptxas allows)";
  }

  void check_variable_size(const Variable& v, const Tok& start) const {
    if (v.space == Space::Const && v.size > kMaxConstBytes) fail(start, const_overflow(v.size));
    const uint64_t limit = v.space == Space::Shared ? kMaxStaticShared : v.space == Space::Local ? kMaxLocalBytes
                         : v.space == Space::Const ? kMaxConstBytes : kMaxGlobalBytes;
    if (v.size > limit)
      fail(start, "variable '" + v.name + "' of " + std::to_string(v.size) + " bytes exceeds the " +
                      std::to_string(limit) + " bytes of ." + space_name(v.space));
  }

  // Types that only instructions take (.bf16, .bf16x2, .tf32, .u16x2, .s16x2) name no register or variable;
  // .pred only registers (`where` Generic), .f16x2 no parameter; .b128 needs PTX ISA 8.3.
  void check_declared_type(const Tok& t, DType type, Space where) const {
    if (type == DType::BF16 || type == DType::BF16x2 || type == DType::TF32 || type == DType::U16x2 ||
        type == DType::S16x2 || (type == DType::Pred && where != Space::Generic) ||
        (type == DType::F16x2 && where == Space::Param))
      fail(t, std::string("type .") + dtype_name(type) + " cannot be declared here (an instruction type)");
    if (type == DType::B128 && mod_->ptx < 83) fail(t, "type .b128 requires PTX ISA .version 8.3 or later");
  }

  uint64_t alignment() {
    const Tok& t = peek();
    const uint64_t a = integer("alignment");
    if (!power_of_two(a) || a > (uint64_t{1} << 31)) fail(t, "alignment must be a power of two");
    return a;
  }

  // `= value` or `= {v, v, ...}` (nested braces for arrays of arrays), each value a literal of the
  // variable's kind.
  void initializer(Variable& v, int esize, const Tok& start) {
    if (!is("{")) { init_value(v, esize, start); return; }
    next();
    while (true) {
      if (is("{")) initializer(v, esize, start);
      else init_value(v, esize, start);
      if (!is(",")) break;
      next();
    }
    expect("}");
  }

  void init_value(Variable& v, int esize, const Tok& start) {
    // A literal, or an integer constant expression: the tokens up to the next ',' or '}' outside parentheses.
    std::vector<const Tok*> expr;
    for (int depth = 0; !at_end() && expr_token(peek()) && !(depth == 0 && (is(",") || is("}")));) {
      if (is("(")) ++depth;
      if (is(")")) --depth;
      if (is(":") && depth == 0 && std::none_of(expr.begin(), expr.end(), [](const Tok* x) { return x->s == "?"; })) break;
      expr.push_back(&next());
    }
    bool neg = false;
    Operand o;
    if (expr.size() == 2 && expr[0]->s == "-") {
      neg = true;
      expr.erase(expr.begin());
    }
    if (expr.size() == 1) {
      if (expr[0]->kind != Tok::Num) fail(*expr[0], "expected an initial value (a literal)");
      const std::string err = parse_number(expr[0]->s, o);
      if (!err.empty()) fail(*expr[0], err);
    } else if (is_const_expr(expr)) {
      o = const_expr(expr, [&](const std::string& why) { fail(*expr[0], why + " in an initial value"); });
    } else {
      fail(expr.empty() ? peek() : *expr[0], "expected an initial value (a literal)");
    }
    const bool flt = dtype_is_float(v.type);
    if (flt != (o.imm_kind != ImmKind::Int)) fail(start, "initial value type mismatch for " + v.name);
    uint64_t bits = o.imm;
    if (flt) {
      if (v.type != DType::F64 && v.type != DType::F32) fail(start, "unsupported initialiser type");
      double val = o.imm_kind == ImmKind::Real ? o.real
                 : o.imm_kind == ImmKind::F64Bits ? bits_as_f64(o.imm) : static_cast<double>(bits_as_f32(o.imm));
      if (neg) val = -val;
      bits = v.type == DType::F64 ? f64_bits(val) : f32_bits(static_cast<float>(val));
    } else if (neg) {
      bits = ~bits + 1;
    }
    if (v.init.size() + static_cast<size_t>(esize) > kMaxGlobalBytes) fail(start, "initialiser too large");
    for (int b = 0; b < esize; ++b) v.init.push_back(static_cast<uint8_t>(bits >> (8 * b)));
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
    k_->arch_specific = mod_->arch_specific;
    k_->ptx = mod_->ptx;
    regs_ = std::make_unique<RegisterScopes>(*k_);
    fn_names_.clear();
    var_scopes_.assign(1, {});
    module_syms_.clear();
    label_refs_.clear();
    scoped_labels_.clear();
    scope_parent_.assign(1, -1);
    scope_stack_.assign(1, 0);
    if (!entry && is("(")) {  // the return parameters of a .func: parameters of its body
      next();
      while (!is(")")) {
        param();
        if (is(",")) next();
        else if (!is(")")) fail(peek(), "expected ',' or ')'");
      }
      next();
    }
    const Tok& name = peek();
    name_line_ = name.line;
    k_->name = declared_name("function name");
    if (is("(")) {
      next();
      while (!is(")")) {
        param();
        if (is(",")) next();
        else if (!is(")")) fail(peek(), "expected ',' or ')'");
      }
      next();
    }
    if (k_->param_bytes > kMaxParamBytes && entry)
      fail(name, "entry '" + k_->name + "' uses " + std::to_string(k_->param_bytes) + " bytes of parameters (" +
                     std::to_string(kMaxParamBytes) + " max)");
    launch_bounds();
    if (is(";")) {  // prototype only
      next();
      k_ = nullptr;
      return;
    }
    if (!module_names_.insert(k_->name).second) fail(name, "duplicate definition of '" + k_->name + "'");
    expect("{");
    body();
    finish_function();
    mod_->kernels.push_back(std::move(kernel));
    k_ = nullptr;
  }

  // .maxntid / .reqntid (1 to 3 positive counts, not both), .minnctapersm, .maxnreg, .noreturn, .pragma.
  void launch_bounds() {
    bool maxntid = false, reqntid = false;
    while (peek().kind == Tok::Ident && peek().s[0] == '.') {
      const Tok& t = next();
      const std::string d = t.s;
      if (d == ".maxntid" || d == ".reqntid") {
        (d == ".maxntid" ? maxntid : reqntid) = true;
        if (maxntid && reqntid) fail(t, "conflicting directives: .maxntid and .reqntid cannot both be given");
        uint32_t* dst = d == ".maxntid" ? k_->maxntid : k_->reqntid;
        for (int i = 0; i < 3; ++i) {
          dst[i] = positive("thread count");
          if (!is(",")) break;
          if (i == 2) fail(peek(), "at most three thread counts");
          next();
        }
      } else if (d == ".minnctapersm" || d == ".maxnreg") {
        positive(".minnctapersm / .maxnreg count");
      } else if (d == ".maxnctapersm") {
        fail(t, ".maxnctapersm is not supported since PTX ISA 2.1");
      } else if (d == ".pragma") {
        --pos_;
        pragma();
      } else if (d == ".noreturn") {
        if (k_->is_entry) fail(t, ".noreturn is allowed on .func only, not on an .entry");
      } else {
        fail(t, "unsupported function directive");
      }
    }
  }

  void param() {
    const Tok& start = peek();
    if (!is(".param") && !(is(".reg") && !k_->is_entry)) fail(peek(), "expected .param (the space of entry parameters)");
    next();
    Param p;
    uint32_t align = 0;
    bool typed = false;
    bool after_ptr = false;  // `.ptr` then its state space (glued or not: `.ptr.global`, `.ptr .global`)
    while (peek().kind == Tok::Ident && peek().s[0] == '.') {
      const Tok& mt = next();
      std::string m = mt.s;
      const bool space = m == ".global" || m == ".const" || m == ".shared" || m == ".local";
      if (m.rfind(".ptr.", 0) == 0) {
        m = m.substr(4);
        if (m != ".global" && m != ".const" && m != ".shared" && m != ".local") fail(mt, "unknown parameter type");
        continue;
      }
      if (m == ".ptr") { after_ptr = true; continue; }
      if (space) {
        if (!after_ptr) fail(mt, "a parameter has one state space (.param): " + m + " may only follow .ptr");
        after_ptr = false;
        continue;
      }
      after_ptr = false;
      if (m == ".align") { align = static_cast<uint32_t>(alignment()); continue; }
      DType t = dtype_from_name(m.substr(1));
      if (t == DType::None) fail(toks_[pos_ - 1], "unknown parameter type");
      check_declared_type(toks_[pos_ - 1], t, Space::Param);
      if (typed) fail(toks_[pos_ - 1], "a declaration takes one type");
      p.type = t;
      typed = true;
    }
    if (!typed) fail(start, "parameter without a type");
    p.name = declared_name("parameter name");
    bool unsized = false;
    const uint64_t count = dimensions(start, unsized);
    uint64_t size = 0;
    if (unsized || count == 0) fail(start, "a parameter cannot be an array without a size");
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(dtype_bytes(p.type)), &size) || size > kMaxParamBytes)
      fail(start, "parameter '" + p.name + "' is larger than the " + std::to_string(kMaxParamBytes) + " bytes of .param space");
    p.size = static_cast<uint32_t>(size);
    p.align = align ? align : static_cast<uint32_t>(dtype_bytes(p.type));
    const uint64_t offset = align_up(k_->param_bytes, p.align);
    if (offset + p.size > kMaxParamBytes)
      fail(start, "parameters exceed the " + std::to_string(kMaxParamBytes) + " bytes of .param space");
    p.offset = static_cast<uint32_t>(offset);
    k_->param_bytes = static_cast<uint32_t>(offset + p.size);
    declare_name(start, p.name);
    SymbolRef s;
    s.name = p.name;
    s.space = Space::Param;
    s.index = static_cast<int32_t>(k_->params.size());
    var_scopes_[0][p.name] = static_cast<int32_t>(k_->symbols.size());
    k_->symbols.push_back(s);
    k_->params.push_back(p);
  }

  // A parameter or function-scope variable: one namespace with the function's outermost registers.
  void declare_name(const Tok& where, const std::string& name) {
    if (!fn_names_.insert(name).second || regs_->declares_outermost(name))
      fail(where, "duplicate definition of '" + name + "'");
  }

  void body() {
    int depth = 1;
    while (depth > 0) {
      const Tok& t = peek();
      if (t.kind == Tok::End) fail(t, "unterminated function body");
      if (is("{")) {
        next();
        ++depth;
        regs_->push();
        var_scopes_.emplace_back();
        scope_stack_.push_back(static_cast<int32_t>(scope_parent_.size()));
        scope_parent_.push_back(scope_stack_[scope_stack_.size() - 2]);
        continue;
      }
      if (is("}")) {
        next();
        --depth;
        if (depth > 0) { regs_->pop(); var_scopes_.pop_back(); scope_stack_.pop_back(); }
        continue;
      }
      if (t.kind == Tok::Ident && t.s[0] == '.') { body_directive(); continue; }
      if (t.kind == Tok::Ident && is(":", 1)) {
        // A label: one name per scope, shared with the scope's registers (a range's members excepted, as
        // ptxas has it) and, in the body itself, with the parameters and variables.
        const int32_t scope = scope_stack_.back();
        check_name(t);
        if (scoped_labels_.count({scope, t.s}) || regs_->declares_innermost(t.s) || var_scopes_.back().count(t.s) ||
            (scope == 0 && fn_names_.count(t.s)))
          fail(t, "duplicate definition of label '" + t.s + "'");
        const int32_t pc = static_cast<int32_t>(k_->code.size());
        scoped_labels_[{scope, t.s}] = pc;
        k_->labels[scope ? t.s + "{" + std::to_string(scope) + "}" : t.s] = pc;
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
    if (d == ".loc") { skip_line(t.line); return; }
    if (d == ".file") fail(t, "'.file' is allowed at module scope only, not inside a function");
    if (d == ".target") {  // the target of the instructions after it (target_directive)
      target_directive(true);
      k_->sm = mod_->sm;
      k_->arch_specific = mod_->arch_specific;
      return;
    }
    if (d == ".pragma") {  // "nounroll" marks the loop it stands in (func/unroll.h)
      for (const std::string& s : pragma())
        if (s == "nounroll") k_->nounroll.push_back(static_cast<int32_t>(k_->code.size()));
      return;
    }
    if (d == ".shared" || d == ".local" || d == ".global" || d == ".const") {
      if (d == ".global" || d == ".const") fail(t, "function-scope .global/.const is not supported");
      Variable v = variable(false);
      // One namespace per scope with its registers (range members included) and labels, as ptxas has it;
      // a nested scope's variable may take the name of an enclosing scope's register, variable or parameter
      // and hides it there (registers: regs_->hide).
      if (scoped_labels_.count({scope_stack_.back(), v.name})) fail(t, "duplicate definition of '" + v.name + "'");
      if (regs_->outermost()) {
        declare_name(t, v.name);
      } else {
        if (var_scopes_.back().count(v.name) || regs_->declares_in_innermost(v.name))
          fail(t, "duplicate definition of '" + v.name + "'");
        regs_->hide(v.name);
      }
      SymbolRef s;
      s.name = v.name;
      s.space = v.space;
      s.index = static_cast<int32_t>(k_->locals.size());
      var_scopes_.back()[v.name] = static_cast<int32_t>(k_->symbols.size());
      k_->symbols.push_back(s);
      k_->locals.push_back(std::move(v));
      return;
    }
    if (d == ".callprototype" || d == ".calltargets")
      fail(t, "function calls (" + d + ", call) are not supported: device functions must be inlined");
    fail(t, "unsupported directive in function body");
  }

  void reg_decl() {
    const int32_t scope = scope_stack_.back();
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
      if (type != DType::None) fail(start, "a register declaration takes one type");
      type = dtype_from_name(m.substr(1));
      if (type == DType::None) fail(start, "unknown register type " + m);
      check_declared_type(start, type, Space::Generic);
    }
    if (vec != 1) fail(start, "vector registers are not supported");
    if (type == DType::None) fail(start, "register declaration without a type");
    while (true) {
      const Tok& name_tok = peek();
      const std::string name = declared_name("register name");
      if (scoped_labels_.count({scope, name})) fail(name_tok, "duplicate definition of '" + name + "' (a label of this scope)");
      std::string err;
      if (is("<")) {
        next();
        const uint64_t n = integer("register count");
        if (n > kMaxRegCount) fail(name_tok, "register count out of range (at most 2147483648)");
        expect(">");
        err = regs_->declare_range(name, n, type);
        if (err.empty() && regs_->outermost())
          for (const std::string& v : fn_names_)
            if (regs_->declares_outermost(v)) err = "duplicate definition of '" + v + "'";
        if (err.empty() && !regs_->outermost())  // a variable of this scope named like one of the range
          for (const auto& [v, _] : var_scopes_.back())
            if (regs_->declares_in_innermost(v)) err = "duplicate definition of '" + v + "'";
      } else {
        err = (regs_->outermost() && fn_names_.count(name)) || (!regs_->outermost() && var_scopes_.back().count(name))
                  ? "duplicate definition of '" + name + "'"
                  : regs_->declare(name, type);
      }
      if (!err.empty()) fail(name_tok, err);
      if (!is(",")) break;
      next();
    }
    expect(";");
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

  // The variable or parameter `name` of the innermost open scope that declares one (its depth in *depth), or
  // else the module's variable (depth -1); -1 when there is none.
  int32_t find_symbol(const std::string& name, int* depth = nullptr) {
    for (size_t d = var_scopes_.size(); d-- > 0;) {
      auto it = var_scopes_[d].find(name);
      if (it == var_scopes_[d].end()) continue;
      if (depth) *depth = static_cast<int>(d);
      return it->second;
    }
    if (depth) *depth = -1;
    auto it = module_syms_.find(name);
    if (it != module_syms_.end()) return it->second;
    for (size_t g = 0; g < mod_->globals.size(); ++g) {
      if (mod_->globals[g].name != name) continue;
      SymbolRef s;
      s.name = name;
      s.space = mod_->globals[g].space;
      s.index = static_cast<int32_t>(g);
      s.module_scope = true;
      const int32_t idx = static_cast<int32_t>(k_->symbols.size());
      k_->symbols.push_back(s);
      module_syms_[name] = idx;
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
      in.guard = regs_->find(g.s);
      if (in.guard < 0) fail(g, "unknown guard predicate");
      if (k_->regs[static_cast<size_t>(in.guard)].type != DType::Pred) fail(g, "a guard must be a .pred register");
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
    if (!cur.empty() || !operands.empty()) operands.push_back(cur);
    in.text = instr_text(start, pos_);
    next();  // ';'
    if (in.opcode == "call" || in.opcode.rfind("call.", 0) == 0)
      throw PtxError(file_, in.line, in.text, "function calls ('call') are not supported: device functions must be inlined");
    const int32_t pc = static_cast<int32_t>(k_->code.size());
    for (auto& toks : operands) in.ops.push_back(operand(toks, in, pc));
    try {
      decode_instruction(in, *k_);
    } catch (const DecodeError& e) {
      if (!k_->is_entry && in.opcode.rfind("st.", 0) == 0 && (in.opcode + ".").find(".param.") != std::string::npos)
        throw PtxError(file_, in.line, in.text,
                       "st.param in a .func (its return value) is not supported: device functions must be inlined");
      throw PtxError(file_, in.line, in.text, e.what());
    }
    k_->code.push_back(std::move(in));
  }

  // Whether a label `name` is defined so far in one of the open scopes.
  bool label_defined(const std::string& name) const { return label_defined_within(name, -1); }
  // ... in one of the open scopes nested deeper than `depth` (-1: any): such a label hides a variable of the
  // scope at `depth` (or of the module) from its definition on, as ptxas resolves names.
  bool label_defined_within(const std::string& name, int depth) const {
    for (size_t d = static_cast<size_t>(depth + 1); d < scope_stack_.size(); ++d)
      if (scoped_labels_.count({scope_stack_[d], name})) return true;
    return false;
  }

  // ---- integer constant expressions (PTX ISA, "Constant Expressions") -------------------------------
  // C's operators on 64-bit integers: unary + - ! ~, * / %, + -, << >>, < > <= >=, == !=, &, ^, |, &&, ||,
  // ?: and parentheses. A literal is .s64, or .u64 with a U suffix (or a value beyond .s64's range); an
  // operation on a .u64 is unsigned; comparisons and logical operators give .s64 0 or 1. Operators of two
  // characters are two tokens here (`<<`, `<=`, `==`, `!=`, `&&`, `||`).
  struct CVal {
    uint64_t v = 0;
    bool u = false;
  };
  static bool expr_token(const Tok& t) {
    return t.kind == Tok::Num || (t.kind == Tok::Punct && std::strchr("+-!~*/&^|<>=()?:", t.s[0]) != nullptr) ||
           (t.kind == Tok::Ident && t.s == "%");  // `a % b` (`a %b` would be a register's name)
  }
  // Whether the tokens form something for const_expr (numbers and operators, not one literal alone).
  static bool is_const_expr(const std::vector<const Tok*>& t) {
    if (t.size() < 2 || !std::all_of(t.begin(), t.end(), [](const Tok* x) { return expr_token(*x); })) return false;
    return std::any_of(t.begin(), t.end(), [](const Tok* x) { return x->kind == Tok::Num; });
  }
  Operand const_expr(const std::vector<const Tok*>& t, const std::function<void(const std::string&)>& bad) const {
    // Signs before one literal (`--1.5`, `-+2`): the literal negated as often as there are '-' (a float too).
    if (t.back()->kind == Tok::Num &&
        std::all_of(t.begin(), t.end() - 1, [](const Tok* x) { return x->s == "+" || x->s == "-"; })) {
      const bool neg = std::count_if(t.begin(), t.end() - 1, [](const Tok* x) { return x->s == "-"; }) % 2;
      return literal(*t.back(), neg, bad);
    }
    size_t i = 0;
    const CVal r = cond_expr(t, i, bad);
    if (i != t.size()) bad("malformed constant expression");
    Operand o;
    o.kind = OpndKind::Imm;
    o.imm_kind = ImmKind::Int;
    o.imm = r.v;
    return o;
  }
  using Bad = std::function<void(const std::string&)>;
  static bool at(const std::vector<const Tok*>& t, size_t i, const char* a, const char* b = nullptr) {
    if (i >= t.size() || t[i]->kind == Tok::Num || t[i]->s != a) return false;
    return !b || (i + 1 < t.size() && t[i + 1]->kind == Tok::Punct && t[i + 1]->s == b && t[i + 1]->joined);
  }
  CVal cond_expr(const std::vector<const Tok*>& t, size_t& i, const Bad& bad) const {
    const CVal c = binary(t, i, 0, bad);
    if (!at(t, i, "?")) return c;
    ++i;
    const CVal a = cond_expr(t, i, bad);
    if (!at(t, i, ":")) bad("malformed constant expression");
    ++i;
    const CVal b = cond_expr(t, i, bad);
    CVal r = c.v ? a : b;
    r.u = a.u || b.u;
    return r;
  }
  // Binary operators by precedence level (0: ||, ... 9: * / %).
  CVal binary(const std::vector<const Tok*>& t, size_t& i, int level, const Bad& bad) const {
    if (level == 10) return unary(t, i, bad);
    CVal l = binary(t, i, level + 1, bad);
    while (true) {
      std::string op;
      switch (level) {
        case 0: if (at(t, i, "|", "|")) op = "||"; break;
        case 1: if (at(t, i, "&", "&")) op = "&&"; break;
        case 2: if (at(t, i, "|") && !at(t, i, "|", "|")) op = "|"; break;
        case 3: if (at(t, i, "^")) op = "^"; break;
        case 4: if (at(t, i, "&") && !at(t, i, "&", "&")) op = "&"; break;
        case 5: if (at(t, i, "=", "=")) op = "=="; else if (at(t, i, "!", "=")) op = "!="; break;
        case 6:
          if (at(t, i, "<", "=")) op = "<="; else if (at(t, i, ">", "=")) op = ">=";
          else if (at(t, i, "<") && !at(t, i, "<", "<")) op = "<"; else if (at(t, i, ">") && !at(t, i, ">", ">")) op = ">";
          break;
        case 7: if (at(t, i, "<", "<")) op = "<<"; else if (at(t, i, ">", ">")) op = ">>"; break;
        case 8: if (at(t, i, "+")) op = "+"; else if (at(t, i, "-")) op = "-"; break;
        default: if (at(t, i, "*")) op = "*"; else if (at(t, i, "/")) op = "/"; else if (at(t, i, "%")) op = "%"; break;
      }
      if (op.empty()) return l;
      i += op.size();
      const CVal r = binary(t, i, level + 1, bad);
      const bool u = l.u || r.u;
      const int64_t a = static_cast<int64_t>(l.v), b = static_cast<int64_t>(r.v);
      CVal out{0, u};
      if (op == "||" || op == "&&" || op == "==" || op == "!=" || op == "<" || op == ">" || op == "<=" || op == ">=") {
        out.u = false;
        bool x = false;
        if (op == "||") x = l.v || r.v;
        else if (op == "&&") x = l.v && r.v;
        else if (op == "==") x = l.v == r.v;
        else if (op == "!=") x = l.v != r.v;
        else if (op == "<") x = u ? l.v < r.v : a < b;
        else if (op == ">") x = u ? l.v > r.v : a > b;
        else if (op == "<=") x = u ? l.v <= r.v : a <= b;
        else x = u ? l.v >= r.v : a >= b;
        out.v = x;
      } else if (op == "|") out.v = l.v | r.v;
      else if (op == "^") out.v = l.v ^ r.v;
      else if (op == "&") out.v = l.v & r.v;
      else if (op == "<<") { out.u = l.u; out.v = r.v >= 64 ? 0 : l.v << r.v; }
      else if (op == ">>") {
        out.u = l.u;
        out.v = r.v >= 64 ? (l.u || a >= 0 ? 0 : ~uint64_t{0}) : l.u ? l.v >> r.v : static_cast<uint64_t>(a >> r.v);
      } else if (op == "+") out.v = l.v + r.v;
      else if (op == "-") out.v = l.v - r.v;
      else if (op == "*") out.v = l.v * r.v;
      else {
        if (r.v == 0) bad("division by zero in constant expression");
        const bool rem = op == "%";
        if (!u && a == INT64_MIN && b == -1) out.v = rem ? 0 : l.v;  // wraps, as two's complement
        else if (u) out.v = rem ? l.v % r.v : l.v / r.v;
        else out.v = static_cast<uint64_t>(rem ? a % b : a / b);
      }
      l = out;
    }
  }
  CVal unary(const std::vector<const Tok*>& t, size_t& i, const Bad& bad) const {
    if (i >= t.size()) bad("malformed constant expression");
    const Tok& x = *t[i];
    if (x.kind == Tok::Punct && (x.s == "+" || x.s == "-" || x.s == "!" || x.s == "~")) {
      ++i;
      CVal v = unary(t, i, bad);
      if (x.s == "-") v.v = ~v.v + 1;
      else if (x.s == "!") v = {v.v == 0, false};
      else if (x.s == "~") v.v = ~v.v;
      return v;
    }
    if (at(t, i, "(")) {
      ++i;
      const CVal v = cond_expr(t, i, bad);
      if (!at(t, i, ")")) bad("malformed constant expression");
      ++i;
      return v;
    }
    if (x.kind != Tok::Num) bad("malformed constant expression");
    Operand o;
    const std::string err = parse_number(x.s, o);
    if (!err.empty()) bad(err);
    if (o.imm_kind != ImmKind::Int) bad("a constant expression takes integers only");
    ++i;
    return {o.imm, x.s.back() == 'U' || o.imm > static_cast<uint64_t>(INT64_MAX)};
  }

  // A literal token (after an optional '-'): the immediate, or a PtxError with parse_number's reason.
  Operand literal(const Tok& t, bool negate, const std::function<void(const std::string&)>& bad) const {
    Operand o;
    if (t.kind != Tok::Num) bad("bad immediate");
    const std::string err = parse_number(t.s, o);
    if (!err.empty()) bad(err);
    if (!negate) return o;
    if (o.imm_kind == ImmKind::F32Bits) bad("a 0f literal cannot be negated");
    if (o.imm_kind == ImmKind::Real) o.real = -o.real;
    else if (o.imm_kind == ImmKind::Int) o.imm = ~o.imm + 1;
    else o.imm ^= 0x8000000000000000ull;
    return o;
  }

  Operand operand(const std::vector<const Tok*>& t, const Instr& in, int32_t pc) {
    if (t.empty()) throw PtxError(file_, in.line, in.text, "empty operand");
    const Tok& f = *t[0];
    std::function<void(const std::string&)> bad = [&](const std::string& why) {
      std::string text;
      for (const Tok* x : t) text += x->s;
      throw PtxError(file_, f.line, in.text, why + " '" + text + "'");
    };
    Operand o;
    if (f.s == "{") return vector_operand(t, bad);
    if (f.s == "[") return address(t, bad);
    if (f.s == "!" && is_const_expr(t)) return const_expr(t, bad);
    if (f.s == "!") {
      if (t.size() != 2) bad("bad operand");
      o.kind = OpndKind::Reg;
      o.reg = regs_->find(t[1]->s);
      o.negate = true;
      if (o.reg < 0) bad("unknown predicate register");
      return o;
    }
    if (f.s == "-" && t.size() == 2) return literal(*t[1], true, bad);
    if (is_const_expr(t)) return const_expr(t, bad);
    if (f.s == "-") bad("bad operand");
    if (t.size() == 3 && t[1]->s == "|") {  // shfl / setp dual destination: d|p
      o.kind = OpndKind::Vec;
      for (const Tok* x : {t[0], t[2]}) {
        const int32_t r = x->s == "_" ? -1 : regs_->find(x->s);
        if (r < 0 && x->s != "_") bad("unknown register");
        o.vec.push_back(r);
      }
      return o;
    }
    if (t.size() != 1) bad("unsupported operand expression");
    if (f.kind == Tok::Num) return literal(f, false, bad);
    if (f.s == "_") { o.kind = OpndKind::Reg; o.reg = -1; return o; }
    o.reg = regs_->find(f.s);
    if (o.reg >= 0) { o.kind = OpndKind::Reg; return o; }
    if (f.s[0] == '%') {
      const size_t dot = f.s.find('.');
      const std::string base = f.s.substr(0, dot);
      // A label may be named like a register (`%L1:`): a branch target is looked up among the labels. One
      // named like a special register (`%tid:`) only once it is defined: before, ptxas reads the special
      // register there.
      auto it = special_regs().find(base);
      if (dot == std::string::npos && in.opcode.substr(0, in.opcode.find('.')) == "bra" &&
          (it == special_regs().end() || label_defined(f.s))) {
        o.kind = OpndKind::Label;
        label_refs_.push_back({pc, f.s, scope_stack_.back()});
        return o;
      }
      if (it == special_regs().end()) bad("unknown register");
      // A label named like a special register hides it from its definition on (ptxas: "unknown field").
      if (dot != std::string::npos && label_defined(base))
        bad("'" + base + "' is a label here, so it is not the special register:");
      // A register declared with a special register's name hides it: `%tid.x` then names nothing.
      if (dot != std::string::npos && regs_->find(base) >= 0)
        bad("'" + base + "' is declared as a register, so it is not the special register here:");
      o.kind = OpndKind::Special;
      o.sreg = it->second;
      // %tid, %ntid, %ctaid, %nctaid are .v4 registers: one component must be named (.w reads 0).
      const bool vector = o.sreg == SReg::Tid || o.sreg == SReg::Ntid || o.sreg == SReg::Ctaid || o.sreg == SReg::Nctaid;
      const std::string c = dot == std::string::npos ? "" : f.s.substr(dot + 1);
      if (vector ? (c != "x" && c != "y" && c != "z" && c != "w") : !c.empty()) bad("bad special register component");
      o.comp = c == "w" ? 3 : vector ? static_cast<uint8_t>(c[0] - 'x') : 0;
      return o;
    }
    int depth = -1;
    o.sym = find_symbol(f.s, &depth);
    if (o.sym >= 0 && !label_defined_within(f.s, depth)) { o.kind = OpndKind::Symbol; return o; }
    o.sym = -1;
    if (module_names_.count(f.s)) bad("a function name is not a label or an operand");  // as ptxas resolves it
    // Only a branch takes a label; elsewhere a name no open scope declares (a variable of a closed scope, a
    // typo) is unknown.
    if (in.opcode.substr(0, in.opcode.find('.')) != "bra" && !label_defined(f.s)) bad("unknown symbol");
    o.kind = OpndKind::Label;  // resolved after the body
    label_refs_.push_back({pc, f.s, scope_stack_.back()});
    return o;
  }

  // {a, b, ...}: registers, sinks _ and (in sources) literals, separated by commas.
  Operand vector_operand(const std::vector<const Tok*>& t, const std::function<void(const std::string&)>& bad) {
    Operand o;
    o.kind = OpndKind::Vec;
    if (t.back()->s != "}" || t.size() < 3) bad("malformed vector operand");
    bool any_imm = false;
    for (size_t i = 1; i + 1 < t.size(); ++i) {
      if (t[i]->s == "_") {
        o.vec.push_back(-1);
      } else {
        const bool neg = t[i]->s == "-" && i + 2 < t.size();
        const Tok& e = neg ? *t[++i] : *t[i];
        const int32_t r = neg || e.kind != Tok::Ident ? -1 : regs_->find(e.s);
        if (r >= 0) {
          o.vec.push_back(r);
        } else {
          // A literal element, e.g. `mov.b32 %f1, {0, %rs1};`: vec[i] == -2, its bits in vec_imm[i].
          if (e.kind == Tok::Ident && special_regs().count(e.s.substr(0, e.s.find('.'))))
            bad("a special register inside a vector operand is not supported (move it into a register first):");
          if (e.kind != Tok::Num) bad("unknown register in vector operand");
          const Operand im = literal(e, neg, bad);
          if (im.imm_kind == ImmKind::Real) bad("decimal floating-point literals inside vector operands are not supported");
          o.vec.push_back(-2);
          o.vec_imm.resize(o.vec.size(), 0);
          o.vec_imm.back() = im.imm;
          any_imm = true;
        }
      }
      if (i + 2 < t.size() && t[++i]->s != ",") bad("malformed vector operand");
    }
    if (t[t.size() - 2]->s == ",") bad("malformed vector operand");
    int width = 0;
    for (const int32_t r : o.vec) {
      if (r < 0) continue;
      const int w = dtype_bytes(k_->regs[static_cast<size_t>(r)].type);
      if (width && w != width) bad("incompatible elements of vector expression");
      width = w;
    }
    if (any_imm) o.vec_imm.resize(o.vec.size(), 0);
    return o;
  }

  // [base], [base+off], [base+-off]: base a register, a variable or a literal address.
  Operand address(const std::vector<const Tok*>& t, const std::function<void(const std::string&)>& bad) {
    Operand o;
    o.kind = OpndKind::Mem;
    if (t.back()->s != "]" || t.size() < 3) bad("malformed address");
    const Tok& b = *t[1];
    if (b.kind == Tok::Num) {
      const Operand im = literal(b, false, bad);
      if (im.imm_kind != ImmKind::Int) bad("bad absolute address");
      o.imm = im.imm;
    } else if (b.kind == Tok::Ident) {
      o.reg = regs_->find(b.s);
      if (o.reg < 0) {
        int depth = -1;
        o.sym = find_symbol(b.s, &depth);
        if (o.sym < 0 && special_regs().count(b.s.substr(0, b.s.find('.'))))
          bad("a special register as an address is not supported (move it into a register first):");
        if (o.sym < 0) bad("unknown register or variable in address");
        if (label_defined_within(b.s, depth)) bad("a label is not an address:");
      }
    } else if (b.s == "-" && t.size() == 4) {
      const Operand im = literal(*t[2], true, bad);
      if (im.imm_kind != ImmKind::Int) bad("bad absolute address");
      o.imm = im.imm;
      return o;
    } else {
      bad("bad address");
    }
    if (t.size() == 3) return o;
    if (t[2]->s == "," && t[3]->s == "{" && t.size() >= 7 && t[t.size() - 2]->s == "}") {
      // [tensor-map, {c0, c1, ...}]: cp.async.bulk.tensor's coordinates (registers or integers), in o.vec
      for (size_t i = 4; i + 2 < t.size(); i += 2) {
        const Tok& x = *t[i];
        if (x.kind == Tok::Num) {
          const Operand im = literal(x, false, bad);
          o.vec.push_back(-2);
          o.vec_imm.resize(o.vec.size());
          o.vec_imm.back() = im.imm;
        } else {
          const int32_t r = regs_->find(x.s);
          if (r < 0) bad("unknown register in tensor coordinates");
          o.vec.push_back(r);
        }
        if (t[i + 1]->s != "," && t[i + 1]->s != "}") bad("malformed tensor coordinates");
      }
      o.vec_imm.resize(o.vec.size());
      return o;
    }
    // +off: a literal, or an integer constant expression (+-4, ++900, +(8*2))
    if (t[2]->s != "+") bad("unsupported address expression");
    const std::vector<const Tok*> off(t.begin() + 3, t.end() - 1);
    const bool neg = off.size() == 2 && off[0]->s == "-";
    if (off.empty() || !std::all_of(off.begin(), off.end(), [](const Tok* x) { return expr_token(*x); }))
      bad("unsupported address expression");
    const Operand im = off.size() == 1 || neg ? literal(*off[neg ? 1 : 0], neg, bad) : const_expr(off, bad);
    if (im.imm_kind != ImmKind::Int) bad("bad address offset");
    o.imm += im.imm;
    return o;
  }

  void finish_function() {
    for (const LabelRef& ref : label_refs_) {  // the label of the innermost scope around the reference
      Instr& in = k_->code[static_cast<size_t>(ref.pc)];
      int32_t target = -1;
      for (int32_t s = ref.scope; s >= 0 && target < 0; s = scope_parent_[static_cast<size_t>(s)]) {
        auto it = scoped_labels_.find({s, ref.name});
        if (it != scoped_labels_.end()) target = it->second;
      }
      if (target < 0)
        throw PtxError(file_, in.line, in.text,
                       (ref.name[0] == '%' ? "unknown register '" : "unknown label or symbol '") + ref.name + "'");
      for (auto& o : in.ops)
        if (o.kind == OpndKind::Label) o.sym = target;
      if (in.op == Op::Bra) in.target = target;
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
    check_memory_totals();
    compute_reconvergence(*k_);
    k_->regs_per_thread = estimate_registers(*k_);
  }

  // Static .shared (the module's variables the kernel uses and its own) and per-thread .local of the
  // kernel, laid out as Engine::link lays them out: within ptxas's and the engine's limits.
  void check_memory_totals() const {
    uint64_t shared = 0, local = 0;
    for (const SymbolRef& s : k_->symbols) {
      if (s.space != Space::Shared && s.space != Space::Local) continue;
      const Variable& v = s.module_scope ? mod_->globals[static_cast<size_t>(s.index)] : k_->locals[static_cast<size_t>(s.index)];
      if (v.is_extern) continue;
      uint64_t& total = v.space == Space::Shared ? shared : local;
      total = align_up(total, v.align) + v.size;  // each term is below its limit: no overflow
    }
    const Tok where{Tok::Ident, k_->name, name_line_};
    if (shared > kMaxStaticShared)
      fail(where, "kernel '" + k_->name + "' uses " + std::to_string(shared) + " bytes of static shared memory (" +
                      std::to_string(kMaxStaticShared) + " max)");
    if (local > kMaxLocalBytes)
      fail(where, "kernel '" + k_->name + "' uses " + std::to_string(local) + " bytes of local memory per thread (" +
                      std::to_string(kMaxLocalBytes) + " max)");
  }
};

}  // namespace

std::unique_ptr<Module> parse_ptx(const std::string& text, const std::string& file) {
  Parser p(text, file);
  return p.run();
}

}  // namespace stc
