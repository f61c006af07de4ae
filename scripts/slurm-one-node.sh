#!/usr/bin/env bash
# A one-node SLURM cluster on this machine, for the fan-out tests and for trying `spanft fanout` by hand.
#
#   scripts/slurm-one-node.sh start DIR [NODES]
#                                         install slurm-wlm + munge if missing (apt-get, root), then start munged,
#                                         slurmctld and slurmd with their config, sockets, logs and state in DIR;
#                                         prints `export SLURM_CONF=DIR/slurm.conf` (the clients' one setting).
#                                         NODES (default 1): with 2 or more, as many slurmd run on this host as
#                                         nodes n1, n2, ... (each its own port, spool, log and pid file), for the
#                                         fan-out's multi-node paths
#   scripts/slurm-one-node.sh stop DIR    stop the daemons this script started in DIR (by their pid files), no other
#   scripts/slurm-one-node.sh status DIR  exit 0 when the node takes jobs
#
# No systemd: each daemon detaches itself and writes its pid file in DIR. The ports are free ones picked at
# the first start (never SLURM's defaults), so a cluster already on this machine is left alone. The node offers
# every core and most of the memory, one partition `debug`; jobs share the node by CPU (cons_tres, CR_CPU). With
# SLURM_ONE_NODE_MEMORY=enforce in the environment of `start`, memory is counted too (CR_CPU_Memory) and a job
# over its --mem is killed as on a real cluster (jobacct_gather/linux, OverMemoryKill).
# A start that fails stops what it started.
set -euo pipefail

