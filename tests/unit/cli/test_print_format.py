"""condor_q -print-format files: HTCondor 25.0.13's own formats rendered over a few job ads.

The formats are those HTCondor ships: condor_q's built-in ones (queue.cpp's
jobDefault_PrintFormat, jobHold_PrintFormat, jobIdle_PrintFormat) and the examples of
its manual (docs/classads/print-formats.rst: queue.cpf, q_totals.cpf). The expected
lines are worked out by hand from make_printmask.cpp / ad_printmask.cpp's rules.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from roost.cli.print_format import PrintFormatError, parse

JOB_DEFAULT = """SELECT
   ClusterId     AS ' ID'  NOSUFFIX  WIDTH 5 PRINTF '%4d.'
   ProcId        AS ' '    NOPREFIX  WIDTH 3 PRINTF '%-3d'
   Owner         AS  OWNER           WIDTH -14 PRINTAS OWNER OR ??
   QDate         AS '  SUBMITTED'    WIDTH 11 PRINTAS QDATE
   RemoteUserCpu AS '    RUN_TIME'   WIDTH 12 PRINTAS CPU_TIME
   JobStatus     AS ST                       PRINTAS JOB_STATUS
   JobPrio       AS PRI             WIDTH AUTO
   ImageSize     AS SIZE            WIDTH 4 PRINTAS MEMORY_USAGE
   Cmd           AS CMD             WIDTH 0 PRINTAS JOB_DESCRIPTION
SUMMARY STANDARD
"""

JOB_HOLD = """SELECT
   ClusterId     AS ' ID'  NOSUFFIX WIDTH 5 PRINTF '%4d.'
   ProcId        AS ' '    NOPREFIX WIDTH 3 PRINTF '%-3d'
   Owner         AS  OWNER WIDTH -14 PRINTAS OWNER OR ??
   EnteredCurrentStatus  AS HELD_SINCE WIDTH 11 PRINTAS QDATE OR ??
   HoldReasonCode AS CODE NOSUFFIX PRINTF %4d OR ?
   HoldReasonSubCode AS '/SUB' NOPREFIX PRINTF '/%-3d' TRUNCATE OR ' '
   HoldReason           AS HOLD_REASON WIDTH 0
SUMMARY STANDARD
"""

JOB_IDLE = """SELECT
   ClusterId     AS ' ID'  NOSUFFIX WIDTH 5 PRINTF '%4d.'
   ProcId        AS ' '    NOPREFIX WIDTH 3 PRINTF '%-3d'
   Owner         AS  OWNER          WIDTH -14 PRINTAS OWNER OR ??
   JobUniverse   AS 'UNIVERSE '  PRINTAS JOB_UNIVERSE
   RequestCpus   AS CPUS         PRINTF '%4d'
   RequestMemory AS MEMORY       PRINTF '%6d'
   NumShadowStarts?:0 AS STARTS  PRINTF '%6d'
   LastRemoteHost AS LAST_HOST WIDTH 0
SUMMARY NONE
"""

QUEUE_CPF = """# queue.cpf
# produce the standard output of condor_q
SELECT
   ClusterId     AS '    ID'       NOSUFFIX WIDTH AUTO
   ProcId        AS ' '            NOPREFIX            PRINTF '.%-3d'
   Owner         AS OWNER                   WIDTH -14  PRINTAS OWNER
   QDate         AS '  SUBMITTED'           WIDTH 11   PRINTAS QDATE
   RemoteUserCpu AS '    RUN_TIME'          WIDTH 12   PRINTAS CPU_TIME
   JobStatus     AS ST                                 PRINTAS JOB_STATUS
   JobPrio       AS PRI
   ImageSize     AS SIZE                    WIDTH 6    PRINTAS MEMORY_USAGE
   Cmd           AS CMD                                PRINTAS JOB_DESCRIPTION
