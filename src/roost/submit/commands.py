"""Submit commands -> job attributes, in the order condor_submit applies them.

Each handler reads a few submit commands and writes the attributes they
shape. ``HANDLERS`` is the ordered list; ``KNOWN_KEYS`` is every command some
handler reads (anything else that is not a macro another value uses earns an
"unused" warning, as in condor_submit).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from roost.classad.errors import ClassAdSyntaxError
from roost.submit import arglist
from roost.submit.builder import Builder
from roost.submit.getenv import imported
from roost.submit.mailaddr import address_problem
from roost.submit.units import parse_size
from roost.submit.values import Expr
from roost.universes import registry
from roost.universes.base import Universe
from roost.vocabulary import JobStatus

NOTIFY = {"never": 0, "always": 1, "complete": 2, "error": 3, "start": 4}

Handler = Callable[[Builder], None]


def check_expr(b: Builder, text: str, key: str) -> Expr:
    """Validate ClassAd expression text from command ``key``; keep the text."""
    # lazy: the ClassAd parser (~12 ms) only when checking one; `roost submit` is timed from start-up
    from roost.classad.parser import parse_expr

    try:
        parse_expr(text)
    except ClassAdSyntaxError as e:
        b.error(f"{key} = {text}: not a valid ClassAd expression ({e.message})", key)
    return Expr(text)


def _literal_or_expr(b: Builder, text: str, key: str) -> int | float | bool | str | Expr:
    """Literal numbers/booleans as values, anything else as an expression."""
    s = text.strip()
    if re.fullmatch(r"-?\d+", s):
        return int(s)
    if re.fullmatch(r"-?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?", s):
        return float(s)
    low = s.lower()
    if low in ("true", "false"):
        return low == "true"
    if len(s) >= 2 and s[0] == '"' and s[-1] == '"' and '"' not in s[1:-1].replace('\\"', ""):
        return s[1:-1].replace('\\"', '"')
    return check_expr(b, s, key)


def _int(b: Builder, key: str, *alts: str) -> int | None:
    v = b.get(key, *alts)
    if v is None:
        return None
    try:
        return int(v.strip())
    except ValueError:
        b.error(f"{key} = {v}: expected an integer", key)
    return None


def _path(b: Builder, p: str) -> str:
    if p.startswith("/") or re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", p):
        return p
    iwd = b.lookup("Iwd")
    return full_path(str(iwd), p) if iwd else p


_SLASHES = re.compile(r"//+")


def full_path(base: str, p: str) -> str:
    """``p`` made absolute against ``base`` as condor_submit does it: joined with a slash
    and repeated slashes squeezed, but ``.`` and ``..`` kept as written."""
    return _SLASHES.sub("/", p if p.startswith("/") else f"/{base}/{p}")


# -- handlers, in condor_submit's order -------------------------------------

def universe_named(b: Builder) -> tuple[Universe, str]:
    """The universe ``universe =`` names (vanilla when unset), with the name as written."""
    name = (b.get("universe") or "vanilla").strip().lower()
    u = registry.named(name)
    if u is None:  # h_universe has refused it already
        raise AssertionError(f"universe {name} reached a handler after h_universe")
    return u, name


def job_universe(b: Builder) -> Universe:
    """The universe the job ad is (a vanilla job with an image: container), vanilla's
    rules for a JobUniverse no registered universe has (set with +JobUniverse)."""
    return registry.for_job(b.lookup) or registry.DEFAULT


def h_universe(b: Builder) -> None:
    """``universe`` -> JobUniverse, through the registry; a universe roost does not run is
    refused here, naming the file, the line and those it does run."""
    name = (b.get("universe") or "vanilla").strip().lower()
    u = registry.named(name)
    if u is None:
        names = registry.supported()
        listed = ", ".join(names[:-1]) + " or " + names[-1]
        why = registry.refusal(name)
        if why is not None:
            b.error(f"universe = {name}: not supported by roost: {why} (supported: {listed})", "universe")
        b.error(f"universe = {name}: unknown universe (use {listed})", "universe")
        return
    b.set("JobUniverse", u.number)


def h_universe_early(b: Builder) -> None:
    """The universe's commands that later ones read (a container job needs no executable)."""
    u, name = universe_named(b)
    if u.early is not None:
        u.early(b, name)


def h_universe_shape(b: Builder) -> None:
    """The universe's commands between the arguments and the resource requests."""
    u, name = universe_named(b)
    if u.shape is not None:
        u.shape(b, name)


def h_universe_late(b: Builder) -> None:
    """The universe's rewrites once file transfer is known (java's class file and jars)."""
    u, name = universe_named(b)
    if u.late is not None:
        u.late(b, name)


