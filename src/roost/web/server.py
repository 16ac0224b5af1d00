"""The dashboard's HTTP side: one static page, JSON endpoints, ``/metrics``, actions.

Standard library only (``http.server``, a thread per request): ``roost.api`` is a
blocking client, and the pages are answered from the snapshot, so a request
holds a thread only as long as a JSON encoding takes.

Reading needs no login. Acting (``POST /api/act``: hold, release, remove) needs
a pool token (docs/security.md) in ``Authorization: Bearer <token>``. The
dashboard does not act with its own rights: it presents the caller's token to
the schedd over TCP (never the schedd's Unix socket, which would vouch for the
dashboard's own user), so the schedd checks it as it checks any tool's token
(signature, issuer, expiry, revocation) and lets its holder act on the jobs the
holder may act on, no others. A request without a token is refused before the
schedd is asked. The token travels in a header, never a cookie, so another site
cannot make a browser send it (CSRF); a cross-site request also lacks the JSON
content type without a CORS preflight, which is never granted, and a request
whose ``Origin`` is not this dashboard is refused.
"""

from __future__ import annotations

import json
import logging
import re
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

from roost.api.errors import PoolError
from roost.api.schedd import ACTIONS
from roost.web.metrics import exposition, registry
from roost.web.snapshot import ROW_FIELDS, STATUS, PoolView

log = logging.getLogger("roost.web")

PAGE_MAX = 1000  # rows one /api/jobs answer holds at most
ACT_MAX_IDS = 10000
_JWT = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\Z")
_JOB_ID = re.compile(r"\d+(\.\d+)?\Z")
_STATIC = {"/": ("index.html", "text/html; charset=utf-8"),
           "/app.js": ("app.js", "text/javascript; charset=utf-8"),
           "/style.css": ("style.css", "text/css; charset=utf-8")}
_SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; "
                               "script-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def bearer_token(header: str | None) -> str:
    """The token of an ``Authorization: Bearer`` header; HttpError 401 without a
    well-formed one (a JWT's three base64url parts)."""
    if not header:
        raise HttpError(401, "acting on jobs needs a pool token: Authorization: Bearer <token> "
                             "(make one with `roost token create`)")
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not _JWT.match(token) or len(token) > 16384:
        raise HttpError(401, "the Authorization header must be `Bearer <token>` with an IDTOKENS token")
    return token


