#include "extension.h"

#include "../timing/config.h"

namespace stc {

int register_extension(const Extension& ext) {
  add_opcode_rows(ext.opcodes);
  std::vector<OpClassDef> gated;
  for (const OpClassDef& def : ext.op_classes) {
    gated.push_back({def.name, [ext, read = def.read](ConfigReader& r, std::string& why) -> std::optional<OpDesc> {
                       if (!r.has(ext.enable_key) || !r.flag(ext.enable_key)) {
                         why = "the " + ext.name + " extension is not enabled: set " + ext.enable_key + ": true (" +
                               ext.hint + ")";
                         return std::nullopt;
                       }
                       return read(r, why);
                     }});
  }
  add_op_classes(gated);
  for (const StatDef& s : ext.stats) add_stat(s);
  return 0;
}

size_t new_cta_state_slot() {
  static size_t next = 0;
  return next++;
}

}  // namespace stc
