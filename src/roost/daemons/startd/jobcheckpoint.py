"""A starter's checkpoints: whether an ended run wrote one (its checkpoint exit code
or signal), and its upload to the schedd (PUT_CHECKPOINT), waiting for a schedd that
is away. ``Checkpoints`` is one of the parts of ``Starter`` (starter.py); when an
upload happens is the job-run machine's (core/jobrun.py).
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from roost.daemons.startd.jobspec import JobSpec
from roost.net.errors import RemoteError

log = logging.getLogger("roost.daemons.startd.starter")

#: how long a checkpoint upload waits for a schedd that is away (restarting) before the
#: job goes on without it (seconds)
CHECKPOINT_RETRY_TIME = 120.0


class Checkpoints:
    """The starter's checkpoint uploads (a part of ``Starter``)."""

    spec: JobSpec
    abandoned: bool
    address_of: Any

    def _checkpointed(self, status: int | None) -> bool:
        """The job says it wrote a checkpoint: its checkpoint exit code, or death by its
        SuccessCheckpointExitSignal."""
        spec = self.spec
        if status is None or not spec.transfer:
            return False
        if os.WIFEXITED(status):
            return spec.checkpoint_exit_code is not None and os.WEXITSTATUS(status) == spec.checkpoint_exit_code
        return os.WIFSIGNALED(status) and os.WTERMSIG(status) == spec.checkpoint_exit_signal

    async def _send_checkpoint(self) -> None:
        """PUT_CHECKPOINT. A schedd that is away or does not yet serve the claim (it
        restarted and has not RECONNECTed) is waited for, up to CHECKPOINT_RETRY_TIME
        (the job waits too, as in HTCondor); any other failure leaves the schedd's
        previous checkpoint and the job goes on (from its own files, here). Each try
        carries the same id, so a schedd that kept the checkpoint but died before its
        answer counts it once when it is sent again."""
        entries = self._outputs(checkpoint=True)
        checkpoint_id = os.urandom(8).hex()
        delay, deadline = 0.25, time.monotonic() + CHECKPOINT_RETRY_TIME
        while True:
            address = self.address_of()
            try:
                if not address:
                    raise ConnectionError("no schedd address for this claim")
                await self._put_files(address, cmd="PUT_CHECKPOINT", entries=entries, checkpoint_id=checkpoint_id)
                log.info("job %s: checkpoint sent", self.spec.job_id)
                return
            except (RemoteError, ConnectionError, TimeoutError, OSError) as e:
                transient = not isinstance(e, RemoteError) or e.code == "NOT_FOUND"
                if not transient or self.abandoned or not address or time.monotonic() + delay > deadline:
                    log.warning("job %s: checkpoint not sent (the previous one stays): %s", self.spec.job_id, e)
                    return
                log.info("job %s: checkpoint waits for the schedd: %s", self.spec.job_id, e)
            await self._pause(delay)
            delay = min(delay * 2, 10.0)

