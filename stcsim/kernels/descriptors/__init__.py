"""Kernel descriptors: one module per kernel family (its tiles and K splits, `can_implement`, `prepare`,
`args`, `unpack`, `reference`), over the kernel core (protocol, operands, problem, limits, paths) in
`stcsim.kernels` and the code generators of `stcsim.kernels.codegen`; the registry (`stcsim.kernels.registry`)
lists them."""