def h_iwd(b: Builder) -> None:
    d = b.get("initialdir", "iwd", "initial_dir", "job_iwd")
    cwd = b.ctx.cwd
    if d is None:
        b.set("Iwd", cwd)
        return
    iwd = full_path(cwd, d)
    b.set("Iwd", iwd)
    # condor_submit refuses a job whose initialdir is not there, skip_filechecks or not
    why = b.ctx.check_path("initialdir", iwd) if b.ctx.check_path is not None else None
    if why is not None:
        key = next(k for k in ("initialdir", "iwd", "initial_dir", "job_iwd") if b.get(k) is not None)
        b.error(f"{key}: {why}", key)


def h_executable(b: Builder) -> None:
    exe = b.get("executable")
    if exe is None:
        if job_universe(b).needs_cmd:
            b.error("no 'executable' command: every job needs an executable")
        b.set("Cmd", "")  # a container's image says what to run, as with condor_submit
        b.set("TransferExecutable", False)
        return
    # a relative executable is relative to where condor_submit runs, not to initialdir
    cmd = exe if exe.startswith("/") or "://" in exe else full_path(b.ctx.cwd, exe)
    b.set("Cmd", cmd if b.bool("transfer_executable", True) else exe)
    if b.get("transfer_executable") is not None:
        b.set("TransferExecutable", b.bool("transfer_executable", True))
    # condor_submit's copy_to_spool (false by default since 8.x) copies the executable into
    # the spool at submit; roost always transfers it from Cmd when the job starts
    if b.get("copy_to_spool") is not None and b.bool("copy_to_spool", False):
        b.warn("copy_to_spool = true: roost does not copy the executable into the spool; it is "
               "transferred from its path when the job starts (submit with -spool to send it now)", "copy_to_spool")


def h_arguments(b: Builder) -> None:
    a1 = b.get("arguments", "args")
    a2 = b.get("arguments2")
    if a1 is not None and a2 is not None and not b.bool("allow_arguments_v1", False):
        b.error("both 'arguments' and 'arguments2' given: also set allow_arguments_v1 = true", "arguments2")
    try:
        if a2 is not None:
            b.set("Arguments", arglist.parse_arguments2(a2))
        elif a1 is not None:
            attr, val = arglist.parse_arguments(a1)
            b.set(attr, val)
    except arglist.ArgSyntaxError as e:
        key = "arguments2" if a2 is not None else "arguments" if b.get("arguments") is not None else "args"
        b.error(f"{key}: {e}", key)
    if b.lookup("Args") is None and b.lookup("Arguments") is None:
        b.set("Arguments", "")


def h_environment(b: Builder) -> None:
    e1 = b.get("environment", "env")
    e2 = b.get("environment2")
    pairs: list[tuple[str, str]] = []
    getenv = b.get("getenv", "get_env")
    if getenv is not None:  # imported first: the description's own variables win
        pairs.extend(imported(b.ctx.env, getenv, v1_safe=e1 is not None and e2 is None))
    try:
        if e2 is not None:
            if not arglist.is_v2_quoted(e2):
                raise arglist.ArgSyntaxError(f"expected the new syntax, the whole value in double quotes: {e2.strip()}")
            pairs.extend(arglist.parse_environment(e2))
        elif e1 is not None:
            pairs.extend(arglist.parse_environment(e1))
    except arglist.ArgSyntaxError as e:
        key = "environment2" if e2 is not None else "environment" if b.get("environment") is not None else "env"
        b.error(f"{key}: {e}", key)
    # `env = A=1;B=2` (the `env` command, old syntax, no environment2) asks for the old
    # attribute: condor_submit then writes Env and EnvDelim instead of Environment
    v1 = b.get("env")
    if e1 is not None and e2 is None and v1 is not None and not arglist.is_v2_quoted(v1):
        b.set("Env", arglist.join_environment_v1(pairs))
        b.set("EnvDelim", ";")
    else:
        b.set("Environment", arglist.join_environment(pairs))


def h_status(b: Builder) -> None:
    if b.bool("hold", False):
        b.set("JobStatus", JobStatus.HELD)
        b.set("HoldReasonCode", 15)
        b.set("HoldReason", "submitted on hold at user's request")
    else:
        b.set("JobStatus", JobStatus.IDLE)
    b.set("EnteredCurrentStatus", b.ctx.qdate)