class Dashboard:
    """What the handlers share: the pool view, the static files and the metrics registry."""

    def __init__(self, view: PoolView) -> None:
        self.view = view
        self.registry = registry(view)
        self.static = {path: (resources.files("roost.web").joinpath("static", name).read_bytes(), ctype)
                       for path, (name, ctype) in _STATIC.items()}

    # -- reading ---------------------------------------------------------------------
    def summary(self, q: dict[str, str]) -> dict[str, Any]:
        snap = self.view.current()
        users = {u: dict(c) for u, c in sorted(snap.by_user().items())}
        totals: dict[str, int] = {}
        for c in users.values():
            for k, v in c.items():
                totals[k] = totals.get(k, 0) + v
        return {"taken": snap.taken, "took": round(snap.took, 4), "errors": snap.errors,
                "jobs": len(snap.jobs), "users": users, "totals": totals,
                "slots": dict(snap.slot_states()), "schedds": [s.get("Name") for s in snap.schedds],
                "statuses": list(STATUS.values())}

    def jobs(self, q: dict[str, str]) -> dict[str, Any]:
        snap = self.view.current()
        user, status, schedd = q.get("user") or "", q.get("status") or "", q.get("schedd") or ""
        try:
            offset = max(0, int(q.get("offset") or 0))
            limit = min(PAGE_MAX, max(1, int(q.get("limit") or 100)))
        except ValueError:
            raise HttpError(400, "offset and limit are numbers") from None
        rows = snap.jobs
        if user or status or schedd:
            code = next((k for k, v in STATUS.items() if v == status), None) if status else None
            if status and code is None:
                raise HttpError(400, f"unknown status {status!r} (one of {', '.join(STATUS.values())})")
            rows = [j for j in rows if (not user or j.owner == user) and (code is None or j.status == code)
                    and (not schedd or j.schedd == schedd)]
        return {"taken": snap.taken, "total": len(rows), "offset": offset, "fields": ROW_FIELDS,
                "rows": [j.row() for j in rows[offset:offset + limit]]}

    def slots(self, q: dict[str, str]) -> dict[str, Any]:
        snap = self.view.current()
        machines: dict[str, list[dict[str, Any]]] = {}
        runs = snap.running_on()
        for s in snap.slots:
            job = runs.get(str(s.get("Name")))
            if job is not None:  # which schedd's job: the page links to it
                s = {**s, "Schedd": job.schedd}
            machines.setdefault(str(s.get("Machine") or s.get("Name") or "?"), []).append(s)
        return {"taken": snap.taken, "states": dict(snap.slot_states()),
                "machines": [{"machine": m, "slots": ss} for m, ss in sorted(machines.items())]}

    def users(self, q: dict[str, str]) -> dict[str, Any]:
        snap = self.view.current()
        running = {u: c.get("running", 0) for u, c in snap.by_user().items()}
        return {"taken": snap.taken, "users": snap.users or [], "running": running,
                "available": snap.users is not None}

    def throughput(self, q: dict[str, str]) -> dict[str, Any]:
        snap = self.view.current()
        out = snap.throughput(time.time())
        out["taken"] = snap.taken
        return out

    def _job_args(self, q: dict[str, str]) -> tuple[str, str | None]:
        jid = q.get("id") or ""
        if not _JOB_ID.match(jid):
            raise HttpError(400, f"job id must be CLUSTER.PROC, not {jid!r}")
        return jid, q.get("schedd") or None

    def job(self, q: dict[str, str]) -> dict[str, Any]:
        # lazy: ClassAds and q -analyze's code load on the first job page, not at each start
        from roost.web import jobinfo

        jid, name = self._job_args(q)
        schedd = self.view.schedd(name)
        try:
            ad, where = jobinfo.job_ad(schedd, jid)
        finally:
            schedd.close()
        if ad is None:
            raise HttpError(404, f"no job {jid} in the queue or its history")
        return {"id": jid, "where": where, "ad": ad, "log": jobinfo.event_log(ad)}

    def analyze(self, q: dict[str, str]) -> dict[str, Any]:
        # lazy: as in job()
        from roost.web import jobinfo

        jid, name = self._job_args(q)
        schedd = self.view.schedd(name)
        try:
            return {"id": jid, "text": jobinfo.better_analyze(self.view.home, schedd, jid)}
        finally:
            schedd.close()

    # -- acting ----------------------------------------------------------------------
    def act(self, body: dict[str, Any], token: str) -> dict[str, Any]:
        action = body.get("action")
        ids = body.get("ids")
        if action not in ACTIONS:
            raise HttpError(400, f"action must be one of {', '.join(ACTIONS)}")
        if not isinstance(ids, list) or not ids or len(ids) > ACT_MAX_IDS \
                or not all(isinstance(i, str) and _JOB_ID.match(i) for i in ids):
            raise HttpError(400, "ids must be a non-empty list of job ids (CLUSTER or CLUSTER.PROC)")
        reason = body.get("reason")
        reason = f"via the web dashboard: {reason}" if isinstance(reason, str) and reason else "via the web dashboard"
        schedd = self.view.schedd(body.get("schedd") if isinstance(body.get("schedd"), str) else None, token=token)
        try:
            got = schedd.act(action, ids, reason=reason[:500])
        finally:
            schedd.close()
        self.view.current(max_age=0)  # the next page sees the change
        return {"action": action, "count": got.get("count", 0), "ids": got.get("ids", [])}


GETS = {"/api/summary": Dashboard.summary, "/api/jobs": Dashboard.jobs, "/api/slots": Dashboard.slots,
        "/api/users": Dashboard.users, "/api/throughput": Dashboard.throughput,
        "/api/job": Dashboard.job, "/api/analyze": Dashboard.analyze}


