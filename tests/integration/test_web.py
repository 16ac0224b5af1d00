"""The web dashboard (``WEB`` in a personal pool's DAEMON_LIST), driven in a real headless
Chromium over the DevTools protocol, against a real pool.

Screenshots of each page go to ``test-output/web/`` at the repository root (ignored by
git; ``ROOST_TEST_OUTPUT`` moves it); each test prints where.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chromium import Browser, chromium_path
from poolkit import PoolHandle, wait_until
from prometheus_client.parser import text_string_to_metric_families

OUT = Path(os.environ.get("ROOST_TEST_OUTPUT") or Path(__file__).resolve().parents[2] / "test-output") / "web"
needs_chromium = pytest.mark.skipif(chromium_path() is None,
                                    reason="no chromium (Debian: apt-get install chromium; `make system-tools`)")


def address(pool: PoolHandle) -> str:
    return (pool.home / "run" / "web.address").read_text().strip()


def get(pool: PoolHandle, path: str) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(f"http://{address(pool)}{path}", timeout=30) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def post(pool: PoolHandle, path: str, body: Any, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(f"http://{address(pool)}{path}", data=json.dumps(body).encode(),
                                 headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def pool_token(pool: PoolHandle) -> str:
    from roost.api.connection import pool_token as token

    found = token(str(pool.home))
    assert found, "the pool's owner has no token in tokens.d"
    return found


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if chromium_path() is None:
        pytest.skip("no chromium (Debian: apt-get install chromium; `make system-tools`)")
    b = Browser()
    try:
        yield b
    finally:
        b.close()


def shot(browser: Browser, name: str) -> None:
    path = browser.screenshot(OUT / f"{name}.png")
    print(f"screenshot: {path}")


def show(browser: Browser, pool: PoolHandle, view: str) -> None:
    # a fresh document each time: the same URL again would change no hash, and the page
    # would not read the pool again
    browser.goto("about:blank")
    browser.goto(f"http://{address(pool)}/#{view}")
    browser.wait_for(f"document.body.dataset.ready === {json.dumps(view.split('/')[0].split('?')[0])}",
                     what=f"the {view} page")


def text(browser: Browser, selector: str) -> str:
    return browser.evaluate(f"(document.querySelector({json.dumps(selector)}) || {{}}).innerText || ''")


@pytest.fixture(scope="module")
def jobs(pool: PoolHandle, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Two running jobs and two that can never run (they ask for 64 CPUs of 4): idle for
    good, one with its log where everybody may read it, one with its log in a private
    directory (pytest's own are private to root)."""
    d = Path(tempfile.mkdtemp(prefix="roost-web-", dir="/tmp"))
    d.chmod(0o755)
    private = tmp_path_factory.mktemp("web-private")
    run = pool.submit("executable = /bin/sleep\narguments = 300\nrequest_cpus = 1\nrequest_memory = 64\n"
                      "queue 2\n", d)
    big = pool.submit(f"executable = /bin/sleep\narguments = 300\nrequest_cpus = 64\nlog = {d}/big.log\n"
                      "queue\n", d)
    hidden = pool.submit(f"executable = /bin/sleep\narguments = 300\nrequest_cpus = 64\n"
                         f"log = {private}/hidden.log\nqueue\n", private)
    for jid in run.job_ids():
        pool.wait_for(jid, lambda j: j.get("JobStatus") == 2, timeout=60, what="running")
    try:
        yield {"running": run.job_ids()[0], "running2": run.job_ids()[1], "idle": big.job_ids()[0],
               "hidden": hidden.job_ids()[0], "hidden_log": f"{private}/hidden.log"}
    finally:
        pool.roost("rm", str(run.cluster), str(big.cluster), str(hidden.cluster))
        shutil.rmtree(d, ignore_errors=True)


def test_address_file_status_web_and_headers(pool: PoolHandle) -> None:
    addr = address(pool)
    assert addr.startswith("127.0.0.1:")  # a personal pool's dashboard listens on loopback only
    out = pool.roost("status", "-web", check=True).stdout
    assert out.strip() == f"http://{addr}/"
    assert pool.master_status()["daemons"]["WEB"]["address"] == addr
    status, headers, body = get(pool, "/")
    assert status == 200 and b"<title>roost pool</title>" in body
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    assert headers["X-Frame-Options"] == "DENY"
    assert get(pool, "/nope")[0] == 404
    assert get(pool, "/api/job?id=1;rm")[0] == 400


