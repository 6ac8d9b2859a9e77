#!/usr/bin/env bash
# The Slurm path of what-if, on a real Slurm (issue 14): as root, installs Debian's slurm-wlm and munge
# if missing, starts a private munged, slurmctld and slurmd for a one-node cluster (this machine, all
# state under a temporary directory, non-default ports so a site's own Slurm is left alone), runs a
# 200-point sweep as a job array with a dependent merge job, cancels one array task mid-run, shows the
# merge listing the missing points, resubmits (only the cancelled task runs again, its finished points
# kept) and compares the merged results byte for byte with a single-process what-if; then runs a
# plan's candidates the same way (plan --slurm --submit) against a single-process plan. Then stops the
# daemons and removes its files. Exit 77 (ctest: skipped) only where Slurm cannot be installed or run.
#
# Usage: slurm_test.sh SIMREPLAY_BINARY SOURCE_DIR        (about 1-3 minutes on 2 cores)
set -euo pipefail

BIN=$(readlink -f "$1")
SRC=$(readlink -f "$2")
skip() {
  echo "SKIPPED: $*" >&2
  exit 77
}
say() { echo "[slurm_test $(date +%T)] $*"; }

[ "$(id -u)" -eq 0 ] || skip "must run as root to install and start Slurm (munged, slurmctld, slurmd)"
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v sbatch >/dev/null ||
  ! command -v munged >/dev/null; then
  command -v apt-get >/dev/null || skip "slurm-wlm and munge are not installed and there is no apt-get"
  say "installing slurm-wlm and munge"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null ||
    skip "apt-get install slurm-wlm munge failed (no network or no Debian archive?)"
fi

