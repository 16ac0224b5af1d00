"""The dashboard's HTTP side: one static page, JSON endpoints, ``/metrics``, actions.

Standard library only (``http.server``, a thread per request): ``roost.api`` is a
blocking client, and the pages are answered from the snapshot, so a request
holds a thread only as long as a JSON encoding takes.

Reading needs no login. Acting (``POST /api/act``: hold, release, remove) needs
a pool token (docs/security.md) in ``Authorization: Bearer <token>``. The
dashboard does not act with its own rights: it presents the caller's token to
the schedd over TCP (never the schedd's Unix socket, which would vouch for the
dashboard's own user), and that token alone (IDTOKENS, never the dashboard's own
certificate or Kerberos ticket after it fails; the schedd must report the token's
subject), so the schedd checks it as it checks any tool's token
(signature, issuer, expiry, revocation) and lets its holder act on the jobs the
holder may act on, no others. A request without a token is refused before the
schedd is asked. The token travels in a header, never a cookie, so another site
cannot make a browser send it (CSRF); a cross-site request also lacks the JSON
content type without a CORS preflight, which is never granted, and a request
whose ``Origin`` is not this dashboard is refused.

Every request must name this dashboard in its ``Host`` header (its address,
loopback, or a name in ``WEB_ALLOWED_HOSTS``), else 421: a page of another site
whose name was rebound to this address (DNS rebinding) reads nothing. A token
over plain HTTP from another host is refused unless ``WEB_TRUST_FORWARDED_PROTO``
says a TLS proxy stands in front (and it says ``X-Forwarded-Proto: https``).
Each connection may idle ``timeout`` seconds; at most ``max_handlers`` are
served at once (503 beyond them); an action's body is at most ``BODY_MAX`` bytes.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import re
import socket
import threading
import time
from collections.abc import Iterable
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
BODY_MAX = 256 << 10  # an action's body: 10,000 ids fit
CLIENT_TIMEOUT = 30.0  # seconds a connection may idle (or trickle a request) before it is closed
MAX_HANDLERS = 64  # connections served at once; more are answered 503
ANALYZE_CACHE_MAX = 256  # jobs whose analysis is kept for the refresh interval
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
        self._cache_lock = threading.Lock()
        self._analyzed: dict[tuple[str, str], tuple[float, dict[str, Any]]] = {}
        self._inputs_lock = threading.Lock()
        self._inputs: tuple[float, Any] | None = None
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
        """``q -better-analyze``'s text, kept for the refresh interval: anyone may ask,
        and each answer reads every slot ad, so asking again is answered from memory
        (the pool's slot ads and priorities likewise serve every job for that long)."""
        # lazy: as in job()
        from roost.web import jobinfo

        jid, name = self._job_args(q)
        key = (name or "", jid)
        now = time.monotonic()
        with self._cache_lock:
            hit = self._analyzed.get(key)
            if hit is not None and now - hit[0] < self.view.refresh_s:
                return hit[1]
        schedd = self.view.schedd(name)
        try:
            out = {"id": jid, "text": jobinfo.better_analyze(self.view.home, schedd, jid, self._pool_inputs)}
        finally:
            schedd.close()
        with self._cache_lock:
            if len(self._analyzed) >= ANALYZE_CACHE_MAX:
                self._analyzed = {k: v for k, v in self._analyzed.items() if now - v[0] < self.view.refresh_s}
                if len(self._analyzed) >= ANALYZE_CACHE_MAX:
                    self._analyzed.clear()
            self._analyzed[key] = (now, out)
        return out

    def _pool_inputs(self) -> Any:
        """The slot ads and the negotiator's view analyses need, read once a refresh interval."""
        # lazy: as in job()
        from roost.web import jobinfo

        with self._inputs_lock:
            now = time.monotonic()
            if self._inputs is None or now - self._inputs[0] >= self.view.refresh_s:
                self._inputs = (now, jobinfo.pool_inputs(self.view.home))
            return self._inputs[1]

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
    timeout = CLIENT_TIMEOUT  # an idle or trickling connection does not hold its thread for ever
    dashboard: Dashboard  # set on the class made for each server
    #: the Host header values this dashboard answers to (lower case), and names it
    #: answers to on any port (WEB_ALLOWED_HOSTS without a port)
    hosts: frozenset[str] = frozenset()
    host_names: frozenset[str] = frozenset()
    trust_forwarded_proto = False

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        log.debug("%s %s", self.address_string(), format % args)

    def _send(self, status: int, body: bytes, ctype: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in {**_SECURITY_HEADERS, **(extra or {})}.items():
            self.send_header(k, v)
        if self.close_connection:
            self.send_header("Connection", "close")
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

    def _check_host(self) -> None:
        """Refuse a request that does not name this dashboard in ``Host``: a page of
        another site whose name now resolves here (DNS rebinding) names that site."""
        host = (self.headers.get("Host") or "").strip().lower()
        if host in self.hosts or _host_name(host) in self.host_names:
            return
        self.close_connection = True
        raise HttpError(421, f"this dashboard does not answer for host {host[:100]!r} "
                             "(add it to WEB_ALLOWED_HOSTS if it is a name of this dashboard)")

    def do_GET(self) -> None:  # noqa: N802
        url = urlsplit(self.path)
        q = {k: v[-1] for k, v in parse_qs(url.query).items()}
        try:
            self._check_host()
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
            # a request refused before its body is read closes the connection: the body
            # left unread on a kept-alive connection would be taken for the next request
            self.close_connection = True
            self._check_host()
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                length = -1
            if length > BODY_MAX:
                raise HttpError(413, f"an action is a JSON object of at most {BODY_MAX} bytes")
            if length <= 0:
                raise HttpError(400, "an action is a JSON object, with its Content-Length")
            if url.path != "/api/act":
                raise HttpError(404, f"no action at {url.path}")
            self._same_origin()
            self._over_tls()
            try:
                data = self.rfile.read(length)
            except TimeoutError:
                return  # the body never came: the connection is closed, the thread freed
            if len(data) < length:
                return
            self.close_connection = False
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
        """A browser names the page a request comes from; one from another site is refused
        (``Host`` has been checked: it names this dashboard)."""
        origin = self.headers.get("Origin")
        if origin is not None and urlsplit(origin).netloc.lower() != (self.headers.get("Host") or "").strip().lower():
            raise HttpError(403, f"a request from {origin[:100]} may not act here")

    def _over_tls(self) -> None:
        """A token must not cross a network in the clear: from another host, an action
        is taken only through a TLS proxy that says so (``WEB_TRUST_FORWARDED_PROTO``)."""
        if _is_loopback(self.client_address[0]):
            return
        proto = (self.headers.get("X-Forwarded-Proto") or "").split(",")[0].strip().lower()
        if self.trust_forwarded_proto and proto == "https":
            return
        raise HttpError(403, "acting from another host needs TLS: put a TLS proxy in front of the dashboard "
                             "and set WEB_TRUST_FORWARDED_PROTO = True (see docs/web.md); a token sent over "
                             "plain HTTP may have been read on the way")


def _is_loopback(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def _host_name(host: str) -> str:
    """``name`` of a Host value ``name[:port]`` (``[v6]`` keeps its brackets)."""
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def host_values(bound: str, port: int, published: str | None = None,
                allowed: Iterable[str] = ()) -> tuple[frozenset[str], frozenset[str]]:
    """The ``Host`` values a dashboard listening on ``bound``:``port`` answers to:
    loopback's names and the address it listens on or publishes, with its port (and
    without it on port 80); and the names of ``allowed`` (``WEB_ALLOWED_HOSTS``): one
    with a port that port only, one without any port (a proxy's name)."""
    names = {"localhost", "127.0.0.1", "[::1]"}
    for h in (bound, published or ""):
        h = h.strip().lower()
        if h.startswith("[") and "]" in h:  # a published [v6]:port
            h = h[1:].split("]", 1)[0]
        elif h.count(":") == 1:  # a published v4:port
            h = h.rsplit(":", 1)[0]
        if h and h not in ("0.0.0.0", "::"):
            names.add(f"[{h}]" if ":" in h else h)
    values = {f"{n}:{port}" for n in names} | ({n for n in names} if port == 80 else set())
    any_port = set()
    for a in allowed:
        a = a.strip().lower()
        if not a:
            continue
        if a.startswith("[") and a.endswith("]") or ":" not in a:
            any_port.add(a)
        elif a.startswith("[") or a.count(":") == 1:
            values.add(a)
        else:  # a bare IPv6 address
            any_port.add(f"[{a}]")
    return frozenset(values), frozenset(any_port)


class DashboardServer(ThreadingHTTPServer):
    """``ThreadingHTTPServer`` serving at most ``max_handlers`` connections at once:
    one more is answered 503 and closed at once, so idle connections cannot make the
    dashboard start a thread each without end."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[Handler], max_handlers: int) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, handler)
        self._slots = threading.BoundedSemaphore(max_handlers)

    def allow_host(self, address: str) -> None:
        """Answer to ``address`` (``host:port``, as published) too."""
        handler = self.RequestHandlerClass
        values, _ = host_values(address, self.server_address[1], address)
        handler.hosts = handler.hosts | values  # type: ignore[attr-defined]

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            body = b'{"error":"the dashboard is busy: too many connections"}'
            try:
                request.settimeout(1.0)
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                                b"Retry-After: 5\r\nConnection: close\r\n"
                                b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def make_server(view: PoolView, host: str, port: int, *,
                allowed_hosts: Iterable[str] = (), trust_forwarded_proto: bool = False,
                max_handlers: int = MAX_HANDLERS, timeout: float = CLIENT_TIMEOUT) -> DashboardServer:
    dashboard = Dashboard(view)
    handler = type("DashboardHandler", (Handler,), {"dashboard": dashboard, "timeout": timeout,
                                                    "trust_forwarded_proto": trust_forwarded_proto})
    server = DashboardServer((host, port), handler, max_handlers)
    handler.hosts, handler.host_names = host_values(host, server.server_address[1], None, allowed_hosts)
    return server


__all__ = ["Dashboard", "DashboardServer", "HttpError", "bearer_token", "host_values", "make_server"]
