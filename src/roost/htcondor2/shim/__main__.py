"""``python -m roost.htcondor2.shim``: print the directory to put on PYTHONPATH."""

from roost.htcondor2.shim import SHIM_DIR

print(SHIM_DIR)
