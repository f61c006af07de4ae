#!/usr/bin/env bash
# A one-node SLURM cluster on this machine, for the fan-out tests and for trying `spanft fanout` by hand.
#
#   scripts/slurm-one-node.sh start DIR   install slurm-wlm + munge if missing (apt-get, root), then start munged,
#                                         slurmctld and slurmd with their config, sockets, logs and state in DIR;
#                                         prints `export SLURM_CONF=DIR/slurm.conf` (the clients' one setting)
#   scripts/slurm-one-node.sh stop DIR    stop the daemons this script started in DIR (by their pid files), no other
#   scripts/slurm-one-node.sh status DIR  exit 0 when the node takes jobs
#
# No systemd: each daemon detaches itself and writes its pid file in DIR. The ports are free ones picked at
# the first start (never SLURM's defaults), so a cluster already on this machine is left alone. The node offers
# every core and most of the memory, one partition `debug`; jobs share the node by CPU (cons_tres, CR_CPU).
# A start that fails stops what it started.
set -euo pipefail

action=${1:-}
dir=${2:-}
if [[ -z "$action" || -z "$dir" ]]; then
    echo "usage: $0 start|stop|status DIR" >&2
    exit 2
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
conf="$dir/slurm.conf"

free_port() {  # a TCP port nothing listens on now
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
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
    slurmd_port=$(sed -n 's/^SlurmdPort=//p' "$conf" 2>/dev/null || true)
    [[ -n "$ctld_port" ]] || ctld_port=$(free_port)
    [[ -n "$slurmd_port" ]] || slurmd_port=$(free_port)
    node=$(hostname -s)
    cpus=$(nproc)
    mem_mb=$(awk '/MemTotal/ {print int($2 / 1024 * 0.8)}' /proc/meminfo)
    cat >"$conf" <<EOF
# Written by scripts/slurm-one-node.sh: a one-node test cluster whose files all live in $dir.
ClusterName=spanft-one-node
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.socket
SlurmUser=$(id -un)
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
MinJobAge=600
KillWait=5
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
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
    alive "$dir/slurmd.pid" || slurmd -f "$conf" -N "$(hostname -s)" 2>>"$dir/slurmd.log"
    local tries=0
    until sinfo -h -o '%t' 2>/dev/null | grep -Eq '^(idle|mix|alloc)'; do
        tries=$((tries + 1))
        if ((tries > 60)); then
            say "the node did not come up in 30 s: see $dir/slurmctld.log and $dir/slurmd.log"
            return 1
        fi
        sleep 0.5
    done
}

stop_daemons() {  # only the daemons whose pid files this script's start wrote in DIR
    local name pid
    for name in slurmd slurmctld munged; do
        pid=$(cat "$dir/$name.pid" 2>/dev/null || true)
        if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
            kill "$pid" 2>/dev/null || true
            for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -9 "$pid" 2>/dev/null || true
        fi
        rm -f "$dir/$name.pid"
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
