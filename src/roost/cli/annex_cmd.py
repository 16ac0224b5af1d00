"""``roost annex -slurm N``: add N Slurm jobs to the pool as glide-ins (condor_annex's idea,
with Slurm as the provider).

Run on the central manager (or a personal pool's host): it signs the glide-ins' token
with the pool key. The token names ``condor@UID_DOMAIN`` but is limited to
``ADVERTISE_STARTD`` and ``READ`` (what a startd needs to advertise, to be claimed, and
to report on the claims it runs: each of those names its claim id), and expires
``ANNEX_MAX_PENDING`` seconds after the annex's duration, which is also the Slurm
jobs' ``--deadline``, so Slurm never starts a glide-in whose token would run out.
The record of the annex (``$(LOCAL_DIR)/annex/NAME.json``) is what ``roost status
-annex`` lists, against Slurm's view and the collector's.
"""

from __future__ import annotations

import ipaddress
import json
import os
import pwd
import re
import subprocess
import sys
import time

from roost.cli.annex_script import GlideinSpec, script
from roost.cli.options import VALUE, Parser, UsageError
from roost.config import Config, ConfigError
from roost.core.annex import AnnexError, AnnexRecord, parse_duration, slurm_time_limit
from roost.core.gridbatch import parse_sbatch
from roost.net.addresses import WILDCARD_HOSTS, collector_address, read_address
from roost.net.signing_key import read_key_file
from roost.net.token_store import TokenSettings
from roost.net.tokens import DEFAULT_KEY, TokenError, create_token, decode_token
from roost.poolhome import pool_home, run_path

PROG = "roost annex"
SPEC = {
    "slurm": (VALUE, "N: this many glide-ins, each a Slurm job (sbatch)"),
    "duration": (VALUE, "how long each glide-in lives from its start (90s, 30m, 2h; default 1h)"),
    "partition": (VALUE, "the Slurm partition (default: Slurm's)"),
    "name": (VALUE, "the annex's name, its glide-ins' AnnexName (default annex-<time>)"),
    "idle": (VALUE, "a glide-in with no claim this long exits (STARTD_NOCLAIM_SHUTDOWN; default 5m)"),
    "cpus": (VALUE, "CPUs per glide-in (sbatch --cpus-per-task; default 1)"),
    "memory": (VALUE, "MiB per glide-in (sbatch --mem; default 1024)"),
    "owners": (VALUE, "whose jobs the glide-ins run, comma-separated (default: you, as condor_annex)"),
}
USAGE = "-slurm N [-duration D] [-partition P] [-name NAME] [-idle D] [-cpus C] [-memory MB] [-owners U,V]"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_OWNER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}")


def owners_start(owners: list[str]) -> str:
    """The glide-ins' START: only these owners' jobs. A glide-in runs every job as its
    own (unprivileged) user, beside its token and its claims' records, so a job of
    anyone else could take them; condor_annex's -owners defaults to its user too.
    ``==``, not ``=?=``: with no job to look at it is undefined, so the slot is not put
    in the Owner state (START false on its own is the machine's owner saying no)."""
    return " || ".join(f'(TARGET.Owner == "{o}")' for o in owners)


def _owners(text: object) -> list[str]:
    if text is None:
        return [pwd.getpwuid(os.getuid()).pw_name]
    owners = [o.strip() for o in str(text).split(",") if o.strip()]
    bad = [o for o in owners if not _OWNER.fullmatch(o)]
    if not owners or bad:
        raise UsageError(f"-owners {text!r}: user names separated by commas")
    return owners

#: pool knobs a glide-in takes as the pool has them (security, timings, who jobs run as)
PASSED_KNOBS = ("SEC_ENCRYPT_LOOPBACK", "SEC_DEFAULT_ENCRYPTION", "SEC_DEFAULT_INTEGRITY",
                "SEC_DEFAULT_AUTHENTICATION_METHODS", "UPDATE_INTERVAL", "STARTER_UPDATE_INTERVAL",
                "STARTD_ACTIVITY_UPDATE_DELAY", "KILLING_TIMEOUT", "SLOT_USER", "STARTD_DETECT_CONTAINERS",
                "STARTD_DETECT_JAVA", "STARTD_DETECT_CRIU", "STARTD_DETECT_GPUS", "ANNEX_POLL_INTERVAL")


class _Failed(Exception):
    pass


def glidein_bind_address(pool_bind: str | None) -> str:
    """The glide-ins' BIND_ADDRESS for a pool that binds ``pool_bind``: a wildcard or
    loopback as the pool has it (a loopback pool's collector is reachable from its own
    host only, so its glide-ins are there too); any other address is one of this host's
    own, which a Slurm node does not have (its startd could not listen): every interface
    there, of the address's family, the glide-in advertising its node's own address
    (IP_ADDRESS as detected there)."""
    host = (pool_bind or "").strip()
    if host in WILDCARD_HOSTS:
        return host or "0.0.0.0"
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return host if host == "localhost" else "0.0.0.0"
    return host if ip.is_loopback else "::" if ip.version == 6 else "0.0.0.0"


def annex_dir(cfg: Config, home: str) -> str:
    return os.path.join(cfg.get("LOCAL_DIR") or home, "annex")


def _count(text: object, what: str) -> int:
    if not str(text).isdigit() or int(str(text)) < 1:
        raise UsageError(f"{what} takes a whole number of at least 1, not {text!r}")
    return int(str(text))


def leads(duration: float) -> tuple[int, int]:
    """ANNEX_RETIRE_LEAD and ANNEX_VACATE_LEAD for an annex of ``duration``: 5 and 1
    minutes, or a fifth and a tenth of a short one, so it still takes jobs at all."""
    return int(min(300.0, duration / 5)), int(min(60.0, duration / 10))