def test_only_the_dashboards_own_names_are_answered(pool: PoolHandle) -> None:
    """DNS rebinding: a page of another site whose name now resolves to 127.0.0.1
    names that site in Host; it reads nothing and cannot act."""
    host, port = address(pool).rsplit(":", 1)

    def ask(method: str, path: str, headers: dict[str, str], body: bytes | None = None) -> int:
        c = http.client.HTTPConnection(host, int(port), timeout=30)
        try:
            c.putrequest(method, path, skip_host=True)
            for k, v in {**headers, **({"Content-Length": str(len(body))} if body is not None else {})}.items():
                c.putheader(k, v)
            c.endheaders(body)
            return c.getresponse().status
        finally:
            c.close()

    assert ask("GET", "/api/summary", {"Host": f"127.0.0.1:{port}"}) == 200
    assert ask("GET", "/api/summary", {"Host": f"localhost:{port}"}) == 200
    assert ask("GET", "/api/summary", {"Host": "evil.example"}) == 421
    assert ask("GET", "/metrics", {"Host": f"evil.example:{port}"}) == 421
    body = json.dumps({"action": "hold", "ids": ["1"]}).encode()
    assert ask("POST", "/api/act", {"Host": "evil.example", "Origin": "http://evil.example",
                                    "Content-Type": "application/json",
                                    "Authorization": f"Bearer {pool_token(pool)}"}, body) == 421


def test_a_private_user_log_is_not_shown(pool: PoolHandle, jobs: dict[str, str]) -> None:
    from roost.web.jobinfo import NOT_SHOWN

    assert Path(jobs["hidden_log"]).exists()  # the schedd wrote it: only its directory is private
    status, _, body = get(pool, f"/api/job?id={jobs['hidden']}")
    log = json.loads(body)["log"]
    assert status == 200 and log["events"] == [] and log["note"] == NOT_SHOWN
    status, _, body = get(pool, f"/api/job?id={jobs['idle']}")
    assert any("Job submitted" in e for e in json.loads(body)["log"]["events"])


def test_an_analysis_is_kept_for_the_refresh_interval(pool: PoolHandle, jobs: dict[str, str]) -> None:
    from roost.web.server import Dashboard
    from roost.web.snapshot import PoolView

    dash = Dashboard(PoolView(str(pool.home), refresh_s=60))
    first = dash.analyze({"id": jobs["idle"]})
    assert f"-- Job {jobs['idle']}: idle" in first["text"]
    assert dash.analyze({"id": jobs["idle"]}) is first  # not read again: anyone may ask, often
    other = dash.analyze({"id": jobs["hidden"]})  # another job: the slot ads read for the first serve it
    assert other is not first and f"-- Job {jobs['hidden']}: idle" in other["text"]


@needs_chromium
def test_queue_page_shows_each_users_jobs(pool: PoolHandle, jobs: dict[str, str], browser: Browser) -> None:
    def counts_match() -> bool:
        # the page's figures are a few seconds old at most: reload until they are the schedd's
        show(browser, pool, "queue")
        s = pool.schedd()
        try:
            totals = s.totals()
        finally:
            s.close()
        row = browser.evaluate("Array.from(document.querySelectorAll('#users-summary tr[data-user=\"root\"] td'))"
                               ".map(td => td.innerText)")
        return bool(row) and row[0] == "root" and (int(row[1]), int(row[2])) == (
            totals.get("Idle", 0), totals.get("Running", 0))

    wait_until(counts_match, 30, "the queue page's counts equal to the schedd's")
    assert "idle" in text(browser, "#users-summary")
    listed = browser.evaluate("Array.from(document.querySelectorAll('#jobs tr[data-job]')).map(r => r.dataset.job)")
    assert {jobs["running"], jobs["running2"], jobs["idle"]} <= set(listed)
    shot(browser, "queue")
    # Filtering by status: only the idle job.
    show(browser, pool, "queue?user=root&status=idle")
    listed = browser.evaluate("Array.from(document.querySelectorAll('#jobs tr[data-job]')).map(r => r.dataset.job)")
    assert jobs["idle"] in listed and jobs["running"] not in listed
    shot(browser, "queue-idle")