def _std(b: Builder, keys: tuple[str, ...], attr: str, xfer_key: str, xfer_attr: str, stream_key: str, stream_attr: str) -> None:
    """In/Out/Err: /dev/null (or nothing) means no transfer; otherwise Stream* says whether to stream."""
    transfer = b.bool(xfer_key, True)
    stream = b.bool(stream_key, False)
    v = b.get(*keys)
    if v is None or v == "/dev/null":
        v = "/dev/null"
        transfer = False
    b.set(attr, v)
    if transfer:
        b.set(stream_attr, stream)
    else:
        b.set(xfer_attr, False)


def h_stdin(b: Builder) -> None:
    _std(b, ("input", "stdin"), "In", "transfer_input", "TransferIn", "stream_input", "StreamIn")


def h_stdout(b: Builder) -> None:
    _std(b, ("output", "stdout"), "Out", "transfer_output", "TransferOut", "stream_output", "StreamOut")


def h_stderr(b: Builder) -> None:
    _std(b, ("error", "stderr"), "Err", "transfer_error", "TransferErr", "stream_error", "StreamErr")


def h_log(b: Builder) -> None:
    v = b.get("log")
    if v is not None:
        b.set("UserLog", _path(b, v))
    x = b.get("log_xml")
    if x is not None:
        b.set("UserLogUseXML", b.bool("log_xml", False))
    d = b.get("dagman_log")
    if d is not None:
        b.set("DAGManNodesLog", _path(b, d))


def h_notification(b: Builder) -> None:
    v = b.get("notification")
    n = NOTIFY.get((v or "never").strip().lower())  # JOB_DEFAULT_NOTIFICATION is NEVER
    if n is None:
        b.error(f"notification = {v}: use Never, Always, Complete, Start or Error", "notification")
    b.set("JobNotification", n)
    u = b.get("notify_user")
    if u is not None:
        u = u.strip()
        problem = address_problem(u) if u else None
        if problem is not None:  # the schedd passes it to the MAIL program as root
            b.error(f"notify_user = {u}: {problem}", "notify_user")
        b.set("NotifyUser", u)
    ea = b.get("email_attributes")
    if ea is not None:  # a list: condor_submit rejoins it with bare commas
        b.set("EmailAttributes", ",".join(x for x in re.split(r"[\s,]+", ea) if x))


def h_rank(b: Builder) -> None:
    r = b.get("rank", "preferences")
    b.set("Rank", check_expr(b, r, "rank") if r is not None else 0.0)


def h_periodic(b: Builder) -> None:
    # no defaults: HTCondor (SUBMIT_INSERT_DEFAULT_POLICY_EXPRS = false) leaves them out and
    # reads an absent policy expression as false
    for key, attr, default in (
        ("periodic_hold", "PeriodicHold", None),
        ("periodic_hold_reason", "PeriodicHoldReason", None),
        ("periodic_hold_subcode", "PeriodicHoldSubCode", None),
        ("periodic_release", "PeriodicRelease", None),
        ("periodic_remove", "PeriodicRemove", None),
        ("periodic_vacate", "PeriodicVacate", None),
        ("on_exit_hold_reason", "OnExitHoldReason", None),
        ("on_exit_hold_subcode", "OnExitHoldSubCode", None),
    ):
        v = b.get(key, attr)
        if v is not None:
            b.set(attr, check_expr(b, v, key))
        elif default is not None:
            b.set(attr, default)


def h_leave_in_queue(b: Builder) -> None:
    v = b.get("leave_in_queue", "LeaveJobInQueue")
    b.set("LeaveJobInQueue", _literal_or_expr(b, v, "leave_in_queue") if v is not None else False)


def wrap_for(text: str, op: str) -> str:
    """Parenthesize an expression about to be joined with ``op`` (``||`` or ``&&``) only
    where its own top operator binds less tightly, as HTCondor does."""
    # lazy: the ClassAd parser (~12 ms) only when a description joins expressions
    from roost.classad import ast
    from roost.classad.parser import parse_expr

    s = text.strip()
    try:
        node = parse_expr(s)
    except ClassAdSyntaxError:
        return f"({s})"
    if isinstance(node, ast.Conditional) or (
            isinstance(node, ast.BinaryOp) and op == "&&" and node.op == "||"):
        return f"({s})"
    return s


def _wrap_or(text: str) -> str:
    return wrap_for(text, "||")


