// Parses PTX text (as emitted by nvcc 13 and our generators) into a Module.
#pragma once

#include <memory>
#include <string>

#include "ir.h"

namespace stc {

// Parses `text`; `file` is used in error messages. Throws PtxError on malformed or unsupported input.
// Instructions are decoded (types, modifiers, semantics) as part of parsing.
std::unique_ptr<Module> parse_ptx(const std::string& text, const std::string& file);

}  // namespace stc
