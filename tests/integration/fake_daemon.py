"""A stand-in daemon for testing the master alone: publishes an address, then sleeps.

``python fake_daemon.py NAME [--crash-after S]`` writes ``$ROOST_HOME/run/NAME.address``
(the collector's address is a real listening port so a restart can rebind it) and
records each start in ``$ROOST_HOME/NAME.starts`` with the collector address it was given.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import time


def main() -> int:
    name = sys.argv[1]
    crash_after = float(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[2] == "--crash-after" else None
    home = os.environ["ROOST_HOME"]
    run = os.path.join(home, "run")
    os.makedirs(run, exist_ok=True)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    pinned = os.environ.get("_ROOST_COLLECTOR_HOST", "")
    port = int(pinned.rsplit(":", 1)[1]) if name == "collector" and pinned else 0
    sock.bind(("127.0.0.1", port))
    sock.listen()
    with open(os.path.join(home, f"{name}.starts"), "a") as f:
        f.write(f"{os.getpid()} {pinned or '-'}\n")
    address = f"127.0.0.1:{sock.getsockname()[1]}"
    tmp = os.path.join(run, f"{name}.address.tmp")
    with open(tmp, "w") as f:
        f.write(address + "\n")
    os.replace(tmp, os.path.join(run, f"{name}.address"))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if crash_after is not None:
        time.sleep(crash_after)  # time is the point: it crashes this long after its start
        return 3
    while True:
        time.sleep(3600)  # time is the point: it idles until its SIGTERM


if __name__ == "__main__":
    sys.exit(main())
