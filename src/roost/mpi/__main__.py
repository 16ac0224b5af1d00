"""``python -m roost.mpi``: where openmpiscript is, for a submit file's executable."""

from roost.mpi import OPENMPI_SCRIPT

print(OPENMPI_SCRIPT)
