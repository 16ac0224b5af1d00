"""roost's built-in knob defaults: what a pool runs on when no file says otherwise.

Each knob has a raw default (expanded lazily like any value, so
``LOG = $(LOCAL_DIR)/log`` follows a moved ``LOCAL_DIR``) and a line
saying what it controls, which ``roost config -v`` shows.  Values follow
HTCondor's where roost keeps HTCondor's meaning; where roost departs
(faster negotiation, loopback-only personal pools) the description says so.
Host facts (``DETECTED_CPUS``, ``FULL_HOSTNAME``, ``ROOST_HOME`` ...) are
not here: the loader measures them and passes them in.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Knob:
    name: str
    default: str
    description: str


_KNOBS = [
    # -- where things live -----------------------------------------------------
    Knob("LOCAL_DIR", "$(ROOST_HOME)", "root of this host's roost state"),
    Knob("LOG", "$(LOCAL_DIR)/log", "daemon logs"),
    Knob("SPOOL", "$(LOCAL_DIR)/spool", "job queue database, history and spooled sandboxes"),
    Knob("EXECUTE", "$(LOCAL_DIR)/execute", "parent of running jobs' sandbox directories"),
    Knob("RUN", "$(LOCAL_DIR)/run", "daemon sockets and address files"),
    Knob("LOCK", "$(LOG)", "lock files"),
    Knob("HISTORY", "$(SPOOL)/history", "job history store"),
    Knob("LOCAL_CONFIG_FILE", "", "extra config files read after the main one (comma or space separated)"),
    Knob("LOCAL_CONFIG_DIR", "$(LOCAL_DIR)/config.d", "directory of config files read, in name order, after LOCAL_CONFIG_FILE"),
    # -- who talks to whom -------------------------------------------------------
    Knob("CONDOR_HOST", "$(FULL_HOSTNAME)", "the central manager's host"),
    Knob("COLLECTOR_HOST", "$(CONDOR_HOST)", "collector address host[:port]; port 0 means pick one and publish it under $(RUN)"),
    Knob("COLLECTOR_PORT", "9618", "collector port when COLLECTOR_HOST names none"),
    Knob("BIND_ADDRESS", "0.0.0.0", "address daemons listen on (ROLE:Personal sets 127.0.0.1)"),
    Knob("NETWORK_INTERFACE", "*", "address daemons advertise when BIND_ADDRESS is a wildcard (*: the detected IP_ADDRESS); never 0.0.0.0"),
    Knob("DAEMON_LIST", "MASTER", "daemons the master starts on this host"),
    Knob("MASTER_BACKOFF_CONSTANT", "9", "seconds before restarting a daemon that died"),
    Knob("MASTER_BACKOFF_FACTOR", "2.0", "growth of the restart delay for each successive death"),
    Knob("MASTER_BACKOFF_CEILING", "3600", "longest restart delay, seconds"),
    Knob("MASTER_RECOVER_FACTOR", "300", "seconds a daemon must stay up before its back-off resets"),
    # -- security ----------------------------------------------------------------
    Knob("UID_DOMAIN", "$(FULL_HOSTNAME)", "users with the same name and UID_DOMAIN are one user (user@UID_DOMAIN)"),
    Knob("QUEUE_SUPER_USERS", "root, condor", "users who may act on every job in the queue (the schedd's own account too)"),
    Knob("ALLOW_READ", "*", "who may query (status, q); unauthenticated peers too"),
    Knob("ALLOW_WRITE", "*", "who may submit and manage jobs (authenticated; the schedd lets each user act on their own jobs only)"),
    Knob("ALLOW_ADMINISTRATOR", "condor@$(UID_DOMAIN), root@$(UID_DOMAIN), $(USERNAME)@$(UID_DOMAIN)",
         "who may drain, set priorities, reconfigure and shut down: the daemons' account and root"),
    Knob("ALLOW_DAEMON", "condor@$(UID_DOMAIN), $(USERNAME)@$(UID_DOMAIN)",
         "daemons: condor@UID_DOMAIN is the identity of the pool's daemon tokens"),
    Knob("ALLOW_NEGOTIATOR", "$(ALLOW_DAEMON)", "who may act as the negotiator"),
    Knob("ALLOW_ADVERTISE_MASTER", "$(ALLOW_DAEMON)", "who may advertise masters"),
    Knob("ALLOW_ADVERTISE_STARTD", "$(ALLOW_DAEMON)", "who may advertise slots"),
    Knob("ALLOW_ADVERTISE_SCHEDD", "$(ALLOW_DAEMON)", "who may advertise schedds and submitters"),
    Knob("DENY_READ", "", "hosts/users denied READ, checked before ALLOW_READ"),
    Knob("DENY_WRITE", "", "hosts/users denied WRITE"),
    Knob("DENY_ADMINISTRATOR", "", "hosts/users denied ADMINISTRATOR"),
    Knob("DENY_DAEMON", "", "hosts denied DAEMON"),
    Knob("DENY_NEGOTIATOR", "", "hosts denied NEGOTIATOR"),
    Knob("SEC_DEFAULT_AUTHENTICATION_METHODS", "FS, IDTOKENS, SSL", "authentication methods tried, in order"),
    Knob("SEC_TOKEN_DIRECTORY", "$(LOCAL_DIR)/tokens.d", "where IDTOKENS-style tokens are kept"),
    Knob("SEC_TOKEN_SYSTEM_DIRECTORY", "$(SEC_TOKEN_DIRECTORY)", "tokens daemons present to other daemons (HTCondor: /etc/condor/tokens.d)"),
    Knob("TRUST_DOMAIN", "$(CONDOR_HOST)", "issuer (iss) of this pool's tokens; the same on every host (HTCondor defaults it to $(UID_DOMAIN))"),
    Knob("SEC_PASSWORD_DIRECTORY", "$(LOCAL_DIR)/passwords.d", "token signing keys, one owner-only file per key name"),
    Knob("SEC_TOKEN_POOL_SIGNING_KEY_FILE", "$(SEC_PASSWORD_DIRECTORY)/POOL", "the POOL signing key, made by the central manager at first start"),
    Knob("SEC_TOKEN_REVOCATION_EXPR", "", "ClassAd expression over a token's claims (sub, jti, iat ...): true revokes it"),
    Knob("SEC_TOKEN_REVOCATION_FILE", "$(LOCAL_DIR)/revoked_tokens", "revoked token ids (jti), one a line; `roost token revoke` appends (roost only)"),
    Knob("SEC_TOKEN_MAX_AGE", "", "refuse tokens issued longer ago than this many seconds (empty: no limit)"),
    Knob("SEC_DEFAULT_ENCRYPTION", "REQUIRED", "TLS on TCP between hosts: REQUIRED, PREFERRED, OPTIONAL or NEVER (loopback and Unix sockets: see SEC_ENCRYPT_LOOPBACK)"),
    Knob("SEC_DEFAULT_INTEGRITY", "REQUIRED", "as SEC_DEFAULT_ENCRYPTION (TLS gives both; the stronger of the two applies)"),
    Knob("SEC_ENCRYPT_LOOPBACK", "False", "TLS on loopback TCP too (roost; only root can read loopback traffic)"),
    Knob("AUTH_SSL_SERVER_CERTFILE", "$(LOCAL_DIR)/ssl/host.crt", "this host's certificate (PEM); a self-signed one is made here at first start when missing"),
    Knob("AUTH_SSL_SERVER_KEYFILE", "$(LOCAL_DIR)/ssl/host.key", "its private key (owner-only)"),
    Knob("AUTH_SSL_SERVER_CAFILE", "", "CAs whose client certificates the daemons accept (the SSL method); empty: none"),
    Knob("AUTH_SSL_REQUIRE_CLIENT_CERTIFICATE", "False", "refuse TLS clients that show no certificate"),
    Knob("AUTH_SSL_CLIENT_CAFILE", "", "CAs that must have signed the daemons' certificates; empty: not checked (IDTOKENS binds to the certificate)"),
    Knob("AUTH_SSL_CLIENT_CERTFILE", "", "the certificate a client shows for the SSL method (a daemon's: the host's)"),
    Knob("AUTH_SSL_CLIENT_KEYFILE", "", "its private key"),
    Knob("SSL_SKIP_HOST_CHECK", "False", "do not check that a daemon's certificate names the host connected to"),
    Knob("KERBEROS_SERVER_KEYTAB", "", "the daemons' service key for KERBEROS (empty: KRB5_KTNAME or the system keytab)"),
    Knob("KERBEROS_SERVER_PRINCIPAL", "", "the daemons' service principal clients ask tickets for (empty: KERBEROS_SERVER_SERVICE@host)"),
    Knob("KERBEROS_SERVER_SERVICE", "host", "service name of the daemons' principal when KERBEROS_SERVER_PRINCIPAL is empty"),
    Knob("CERTIFICATE_MAPFILE", "", "map file: METHOD PRINCIPAL CANONICAL lines, from certificate subjects to user@domain"),
    # -- collector -------------------------------------------------------------
    Knob("UPDATE_INTERVAL", "300", "seconds between a daemon's periodic ad updates to the collector"),
    Knob("CLASSAD_LIFETIME", "900", "seconds the collector keeps an ad without an update"),
    # -- negotiator and fair share ---------------------------------------------------
    Knob("NEGOTIATOR_INTERVAL", "60", "seconds between periodic negotiation cycles (the safety net)"),
    Knob("NEGOTIATOR_MIN_INTERVAL", "0.05", "least seconds between cycles; event-triggered cycles wait only this (roost's fast path)"),
    Knob("NEGOTIATOR_TIMEOUT", "10", "seconds the negotiator waits for a schedd's answer before skipping it this cycle"),
    Knob("NEGOTIATOR_MATCH_HOLD", "20", "seconds a matched slot is kept out of later cycles unless its startd reports a change first"),
    Knob("NEGOTIATOR_UPDATE_INTERVAL", "300", "seconds between negotiator ad updates"),
    Knob("NEGOTIATOR_CONSIDER_PREEMPTION", "True", "whether matching may preempt running jobs"),
    Knob("NEGOTIATOR_USE_SLOT_WEIGHTS", "True", "charge usage by SlotWeight instead of slot count"),
    Knob("PREEMPTION_REQUIREMENTS", "False", "when a better-priority user may preempt a claimed slot"),
    Knob("PREEMPTION_RANK", "", "which claimed slot to preempt first"),
    Knob("NEGOTIATOR_PRE_JOB_RANK", "", "ranks matches before the job's Rank"),
    Knob("NEGOTIATOR_POST_JOB_RANK", "", "ranks matches after the job's Rank"),
    Knob("PRIORITY_HALFLIFE", "86400", "seconds for a user's accumulated usage to halve"),
    Knob("DEFAULT_PRIO_FACTOR", "1000", "priority factor given to new users"),
    Knob("NICE_USER_PRIO_FACTOR", "1e10", "priority factor for nice_user jobs"),
    Knob("ACCOUNTANT_LOCAL_DOMAIN", "", "the local UID domain: new submitters of other domains get REMOTE_PRIO_FACTOR (empty: everyone is local)"),
    Knob("REMOTE_PRIO_FACTOR", "10000", "priority factor given to new submitters outside ACCOUNTANT_LOCAL_DOMAIN"),
    Knob("GROUP_NAMES", "", "accounting groups with quotas (GROUP_QUOTA_<group>; GROUP_PRIO_FACTOR_<group>: the factor its new submitters get)"),
    Knob("GROUP_ACCEPT_SURPLUS", "False", "whether groups may use slots beyond their quota (GROUP_ACCEPT_SURPLUS_<group> per group)"),
    Knob("CONCURRENCY_LIMIT_DEFAULT", "2308032", "limit of a concurrency limit name with no <NAME>_LIMIT knob"),
    Knob("ACCOUNTANT_SAVE_INTERVAL", "5", "roost: least seconds between writes of $(SPOOL)/accountant.json (also written at shutdown and on changes by `roost userprio`)"),
    # -- schedd ------------------------------------------------------------------
    Knob("SCHEDD_INTERVAL", "300", "seconds between the schedd's periodic housekeeping and ad updates"),
    Knob("SCHEDD_MIN_INTERVAL", "1", "least seconds between event-triggered schedd updates"),
    Knob("MAX_JOBS_RUNNING", "10000", "most jobs one schedd runs at once"),
    Knob("MAX_JOBS_PER_OWNER", "100000", "most jobs one user may have queued"),
    Knob("JOB_LEASE_DURATION", "2400", "seconds a running job survives loss of contact with its schedd"),
    Knob("ALIVE_INTERVAL", "300", "seconds between claim keep-alives"),
    Knob("MAX_CLAIM_ALIVES_MISSED", "6", "keep-alives a startd may miss before dropping the claim"),
    Knob("CLAIM_WORKLIFE", "1200", "seconds a claim may be reused for new jobs; empty means forever"),
    Knob("JOB_START_DELAY", "0", "seconds between job starts"),
    Knob("PERIODIC_EXPR_INTERVAL", "60", "seconds between evaluations of periodic_hold/release/remove"),
    Knob("SYSTEM_PERIODIC_HOLD", "", "pool-wide periodic hold expression"),
    Knob("SYSTEM_PERIODIC_RELEASE", "", "pool-wide periodic release expression"),
    Knob("SYSTEM_PERIODIC_REMOVE", "", "pool-wide periodic remove expression"),
    Knob("MAX_HISTORY_ROWS", "1000000", "jobs kept in history"),
    Knob("SCHEDD_FSYNC", "True", "whether the schedd fsyncs its job queue before acknowledging a change (False: survives kill -9, not power loss)"),
    # -- startd: resources --------------------------------------------------------
    Knob("NUM_CPUS", "$(DETECTED_CPUS)", "CPUs the startd offers (default: detected)"),
    Knob("MEMORY", "$(DETECTED_MEMORY)", "memory in MiB the startd offers (default: detected)"),
    Knob("RESERVED_MEMORY", "0", "MiB kept back from jobs"),
    Knob("DISK", "", "disk in KiB the startd offers (empty: measured under EXECUTE)"),
    Knob("SLOT_TYPE_1", "100%", "resources of slot type 1 (e.g. cpus=1, memory=25%)"),
    Knob("SLOT_TYPE_1_PARTITIONABLE", "True", "whether slot type 1 is carved into dynamic slots"),
    Knob("NUM_SLOTS_TYPE_1", "1", "how many slots of type 1"),
    Knob("NUM_SLOTS", "", "static slots when no SLOT_TYPE_n is used"),
    Knob("STARTD_ATTRS", "", "extra config knobs published in slot ads"),
    Knob("STARTD_LATCH_EXPRS", "", "expressions whose value changes are latched with a time"),
    Knob("STARTD_NOCLAIM_SHUTDOWN", "", "seconds unclaimed before the startd exits (empty: never)"),
    Knob("KILLING_TIMEOUT", "30", "seconds between soft kill and hard kill of a job"),
    Knob("STARTER_ALLOW_RUNAS_OWNER", "True", "as root, run a job as its Owner when that is a local non-root user"),
    Knob("SLOT_USER", "nobody", "as root, the user jobs run as when not as their Owner (never root)"),
    Knob("STARTD_DETECT_GPUS", "True", "whether the startd asks nvidia-smi for GPUs"),
    Knob("STARTD_USE_CGROUPS", "True", "roost: put each job in its own cgroup v2 (when writable) so every process it starts can be killed"),
    Knob("STARTD_ACTIVITY_UPDATE_DELAY", "1", "roost: seconds a Busy/Idle change on a claim may wait before its slot ad is sent (claims and releases go at once)"),
    Knob("MODIFY_REQUEST_EXPR_REQUESTCPUS", "quantize(RequestCpus, {1})", "rounds a job's CPU request when carving a dynamic slot"),
    Knob("MODIFY_REQUEST_EXPR_REQUESTMEMORY", "quantize(RequestMemory, {128})", "rounds a job's memory request (MiB) when carving a dynamic slot"),
    Knob("MODIFY_REQUEST_EXPR_REQUESTDISK", "quantize(RequestDisk, {1024})", "rounds a job's disk request (KiB) when carving a dynamic slot"),
    Knob("STARTD_MEMORY_LIMIT", "hard", "hard: a job over its slot's memory is killed (held, code 34); none: measured only; off: no memory cgroup"),
    Knob("STARTD_MEMORY_MOVE_DELAY", "0.05", "seconds after its start a job enters its cgroup v1 memory cgroup (a move stalls forks machine-wide ~10 ms)"),
    Knob("STARTER_UPDATE_INTERVAL", "300", "seconds between a starter's usage reports"),
    Knob("SLOTS_CONNECTED_TO_KEYBOARD", "0", "slots (by number; slot2_* are 2) whose KeyboardIdle follows the keyboard, terminals and the activity file; use POLICY : Desktop connects all"),
    Knob("SLOTS_CONNECTED_TO_CONSOLE", "0", "slots (by number) whose ConsoleIdle follows the console and the activity file; use POLICY : Desktop connects all"),
    Knob("DISCONNECTED_KEYBOARD_IDLE_BOOST", "1200", "seconds added to the startd's age for the idle times a slot does not see (not connected)"),
    Knob("POLLING_INTERVAL", "5", "seconds between evaluations of the owner policy (START, SUSPEND, PREEMPT ...)"),
    Knob("STARTD_ACTIVITY_FILE", "$(LOCAL_DIR)/activity", "roost: touching this file counts as keyboard and console activity (KeyboardIdle, ConsoleIdle); empty: no file"),
    Knob("STARTD_OWNER_DEVICES", "/dev/tty* /dev/pts/* /dev/input/*", "roost: devices (glob patterns) whose access times give KeyboardIdle/ConsoleIdle; empty: only the activity file"),
    # -- startd: policy -----------------------------------------------------------
    Knob("START", "True", "when a slot accepts a job"),
    Knob("SUSPEND", "False", "when a running job is suspended"),
    Knob("CONTINUE", "True", "when a suspended job resumes"),
    Knob("PREEMPT", "False", "when a running job is evicted"),
    Knob("KILL", "False", "when an evicting job is killed without waiting"),
    Knob("WANT_SUSPEND", "False", "whether to suspend (rather than evict) when SUSPEND fires"),
    Knob("WANT_VACATE", "True", "whether an evicted job gets a soft kill first"),
    Knob("WANT_HOLD", "", "when an evicted job should go on hold"),
    Knob("RANK", "0", "the machine owner's preference among jobs"),
    Knob("IS_OWNER", "False", "when the slot is in the Owner state"),
    Knob("MAXJOBRETIREMENTTIME", "0", "seconds a job may run on after preemption is decided"),
    Knob("MAX_JOB_RETIREMENT_TIME", "$(MAXJOBRETIREMENTTIME)", "alias of MaxJobRetirementTime"),
    Knob("MaxVacateTime", "10 * $(MINUTE)", "seconds a job gets to leave after a soft kill"),
    # -- names used by the policy templates ---------------------------------------------
    Knob("MINUTE", "60", "seconds in a minute, for policy expressions"),
    Knob("HOUR", "3600", "seconds in an hour, for policy expressions"),
    Knob("StartIdleTime", "15 * $(MINUTE)", "keyboard idle time before a desktop starts jobs"),
    Knob("ContinueIdleTime", "5 * $(MINUTE)", "keyboard idle time before a desktop resumes jobs"),
    Knob("MaxSuspendTime", "10 * $(MINUTE)", "longest suspension before eviction"),
    Knob("HighLoad", "0.5", "non-roost load above which a desktop counts as busy"),
    Knob("BackgroundLoad", "0.3", "non-roost load below which a desktop counts as idle"),
    Knob("ActivityTimer", "(time() - EnteredCurrentActivity)", "seconds in the slot's current activity"),
    Knob("StateTimer", "(time() - EnteredCurrentState)", "seconds in the slot's current state"),
    Knob("SmallJob", "(TARGET.ImageSize < (15 * 1024))", "a job under 15 MiB"),
    Knob("MediumJob", "(TARGET.ImageSize >= (15 * 1024) && TARGET.ImageSize < (50 * 1024))", "a job between 15 and 50 MiB"),
    Knob("BigJob", "(TARGET.ImageSize >= (50 * 1024))", "a job of 50 MiB or more"),
    Knob("VANILLA", "5", "the vanilla JobUniverse number"),
    Knob("IsVanilla", "(TARGET.JobUniverse == $(VANILLA))", "the job is vanilla universe"),
]

DEFAULTS: dict[str, Knob] = {k.name.upper(): k for k in _KNOBS}