def main(argv: list[str]) -> int:
    parser = Parser(PROG, USAGE, SPEC)
    if any(a.lstrip("-") in ("h", "help") for a in argv):
        print(parser.help_text())
        return 0
    try:
        opts = parser.parse(argv)
        if opts.positional:
            raise UsageError(f"unexpected argument {opts.positional[0]!r}")
        if opts.slurm is None:
            raise UsageError("give -slurm N (the number of glide-ins)")
        count = _count(opts.slurm, "-slurm")
        cpus = _count(opts.cpus or 1, "-cpus")
        memory = _count(opts.memory or 1024, "-memory")
        duration = parse_duration(str(opts.duration or "1h"), "-duration")
        idle = parse_duration(str(opts.idle or "5m"), "-idle")
        owners = _owners(opts.owners)
        name = str(opts.name or f"annex-{int(time.time())}")
        if not _NAME.fullmatch(name):
            raise UsageError(f"-name {name!r}: letters, digits, '_', '.' and '-', at most 64")
    except (UsageError, AnnexError) as e:
        print(f"{PROG}: {e}\nusage: {PROG} {USAGE}", file=sys.stderr)
        return 2
    try:
        return _annex(name, count, duration, idle, str(opts.partition or ""), cpus, memory, owners)
    except (_Failed, ConfigError, TokenError) as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1


def _annex(name: str, count: int, duration: float, idle: float, partition: str, cpus: int, memory: int,
           owners: list[str]) -> int:
    home = pool_home()
    cfg = Config.load(env=os.environ, subsys="TOOL")
    directory = annex_dir(cfg, home)
    record_path = os.path.join(directory, f"{name}.json")
    if os.path.exists(record_path):
        raise _Failed(f"an annex named {name!r} exists already ({record_path}); give another -name")
    address = read_address(run_path(home, "collector.address")) or collector_address(
        cfg.get("COLLECTOR_HOST") or "", cfg.get_int("COLLECTOR_PORT", 9618) or 9618)
    if not address or address.startswith("unix:") or address.endswith(":0"):
        raise _Failed("no collector TCP address to give the glide-ins (is the pool up? `roost up`)")
    settings = TokenSettings.from_config(cfg)
    try:
        key = read_key_file(settings.pool_key_file)
    except (OSError, TokenError) as e:
        raise _Failed(f"cannot read the pool signing key ({e}): run roost annex on the central manager, "
                      "which signs the glide-ins' token") from None
    uid_domain = (cfg.get("UID_DOMAIN") or cfg.get("FULL_HOSTNAME") or "localdomain").strip()
    max_pending = cfg.get_float("ANNEX_MAX_PENDING", 3600.0) or 3600.0
    lifetime = int(duration + max_pending)
    now = time.time()
    token = create_token(key, DEFAULT_KEY, settings.trust_domain, f"condor@{uid_domain}", now=now,
                         lifetime=lifetime, scopes=["ADVERTISE_STARTD", "READ"], annex=name)
    retire, vacate = leads(duration)
    knobs = {"COLLECTOR_HOST": address, "CONDOR_HOST": cfg.get("CONDOR_HOST") or address.rsplit(":", 1)[0],
             "UID_DOMAIN": uid_domain, "TRUST_DOMAIN": settings.trust_domain,
             "BIND_ADDRESS": glidein_bind_address(cfg.get("BIND_ADDRESS")),
             "STARTD_NOCLAIM_SHUTDOWN": str(int(idle)), "ANNEX_RETIRE_LEAD": str(retire),
             "ANNEX_VACATE_LEAD": str(vacate), "START": owners_start(owners)}
    for knob in PASSED_KNOBS:
        value = cfg.get(knob)
        if value is not None and value.strip():
            knobs[knob] = value.strip()
    text = script(GlideinSpec(name, int(duration), token, sys.executable, os.environ.get("PYTHONPATH", ""), knobs))
    os.makedirs(os.path.join(directory, name), exist_ok=True)
    env = dict(os.environ)
    conf = (cfg.get("SLURM_CONF") or "").strip()
    if conf:
        env["SLURM_CONF"] = conf
    args = ["sbatch", "--parsable", f"--job-name=roost-annex-{name}", f"--time={slurm_time_limit(duration)}",
            "--nodes=1", "--ntasks=1", f"--cpus-per-task={cpus}", f"--mem={memory}",
            f"--deadline=now+{lifetime}", f"--output={os.path.join(directory, name, '%j.out')}"]
    if partition:
        args.append(f"--partition={partition}")
    ids: list[str] = []
    failure = ""
    for _ in range(count):
        try:
            done = subprocess.run(args, input=text, env=env, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            failure = f"cannot run sbatch: {e}"
            break
        job = parse_sbatch(done.stdout) if done.returncode == 0 else None
        if job is None:
            said = (done.stderr.strip() or done.stdout.strip()).splitlines()
            failure = f"Slurm refused glide-in {len(ids) + 1}: {said[-1] if said else f'sbatch exited {done.returncode}'}"
            break
        ids.append(job)
    if ids:
        record = AnnexRecord(name, tuple(ids), count, duration, now, partition, decode_token(token)[1].jti)
        tmp = record_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(record.to_obj(), f, indent=1)
        os.replace(tmp, record_path)
        print(f"annex {name}: {len(ids)} glide-in{'s' if len(ids) != 1 else ''} submitted to Slurm "
              f"(job{'s' if len(ids) != 1 else ''} {', '.join(ids)}), each for {duration:g} s, "
              f"idle limit {idle:g} s; `roost status -annex` follows them")
    if failure:
        raise _Failed(failure)
    return 0
