"""A wide-area link between two groups of hosts of a :class:`netns.Network`, for
kernels without ``sch_netem`` (``tc qdisc ... netem`` says "Specified qdisc kind is
unknown"): the second group's switch ports move to a bridge of their own, and a wire
joins the two bridges through two TAP devices in the switch namespace. The wire (this
file run as a program there) delays every frame ``delay`` ms each way and sends at most
``mbit`` Mbit/s each way (a frame leaves at the later of its arrival plus the delay and
the moment the previous one has finished on the line), as netem's ``delay`` and
``rate`` would; traffic inside each group stays on its own bridge, undelayed.

    with WanLink(net, ["cmb", "exb"], delay_ms=50, mbit=20) as link:
        ...  # pool B's hosts are 50 ms and 20 Mbit/s away from the others

The wire is this test's process (killed by its id on exit); the bridge and the TAPs go
with it, the ports go back to the first bridge.
"""

from __future__ import annotations

import fcntl
import heapq
import os
import select
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

TUNSETIFF = 0x400454CA
IFF_TAP, IFF_NO_PI = 0x0002, 0x1000


def _tap(name: str) -> int:
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TAP | IFF_NO_PI))
    return fd


def wire(a: str, b: str, delay: float, bits_per_s: float) -> None:
    """Carry frames between TAPs ``a`` and ``b`` until killed (the program's body)."""
    fds = [_tap(a), _tap(b)]
    print("ready", flush=True)
    due: list[tuple[float, int, int, bytes]] = []  # (when, seq, to fd, frame)
    free_at = [0.0, 0.0]  # per direction: when the line is free again
    seq = 0
    while True:
        now = time.monotonic()
        while due and due[0][0] <= now:
            _, _, to, frame = heapq.heappop(due)
            try:
                os.write(to, frame)
            except OSError:
                pass  # a full queue on the far side drops the frame, as a line would
        timeout = max(0.0, due[0][0] - now) if due else 1.0
        ready, _, _ = select.select(fds, [], [], timeout)
        now = time.monotonic()
        for fd in ready:
            i = fds.index(fd)
            while True:
                try:
                    frame = os.read(fd, 65536)
                except BlockingIOError:
                    break
                leave = max(now, free_at[i]) + len(frame) * 8 / bits_per_s
                free_at[i] = leave
                seq += 1
                heapq.heappush(due, (leave + delay, seq, fds[1 - i], frame))


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)} failed: {done.stderr.strip()}")


class WanLink:
    """``far`` (host names of ``net``) put behind a slow, long wire from the others."""

    def __init__(self, net, far: list[str], *, delay_ms: float = 50, mbit: float = 20) -> None:  # noqa: ANN001
        self.net, self.far, self.delay_ms, self.mbit = net, far, delay_ms, mbit
        self.proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> WanLink:
        sw = self.net.switch
        _ip("-n", sw, "link", "add", "br1", "type", "bridge")
        _ip("-n", sw, "link", "set", "br1", "up")
        self.proc = subprocess.Popen(
            ["nsenter", f"--net=/run/netns/{sw}", sys.executable, str(Path(__file__).resolve()),
             str(self.delay_ms / 1000), str(self.mbit * 1e6)], stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "ready"
        for tap, bridge in (("wan0", "br0"), ("wan1", "br1")):
            _ip("-n", sw, "link", "set", tap, "master", bridge, "up")
        for name in self.far:
            _ip("-n", sw, "link", "set", f"v-{name}", "master", "br1")
        return self

    def __exit__(self, *exc: object) -> None:
        sw = self.net.switch
        for name in self.far:
            subprocess.run(["ip", "-n", sw, "link", "set", f"v-{name}", "master", "br0"], capture_output=True)
        if self.proc is not None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(10)
        subprocess.run(["ip", "-n", sw, "link", "del", "br1"], capture_output=True)

    @staticmethod
    def rtt_ms(src, dst_address: str) -> float:  # noqa: ANN001
        """The round trip from host ``src`` (a netns Host) to ``dst_address``, in ms: the
        median time a TCP connect to a closed port takes to be refused (SYN out, RST back)."""
        code = ("import socket, statistics, sys, time\nts = []\nfor _ in range(5):\n"
                "    s = socket.socket(); t = time.perf_counter()\n"
                "    try:\n        s.connect((sys.argv[1], 9))\n    except OSError:\n        pass\n"
                "    ts.append(time.perf_counter() - t); s.close()\n"
                "print(statistics.median(ts) * 1000)")
        done = src.run([sys.executable, "-c", code, dst_address], timeout=30)
        if done.returncode != 0:
            raise AssertionError(f"rtt to {dst_address}: {done.stderr}")
        return float(done.stdout)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    wire("wan0", "wan1", float(sys.argv[1]), float(sys.argv[2]))
