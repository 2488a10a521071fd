#!/usr/bin/env bash
# slurm-real.sh SRC GARUDAD GARCTL MINIMAL — contrib/slurm under a real Slurm (Debian's
# slurmctld, slurmd, slurm-client and munge): a one-node cluster on 127.0.0.1 whose
# Prolog, Epilog and TaskProlog are the shipped scripts as they are, configured the
# way a site does it (/etc/default/garuda: here the test's own file, bind-mounted in a
# private mount namespace), with garudad at its default /run/garuda (a tmpfs /run).
#   1. a job (srun) gets GARUDA_SOCKET from the task prolog and runs examples/minimal;
#   2. garudad stopped (SIGSTOP): srun fails, the node is drained with the prolog's
#      reason, and the epilog that Slurm runs after the failed prolog keeps it;
#      a batch job is requeued held (docs/deploy.md);
#   3. garudad answers again, the node is resumed (scontrol update State=RESUME) and
#      the next job runs;
#   4. garudad gone (killed): drained with the prolog's reason and garctl's message;
#      started again and resumed: jobs run.
# Everything lives in a temp dir; the daemons run in a private mount and pid namespace
# (unshare), talk over 127.0.0.1 only, and the host is checked at the end for leftover
# processes, mounts, cgroups and network changes (hostcheck.sh).
# Exit 77 (skip) naming the package when a tool is missing, or without root/unshare.
set -euo pipefail
here=$(dirname "$(readlink -f "$0")")
# shellcheck source=real-frame.sh
source "$here/real-frame.sh"

if [[ ${1:-} != --inner ]]; then
	real_require "slurmd runs the prolog as root; private mount namespace" \
		slurmctld:slurmctld slurmd:slurmd srun:slurm-client sinfo:slurm-client \
		scontrol:slurm-client sbatch:slurm-client munged:munge unshare:util-linux
	real_outer 'slurmctld|slurmd|slurmstepd|munged' garuda-slurm "$@"
fi

# --- inside the namespaces: pid 1 of a private pid namespace, a private mount table
real_inner "$@"
slurm=$src/contrib/slurm
chmod 0755 "$work" # munged wants every directory above its socket o+x
# the site's /etc/default/garuda: GARCTL is the build's garctl; the rest as shipped
mkdir "$work/etc-default"
cp -a /etc/default/. "$work/etc-default/"
cat >"$work/etc-default/garuda" <<CONF
# /etc/default/garuda as a site writes it (the test's copy)
GARUDAD_OPTIONS=""
GARCTL=$garctl
GARUDA_PROLOG_TIMEOUT=2
CONF
mount --bind "$work/etc-default" /etc/default