class Handler(BaseHTTPRequestHandler):
    server_version = "roost-web"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    dashboard: Dashboard  # set on the class made for each server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        log.debug("%s %s", self.address_string(), format % args)

    def _send(self, status: int, body: bytes, ctype: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in {**_SECURITY_HEADERS, **(extra or {})}.items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, obj: Any, extra: dict[str, str] | None = None) -> None:
        body = json.dumps(obj, separators=(",", ":"), default=str).encode()
        self._send(status, body, "application/json", extra)

    def _error(self, status: int, message: str) -> None:
        extra = {"WWW-Authenticate": 'Bearer realm="roost"'} if status == 401 else None
        self._json(status, {"error": message}, extra)

    def do_HEAD(self) -> None:  # noqa: N802 (http.server's name)
        self.do_GET()

    def do_GET(self) -> None:  # noqa: N802
        url = urlsplit(self.path)
        q = {k: v[-1] for k, v in parse_qs(url.query).items()}
        try:
            if url.path in self.dashboard.static:
                body, ctype = self.dashboard.static[url.path]
                self._send(200, body, ctype)
            elif url.path == "/metrics":
                self._send(200, exposition(self.dashboard.registry), "text/plain; version=0.0.4; charset=utf-8")
            elif url.path in GETS:
                self._json(200, GETS[url.path](self.dashboard, q))
            elif url.path == "/healthz":
                self._json(200, {"ok": True})
            else:
                self._error(404, f"no page {url.path}")
        except HttpError as e:
            self._error(e.status, str(e))
        except PoolError as e:
            self._error(502, str(e))
        except Exception:  # a bug answers 500 and is logged; the dashboard goes on
            log.exception("GET %s", url.path)
            self._error(500, "internal error (see the dashboard's log, WebLog)")

    def do_POST(self) -> None:  # noqa: N802
        url = urlsplit(self.path)
        try:
            # the body is read first, whatever the answer: left unread on a kept-alive
            # connection it would be taken for the next request
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                length = -1
            if not 0 < length <= 1 << 20:
                self.close_connection = True
                raise HttpError(400, "an action is a JSON object of at most 1 MiB, with its Content-Length")
            data = self.rfile.read(length)
            if url.path != "/api/act":
                raise HttpError(404, f"no action at {url.path}")
            self._same_origin()
            token = bearer_token(self.headers.get("Authorization"))
            if (self.headers.get("Content-Type") or "").split(";")[0].strip() != "application/json":
                raise HttpError(415, "send the action as application/json")
            try:
                body = json.loads(data)
            except ValueError:
                raise HttpError(400, "the body is not JSON") from None
            if not isinstance(body, dict):
                raise HttpError(400, "the body must be a JSON object")
            got = self.dashboard.act(body, token)
            log.info("%s %s of %s by a token holder from %s", got["action"], got["count"],
                     body.get("ids"), self.address_string())
            self._json(200, got)
        except HttpError as e:
            self._error(e.status, str(e))
        except PoolError as e:
            code = getattr(e, "code", "")
            status = {"DENIED": 403, "AUTH_FAILED": 403, "PERMISSION_DENIED": 403, "BAD_REQUEST": 400,
                      "NOT_FOUND": 404}.get(code, 502)
            if status == 502 and ("auth" in str(e).lower() or "token" in str(e).lower()):
                status = 403
            self._error(status, f"the schedd refused: {e}")
        except Exception:  # a bug answers 500 and is logged; the dashboard goes on
            log.exception("POST %s", url.path)
            self._error(500, "internal error (see the dashboard's log, WebLog)")

    def _same_origin(self) -> None:
        """A browser names the page a request comes from; one from another site is refused."""
        origin = self.headers.get("Origin")
        if origin is not None and urlsplit(origin).netloc != (self.headers.get("Host") or ""):
            raise HttpError(403, f"a request from {origin} may not act here")


def make_server(view: PoolView, host: str, port: int) -> ThreadingHTTPServer:
    dashboard = Dashboard(view)
    handler = type("DashboardHandler", (Handler,), {"dashboard": dashboard})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


__all__ = ["Dashboard", "HttpError", "bearer_token", "make_server"]
