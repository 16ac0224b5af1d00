"""``python -m roost.web``: the dashboard daemon (see :mod:`roost.web.daemon`)."""

import sys

from roost.web.daemon import main

sys.exit(main(sys.argv[1:]))
