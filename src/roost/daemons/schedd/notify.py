"""Email about jobs (``notification = Always | Complete | Error``), as HTCondor sends it.

Who gets it: the job's ``NotifyUser`` (``notify_user``), else its owner; an address
without ``@`` gets ``@EMAIL_DOMAIN`` (else the job's UidDomain, else UID_DOMAIN).
How: to the SMTP server ``SMTP_SERVER`` (``host`` or ``host:port``, port 25), from
``MAIL_FROM`` (else the schedd's user at its host); without SMTP_SERVER, through the
``MAIL`` program (``MAIL -s subject address``, body on its input), as HTCondor on Unix.
Neither configured: no mail.

What: HTCondor's subject (``[Condor] Condor Job 12.0``; ``... put on hold``,
``... removed``) and body (the job's command, directory, exit, times, image size,
CPU, network bytes, ``email_attributes``, and the signature).  When, per
``JobNotification``: Always: exit, hold, removal; Complete: exit; Error: a signal,
a core, a non-zero exit code (other than ``JobSuccessExitCode``), or a hold the
user or policy did not ask for.

The address must be one plain ``user@domain`` word (``roost.submit.mailaddr``):
checked at submit, at EDIT and here again before sending, since ``MAIL`` runs as
the schedd's user (root) with the address as an argument, after ``--``.  Body lines
that start with ``~`` (mailx's tilde escapes) are indented by a space for ``MAIL``.

Mail is sent by one background task from a bounded queue, one message at a time,
SMTP sessions (smtplib blocks) in the mailer's own single thread, never the loop's
default executor: each session has an overall deadline (``SESSION_DEADLINE``) after
which its socket is shut down, so a server that trickles bytes (each socket
operation's timeout restarting) ends the session too.  A mail server that is down
or slow delays no job, no reply and no other thread work; failures are logged and
the message dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

NEVER, ALWAYS, COMPLETE, ERROR, START = 0, 1, 2, 3, 4
MAX_QUEUED = 1000
SEND_TIMEOUT = 30.0  # each socket operation of an SMTP session; the MAIL program as a whole
SESSION_DEADLINE = 35.0  # a whole SMTP session
# Holds the user or a policy asked for: no error worth a mail.  HTCondor's
# Email::shouldSend skips exactly UserRequest (1), JobPolicy (3, periodic_hold and
# on_exit_hold) and SubmittedOnHold (15); SpoolingInput (16) is not on its list, and
# is set in the submitted ad, never by a hold that mails.
_ASKED_HOLDS = {1, 3, 15}

Get = Callable[[str], Any]


@dataclass
class Mail:
    to: str
    subject: str
    body: str


def format_time(secs: float) -> str:
    """HTCondor's ``D+HH:MM:SS`` with the days right-aligned in 3 columns."""
    s = max(0, int(secs))
    return f"{s // 86400:3d}+{s % 86400 // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def metric_units(n: float) -> str:
    value, power = float(n), 0
    units = ("B ", "KB", "MB", "GB", "TB")
    while value > 1024.0 and power < len(units) - 1:
        value /= 1024.0
        power += 1
    return f"{value:.1f} {units[power]}"


def _num(get: Get, name: str, default: float = 0) -> float:
    v = get(name)
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else default


def _ctime(ts: float) -> str:
    return time.ctime(ts) + "\n"


def job_id_lines(get: Get) -> str:
    out = f"Condor job {int(_num(get, 'ClusterId'))}.{int(_num(get, 'ProcId'))}\n"
    cmd, args = get("Cmd"), get("Arguments")
    if not isinstance(args, str) or not args:
        args = get("Args")
    if isinstance(cmd, str) and cmd:
        out += f"\t{cmd} {args}\n" if isinstance(args, str) and args else f"\t{cmd}\n"
    batch = get("JobBatchName")
    if isinstance(batch, str) and batch:
        out += f"\tfrom batch {batch}\n"
    iwd = get("Iwd")
    if isinstance(iwd, str) and iwd:
        out += f"\tsubmitted from directory {iwd}\n"
    return out


