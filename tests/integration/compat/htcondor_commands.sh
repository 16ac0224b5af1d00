#!/bin/sh
# A site script written for HTCondor's commands, run unchanged against a roost pool by
# tests/integration/test_compat_commands.py. It prints "== step" markers and what the
# commands print, and parses their output the way such scripts do (sed, grep, -af, -format).
# $1: a directory jobs (running as nobody) may write to.
set -e
cd "$1"

cat > sleep.sub <<SUB
universe   = vanilla
executable = /bin/sleep
arguments  = 300
log        = sleep.log
queue 2
SUB

echo "== submit"
cluster=$(condor_submit sleep.sub | sed -n 's/^.* submitted to cluster \([0-9][0-9]*\)\.$/\1/p')
echo "cluster=$cluster"

echo "== wait running"
n=0
until [ "$(condor_q "$cluster" -af JobStatus | grep -c '^2$')" = 2 ]; do
    n=$((n + 1))
    [ $n -lt 600 ] || { echo "jobs never ran"; exit 1; }
    sleep 0.1
done
echo running

echo "== af"
condor_q "$cluster" -af:j JobStatus Cmd
echo "== af comma"
condor_q "$cluster" -af:, ClusterId ProcId
echo "== format"
condor_q "$cluster" -format "%d." ClusterId -format "%d " ProcId -format "%s" Cmd -format " %v\n" Missing
echo "== totals"
condor_q -totals -allusers | grep '^Total for all users'

echo "== qedit"
condor_qedit "$cluster.0" Site '"north"' Weight 3
condor_qedit -constraint "ClusterId == $cluster && ProcId == 1" Site='"south"'
echo "== prio"
condor_prio -p 7 "$cluster.1"
condor_prio +2 "$cluster"
condor_q "$cluster" -af ProcId Site JobPrio Weight

echo "== who"
# the slots' ads reach the collector a moment after the jobs start: wait for both
tries=0
while [ "$(condor_who -af JobId | wc -l)" -lt 2 ] && [ $tries -lt 40 ]; do tries=$((tries + 1)); sleep 0.25; done
condor_who | sed -n '1p'
condor_who -af JobId | sort

echo "== hold"
condor_hold "$cluster.0"
condor_q "$cluster.0" -af JobStatus
condor_release "$cluster.0"
condor_q "$cluster.0" -af 'JobStatus != 5'

echo "== rm"
condor_rm "$cluster"
condor_wait -wait 60 sleep.log
echo "== history"
condor_history "$cluster" -af ClusterId ProcId JobStatus | sort
condor_history "$cluster" -limit 1 -format "%d\n" ClusterId
oldest=$(condor_history "$cluster" -af:j ClusterId | tail -n 1 | cut -d' ' -f1)
condor_history "$cluster" -since "$oldest" -af ProcId | wc -l | tr -d ' '
echo "== userlog"
condor_history -userlog sleep.log -af ClusterId ProcId JobStatus | sort

echo "== errors"
condor_q -no-such-flag 2>&1 || true
condor_qedit 2>&1 | head -n 1 || true
echo "== done"