def h_retries(b: Builder) -> None:
    erc = b.get("on_exit_remove", "OnExitRemove")
    ehc = b.get("on_exit_hold", "OnExitHold")
    retries = _int(b, "max_retries", "JobMaxRetries")
    success = _int(b, "success_exit_code", "JobSuccessExitCode")
    until = b.get("retry_until")
    if ehc is not None:
        b.set("OnExitHold", check_expr(b, ehc, "on_exit_hold"))
    if retries is None and success is None and until is None:
        # no defaults, as in HTCondor: an absent OnExitRemove means true, OnExitHold false
        if erc is not None:
            b.set("OnExitRemove", check_expr(b, erc, "on_exit_remove"))
        return
    if ehc is None:
        b.set("OnExitHold", False)
    if until is not None:
        check_expr(b, until, "retry_until")
        u = until.strip()
        until = f"ExitCode =?= {int(u)}" if re.fullmatch(r"-?\d+", u) else _wrap_or(u)
    b.set("JobMaxRetries", retries if retries is not None else 2)
    code = "0"
    if success is not None:
        b.set("JobSuccessExitCode", success)
        code = "JobSuccessExitCode"
    if until is not None:
        code += " || " + until
    rm = f"NumJobCompletions > JobMaxRetries || ExitCode =?= {code}"
    if erc is not None:
        check_expr(b, erc, "on_exit_remove")
        rm += " || " + _wrap_or(erc)
    b.set("OnExitRemove", Expr(rm))


def h_killsig(b: Builder) -> None:
    for key, attr in (("kill_sig", "KillSig"), ("remove_kill_sig", "RemoveKillSig"), ("hold_kill_sig", "HoldKillSig")):
        v = b.get(key)
        if v is None and attr == "KillSig":
            v = job_universe(b).kill_sig  # every universe but vanilla gets an explicit default
        if v is not None:
            v = v.strip().upper()
            b.set(attr, v if v.isdigit() or v.startswith("SIG") else "SIG" + v)
    t = _int(b, "kill_sig_timeout")
    if t is not None:
        b.set("KillSigTimeout", t)


_REQUEST_RE = re.compile(r"request_([A-Za-z0-9][A-Za-z0-9_]*)\Z", re.IGNORECASE)


def h_resources(b: Builder) -> None:
    cpus = b.get("request_cpus", "RequestCpus")
    if cpus is None and b.lookup("RequestCpus") is None:
        cpus = "1"
    if cpus is not None and cpus.strip().lower() != "undefined":
        b.set("RequestCpus", _literal_or_expr(b, cpus, "request_cpus"))
    disk = b.get("request_disk", "RequestDisk")
    if disk is None:
        b.set("RequestDisk", Expr("MAX({1024, (TransferInputSizeMB + 1) * 1.25}) * 1024"))
    elif disk.strip().lower() != "undefined":
        kb = parse_size(disk, 1024)
        b.set("RequestDisk", kb if kb is not None else check_expr(b, disk, "request_disk"))
    mem = b.get("request_memory", "RequestMemory")
    if mem is None:
        b.set("RequestMemory", 128)
    elif mem.strip().lower() != "undefined":
        mb = parse_size(mem, 1024 * 1024)
        b.set("RequestMemory", mb if mb is not None else check_expr(b, mem, "request_memory"))
    gpus = b.get("request_gpus", "RequestGpus")
    if gpus is not None and gpus.strip().lower() != "undefined":
        b.set("RequestGPUs", _literal_or_expr(b, gpus, "request_gpus"))
    if b.lookup("RequestGPUs") is not None:
        # only a job that asks for GPUs says which ones (condor_submit ignores these otherwise)
        req = b.get("require_gpus", "RequireGPUs")
        if req is not None:
            b.set("RequireGPUs", check_expr(b, req, "require_gpus"))
        for key, attr in (("gpus_minimum_capability", "GPUsMinCapability"),
                          ("gpus_maximum_capability", "GPUsMaxCapability"),
                          ("gpus_minimum_memory", "GPUsMinMemory"), ("gpus_minimum_runtime", "GPUsMinRuntime")):
            v = b.get(key)
            if v is None:
                continue
            mb = parse_size(v, 1024 * 1024) if attr == "GPUsMinMemory" else None
            b.set(attr, mb if mb is not None else _literal_or_expr(b, v, key))
    for key in b.extra_keys:
        m = _REQUEST_RE.match(key)
        if not m:
            continue
        tag_low = m.group(1).lower()
        if tag_low in ("cpu", "gpu"):
            b.warn(f"{key} is not a valid submit keyword, did you mean {key}s?", key)
            continue
        if tag_low in ("gpu_memory", "gpus_memory"):
            b.error(f"{key} is not a valid submit keyword: use gpus_minimum_memory to constrain GPU memory", key)
        if tag_low in ("cpus", "disk", "memory", "gpus"):
            continue
        v = b.get(key)
        if v is not None:  # the tag keeps the case it was written in (request_foo -> Requestfoo)
            b.set("Request" + m.group(1), _literal_or_expr(b, v, key))