def exit_text(get: Get) -> str:
    if get("ExitBySignal") is True:
        reason = get("ExitReason")
        if isinstance(reason, str) and reason:
            return reason
        return f"died on signal {int(_num(get, 'ExitSignal', -1))}"
    code = get("ExitCode")
    if isinstance(code, int):
        return f"exited normally with status {code}"
    return "exited in an unknown way"


def custom_attributes(get: Get, text_of: Callable[[str], str | None]) -> str:
    names = get("EmailAttributes")
    if not isinstance(names, str) or not names.strip():
        return ""
    out = ""
    for name in names.replace(",", " ").split():
        text = text_of(name)
        if text is None:
            continue
        out += ("\n\n" if not out else "") + f"{name} = {text}\n"
    return out


def exit_body(get: Get, now: float, text_of: Callable[[str], str | None] = lambda _n: None) -> str:
    """The body of HTCondor's job-exit mail after the greeting."""
    core = get("JobCoreDumped") is True
    out = job_id_lines(get) + exit_text(get) + "\n"
    if core:
        out += "Core file generated\n"
    qdate = _num(get, "QDate")
    out += "\n\nSubmitted at:        " + _ctime(qdate)
    out += "Completed at:        " + _ctime(now)
    out += f"Real Time:           {format_time(now - qdate)}\n"
    out += "\n"
    out += f"Virtual Image Size:  {int(_num(get, 'ImageSize'))} Kilobytes\n\n"
    user, sys_ = _num(get, "RemoteUserCpu"), _num(get, "RemoteSysCpu")
    start = _num(get, "JobCurrentStartDate")
    wall = _num(get, "LastRemoteWallClockTime", now - start if start else 0)
    out += "Statistics from last run:\n"
    out += f"Allocation/Run time:     {format_time(wall)}\n"
    out += f"Remote User CPU Time:    {format_time(user)}\n"
    out += f"Remote System CPU Time:  {format_time(sys_)}\n"
    out += f"Total Remote CPU Time:   {format_time(user + sys_)}\n\n"
    out += "Statistics totaled from all runs:\n"
    out += f"Allocation/Run time:     {format_time(_num(get, 'RemoteWallClockTime', wall))}\n"
    out += "\nNetwork:\n"
    out += f"{metric_units(_num(get, 'BytesRecvd')):>10} Run Bytes Received By Job\n"
    out += f"{metric_units(_num(get, 'BytesSent')):>10} Run Bytes Sent By Job\n"
    out += f"{metric_units(_num(get, 'BytesRecvd')):>10} Total Bytes Received By Job\n"
    out += f"{metric_units(_num(get, 'BytesSent')):>10} Total Bytes Sent By Job\n"
    return out + custom_attributes(get, text_of)


def should_send(get: Get, kind: str) -> bool:
    """HTCondor's rule (Email::shouldSend) for ``kind`` "exit", "hold" or "remove"."""
    n = get("JobNotification")
    n = n if isinstance(n, int) else NEVER
    if n == ALWAYS:
        return True
    if n == COMPLETE:
        return kind == "exit"
    if n != ERROR:
        return False
    if kind == "hold":
        return get("HoldReasonCode") not in _ASKED_HOLDS
    if kind != "exit":
        return False
    if get("JobCoreDumped") is True or get("ExitBySignal") is True:
        return True
    code = get("ExitCode")
    ok = get("JobSuccessExitCode")
    return isinstance(code, int) and code != (ok if isinstance(ok, int) else 0)


