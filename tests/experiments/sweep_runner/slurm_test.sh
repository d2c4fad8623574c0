#!/usr/bin/env bash
# `mare sweep --emit slurm` on a real one-node Slurm cluster (shared/notes/slurm-single-node.md):
# starts munged, slurmctld and slurmd on localhost in a scratch directory, submits the
# emitted array job (4 tasks, one shard each; every task also generates the same data at
# once), waits for it, and checks that every run is done and the data is whole. The
# daemons are always stopped (trap), every wait has a timeout.
#
#   slurm_test.sh MARE_BINARY
#
# Exit 0: passed; 1: failed; 77 (ctest's skip code): Slurm/munge not installed, not root,
# or no munge user or key (the reason is printed). On a machine that has all of those (as
# run_all.sh installs them) daemons that do not come up are a failure, not a skip: the
# only real-Slurm check must not vanish quietly.
set -uo pipefail

MARE=${1:?usage: slurm_test.sh MARE_BINARY}
MARE=$(readlink -f "$MARE")
SKIP=77

skip() { echo "SKIP: $*"; exit $SKIP; }
fail() { echo "FAIL: $*"; exit 1; }

for b in munged slurmctld slurmd sbatch squeue sinfo scancel runuser; do
  command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] ||
    skip "$b is not installed (apt-get install slurm-wlm munge)"
done
[ "$(id -u)" -eq 0 ] || skip "needs root (munged runs as the munge user, slurmd as root)"
id munge >/dev/null 2>&1 || skip "no munge user"
[ -r /etc/munge/munge.key ] || skip "no /etc/munge/munge.key (mungekey --create as munge)"
[ -x "$MARE" ] || fail "$MARE is not an executable"

S=$(mktemp -d "${TMPDIR:-/tmp}/mare_slurm_XXXXXX")
chmod 755 "$S"  # munged (as munge) must reach its socket directory below
PIDS=()
JOB=""

