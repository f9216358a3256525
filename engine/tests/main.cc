// The unit tests' driver: `stcsim_unit_tests --list` prints every test's name, one a line;
// `stcsim_unit_tests [NAME...]` runs the named tests (all without names), printing `PASS name` or
// `FAIL name` for each after its failed checks, and exits 1 if any failed (2 for an unknown name or a name
// registered twice).
#include <cstring>
#include <exception>
#include <map>
#include <string>

#include "unit_test.h"

int main(int argc, char** argv) {
  std::map<std::string, const stc_test::TestCase*> by_name;
  for (const stc_test::TestCase& t : stc_test::registry()) {
    if (!by_name.emplace(t.name, &t).second) {
      std::printf("test '%s' is defined twice (%s:%d)\n", t.name, t.file, t.line);
      return 2;
    }
  }
  std::vector<const stc_test::TestCase*> run;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--list") == 0) {
      for (const stc_test::TestCase& t : stc_test::registry()) std::printf("%s\n", t.name);
      return 0;
    }
    const auto it = by_name.find(argv[i]);
    if (it == by_name.end()) {
      std::printf("no test named '%s'\n", argv[i]);
      return 2;
    }
    run.push_back(it->second);
  }
  if (argc == 1)
    for (const stc_test::TestCase& t : stc_test::registry()) run.push_back(&t);
  int failed = 0;
  for (const stc_test::TestCase* t : run) {
    stc_test::failures() = 0;
    try {
      t->fn();
    } catch (const stc_test::Abort&) {
      // the failed REQUIRE reported itself
    } catch (const std::exception& e) {
      stc_test::fail(t->file, t->line, std::string("unexpected exception: ") + e.what());
    } catch (...) {
      stc_test::fail(t->file, t->line, "unexpected exception of unknown type");
    }
    const bool ok = stc_test::failures() == 0;
    failed += !ok;
    std::printf("%s %s\n", ok ? "PASS" : "FAIL", t->name);
    std::fflush(stdout);
  }
  std::printf("%zu tests, %d failed\n", run.size(), failed);
  return failed ? 1 : 0;
}
