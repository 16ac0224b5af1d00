"""A roost.net server running on an event loop in a background thread, for blocking tests."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from typing import Any

from roost.net.server import Handler, Server, serve


class ThreadedServer:
    def __init__(self, handlers: Mapping[str, Handler], **kwargs: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        fut = asyncio.run_coroutine_threadsafe(serve(handlers, **kwargs), self.loop)
        self.server: Server = fut.result(5)

    def run(self, coro: Any, timeout: float = 5) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.run(self.server.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()

    def __enter__(self) -> ThreadedServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
