// ptx/ir.h op_class_id: timing-class names interned to small numbers, stable for the process; the empty name
// is kUnitClass (an instruction without a class of its own); op_class_name gives the name back.
#include <string>

#include "ptx/ir.h"
#include "unit_test.h"

TEST(op_class_names_are_interned_stably) {
  CHECK_EQ(stc::op_class_id(""), stc::kUnitClass);
  const stc::OpClassId a = stc::op_class_id("test.class_a"), b = stc::op_class_id("test.class_b");
  CHECK(a != b);
  CHECK(a != stc::kUnitClass && b != stc::kUnitClass);
  CHECK_EQ(stc::op_class_id("test.class_a"), a);
  CHECK_EQ(stc::op_class_id(std::string("test.class_") + "b"), b);
  CHECK(stc::op_class_name(a) == "test.class_a");
  CHECK(stc::op_class_name(b) == "test.class_b");
  CHECK(stc::op_class_name(stc::kUnitClass).empty());
}