@needs_chromium
def test_slots_page_is_a_picture_of_who_runs_what(pool: PoolHandle, jobs: dict[str, str], browser: Browser) -> None:
    c = pool.collector()
    try:
        slots = c.query_objs("Machine", projection=["Name", "JobId", "State"])
    finally:
        c.close()
    show(browser, pool, "slots")
    wait_until(lambda: (show(browser, pool, "slots") or True)
               and jobs["running"] in text(browser, "#machines"), 20, "running job on the slots page")
    cells = browser.evaluate("Array.from(document.querySelectorAll('.slot')).map(c => [c.dataset.slot, c.innerText])")
    names = {n for n, _ in cells}
    assert {s["Name"] for s in slots} <= names
    running = next(s for s in slots if s.get("JobId") == jobs["running"])
    cell = next(t for n, t in cells if n == running["Name"])
    assert jobs["running"] in cell and "root" in cell
    shot(browser, "slots")
    # the job in the picture links to its page
    browser.evaluate(f"document.querySelector('.slot[data-slot=\"{running['Name']}\"] a').click()")
    browser.wait_for("document.body.dataset.ready === 'job'", what="the running job's page")
    assert text(browser, "h2").startswith(f"Job {jobs['running']} of root: running")


@needs_chromium
def test_job_page_shows_ad_events_and_better_analyze(pool: PoolHandle, jobs: dict[str, str],
                                                     browser: Browser) -> None:
    idle = jobs["idle"]
    show(browser, pool, f"job/local/{idle}")
    browser.wait_for("!document.querySelector('#analysis').innerText.startsWith('analyzing')", what="analysis")
    page = text(browser, "#analysis")
    cli = pool.roost("q", "-better-analyze", idle, check=True).stdout
    assert f"-- Job {idle}: idle" in page
    # the same analysis as the command's: its clause table and suggestion, line for line
    for line in cli.splitlines():
        if line.startswith(("-- Job", "Requirements:", "Suggestion:")) or "REJECTS" in line:
            assert line in page.splitlines(), f"{line!r} not on the page:\n{page}"
    assert "000 (" in text(browser, "#events") and "Job submitted" in text(browser, "#events")
    ad = text(browser, "#ad")
    assert "RequestCpus\t64" in ad
    shot(browser, "job-idle")


@needs_chromium
def test_actions_are_refused_without_a_token_and_work_with_one(pool: PoolHandle, jobs: dict[str, str],
                                                               browser: Browser) -> None:
    idle = jobs["idle"]

    def status() -> int:
        return int(pool.job(idle)["JobStatus"])

    def click(button: str) -> str:
        browser.evaluate("document.querySelector('#action-result').textContent = ''")
        browser.evaluate(f"document.querySelector('#act-{button}').click()")
        browser.wait_for("(t => t && t !== '…' && t)(document.querySelector('#action-result').textContent)",
                         what=f"{button}'s answer")
        # an action that went through redraws the job: wait for that before the next click
        browser.wait_for("document.body.dataset.ready === 'job'", what="the job page again")
        return text(browser, "#action-result")

    show(browser, pool, f"job/local/{idle}")
    browser.evaluate("sessionStorage.removeItem('roost-token')")
    answer = click("hold")
    assert "refused (401)" in answer and status() == 1
    shot(browser, "hold-refused")

    # Another user's token: the schedd lets its holder act on none of root's jobs.
    other = pool.roost("token", "create", "-identity", "mallory@localhost", check=True).stdout.strip()
    browser.evaluate(f"sessionStorage.setItem('roost-token', {json.dumps(other)})")
    assert click("hold") == "hold: 0 job(s)" and status() == 1
    # A token the pool never signed is refused by the schedd.
    forged = other[:-4] + ("AAAA" if not other.endswith("AAAA") else "BBBB")
    browser.evaluate(f"sessionStorage.setItem('roost-token', {json.dumps(forged)})")
    assert "refused (403)" in click("hold") and status() == 1

    # The pool token, typed into the page's token field.
    browser.evaluate("sessionStorage.removeItem('roost-token')")
    browser.evaluate(f"document.querySelector('#token').value = {json.dumps(pool_token(pool))}")
    browser.evaluate("document.querySelector('#token-save').click()")
    assert text(browser, "#token-state") == "token set"
    assert click("hold") == "hold: 1 job(s)"
    wait_until(lambda: status() == 5, 10, "job held")
    shot(browser, "hold-done")
    assert click("release") == "release: 1 job(s)"
    wait_until(lambda: status() == 1, 10, "job released")

    # Straight HTTP: a token but another site's Origin, or no JSON content type: refused.
    token = {"Authorization": f"Bearer {pool_token(pool)}"}
    code, body = post(pool, "/api/act", {"action": "hold", "ids": [idle]},
                      {**token, "Content-Type": "application/json", "Origin": "http://evil.example"})
    assert code == 403 and status() == 1
    code, body = post(pool, "/api/act", {"action": "hold", "ids": [idle]},
                      {**token, "Content-Type": "application/json", "Origin": "null"})
    assert code == 403 and status() == 1
    code, body = post(pool, "/api/act", {"action": "hold", "ids": [idle]},
                      {**token, "Content-Type": "text/plain"})
    assert code == 415 and status() == 1
    code, body = post(pool, "/api/act", {"action": "hold", "ids": [idle]},
                      {"Authorization": "Basic cm9vdDpyb290", "Content-Type": "application/json"})
    assert code == 401 and status() == 1


