# lib-slurm.sh - a one-node Slurm cluster on localhost for the slurm-mode
# tests (sourced after lib.sh).
#
# slurmctld and slurmd run from a private directory under $TEST_ROOT with
# a slurm.conf of their own (no munge: auth/none and cred/none; no
# cgroups: proctrack/linuxproc and task/none) on ports picked per test, so
# tests never meet each other's cluster.  SLURM_CONF is exported, so the
# srun/squeue/scancel that zerg runs talk to this cluster.  Both daemons
# are stopped by their pid files when the test exits.  A cluster that
# cannot start fails the test: it is never skipped.

SLURM_DIR="$TEST_ROOT/slurm"
SLURM_NODE=$(hostname -s)

# A free TCP port pair (controller, slurmd) above 20000.
slurm_ports() {
    python3 - <<'PY'
import socket
ports = []
socks = []
for _ in range(2):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
    ports.append(s.getsockname()[1])
print(*ports)
PY
}

slurm_write_conf() {
    local ctl_port=$1 d_port=$2 cpus
    cpus=$(nproc)
    mkdir -p "$SLURM_DIR/state" "$SLURM_DIR/spool" "$SLURM_DIR/log"
    cat > "$SLURM_DIR/slurm.conf" <<CONF
ClusterName=zergtest
SlurmctldHost=$SLURM_NODE
SlurmctldPort=$ctl_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmdTimeout=5
SlurmctldTimeout=5
MessageTimeout=5
KillWait=2
InactiveLimit=0
MinJobAge=2
SchedulerType=sched/builtin
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/slurmd.pid
SlurmctldLogFile=$SLURM_DIR/log/slurmctld.log
SlurmdLogFile=$SLURM_DIR/log/slurmd.log
NodeName=$SLURM_NODE NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=zerg Nodes=$SLURM_NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:32
CONF
}

slurm_fail() {
    echo "--- slurmctld.log:" >&2
    tail -n 30 "$SLURM_DIR/log/slurmctld.log" >&2 2>/dev/null || true
    echo "--- slurmd.log:" >&2
    tail -n 30 "$SLURM_DIR/log/slurmd.log" >&2 2>/dev/null || true
    fail "slurm: $*"
}

slurm_node_state() { sinfo -h -n "$SLURM_NODE" -o %T 2>/dev/null | head -n 1; }
slurm_node_idle() { case "$(slurm_node_state)" in idle | mixed | allocated) return 0 ;; esac; return 1; }

# slurm_start_slurmd: (re)starts slurmd and waits until the node takes jobs.
slurm_start_slurmd() {
    slurmd -f "$SLURM_DIR/slurm.conf" -N "$SLURM_NODE" ||
        slurm_fail "slurmd did not start"
    local i=0
    until slurm_node_idle; do
        i=$((i + 1))
        [ $i -le 600 ] || slurm_fail "node $SLURM_NODE not idle after 30s (state: $(slurm_node_state))"
        sleep 0.05
    done
}

slurm_pid() { cat "$SLURM_DIR/$1.pid" 2>/dev/null || true; }

slurm_stop() {
    local p
    for d in slurmd slurmctld; do
        p=$(slurm_pid "$d")
        [ -n "$p" ] && kill -9 "$p" 2>/dev/null || true
    done
    # Steps left by a killed slurmd: the slurmstepd processes of this
    # cluster (they inherit its SLURM_CONF).
    for p in $(slurm_stepd_pids); do kill -9 "$p" 2>/dev/null || true; done
}

slurm_stepd_pids() {
    local f p
    for f in /proc/[0-9]*/comm; do
        [ "$(cat "$f" 2>/dev/null)" = slurmstepd ] || continue
        p=${f#/proc/}
        p=${p%/comm}
        tr '\0' '\n' 2>/dev/null < "/proc/$p/environ" |
            grep -qx "SLURM_CONF=$SLURM_DIR/slurm.conf" && echo "$p"
    done
    return 0
}

slurm_start() {
    command -v slurmctld >/dev/null && command -v srun >/dev/null ||
        fail "slurm-wlm is not installed (scripts/install-deps.sh test installs it)"
    local ports
    ports=$(slurm_ports)
    # shellcheck disable=SC2086
    slurm_write_conf $ports
    export SLURM_CONF="$SLURM_DIR/slurm.conf"
    slurmctld -i -f "$SLURM_CONF" || slurm_fail "slurmctld did not start"
    local i=0
    until scontrol ping 2>/dev/null | grep -q UP; do
        i=$((i + 1))
        [ $i -le 600 ] || slurm_fail "slurmctld did not answer within 30s"
        sleep 0.05
    done
    slurm_start_slurmd
}

# The jobs of this cluster named zerg-f-w*: "JOBID COMMENT" lines.
slurm_jobs() { squeue -h -o "%i|%j|%k" 2>/dev/null | awk -F"|" '$2 ~ /^zerg-f-w/ {print $1, $3}'; }

slurm_on_exit() {
    local rc=$?
    slurm_stop
    (exit $rc)
    on_exit
}
trap slurm_on_exit EXIT

slurm_start