class Notifier:
    """Composes job mail and sends it in the background."""

    def __init__(self, *, smtp: tuple[str, int] | None, mail_program: str | None, mail_from: str,
                 domain: str, admin: str | None, signature: str | None, hostname: str) -> None:
        self.smtp = smtp
        self.mail_program = mail_program
        self.mail_from = mail_from
        self.domain = domain
        self.admin = admin
        self.signature = signature
        self.hostname = hostname
        self.sent = self.failed = self.dropped = 0
        self._queue: asyncio.Queue[Mail] | None = None
        self._task: asyncio.Task[None] | None = None
        self.deadline = SESSION_DEADLINE
        self._executor: ThreadPoolExecutor | None = None  # the mailer's one thread
        self._session: Any = None  # the SMTP session under way (smtp_session.Session)

    @classmethod
    def from_config(cls, config: Any, uid_domain: str) -> Notifier | None:
        server = (config.get("SMTP_SERVER") or "").strip()
        program = (config.get("MAIL") or "").strip() or None
        if not server and not program:
            return None
        smtp = None
        if server:
            host, _, port = server.rpartition(":") if server.count(":") == 1 else (server, "", "")
            smtp = (host or server, int(port) if port.isdigit() else 25)
        hostname = (config.get("FULL_HOSTNAME") or socket.getfqdn()).strip()
        mail_from = (config.get("MAIL_FROM") or "").strip() or f"condor@{hostname}"
        domain = (config.get("EMAIL_DOMAIN") or "").strip() or uid_domain
        admin = (config.get("CONDOR_SUPPORT_EMAIL") or config.get("CONDOR_ADMIN") or "").strip() or None
        return cls(smtp=smtp, mail_program=program, mail_from=mail_from, domain=domain, admin=admin,
                   signature=config.get("EMAIL_SIGNATURE"), hostname=hostname)

    # ---- composing
    def address(self, get: Get) -> str | None:
        """Whom to mail, or None: NotifyUser, else Owner, at EMAIL_DOMAIN when it has no
        ``@``; an address that is not one plain word (see the module docstring) gets none."""
        # lazy: the submit package loads with the first SUBMIT_TEXT, not at schedd start-up
        from roost.submit.mailaddr import address_problem

        to = get("NotifyUser")
        if not isinstance(to, str) or not to.strip():
            to = get("Owner")
        if not isinstance(to, str) or not to.strip():
            return None
        to = to.strip()
        if "@" not in to:
            dom = get("UidDomain")
            to = f"{to}@{self.domain or (dom if isinstance(dom, str) else '')}".rstrip("@")
        problem = address_problem(to)
        if problem is not None:
            log.warning("job %s.%s: no mail: %s", get("ClusterId"), get("ProcId"), problem)
            return None
        return to

    def _wrap(self, body: str) -> str:
        head = f'This is an automated email from the Condor system\non machine "{self.hostname}".  Do not reply.\n\n'
        if self.signature:
            tail = f"\n\n{self.signature}\n"
        else:
            tail = "\n\n-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=\nQuestions about this message or HTCondor in general?\n"
            if self.admin:
                tail += f"Email address of the local HTCondor administrator: {self.admin}\n"
            tail += "The Official HTCondor Homepage is https://htcondor.org/\n"
        return head + body + tail

    def _subject(self, get: Get, what: str = "") -> str:
        s = f"[Condor] Condor Job {int(_num(get, 'ClusterId'))}.{int(_num(get, 'ProcId'))}"
        return s + (f" {what}" if what else "")

    def job_exited(self, get: Get, text_of: Callable[[str], str | None] = lambda _n: None) -> None:
        if should_send(get, "exit"):
            self._enqueue(get, self._subject(get), exit_body(get, time.time(), text_of))

    def job_held(self, get: Get, reason: str) -> None:
        if should_send(get, "hold"):
            self._enqueue(get, self._subject(get, "put on hold"),
                          job_id_lines(get) + "\nis being put on hold.\n\n" + reason)

    def job_removed(self, get: Get, reason: str) -> None:
        if should_send(get, "remove"):
            self._enqueue(get, self._subject(get, "removed"), job_id_lines(get) + "\nis being removed.\n\n" + reason)

    # ---- sending
    def _enqueue(self, get: Get, subject: str, body: str) -> None:
        to = self.address(get)
        if to is None:
            return
        if self._queue is None:
            self._queue = asyncio.Queue()
        if self._queue.qsize() >= MAX_QUEUED:
            self.dropped += 1
            log.warning("mail to %s about %s dropped: %d messages wait already", to, subject, MAX_QUEUED)
            return
        self._queue.put_nowait(Mail(to, subject, self._wrap(body)))
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name="mailer")

    async def _run(self) -> None:
        assert self._queue is not None
        while not self._queue.empty():
            mail = self._queue.get_nowait()
            try:
                if self.smtp is not None:
                    await self._smtp(mail)
                else:
                    await self._send_program(mail)
                self.sent += 1
                log.info("mailed %s: %s", mail.to, mail.subject)
            except Exception as e:  # noqa: BLE001 - no mail problem may reach a job
                self.failed += 1
                log.warning("cannot mail %s (%s): %s", mail.to, mail.subject, e)

    async def _smtp(self, mail: Mail) -> None:
        """One SMTP session in the mailer's thread, ended at the deadline: its socket is
        shut down, so the thread's blocked read returns and the thread is free again."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mailer")
        # lazy: smtplib and the email package (~35 ms) load with the first mail, not at start-up
        from roost.daemons.schedd.smtp_session import Session

        session = self._session = Session(self.hostname, SEND_TIMEOUT)
        fut = asyncio.get_running_loop().run_in_executor(self._executor, self._send_smtp, mail, session)
        try:
            await asyncio.wait_for(asyncio.shield(fut), self.deadline)
        except TimeoutError:
            session.abort()
            # connecting is bounded by SEND_TIMEOUT; every later read ends with the socket
            with contextlib.suppress(Exception):
                await asyncio.wait_for(fut, SEND_TIMEOUT + 1)
            raise TimeoutError(f"the SMTP session took over {self.deadline:g} s") from None
        finally:
            if not fut.done():  # cancelled (the schedd stops): end the session too
                session.abort()
            self._session = None

    def _send_smtp(self, mail: Mail, session: Any) -> None:
        # lazy: the email package loads with the first mail, not at start-up
        from email.message import EmailMessage

        assert self.smtp is not None
        msg = EmailMessage()
        msg["From"] = self.mail_from
        msg["To"] = mail.to
        msg["Subject"] = mail.subject
        msg.set_content(mail.body)
        with session:
            session.connect(self.smtp[0], self.smtp[1])
            session.send_message(msg)

    async def _send_program(self, mail: Mail) -> None:
        assert self.mail_program is not None
        # "--": nothing after it is an option, whatever the address (checked already)
        proc = await asyncio.create_subprocess_exec(
            self.mail_program, "-s", mail.subject, "--", mail.to, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        try:
            body = no_tilde_escapes(mail.body).encode()
            _, err = await asyncio.wait_for(proc.communicate(body), SEND_TIMEOUT)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise
        if proc.returncode:
            raise OSError(f"{self.mail_program} exited {proc.returncode}: {err.decode(errors='replace')[:200]}")

    async def close(self) -> None:
        if self._task is not None and not self._task.done():
            try:
                await asyncio.wait_for(asyncio.shield(self._task), 5.0)
            except (TimeoutError, Exception):  # noqa: BLE001 - shutting down
                self._task.cancel()
        if self._session is not None:
            self._session.abort()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None


def no_tilde_escapes(body: str) -> str:
    """``body`` with each line that starts with ``~`` indented by a space: mailx reads
    such a line on its input as a command (``~!`` runs a shell)."""
    if "~" not in body:
        return body
    return "\n".join(" " + ln if ln.startswith("~") else ln for ln in body.split("\n"))