_LIMIT_RE = re.compile(r"[a-z_][a-z0-9_.]*(:(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?)?\Z")


def h_concurrency(b: Builder) -> None:
    v = b.get("concurrency_limits")
    ve = b.get("concurrency_limits_expr")
    if v is not None and ve is not None:
        b.error("concurrency_limits and concurrency_limits_expr cannot both be given", "concurrency_limits_expr")
    if v is not None:
        # as condor_submit: lower-cased, split on commas and blanks, each NAME[:INCREMENT]
        # checked, sorted (so equal sets of limits compare equal)
        limits = sorted(x for x in re.split(r"[\s,]+", v.lower()) if x)
        for lim in limits:
            if not _LIMIT_RE.match(lim):
                b.error(f"concurrency_limits: invalid concurrency limit '{lim}'", "concurrency_limits")
        if limits:
            b.set("ConcurrencyLimits", ",".join(limits))
    elif ve is not None:
        b.set("ConcurrencyLimits", check_expr(b, ve, "concurrency_limits_expr"))


_SUBMITTER_NAME = re.compile(r"[\w.+@-]+\Z")


def h_accounting(b: Builder) -> None:
    project = b.get("project_name", "ProjectName")
    if project is not None:
        b.set("ProjectName", project)
    group = b.get("accounting_group", "AccountingGroup")
    user = b.get("accounting_group_user", "AcctGroupUser")
    if b.bool("nice_user", False, "NiceUser"):
        if group is None:
            group = "nice-user"  # NICE_USER_ACCOUNTING_GROUP_NAME
        elif group != "nice-user":
            b.warn("nice_user conflicts with accounting_group; nice_user will be ignored", "nice_user")
        b.set("MaxJobRetirementTime", 0)
    if group is None and user is None:
        return
    user = user if user is not None else (b.ctx.owner or "")
    if group is not None and not _SUBMITTER_NAME.match(group):
        b.error(f"accounting_group = {group}: not a valid group name", "accounting_group")
    if user and not _SUBMITTER_NAME.match(user):
        b.error(f"accounting_group_user = {user}: not a valid user name", "accounting_group_user")
    b.set("AcctGroupUser", user)
    if group is not None:
        b.set("AcctGroup", group)
        b.set("AccountingGroup", f"{group}.{user}")
    else:
        b.set("AccountingGroup", user)


