"""The schedd: durable job queue, job policy, shadows (``python -m roost.daemons.schedd``)."""
