"""A tiny Chrome DevTools Protocol client for Debian's headless ``chromium``.

The protocol runs over ``--remote-debugging-pipe`` (the browser reads commands
on fd 3 and writes answers on fd 4, each a JSON text ended by a NUL byte), so
neither a websocket library nor a free port is needed. Enough for the
dashboard's tests and bench: open a page, wait for a JavaScript condition,
evaluate, click, take a screenshot.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class CDPError(Exception):
    pass


class Browser:
    """One headless browser with one page (a target attached in flat mode)."""

    def __init__(self, width: int = 1280, height: int = 900) -> None:
        exe = chromium_path()
        if exe is None:
            raise CDPError("no chromium on PATH (Debian: apt-get install chromium)")
        self.profile = tempfile.mkdtemp(prefix="roost-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def fds() -> None:  # in the child, before exec: the pipe ends at fds 3 and 4
            r, w = os.dup(to_child_r), os.dup(from_child_w)  # above 4: no clash with 3 or 4
            os.dup2(r, 3)
            os.dup2(w, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        args = [exe, "--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
                "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--disable-background-networking", "--mute-audio",
                f"--user-data-dir={self.profile}", f"--window-size={width},{height}", "about:blank"]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, preexec_fn=fds, close_fds=False)
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.page("Page.enable")
        self.page("Runtime.enable")
        self.page("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                  mobile=False)

    # -- the protocol ----------------------------------------------------------------
    def _send(self, msg: dict[str, Any]) -> None:
        data = json.dumps(msg).encode() + b"\0"
        while data:
            n = os.write(self._to_child, data)
            data = data[n:]

    def _recv(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while b"\0" not in self._buf:
            if time.monotonic() > deadline:
                raise CDPError("chromium did not answer in time")
            r, _, _ = select.select([self._from_child], [], [], 0.5)
            if r:
                chunk = os.read(self._from_child, 1 << 20)
                if not chunk:
                    raise CDPError("chromium closed the DevTools pipe (did it crash?)")
                self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method: str, session: str | None = None, timeout: float = 30, **params: Any) -> dict[str, Any]:
        self._next += 1
        msg: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        self._send(msg)
        while True:
            got = self._recv(timeout)
            if got.get("id") == self._next:
                if "error" in got:
                    raise CDPError(f"{method}: {got['error']}")
                return got.get("result", {})
            self.events.append(got)

    def page(self, method: str, timeout: float = 30, **params: Any) -> dict[str, Any]:
        return self.call(method, self.session, timeout, **params)

    # -- what tests do -------------------------------------------------------------------
    def evaluate(self, expr: str, timeout: float = 30) -> Any:
        got = self.page("Runtime.evaluate", timeout, expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in got:
            raise CDPError(f"{expr}: {got['exceptionDetails'].get('exception', {}).get('description')}")
        return got.get("result", {}).get("value")

    def goto(self, url: str) -> None:
        self.page("Page.navigate", url=url)

    def wait_for(self, expr: str, timeout: float = 30, what: str = "") -> Any:
        deadline = time.monotonic() + timeout
        while True:
            try:
                value = self.evaluate(expr)
            except CDPError:  # the page between documents (navigating): not yet
                value = None
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"{what or expr}: not true in the page within {timeout} s; page text:\n"
                                     + str(self.evaluate("document.body && document.body.innerText"))[:2000])
            time.sleep(0.05)

    def screenshot(self, path: Path) -> Path:
        data = self.page("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            self._send({"id": self._next + 1, "method": "Browser.close", "params": {}})
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
