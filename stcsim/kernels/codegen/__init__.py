"""Kernel code generators: PTX written per problem or per weight matrix (jinja2 templates), and the
load-balanced split plan the generated SparseRT kernels follow. They use the kernel core, never a
descriptor."""