pids=()
stop_all() { # garudad, slurmd, slurmctld, munged: in that order, each waited for
	local p
	for p in "${pids[@]}"; do
		kill -CONT "$p" 2>/dev/null || true
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	pids=()
}
dump() {
	for f in "$work"/*.log; do echo "--- $f"; tail -n 15 "$f"; done
}
trap 'rc=$?; ((rc == 0)) || dump; stop_all; exit $rc' EXIT

# munge: its own key, socket, pid and seed files
dd if=/dev/urandom of="$work/munge.key" bs=1024 count=1 status=none
chmod 0400 "$work/munge.key"
munged -F --key-file="$work/munge.key" --socket="$work/munge.sock" --pid-file="$work/munged.pid" \
	--seed-file="$work/munge.seed" --log-file="$work/munged.log" >"$work/munged.out" 2>&1 &
munge_pid=$!
for _ in $(seq 50); do [[ -S $work/munge.sock ]] && break; sleep 0.1; done
[[ -S $work/munge.sock ]] || fail "munged did not start"

read -r ctld_port slurmd_port < <(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1", 0)) for x in s]
print(*[x.getsockname()[1] for x in s])')
mkdir -p "$work/state" "$work/spool"
export SLURM_CONF=$work/slurm.conf
cat >"$SLURM_CONF" <<CONF
ClusterName=garudatest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
AuthInfo=socket=$work/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
MailProg=/bin/true
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SlurmctldTimeout=10
SlurmdTimeout=30
Prolog=$slurm/garuda-prolog
Epilog=$slurm/garuda-epilog
TaskProlog=$slurm/garuda-task-prolog
NodeName=gpu7 NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN
PartitionName=test Nodes=gpu7 Default=YES MaxTime=5 State=UP
CONF

start_garudad() {
	"$garudad" --no-config --runtime-dir=/run/garuda --log-level=notice >>"$work/garudad.log" 2>&1 &
	garudad_pid=$!
	for _ in $(seq 100); do [[ -S /run/garuda/control.sock ]] && "$garctl" --timeout=1 status >/dev/null 2>&1 && return; sleep 0.1; done
	fail "garudad did not start"
}
start_garudad
slurmctld -D >"$work/slurmctld.out" 2>&1 &
ctld_pid=$!
slurmd -D -N gpu7 >"$work/slurmd.out" 2>&1 &
slurmd_pid=$!
pids=("$garudad_pid" "$slurmd_pid" "$ctld_pid" "$munge_pid")

state() { sinfo -h -N -o %T 2>/dev/null; }
wait_state() { # exact state, within N tenths
	local want=$1 n=${2:-150} s=
	for _ in $(seq "$n"); do
		s=$(state)
		[[ $s == "$want" ]] && return 0
		sleep 0.1
	done
	fail "node state is '$s', not '$want'"
}
reason() { sinfo -h -N -o %E; }
wait_state idle
echo "cluster idle after $((SECONDS - start)) s (slurmctld :$ctld_port, slurmd :$slurmd_port)"

run_job() { # a job as a user would run it: GARUDA_SOCKET from the task prolog only
	env -u GARUDA_SOCKET -u GARUDA_CONTROL_SOCKET srun -N1 -t1 -J garuda \
		sh -c 'echo "GARUDA_SOCKET=${GARUDA_SOCKET:-unset}"; exec "$0"' "$minimal"
}

echo "--- 1. a job with garudad answering"
out=$(run_job 2>&1) || { echo "$out"; fail "srun failed with garudad answering"; }
echo "$out"
grep -qx 'GARUDA_SOCKET=/run/garuda/garuda.sock' <<<"$out" || fail "the task prolog did not set GARUDA_SOCKET"
wait_state idle

echo "--- 2. garudad stopped (SIGSTOP)"
kill -STOP "$garudad_pid"
if out=$(run_job 2>&1); then echo "$out"; fail "srun succeeded with garudad stopped"; fi
echo "$out" | tail -n 3
grep -q 'prolog failed' <<<"$out" || fail "srun did not report the prolog failure"
jobid=$(sed -n 's/.*StepId=\([0-9][0-9]*\)\..*/\1/p' <<<"$out" | head -n 1)
for _ in $(seq 100); do [[ $(state) == drained ]] && break; sleep 0.1; done
# the epilog (run after the failed prolog, garudad still stopped) has run by now
for _ in $(seq 50); do grep -q 'epilog' "$work/slurmd.log" && break; sleep 0.1; done
sleep 0.5
r=$(reason)
echo "state $(state), reason: $r"
[[ $(state) == drained ]] || fail "node not drained with garudad stopped"
[[ $r == "garudad not answering (job $jobid prolog): garctl: no reply from garudad"* ]] ||
	fail "drain reason is not the prolog's for job $jobid: $r"
echo "--- 2b. a batch job while the prolog fails: requeued held"
scontrol update NodeName=gpu7 State=RESUME
wait_state idle
bjob=$(env -u GARUDA_SOCKET sbatch --parsable -N1 -t1 -o /dev/null --wrap=true)
for _ in $(seq 150); do
	br=$(squeue -h -j "$bjob" -o '%T %r' 2>/dev/null || true)
	[[ $br == "PENDING launch failed requeued held" ]] && break
	sleep 0.1
done
echo "batch job $bjob: $br"
[[ $br == "PENDING launch failed requeued held" ]] || fail "batch job $bjob: '$br', not requeued held"
scancel "$bjob"
for _ in $(seq 100); do [[ $(state) == drained ]] && break; sleep 0.1; done
r=$(reason)
[[ $r == "garudad not answering (job $bjob prolog)"* ]] || fail "drain reason after the batch job: $r"

echo "--- 3. garudad answers again: resumed, a job runs"
kill -CONT "$garudad_pid"
scontrol update NodeName=gpu7 State=RESUME
wait_state idle
out=$(run_job 2>&1) || { echo "$out"; fail "srun failed after the resume"; }
grep -qx 'GARUDA_SOCKET=/run/garuda/garuda.sock' <<<"$out" || fail "no GARUDA_SOCKET after the resume"
wait_state idle

echo "--- 4. garudad gone"
kill "$garudad_pid"; wait "$garudad_pid" 2>/dev/null || true
if out=$(run_job 2>&1); then echo "$out"; fail "srun succeeded with garudad gone"; fi
jobid=$(sed -n 's/.*StepId=\([0-9][0-9]*\)\..*/\1/p' <<<"$out" | head -n 1)
for _ in $(seq 100); do [[ $(state) == drained ]] && break; sleep 0.1; done
sleep 0.5
r=$(reason)
echo "state $(state), reason: $r"
[[ $r == "garudad not answering (job $jobid prolog): garctl: garudad is not running"* ]] ||
	fail "drain reason with garudad gone: $r"
start_garudad
pids[0]=$garudad_pid
scontrol update NodeName=gpu7 State=RESUME
wait_state idle
out=$(run_job 2>&1) || { echo "$out"; fail "srun failed after garudad came back"; }
grep -q 'GARUDA_SOCKET=/run/garuda/garuda.sock' <<<"$out" || fail "no GARUDA_SOCKET after garudad came back"
wait_state idle
echo "slurm: all steps passed in $((SECONDS - start)) s"
