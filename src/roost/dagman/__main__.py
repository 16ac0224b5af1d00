"""``python -m roost.dagman``: the DAG manager (what submit_dag's job runs)."""

import sys

from roost.dagman.manager import main

sys.exit(main())