cleanup() {
  local rc=$?
  if [ -n "$JOB" ]; then timeout 10 scancel "$JOB" >/dev/null 2>&1; fi
  # slurmd, slurmctld, then munged (the order of shared/notes/slurm-single-node.md).
  local p
  for p in $(printf '%s\n' "${PIDS[@]}" | tac); do kill "$p" 2>/dev/null; done
  [ -f "$S/munge/munged.pid" ] && kill "$(cat "$S/munge/munged.pid")" 2>/dev/null
  for _ in $(seq 50); do
    local alive=0
    for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.2
  done
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  if [ $rc -ne 0 ] && [ $rc -ne $SKIP ]; then
    for f in "$S"/slurmctld.log "$S"/slurmd.log "$S"/root/slurm/*; do
      [ -f "$f" ] && { echo "---- $f (last lines)"; tail -n 15 "$f"; }
    done
  fi
  rm -rf "$S"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- munge, on its own socket ------------------------------------------------
install -d -o munge -g munge -m 0755 "$S/munge"
SOCK="$S/munge/munge.socket"
runuser -u munge -- /usr/sbin/munged --socket="$SOCK" --pid-file="$S/munge/munged.pid" \
  --log-file="$S/munge/munged.log" --seed-file="$S/munge/munged.seed" \
  --key-file=/etc/munge/munge.key >/dev/null 2>&1 ||
  fail "munged did not start: $(tail -n 3 "$S/munge/munged.log" 2>/dev/null)"
for _ in $(seq 50); do [ -S "$SOCK" ] && break; sleep 0.1; done
[ -S "$SOCK" ] || fail "munged made no socket in 5 s"

# ---- Slurm: one node, this host ------------------------------------------------
NODE=$(hostname -s)
CPUS=$(nproc)
PORT=$((20000 + RANDOM % 20000))
mkdir -p "$S/state" "$S/spool"
export SLURM_CONF="$S/slurm.conf"
cat >"$SLURM_CONF" <<EOF
ClusterName=mare-test
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$SOCK
CredType=cred/munge
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
/usr/sbin/slurmctld -D -i -f "$SLURM_CONF" >"$S/slurmctld.out" 2>&1 &
PIDS+=($!)
/usr/sbin/slurmd -D -N "$NODE" -f "$SLURM_CONF" >"$S/slurmd.out" 2>&1 &
PIDS+=($!)
state=""
for _ in $(seq 150); do
  state=$(timeout 5 sinfo -h -N -o %t 2>/dev/null | head -n 1)
  [ "$state" = idle ] && break
  for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null || break 2; done
  sleep 0.2
done
if [ "$state" != idle ]; then
  tail -n 5 "$S/slurmctld.log" "$S/slurmd.log" "$S/slurmctld.out" "$S/slurmd.out" 2>/dev/null
  fail "the Slurm node did not become idle in 30 s (state '${state}')"
fi
echo "slurm: node $NODE idle ($CPUS CPUs, port $PORT)"

# ---- the sweep ---------------------------------------------------------------------
# A plan of 6 tiny runs (sweep.json form, so this test does not depend on a spec's
# wording) and one data need that no run names: every array task generates it at once.
ROOT="$S/root"
PLAN="$S/plan.json"
runs=""
for s in 1 2 3 4 5 6; do
  cell=xor$((s % 2))
  id=$(printf '%016x' $((s * 7919)))
  [ -n "$runs" ] && runs+=","
  runs+="{\"cell\":\"$cell\",\"seed\":$s,\"id\":\"$id\",\"dir\":\"$cell/seed$s-${id:0:8}\",
    \"kind\":\"train\",\"params\":{\"model\":\"mlp\"},\"done_file\":\"result.json\",
    \"command\":[\"train\",\"--model\",\"mlp\",\"--task\",\"xor\",\"--seed\",\"$s\",
    \"--epochs\",\"3\",\"--out\",\"{run}\"]}"
done
cat >"$PLAN" <<EOF
{"spec":"slurm-test.yaml","sweep":"slurm-test","table":"","profile":"smoke",
 "data":[{"generator":"synth-cdr","seed":3,"docs":4,"dir":"data/synth-cdr-seed3-docs4",
   "command":["data","generate","synth-cdr","--docs","4","--seed","3","--out","{out}"]}],
 "runs":[$runs]}
EOF
timeout 60 "$MARE" sweep "$PLAN" --out "$ROOT" --emit slurm --slurm-tasks 4 >"$S/emit.out" 2>&1 ||
  fail "mare sweep --emit slurm: $(cat "$S/emit.out")"
grep -q "sbatch $ROOT/sweep.sbatch" "$S/emit.out" || fail "no sbatch command printed: $(cat "$S/emit.out")"
grep -q -- "--array=1-4" "$ROOT/sweep.sbatch" || fail "sweep.sbatch has no --array=1-4"

JOB=$(cd "$S" && timeout 30 sbatch --parsable "$ROOT/sweep.sbatch") || fail "sbatch failed"
JOB=${JOB%%;*}
echo "slurm: submitted array job $JOB"
done_ok=0
for _ in $(seq 600); do
  if [ -z "$(timeout 5 squeue -h -j "$JOB" -o %i 2>/dev/null)" ]; then
    done_ok=1
    break
  fi
  sleep 0.2
done
[ $done_ok = 1 ] || fail "the array job $JOB did not end in 120 s"
JOB=""

# ---- every run done, the data whole ------------------------------------------------------
for d in "$ROOT"/xor*/seed*; do
  st=$(sed -n 's/.*"status": *"\([a-z]*\)".*/\1/p' "$d/status.json" 2>/dev/null | head -n 1)
  [ "$st" = completed ] || fail "$d: status '${st}' (stderr: $(tail -n 3 "$d/stderr.log" 2>/dev/null))"
  [ "$(wc -l <"$d/attempts.jsonl")" -eq 1 ] || fail "$d ran $(wc -l <"$d/attempts.jsonl") times"
done
n=$(ls -d "$ROOT"/xor*/seed* 2>/dev/null | wc -l)
[ "$n" -eq 6 ] || fail "$n run directories, expected 6"
for f in train valid test; do
  [ -s "$ROOT/data/synth-cdr-seed3-docs4/$f.pubtator" ] || fail "data: no $f.pubtator"
done
if ls -d "$ROOT"/data/*.tmp-* >/dev/null 2>&1; then fail "leftover temporary data: $(ls "$ROOT/data")"; fi
[ "$(ls "$ROOT"/slurm/*.out | wc -l)" -eq 4 ] || fail "expected 4 task logs in $ROOT/slurm"

# The tidy table, when `mare collect` exists.
if "$MARE" collect --help >/dev/null 2>&1; then
  timeout 60 "$MARE" collect "$ROOT" --out "$S/results.csv" >"$S/collect.out" 2>&1 ||
    fail "mare collect: $(cat "$S/collect.out")"
  rows=$(($(wc -l <"$S/results.csv") - 1))
  [ "$rows" -eq 6 ] || fail "results.csv has $rows rows, expected 6"
  [ "$(grep -c ',completed,' "$S/results.csv")" -eq 6 ] || fail "not every row completed: $(cat "$S/results.csv")"
  echo "mare collect: 6 completed rows"
fi
echo "PASS: 6 runs done once each by 4 array tasks; the data they generated at once is whole"
exit 0