def _metrics(pool: PoolHandle) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    status, headers, body = get(pool, "/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    out = {}
    for fam in text_string_to_metric_families(body.decode()):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_metrics_match_the_pool(pool: PoolHandle, jobs: dict[str, str]) -> None:
    def pool_figures() -> tuple[dict[str, int], dict[str, int]]:
        s = pool.schedd()
        c = pool.collector()
        try:
            totals = s.totals(owner="root")
            states: dict[str, int] = {}
            for a in c.query_objs("Machine", projection=["State"]):
                states[a["State"]] = states.get(a["State"], 0) + 1
        finally:
            s.close()
            c.close()
        return totals, states

    def matches() -> bool:
        totals, states = pool_figures()
        m = _metrics(pool)
        got_jobs = {st: m.get(("roost_jobs", (("status", st.lower()), ("user", "root"))), 0.0)
                    for st in ("Idle", "Running", "Held")}
        got_slots = {k[1][0][1]: v for k, v in m.items() if k[0] == "roost_slots"}
        return (got_jobs == {st: float(totals.get(st, 0)) for st in got_jobs}
                and got_slots == {k: float(v) for k, v in states.items()})

    wait_until(matches, 20, "/metrics agreeing with the schedd and the collector")
    m = _metrics(pool)
    assert m[("roost_negotiation_cycle_seconds", ())] >= 0
    assert m[("roost_negotiation_cycles_total", ())] >= 1
    assert m[("roost_job_submit_rate", ())] > 0  # jobs were submitted in the last 5 minutes
    assert ("roost_job_completion_rate", ()) in m


@needs_chromium
def test_throughput_chart_and_priorities(pool: PoolHandle, browser: Browser, tmp_path: Path) -> None:
    done = pool.submit("executable = /bin/true\nqueue 5\n", tmp_path)
    pool.wait(done.job_ids(), timeout=60)
    wait_until(lambda: sum(json.loads(get(pool, "/api/throughput")[2])["completed"]) >= 5, 20,
               "completions in the dashboard")
    show(browser, pool, "throughput")
    assert browser.evaluate("document.querySelectorAll('#chart rect.bar-completed').length") >= 1
    assert browser.evaluate("document.querySelectorAll('#chart polyline.line-submitted').length") == 1
    completed = int(text(browser, "#throughput-totals").split()[0])
    assert completed >= 5
    shot(browser, "throughput")

    wait_until(lambda: json.loads(get(pool, "/api/users")[2])["users"], 30, "a priority record")
    show(browser, pool, "users")
    names = browser.evaluate("Array.from(document.querySelectorAll('#priorities tr[data-user]'))"
                             ".map(r => r.dataset.user)")
    from roost.api.negotiator import negotiator_connection

    conn = negotiator_connection(str(pool.home), 10)
    try:
        negotiator = {u["name"] for u in conn.call("USERPRIO")["users"]}
    finally:
        conn.close()
    assert names and set(names) <= negotiator and any(n.startswith("root@") for n in names)
    shot(browser, "users")


def test_reconfig_restarts_the_dashboard_on_the_new_configuration(pool: PoolHandle) -> None:
    old = pool.daemon_pid("WEB")
    restarts = pool.master_status()["daemons"]["WEB"]["restarts"]
    done = pool.roost("reconfig", check=True)
    assert "web: reconfigured" in done.stdout
    new = pool.daemon_pid("WEB")
    assert new != old and pool.master_status()["ready"]
    # a reconfiguration, not a restart (the fuzz tests count restarts as faults)
    assert pool.master_status()["daemons"]["WEB"]["restarts"] == restarts
    assert get(pool, "/healthz")[0] == 200
