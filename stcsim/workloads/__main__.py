"""``python -m stcsim.workloads resnet50 --batch 1`` / ``--list``."""

import sys

from stcsim.workloads.cli import main

sys.exit(main())
