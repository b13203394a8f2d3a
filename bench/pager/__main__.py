"""``python -m bench.pager``: the replay (``replay.py``)."""

import sys

from .replay import main

sys.exit(main())