# command -> (attribute, kind); kind: i int, b bool, s string, e expression, q string with quotes stripped
_SIMPLE: list[tuple[str, str, str]] = [
    ("priority", "JobPrio", "i"),
    ("prio", "JobPrio", "i"),
    ("batch_name", "JobBatchName", "q"),
    ("batch_id", "JobBatchId", "q"),
    ("description", "JobDescription", "s"),
    ("max_job_retirement_time", "MaxJobRetirementTime", "e"),
    ("job_max_vacate_time", "JobMaxVacateTime", "e"),
    ("job_lease_duration", "JobLeaseDuration", "e"),
    ("coresize", "CoreSize", "i"),
    ("checkpoint_exit_code", "SuccessCheckpointExitCode", "i"),
    ("checkpoint_destination", "CheckpointDestination", "s"),
    ("transfer_checkpoint_files", "TransferCheckpoint", "s"),
    ("checkpoint_method", "CheckpointMethod", "q"),  # roost's own: "criu" (transparent checkpoints)
    ("preserve_relative_paths", "PreserveRelativePaths", "b"),
    ("erase_output_and_error_on_restart", "DontAppend", "b"),
    ("want_io_proxy", "WantIOProxy", "b"),
    ("want_remote_io", "WantRemoteIO", "b"),
    ("want_graceful_removal", "WantGracefulRemoval", "e"),
    ("run_as_owner", "RunAsOwner", "b"),
    ("max_transfer_input_mb", "MaxTransferInputMB", "e"),
    ("max_transfer_output_mb", "MaxTransferOutputMB", "e"),
    ("allowed_job_duration", "AllowedJobDuration", "e"),
    ("allowed_execute_duration", "AllowedExecuteDuration", "e"),
    ("cuda_version", "CUDAVersion", "s"),
    ("jobset", "JobSetName", "q"),
    ("job_machine_attrs", "JobMachineAttrs", "s"),
    ("job_ad_information_attrs", "JobAdInformationAttrs", "s"),
    ("output_destination", "OutputDestination", "s"),
    ("encrypt_execute_directory", "EncryptExecuteDirectory", "b"),
    ("stack_size", "StackSize", "e"),
    ("deferral_time", "DeferralTime", "e"),
    ("deferral_window", "DeferralWindow", "i"),
    ("deferral_prep_time", "DeferralPrepTime", "i"),
    ("docker_network_type", "DockerNetworkType", "s"),
    ("max_idle", "JobMaterializeMaxIdle", "e"),
    ("materialize_max_idle", "JobMaterializeMaxIdle", "e"),
    ("max_materialize", "JobMaterializeLimit", "i"),
    ("skip_filechecks", "SkipFileChecks", "b"),
    ("submit_event_notes", "SubmitEventNotes", "s"),
    ("transfer_plugins", "TransferPlugins", "s"),
    ("manifest", "JobManifestDesired", "b"),
    ("manifest_dir", "JobManifestDir", "s"),
    # the rest of condor_submit's plain keyword table (submit_utils.cpp prunable_keywords)
    ("next_job_start_delay", "NextJobStartDelay", "e"),
    ("keep_claim_idle", "KeepClaimIdle", "e"),
    ("ulog_execute_attrs", "UserLogExecuteEventAttrs", "s"),
    ("docker_pull_policy", "DockerPullPolicy", "s"),
    ("docker_override_entrypoint", "DockerOverrideEntrypoint", "b"),
    ("docker_send_credentials", "DockerSendCredentials", "b"),
    ("container_target_dir", "ContainerTargetDir", "q"),
    ("mount_under_scratch", "MountUnderScratch", "q"),
    ("transfer_container", "TransferContainer", "b"),
    ("want_job_networking", "WantJobNetworking", "b"),
    ("starter_debug", "JobStarterDebug", "q"),
    ("container_is_common", "ContainerIsCommon", "b"),
    ("job_machine_attrs_history_length", "JobMachineAttrsHistoryLength", "i"),
    ("remote_initialdir", "RemoteIwd", "s"),
    ("output_directory", "OutputDirectory", "s"),
    ("encrypt_input_files", "EncryptInputFiles", "s"),
    ("encrypt_output_files", "EncryptOutputFiles", "s"),
    ("dont_encrypt_input_files", "DontEncryptInputFiles", "s"),
    ("dont_encrypt_output_files", "DontEncryptOutputFiles", "s"),
    ("load_profile", "LoadProfile", "b"),
    ("primary_unix_group", "PrimaryUnixGroup", "s"),
    ("file_remaps", "FileRemaps", "e"),
    ("buffer_files", "BufferFiles", "e"),
    ("buffer_size", "BufferSize", "e"),
    ("buffer_block_size", "BufferBlockSize", "e"),
    ("fetch_files", "FetchFiles", "s"),
    ("compress_files", "CompressFiles", "s"),
    ("append_files", "AppendFiles", "s"),
    ("local_files", "LocalFiles", "s"),
    ("noop_job", "IsNoopJob", "e"),
    ("noop_job_exit_signal", "NoopJobExitSignal", "e"),
    ("noop_job_exit_code", "NoopJobExitCode", "e"),
    ("dagnodename", "DAGNodeName", "s"),
    ("match_list_length", "LastMatchListLength", "i"),
    ("dagman_job_id", "DAGManJobId", "i"),
    ("submit_event_user_notes", "SubmitEventUserNotes", "s"),
    ("submit_event_notes_attrs", "SubmitEventNotesAttrs", "s"),
    ("cron_minute", "CronMinute", "s"),
    ("cron_hour", "CronHour", "s"),
    ("cron_day_of_month", "CronDayOfMonth", "s"),
    ("cron_month", "CronMonth", "s"),
    ("cron_day_of_week", "CronDayOfWeek", "s"),
    ("cron_window", "DeferralWindow", "i"),
    ("cron_prep_time", "DeferralPrepTime", "i"),
    ("core_size", "CoreSize", "i"),
    ("skip_if_dataflow", "SkipIfDataflow", "b"),
]


def h_simple(b: Builder) -> None:
    for key, attr, kind in _SIMPLE:
        v = b.get(key)
        if v is None:
            continue
        if kind == "i":
            try:
                b.set(attr, int(v.strip()))
            except ValueError:
                b.error(f"{key} = {v}: expected an integer", key)
        elif kind == "b":
            b.set(attr, b.bool(key, False))
        elif kind == "e":
            b.set(attr, _literal_or_expr(b, v, key))
        elif kind == "q":
            s = v.strip()
            b.set(attr, s[1:-1] if len(s) >= 2 and s[0] == s[-1] == '"' else s)
        else:
            b.set(attr, v)
    if b.lookup("JobPrio") is None:
        b.set("JobPrio", 0)