WORK=$(mktemp -d /tmp/simreplay-slurm-test.XXXXXX)
chmod 0755 "$WORK"
export SLURM_CONF=$WORK/slurm.conf
stop_daemons() {
  for pidfile in "$WORK/slurmd.pid" "$WORK/slurmctld.pid" "$WORK/munged.pid"; do
    [ -s "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || continue
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
}
on_exit() {
  rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
    echo "---- slurmctld.log (tail)"; tail -n 30 "$WORK/slurmctld.log" 2>/dev/null || true
    echo "---- slurmd.log (tail)"; tail -n 30 "$WORK/slurmd.log" 2>/dev/null || true
    for f in "$WORK"/out/slurm/logs/*; do [ -f "$f" ] && { echo "---- $f"; tail -n 20 "$f"; }; done
  fi
  stop_daemons
  rm -rf "$WORK"
  exit $rc
}
trap on_exit EXIT

# --- munge: a private key and socket, so a munged the machine already runs is not touched.
mkdir -p "$WORK/munge"
chmod 0700 "$WORK/munge"
dd if=/dev/urandom of="$WORK/munge/munge.key" bs=1024 count=1 status=none
chmod 0400 "$WORK/munge/munge.key"
munged --force --key-file="$WORK/munge/munge.key" --socket="$WORK/munge/munge.socket" \
  --pid-file="$WORK/munged.pid" --log-file="$WORK/munged.log" --seed-file="$WORK/munge/munge.seed" ||
  skip "munged does not start here (see $WORK/munged.log)"

# --- slurm.conf: this host as the only node, as `slurmd -C` describes it.
node_line=$(slurmd -C | head -n 1)
node=$(echo "$node_line" | sed -n 's/^NodeName=\([^ ]*\).*/\1/p')
cpus=$(echo "$node_line" | sed -n 's/.* CPUs=\([0-9]*\).*/\1/p')
mkdir -p "$WORK/state" "$WORK/spool"
cat >"$SLURM_CONF" <<CONF
ClusterName=simreplaytest
SlurmctldHost=$node
SlurmUser=root
SlurmdUser=root
SlurmctldPort=16817
SlurmdPort=16818
AuthType=auth/munge
AuthInfo=socket=$WORK/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool
SlurmctldPidFile=$WORK/slurmctld.pid
SlurmdPidFile=$WORK/slurmd.pid
SlurmctldLogFile=$WORK/slurmctld.log
SlurmdLogFile=$WORK/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
KillWait=5
MaxArraySize=1001
$node_line
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF
slurmctld -f "$SLURM_CONF" || skip "slurmctld does not start here"
slurmd -f "$SLURM_CONF" || skip "slurmd does not start here"
for _ in $(seq 100); do
  state=$(sinfo -h -n "$node" -o %T 2>/dev/null || true)
  [ "$state" = idle ] && break
  sleep 0.2
done
[ "$state" = idle ] || skip "the node did not become idle (state '$state'): Slurm cannot run jobs here"
say "Slurm up: node $node, $cpus CPUs"

# --- A 200-point sweep over the quickstart's model and trace.
mkdir -p "$WORK/sweep"
cp "$SRC/examples/quickstart/model.json" "$SRC/examples/quickstart/trace.jsonl.gz" "$WORK/sweep/"
cat >"$WORK/sweep/scenario.json" <<'JSON'
{
  "name": "slurm test: 200 points",
  "model": "model.json",
  "loader": {"num_workers": 2, "batch_size": 8, "prefetch_factor": 2},
  "hardware": {"cpu_cores": 2, "gpus": 1},
  "train": {"steps": 12},
  "seed": 0,
  "sweep": {
    "loader.num_workers": [1, 2, 3, 4, 6],
    "loader.prefetch_factor": [1, 2, 3, 4],
    "loader.batch_size": [2, 4, 6, 8, 10, 12, 14, 16, 20, 24]
  }
}
JSON
SCEN=$WORK/sweep/scenario.json
OUT=$WORK/out
TASKS=10  # 20 points per array task

say "single-process reference"
"$BIN" what-if "$SCEN" --out "$WORK/reference" --jobs "$cpus" >/dev/null
[ "$(($(wc -l <"$WORK/reference/results.csv") - 1))" -eq 200 ] || { echo "reference has not 200 rows"; exit 1; }

say "submitting the job array"
"$BIN" what-if "$SCEN" --out "$OUT" --slurm --submit --array-size $TASKS --cpus-per-task 1 --time 00:30:00 \
  | tee "$WORK/submit1.txt"
array_job=$(sed -n 's/^submitted array job \([0-9]*\).*/\1/p' "$WORK/submit1.txt")
[ -n "$array_job" ] || { echo "no array job id in the submit output"; exit 1; }

# Cancel the first task seen running with some but not all of its 20 points saved.
points_of_task() { ls "$OUT/points" 2>/dev/null | awk -v t="$1" -v n=$TASKS '/^[0-9]+\.json$/ { if ((substr($0,1,6)+0) % n == t) c++ } END { print c+0 }'; }
cancelled=""
for _ in $(seq 1200); do
  for t in $(squeue -h -j "$array_job" -t RUNNING -o %K 2>/dev/null); do
    done_points=$(points_of_task "$t")
    if [ "$done_points" -ge 1 ] && [ "$done_points" -lt 20 ]; then
      scancel "${array_job}_${t}"
      cancelled=$t
      say "cancelled task $t with $done_points of its 20 points saved"
      break 2
    fi
  done
  sleep 0.1
done
[ -n "$cancelled" ] || { echo "never saw a task mid-run to cancel"; exit 1; }

wait_for_queue() {
  for _ in $(seq 3000); do
    [ -z "$(squeue -h -o %i 2>/dev/null)" ] && return 0
    sleep 0.2
  done
  echo "jobs still queued after 10 minutes"; squeue; return 1
}
wait_for_queue
kept=$(points_of_task "$cancelled")
say "array and merge job ended; task $cancelled had $kept points saved"
[ "$kept" -lt 20 ] || { echo "the cancelled task finished anyway"; exit 1; }
[ ! -e "$OUT/results.csv" ] || { echo "merge wrote results although points were missing"; exit 1; }
grep -h "points are missing" "$OUT"/slurm/logs/simreplay-sweep-merge-*.out ||
  { echo "the merge job did not list the missing points"; exit 1; }

# The finished points of the cancelled task must survive the resubmission untouched.
stat -c '%n %i %Y' $(ls -d "$OUT"/points/*.json | awk -v t="$cancelled" -v n=$TASKS -F/ '{ f=$NF; if ((substr(f,1,6)+0) % n == t) print }') \
  >"$WORK/kept-before.txt"

say "resubmitting"
"$BIN" what-if "$SCEN" --out "$OUT" --slurm --submit --array-size $TASKS --cpus-per-task 1 --time 00:30:00 \
  | tee "$WORK/submit2.txt"
grep -q "in 1 tasks ($cancelled)" "$WORK/submit2.txt" || { echo "resubmission is not just task $cancelled"; exit 1; }
wait_for_queue
stat -c '%n %i %Y' $(cut -d' ' -f1 "$WORK/kept-before.txt") >"$WORK/kept-after.txt"
cmp "$WORK/kept-before.txt" "$WORK/kept-after.txt" || { echo "finished points were rewritten"; exit 1; }
grep -h "already there" "$OUT"/slurm/logs/simreplay-sweep-*_"$cancelled".out | tail -n 1

for f in results.csv results.json report.html; do
  cmp "$WORK/reference/$f" "$OUT/$f" || { echo "$f differs from the single-process what-if"; exit 1; }
done
say "PASS: 200 points on Slurm (array of $TASKS, one task cancelled and resubmitted) byte-identical to one process"

# --- A plan's candidates on the same Slurm (plan --slurm: an array of `plan --shard` tasks and a
# dependent `plan --merge` job), compared with a single-process plan byte for byte.
mkdir -p "$WORK/plan"
cp "$SRC/tests/plan/data/small_plan.json" "$WORK/plan/plan.json"
sed -i "s#\.\./\.\./\.\./examples#$SRC/examples#" "$WORK/plan/plan.json"
say "plan: single-process reference"
"$BIN" plan "$WORK/plan/plan.json" --out "$WORK/plan-reference" --jobs "$cpus" >/dev/null
say "plan: submitting its job array"
"$BIN" plan "$WORK/plan/plan.json" --out "$WORK/plan-out" --slurm --submit --array-size 3 --cpus-per-task 1 \
  --time 00:30:00 | tee "$WORK/plan-submit.txt"
grep -q "^submitted array job" "$WORK/plan-submit.txt" || { echo "the plan's array was not submitted"; exit 1; }
wait_for_queue
for f in plan.json plan.csv report.html; do
  cmp "$WORK/plan-reference/$f" "$WORK/plan-out/$f" || { echo "plan $f differs from the single-process plan"; exit 1; }
done
say "PASS: a plan's candidates on Slurm (array of 3 shards + merge job) byte-identical to one process"

