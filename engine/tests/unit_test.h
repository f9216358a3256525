// A minimal unit-test harness for the engine's data structures and passes, in the style of gem5's
// `*.test.cc` files (no GoogleTest: the tests must build anywhere a C++17 compiler is). Each test is a
// function registered by TEST(name); CHECK* records a failure and goes on, REQUIRE* records it and ends the
// test. tests/engine/test_cpp_units.py builds every engine/tests/*.cc with the engine sources they need and
// runs the binary once per test (main.cc: `--list`, or the names of the tests to run).
#pragma once

#include <cstdint>
#include <cstdio>
#include <exception>
#include <ostream>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace stc_test {

struct TestCase {
  const char* name;
  void (*fn)();
  const char* file;
  int line;
};

inline std::vector<TestCase>& registry() {
  static std::vector<TestCase> tests;
  return tests;
}

struct Registrar {
  Registrar(const char* name, void (*fn)(), const char* file, int line) { registry().push_back({name, fn, file, line}); }
};

// Failed checks of the running test.
inline int& failures() {
  static int n = 0;
  return n;
}

// Thrown by REQUIRE*: ends the test (main.cc counts it as failed, the failure already reported).
struct Abort {};

inline void fail(const char* file, int line, const std::string& what) {
  std::printf("%s:%d: check failed: %s\n", file, line, what.c_str());
  std::fflush(stdout);
  ++failures();
}

// A value as a failure message shows it: enums and 8-bit integers as numbers, streamable values as
// streamed, anything else as "<value>".
template <class T, class = void>
struct Streamable : std::false_type {};
template <class T>
struct Streamable<T, std::void_t<decltype(std::declval<std::ostream&>() << std::declval<const T&>())>>
    : std::true_type {};

template <class T>
std::string show(const T& v) {
  std::ostringstream s;
  if constexpr (std::is_enum_v<T>) {
    s << static_cast<long long>(static_cast<std::underlying_type_t<T>>(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    s << (v ? "true" : "false");
  } else if constexpr (std::is_integral_v<T> && sizeof(T) == 1) {
    s << static_cast<int>(v);
  } else if constexpr (Streamable<T>::value) {
    s.precision(17);
    s << v;
  } else {
    s << "<value>";
  }
  return s.str();
}

template <class A, class B>
bool check_cmp(bool ok, const char* file, int line, const char* ea, const char* op, const char* eb, const A& a,
               const B& b) {
  if (!ok) fail(file, line, std::string(ea) + " " + op + " " + eb + " (" + show(a) + " vs " + show(b) + ")");
  return ok;
}

}  // namespace stc_test

#define STC_TEST_CAT2(a, b) a##b
#define STC_TEST_CAT(a, b) STC_TEST_CAT2(a, b)

// Defines and registers a test. Names are global over all test files (main.cc rejects duplicates) and are
// plain identifiers: tests/engine/test_cpp_units.py finds them in the sources with `^TEST\((\w+)\)`.
#define TEST(name)                                                                                          \
  static void STC_TEST_CAT(test_fn_, name)();                                                               \
  static const ::stc_test::Registrar STC_TEST_CAT(test_reg_, name)(#name, &STC_TEST_CAT(test_fn_, name),    \
                                                                   __FILE__, __LINE__);                     \
  static void STC_TEST_CAT(test_fn_, name)()

#define CHECK(cond) \
  ((cond) ? true : (::stc_test::fail(__FILE__, __LINE__, #cond), false))

#define STC_TEST_CMP(a, op, b)                                                                              \
  [&]() {                                                                                                   \
    const auto& stc_a_ = (a);                                                                               \
    const auto& stc_b_ = (b);                                                                               \
    return ::stc_test::check_cmp(static_cast<bool>(stc_a_ op stc_b_), __FILE__, __LINE__, #a, #op, #b, stc_a_, \
                                 stc_b_);                                                                   \
  }()

#define CHECK_EQ(a, b) STC_TEST_CMP(a, ==, b)
#define CHECK_NE(a, b) STC_TEST_CMP(a, !=, b)
#define CHECK_LT(a, b) STC_TEST_CMP(a, <, b)
#define CHECK_LE(a, b) STC_TEST_CMP(a, <=, b)
#define CHECK_GT(a, b) STC_TEST_CMP(a, >, b)
#define CHECK_GE(a, b) STC_TEST_CMP(a, >=, b)

#define REQUIRE(cond) \
  do {                                \
    if (!CHECK(cond)) throw ::stc_test::Abort{}; \
  } while (0)
#define REQUIRE_EQ(a, b) \
  do {                                    \
    if (!CHECK_EQ(a, b)) throw ::stc_test::Abort{}; \
  } while (0)

// The statement must throw an exception of type `type` (checked, not required).
#define CHECK_THROWS(type, stmt)                                                                        \
  do {                                                                                                  \
    bool stc_threw_ = false;                                                                            \
    try {                                                                                               \
      stmt;                                                                                             \
    } catch (const type&) {                                                                             \
      stc_threw_ = true;                                                                                \
    }                                                                                                   \
    if (!stc_threw_) ::stc_test::fail(__FILE__, __LINE__, "expected " #type " from: " #stmt);           \
  } while (0)
