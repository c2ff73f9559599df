"""``python -m cdpnb.cli``."""

import sys

from cdpnb.cli import main

sys.exit(main())