_STF = {"yes": "YES", "no": "NO", "if_needed": "IF_NEEDED", "true": "YES", "false": "NO"}
_WTTO = {"on_exit": "ON_EXIT", "on_exit_or_evict": "ON_EXIT_OR_EVICT", "on_success": "ON_SUCCESS", "never": "NEVER"}


def _file_list(v: str) -> str:
    return ",".join(x.strip() for x in v.split(",") if x.strip())


def h_transfer(b: Builder) -> None:
    tin = b.get("transfer_input_files", "TransferInputFiles")
    tout = b.get("transfer_output_files", "TransferOutputFiles")
    remaps = b.get("transfer_output_remaps")
    should_v = b.get("should_transfer_files", "ShouldTransferFiles")
    when_v = b.get("when_to_transfer_output", "WhenToTransferOutput")
    should = "IF_NEEDED" if should_v is None else _STF.get(should_v.strip().lower())
    if should is None:
        b.error(f"should_transfer_files = {should_v}: use YES, NO or IF_NEEDED", "should_transfer_files")
    when = "ON_EXIT" if when_v is None else _WTTO.get(when_v.strip().lower())
    if when is None:
        b.error(f"when_to_transfer_output = {when_v}: use ON_EXIT, ON_EXIT_OR_EVICT or ON_SUCCESS", "when_to_transfer_output")
    if should == "NO" and (tin is not None or tout is not None):
        b.error("transfer_input_files/transfer_output_files given but should_transfer_files = NO", "should_transfer_files")
    if should == "NO" and when_v is None:
        when = "NEVER"
    if (should == "NO") != (when == "NEVER"):
        b.error(f"when_to_transfer_output = {when} contradicts should_transfer_files = {should}", "when_to_transfer_output")
    if when == "ON_EXIT_OR_EVICT" and should == "IF_NEEDED":
        if should_v is None:
            should = "YES"
        else:
            b.error("when_to_transfer_output = ON_EXIT_OR_EVICT and should_transfer_files = IF_NEEDED are incompatible", "when_to_transfer_output")
    b.set("ShouldTransferFiles", should)
    if should != "NO":
        b.set("WhenToTransferOutput", when)
    size_kb = 0
    if tin is not None:
        files = _file_list(tin)
        b.set("TransferInput", files)
        fs = b.ctx.file_size
        if fs is not None:
            for f in files.split(","):
                if "://" not in f:
                    size_kb += (fs(_path(b, f)) + 1023) // 1024
    if tout is not None:
        b.set("TransferOutput", _file_list(tout))
    if remaps is not None:
        r = remaps.strip()
        b.set("TransferOutputRemaps", r[1:-1] if len(r) >= 2 and r[0] == r[-1] == '"' else r)
    b.set("TransferInputSizeMB", (size_kb + 1023) // 1024 if size_kb else 0)


def h_image_size(b: Builder) -> None:
    """ExecutableSize/ImageSize in KB from the file system (when the caller lets us look)."""
    exe_kb = 0
    cmd = b.lookup("Cmd")
    fs = b.ctx.file_size
    if fs is not None and isinstance(cmd, str) and cmd.startswith("/"):
        exe_kb = (fs(cmd) + 1023) // 1024
    b.set("ExecutableSize", exe_kb)
    image = b.get("image_size", "ImageSize")
    if image is not None:
        kb = parse_size(image, 1024)
        if kb is None or kb < 1:
            b.error(f"image_size = {image}: must be a positive size", "image_size")
        b.set("ImageSize", kb or 0)
    else:
        b.set("ImageSize", exe_kb)
    in_mb = b.lookup("TransferInputSizeMB")
    b.set("DiskUsage", max(exe_kb + (in_mb if isinstance(in_mb, int) else 0) * 1024, 1 if fs else 0))


def h_auto(b: Builder) -> None:
    """What condor_submit fills in when the description did not say."""
    if b.lookup("SuccessCheckpointExitCode") is not None:
        b.set("WantFTOnCheckpoint", True)  # the starter ignores the code without it
    if b.lookup("DeferralTime") is not None:
        # a deferred job's window and prep time default (JOB_DEFERRAL_*_DEFAULT), and the
        # schedd's interval its Requirements refer to (SCHEDD_INTERVAL)
        if b.lookup("DeferralWindow") is None:
            b.set("DeferralWindow", 0)
        if b.lookup("DeferralPrepTime") is None:
            b.set("DeferralPrepTime", 300)
        if b.lookup("ScheddInterval") is None:
            b.set("ScheddInterval", 300)
    if job_universe(b).lease and b.lookup("JobLeaseDuration") is None:
        b.set("JobLeaseDuration", 2400)  # JOB_DEFAULT_LEASE_DURATION


def h_forced(b: Builder) -> None:
    """``+Attr = expr`` and ``MY.Attr = expr`` win over everything before them."""
    for key in b.extra_keys:
        if key[:3].lower() == "my.":
            name = key[3:]
        else:
            continue
        v = b.get(key)
        if v is not None:
            b.set(name, _literal_or_expr(b, v, key))


def h_check_files(b: Builder) -> None:
    """condor_submit's checks of the files a job names, before anything is queued: the
    executable (unless it is on the execute machine), the input files, and the
    directories of the log, output and error. Each problem is one line naming the
    file, the line and what is wrong."""
    check = b.ctx.check_path
    if check is None or b.bool("skip_filechecks", False):
        return

    def problem(what: str, path: str, key: str) -> None:
        if "$$(" in path or "://" in path:  # matched on the execute machine, or a URL
            return
        why = check(what, path)
        if why is not None:
            b.error(f"{key}: {why}", key)

    cmd = b.lookup("Cmd")
    # a universe may name a resource or an image, not a file here (grid, vm)
    if isinstance(cmd, str) and b.lookup("TransferExecutable") is not False \
            and job_universe(b).checks_executable:
        problem("executable", cmd, "executable")
    transfers = b.lookup("ShouldTransferFiles") != "NO"
    stdin = b.lookup("In")
    if isinstance(stdin, str) and stdin != "/dev/null" and b.lookup("TransferIn") is not False:
        problem("input", _path(b, stdin), "input")
    tin = b.lookup("TransferInput")
    if transfers and isinstance(tin, str):
        for f in tin.split(","):
            f = f.strip()
            if f and "://" not in f:
                problem("input", _path(b, f.rstrip("/")), "transfer_input_files")
    for attr, key, xfer in (("UserLog", "log", None), ("Out", "output", "TransferOut"), ("Err", "error", "TransferErr")):
        v = b.lookup(attr)
        if isinstance(v, str) and v and v != "/dev/null" and (xfer is None or b.lookup(xfer) is not False):
            problem("written", _path(b, v), key)


#: handlers whose result depends on the file system, not only on the text: never templated per proc
READS_FILES: frozenset[Handler] = frozenset({h_iwd, h_transfer, h_image_size, h_check_files})

HANDLERS: list[Handler] = [
    h_universe, h_universe_early, h_iwd, h_executable, h_arguments, h_universe_shape, h_environment, h_status,
    h_stdin, h_stdout, h_stderr, h_log, h_notification, h_rank, h_periodic, h_leave_in_queue,
    h_retries, h_killsig, h_resources, h_concurrency, h_accounting, h_simple, h_transfer, h_universe_late,
    h_image_size, h_auto, h_forced, h_check_files,
]

KNOWN_KEYS: frozenset[str] = frozenset(
    k.lower()
    for k in (
        "universe grid_resource initialdir iwd initial_dir job_iwd executable container_image docker_image "
        "transfer_executable arguments args arguments2 allow_arguments_v1 "
        "environment env environment2 allow_environment_v1 getenv get_env hold input stdin transfer_input stream_input "
        "output stdout transfer_output stream_output error stderr transfer_error stream_error log log_xml dagman_log "
        "notification notify_user email_attributes rank preferences periodic_hold periodic_hold_reason "
        "periodic_hold_subcode periodic_release periodic_remove periodic_vacate on_exit_hold_reason on_exit_hold_subcode "
        "leave_in_queue on_exit_remove on_exit_hold max_retries success_exit_code retry_until kill_sig remove_kill_sig "
        "hold_kill_sig kill_sig_timeout request_cpus request_disk request_memory request_gpus gpus_minimum_capability "
        "gpus_maximum_capability gpus_minimum_memory gpus_minimum_runtime require_gpus concurrency_limits concurrency_limits_expr "
        "accounting_group accounting_group_user nice_user should_transfer_files when_to_transfer_output "
        "transfer_input_files transfer_output_files transfer_output_remaps requirements requirements "
        "shell interactive want_ft_on_checkpoint image_size project_name skip_filechecks copy_to_spool"
    ).split()
) | frozenset(k for k, _, _ in _SIMPLE)


def is_known_key(key: str) -> bool:
    """Some handler, or some registered universe, reads submit command ``key`` (lower case)."""
    return key in KNOWN_KEYS or key in registry.submit_keys()