SUMMARY STANDARD
"""

Q_TOTALS = """# q_totals.cpf
# show only totals with condor_q
SELECT NOHEADER NOTITLE
SUMMARY STANDARD
"""

QDATE = 1700000000  # 11/14 22:13 UTC
ADS: list[dict[str, Any]] = [
    # running: 30 s of earlier runs plus 3725 s of this one (ServerTime - ShadowBday)
    {"ClusterId": 12, "ProcId": 0, "Owner": "alice", "QDate": QDATE, "RemoteUserCpu": 5.0, "JobStatus": 2,
     "JobPrio": 0, "ImageSize": 2048, "Cmd": "/bin/sleep", "Arguments": "60", "ShadowBday": QDATE + 100,
     "RemoteWallClockTime": 30.0, "ServerTime": QDATE + 3825},
    # MemoryUsage (MB) wins over ImageSize; a JobDescription replaces the command
    {"ClusterId": 12, "ProcId": 1, "Owner": "alice", "QDate": QDATE, "RemoteUserCpu": 0.0, "JobStatus": 1,
     "JobPrio": 10, "ImageSize": 10, "MemoryUsage": 300, "Cmd": "/bin/sleep", "Arguments": "60",
     "JobDescription": "warmup"},
    # no Owner (OR ?? fills the column), no RemoteUserCpu (no OR: blank)
    {"ClusterId": 1234, "ProcId": 10, "QDate": QDATE, "JobStatus": 5, "JobPrio": -5, "ImageSize": 123456789,
     "Cmd": "/usr/bin/python3", "Arguments": "a.py b"},
]


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


def test_condor_q_default_format() -> None:
    pf = parse(JOB_DEFAULT, "default.cpf")
    assert not pf.nosummary and not pf.notitle
    assert pf.render(ADS, now=0).splitlines() == [
        " ID      OWNER            SUBMITTED     RUN_TIME ST PRI SIZE CMD",
        # %4d. padded to WIDTH 5; SIZE's %.1f cut to WIDTH 4 (fixed widths truncate)
        "  12.0   alice          11/14 22:13   0+01:02:35 R  0    2.0 sleep 60",
        "  12.1   alice          11/14 22:13   0+00:00:00 I  10  300. (warmup)",
        "1234.10  [????????????] 11/14 22:13              H  -5  1205 python3 a.py b",
    ]
    assert {"ClusterId", "ProcId", "Owner", "QDate", "RemoteUserCpu", "ShadowBday", "ServerTime",
            "MemoryUsage", "Arguments", "JobDescription"} <= set(pf.attributes())


def test_condor_q_hold_format() -> None:
    held = [{"ClusterId": 7, "ProcId": 0, "Owner": "bob", "EnteredCurrentStatus": QDATE, "HoldReasonCode": 1,
             "HoldReasonSubCode": 0, "HoldReason": "via condor_hold (by user bob)"},
            {"ClusterId": 8, "ProcId": 2, "Owner": "bob", "HoldReason": "x"}]
    assert parse(JOB_HOLD, "hold.cpf").render(held, now=0).splitlines() == [
        " ID      OWNER          HELD_SINCE  CODE/SUB HOLD_REASON",
        "   7.0   bob            11/14 22:13    1/0   via condor_hold (by user bob)",
        # HELD_SINCE's OR ?? across 11 columns; CODE's OR ? left aligned (its width is its label's)
        "   8.2   bob            [?????????] ?        x",
    ]


def test_condor_q_idle_format() -> None:
    idle = [{"ClusterId": 3, "ProcId": 0, "Owner": "carol", "JobUniverse": 5, "RequestCpus": 1,
             "RequestMemory": 2048, "NumShadowStarts": 2, "LastRemoteHost": "slot1@host"},
            {"ClusterId": 4, "ProcId": 0, "Owner": "carol", "JobUniverse": 7, "RequestCpus": 1,
             "RequestMemory": 128}]
    pf = parse(JOB_IDLE, "idle.cpf")
    assert pf.nosummary
    assert pf.render(idle, now=0).splitlines() == [
        " ID      OWNER          UNIVERSE  CPUS MEMORY STARTS LAST_HOST",
        "   3.0   carol          Vanilla      1   2048      2 slot1@host",
        # NumShadowStarts?:0 is an expression; an undefined attribute prints as %v does: undefined
        "   4.0   carol          Scheduler    1    128      0 undefined",
    ]


def test_manual_queue_cpf() -> None:
    """WIDTH AUTO left aligns to the label and grows; a column without WIDTH grows too
    (CMD's heading is padded to its widest value)."""
    pf = parse(QUEUE_CPF, "queue.cpf")
    assert pf.render(ADS[:2], now=0).splitlines() == [
        "    ID     OWNER            SUBMITTED     RUN_TIME ST PRI SIZE   CMD     ",
        "12    .0   alice          11/14 22:13   0+01:02:35 R  0      2.0 sleep 60",
        "12    .1   alice          11/14 22:13   0+00:00:00 I  10   300.0 (warmup)",
    ]


def test_manual_q_totals_cpf() -> None:
    pf = parse(Q_TOTALS, "q_totals.cpf")
    assert pf.notitle and pf.noheader and not pf.nosummary and pf.columns == []
    assert pf.render(ADS, now=0) == "\n\n\n"  # one empty record per job: no columns


def test_labels_and_separators() -> None:
    pf = parse("SELECT LABEL SEPARATOR ': ' RECORDPREFIX '{' RECORDSUFFIX '}\\n' FIELDPREFIX '<' FIELDSUFFIX '>'\n"
               "  ClusterId AS C\n"
               "  Owner PRINTAS OWNER OR -\n"
               "  JobUniverse AS U PRINTAS JOB_UNIVERSE\n", "lbl.cpf")
    ads = [{"ClusterId": 12, "Owner": "alice", "JobUniverse": 5}, {"ClusterId": 13, "JobUniverse": 12}]
    # no heading line with LABEL; a formatter (JOB_UNIVERSE) prints its text without the label;
    # widths grow row by row with the text shown, and a column not LEFT aligns right
    assert pf.render(ads, now=0) == "{C: 12><Owner: alice><Vanilla}\n{C: 13><           -><  Local}\n"


def test_bare_where_group_by_and_display_width() -> None:
    pf = parse("SELECT BARE\n  ClusterId PRINTAS JOB_ID\n  Owner\n"
               "WHERE JobStatus == 1\nGROUP BY\n  Owner\n  ClusterId DESCENDING\n", "g.cpf")
    assert pf.notitle and pf.noheader and pf.nosummary and pf.where == "JobStatus == 1"
    ads = [{"ClusterId": 1, "ProcId": 0, "Owner": "bob"}, {"ClusterId": 2, "ProcId": 3, "Owner": "alice"},
           {"ClusterId": 3, "ProcId": 0, "Owner": "bob"}]
    # JOB_ID's width is its label's (9), growing; Owner's 5
    assert pf.render(ads, now=0).splitlines() == ["2.3       alice", "3.0       bob  ", "1.0       bob  "]
    assert pf.render(ads[:1], now=0, display=6).splitlines() == ["1.0   "]


def test_raw_expressions_and_string_conversions() -> None:
    """%r prints the expression unevaluated (condor_q's autocluster format uses it); %s an
    attribute that is not a string as ClassAd text, an expression only when it is a string."""
    pf = parse("SELECT\n  Requirements AS REQ PRINTF %r\n  RequestCpus AS CPU PRINTF %s\n"
               "  strcat(Owner, \"!\") AS 'WHO' PRINTF '<%s>'\n  RequestCpus + 1 AS N PRINTF %s OR -\n", "r.cpf")
    ad = {"Requirements": "/Expr(TARGET.Memory >= RequestMemory)/", "RequestCpus": 2, "Owner": "ann"}
    # the heading is sized by the value ("ann!"), the row by its printed text ("<ann!>"),
    # as calc_column_width and display do
    assert pf.render([ad], now=0).splitlines() == [
        "REQ                            CPU WHO  N",
        "TARGET.Memory >= RequestMemory 2   <ann!> -",
    ]


@pytest.mark.parametrize(("text", "where"), [
    ("SELECT\n  Owner PRINTAS NOSUCH\n", "bad.cpf:2: unknown PRINTAS function NOSUCH"),
    ("SELECT\n\n  Owner WIDTH\n", "bad.cpf:3: expected a number or AUTO after WIDTH"),
    ("SELECT\n  Owner WIDTH wide\n", "bad.cpf:2: expected a number or AUTO after WIDTH, found wide"),
    ("SELECT\n  (Owner == AS x\n", "bad.cpf:2: attribute or expression is not valid: (Owner =="),
    ("SELECT\n  Owner AS 'OWNER\n", "bad.cpf:2: unterminated string"),
    ("SELECT NOSUCH\n", "bad.cpf:1: unknown SELECT option NOSUCH"),
    ("SELECT FROM AUTOCLUSTER\n", "bad.cpf:1: SELECT FROM (autocluster queries) is not supported"),
    ("SELECT\nSUMMARY\n", "bad.cpf:2: expected STANDARD or NONE after SUMMARY"),
    ("  Owner\n", "bad.cpf:1: expected SELECT before the first column"),
    ("SELECT\nWHERE JobStatus ==\n", "bad.cpf:2: WHERE expression is not valid"),
    ("SELECT\n  Owner OR x\n", "bad.cpf:2: OR takes one of"),
])
def test_errors_name_file_line_and_problem(text: str, where: str) -> None:
    with pytest.raises(PrintFormatError) as e:
        parse(text, "bad.cpf")
    assert str(e.value).startswith(where)


# condor_status 25.0.13's own slot layout (prettyPrint.cpp's startdNormal_PrintFormat)
STARTD_NORMAL = """SELECT
Name WIDTH -34 FIT PRINTF %s OR ??
OpSys WIDTH -10 OR ??
Arch WIDTH  -8 OR ??
State WIDTH  -9 OR ??
Activity WIDTH  -8 OR ??
CondorLoadAvg AS LoadAv  WIDTH   6 TRUNCATE PRINTAS LOAD_AVG OR ??
Memory AS Mem     WIDTH   4 PRINTF %4d OR ??
EnteredCurrentActivity AS ActivityTime WIDTH AUTO TRUNCATE PRINTAS ACTIVITY_TIME OR -
SUMMARY STANDARD
"""


def test_condor_status_slot_format() -> None:
    slots = [{"Name": "slot1@host.example.org", "OpSys": "LINUX", "Arch": "X86_64", "State": "Unclaimed",
              "Activity": "Idle", "CondorLoadAvg": 0.0, "Memory": 1024, "EnteredCurrentActivity": 1000,
              "MyCurrentTime": 1004},
             {"Name": "slot2@host.example.org", "Arch": "X86_64", "State": "Claimed", "Activity": "Busy",
              "CondorLoadAvg": 1.5, "MyCurrentTime": 1004}]
    pf = parse(STARTD_NORMAL, "startd.cpf", status=True)
    assert not pf.nosummary
    assert pf.render(slots, now=0).splitlines() == [
        "Name                               OpSys      Arch     State     Activity LoadAv Mem  ActivityTime",
        "slot1@host.example.org             LINUX      X86_64   Unclaimed Idle      0.000 1024   0+00:00:04",
        # no OpSys: blank, not OR's text (with no printf an undefined value is valid and shows
        # nothing); no Memory: %4d fails, so [??]; no EnteredCurrentActivity: ACTIVITY_TIME
        # counts from 0, as HTCondor's render does
        "slot2@host.example.org                        X86_64   Claimed   Busy      1.500 [??]   0+00:16:44",
    ]


def test_condor_status_rules_differ_from_condor_q() -> None:
    """condor_status reads a fixed WIDTH as neither truncating nor making a printf: a number
    without PRINTF shows nothing, a long string shows whole. condor_q truncates and prints."""
    text = "SELECT\n  Name WIDTH 5\n  Cpus WIDTH 4\n"
    ad = {"Name": "slot1@host", "Cpus": 8}
    assert parse(text, "s.cpf", status=True).render([ad], now=0).splitlines() == ["Name  Cpus", "slot1@host     "]
    assert parse(text, "q.cpf").render([ad], now=0).splitlines() == ["Name  Cpus", "slot1    8"]


def test_machine_functions() -> None:
    pf = parse("SELECT\n  Activity AS ST PRINTAS ACTIVITY_CODE\n  State AS S2 PRINTAS ACTIVITY_CODE OR ?\n"
               "  CondorVersion AS Version WIDTH AUTO PRINTAS CONDOR_VERSION\n"
               "  CondorVersion AS V8 WIDTH 8 PRINTAS CONDOR_VERSION\n"
               "  CondorPlatform AS Platform PRINTAS CONDOR_PLATFORM\n"
               "  Dummy AS P2 PRINTAS PLATFORM\n", "m.cpf", status=True)
    ad = {"State": "Claimed", "Activity": "Busy", "Arch": "X86_64", "OpSys": "LINUX", "OpSysAndVer": "Ubuntu22",
          "CondorVersion": "$CondorVersion: 25.0.13 2025-10-01 BuildID: 123456 PackageID: 25.0.13-1 $",
          "CondorPlatform": "$CondorPlatform: X86_64-Ubuntu_22.04 $"}
    assert pf.render([ad, {"State": "Weird", "Activity": "Busy"}], now=0).splitlines() == [
        "ST S2 Version        V8       Platform         P2          ",
        "Cb Cb 25.0.13.123456  25.0.13 x86_64_Ubuntu_22 x64/Ubuntu22",
        # an activity names the pair whatever State is; a state that is none is OR's ?
        " b ?                                                       ",
    ]