action=${1:-}
dir=${2:-}
nodes=${3:-1}
if [[ -z "$action" || -z "$dir" || ! "$nodes" =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: $0 start|stop|status DIR [NODES]" >&2
    exit 2
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
conf="$dir/slurm.conf"

free_port() {  # a TCP port nothing listens on now
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

free_ports() {  # free_ports N: the first of N consecutive TCP ports nothing listens on now
    python3 - "$1" <<'PY'
import random, socket, sys
n = int(sys.argv[1])
for _ in range(200):
    first = random.randrange(20000, 60000 - n)
    try:
        taken = [socket.create_server(("127.0.0.1", port)) for port in range(first, first + n)]
    except OSError:
        continue
    print(first)
    break
PY
}

say() { echo "slurm-one-node: $*" >&2; }

alive() {  # alive PIDFILE: the process in it runs
    [[ -s "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null
}

install_packages() {
    command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null \
        && command -v sbatch >/dev/null && return 0
    if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
        say "slurm-wlm and munge are not installed, and installing them needs root and apt-get"
        return 1
    fi
    say "installing slurm-wlm and munge (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >"$dir/apt.log" 2>&1 || { say "apt-get update failed: see $dir/apt.log"; return 1; }
    apt-get install -y -qq --no-install-recommends slurm-wlm munge >>"$dir/apt.log" 2>&1 \
        || { say "apt-get install slurm-wlm munge failed: see $dir/apt.log"; return 1; }
}

write_config() {  # ports: the ones this folder's cluster had, else free ones (a cluster already here keeps its own)
    local node cpus mem_mb ctld_port slurmd_port
    ctld_port=$(sed -n 's/^SlurmctldPort=//p' "$conf" 2>/dev/null || true)
    slurmd_port=$(sed -n 's/^NodeName=.* Port=\([0-9]*\).*/\1/p' "$conf" 2>/dev/null | head -1 || true)
    [[ -n "$ctld_port" ]] || ctld_port=$(free_port)
    [[ -n "$slurmd_port" ]] || slurmd_port=$(free_ports "$nodes")
    node=$(hostname -s)
    cpus=$(nproc)
    mem_mb=$(awk '/MemTotal/ {print int($2 / 1024 * 0.8)}' /proc/meminfo)
    cat >"$conf" <<EOF
# Written by scripts/slurm-one-node.sh: a one-node test cluster whose files all live in $dir.
ClusterName=spanft-one-node
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.socket
SlurmUser=$(id -un)
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool-%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
$(memory_lines)
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
MinJobAge=600
KillWait=5
SlurmctldTimeout=30
SlurmdTimeout=30
$(node_lines "$node" "$cpus" "$mem_mb" "$slurmd_port")
PartitionName=debug Nodes=$(node_names "$node" | paste -sd,) Default=YES MaxTime=INFINITE State=UP
EOF
}

memory_lines() {  # SLURM_ONE_NODE_MEMORY=enforce: memory is a consumable resource and a job over its --mem is killed
    if [[ "${SLURM_ONE_NODE_MEMORY:-}" == enforce ]]; then
        printf 'SelectTypeParameters=CR_CPU_Memory\nJobAcctGatherType=jobacct_gather/linux\nJobAcctGatherFrequency=1\nJobAcctGatherParams=OverMemoryKill\n'
    else
        printf 'SelectTypeParameters=CR_CPU\nJobAcctGatherType=jobacct_gather/none\n'
    fi
}

node_names() {  # one node: this host's name; several: n1, n2, ...
    if ((nodes == 1)); then echo "$1"; else seq -f 'n%g' 1 "$nodes"; fi
}

node_lines() {  # node_lines HOST CPUS MEM_MB FIRST_PORT: a NodeName line per node, each slurmd on its own port
    local i=0 name
    for name in $(node_names "$1"); do
        echo "NodeName=$name NodeHostname=$1 NodeAddr=127.0.0.1 Port=$(($4 + i)) CPUs=$2 RealMemory=$3 State=UNKNOWN"
        i=$((i + 1))
    done
}

start_munge() {
    alive "$dir/munged.pid" && return 0
    [[ -s "$dir/munge.key" ]] || { dd if=/dev/urandom of="$dir/munge.key" bs=1024 count=1 status=none; chmod 400 "$dir/munge.key"; }
    # munged refuses root unless forced; this node's daemons all run as the invoking user
    munged --force --socket="$dir/munge.socket" --key-file="$dir/munge.key" --pid-file="$dir/munged.pid" \
        --log-file="$dir/munged.log" --seed-file="$dir/munged.seed" 2>>"$dir/munged.log"
}

start_slurm() {
    mkdir -p "$dir/state" "$dir/spool"
    export SLURM_CONF="$conf"
    alive "$dir/slurmctld.pid" || slurmctld -f "$conf" 2>>"$dir/slurmctld.log"
    local name
    for name in $(node_names "$(hostname -s)"); do
        alive "$dir/slurmd-$name.pid" || slurmd -f "$conf" -N "$name" 2>>"$dir/slurmd-$name.log"
    done
    local tries=0
    until [[ $(sinfo -h -N -o '%N %t' 2>/dev/null | grep -Ec ' (idle|mix|alloc)$') -ge $nodes ]]; do
        tries=$((tries + 1))
        if ((tries > 60)); then
            say "the node did not come up in 30 s: see $dir/slurmctld.log and $dir/slurmd.log"
            return 1
        fi
        sleep 0.5
    done
}

stop_daemons() {  # only the daemons whose pid files this script's start wrote in DIR
    local pidfile pid
    for pidfile in "$dir"/slurmd-*.pid "$dir/slurmctld.pid" "$dir/munged.pid"; do
        [[ -e "$pidfile" ]] || continue
        pid=$(cat "$pidfile" 2>/dev/null || true)
        if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
            kill "$pid" 2>/dev/null || true
            for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -9 "$pid" 2>/dev/null || true
        fi
        rm -f "$pidfile"
    done
}

case "$action" in
    start)
        install_packages
        write_config
        trap stop_daemons ERR
        start_munge
        start_slurm
        trap - ERR
        echo "export SLURM_CONF=$conf"
        ;;
    stop)
        stop_daemons
        ;;
    status)
        [[ -f "$conf" ]] && SLURM_CONF="$conf" sinfo -h -o '%t' 2>/dev/null | grep -Eq '^(idle|mix|alloc)'
        ;;
    *)
        echo "usage: $0 start|stop|status DIR" >&2
        exit 2
        ;;
esac
