#!/usr/bin/env bash
# Start or resume a long study in the background: from a frozen worktree of the commit that declares its plan, with
# that worktree's own virtual environment, at the lowest CPU priority (its own autogroup, nice 19: `nice` alone does not
# lower a job against the other sessions' groups), one torch thread per worker. Rerunning it resumes the study (finished
# runs are kept, a group in flight restarts from its last checkpoint; records are the same either way).
#   usage: tools/long_study.sh CONFIG COMMIT        e.g. tools/long_study.sh hopper_paper_1m 1657d09
#   then:  tail -f $LONG_STUDIES/CONFIG.log;  the records are in $LONG_STUDIES/CONFIG/runs/CONFIG when they finish
#   and:   tools/long_study.sh --harvest CONFIG docs/studies/FOLDER   copies study.json and the finished records there
set -euo pipefail
if [ "${1:-}" = "--harvest" ]; then
    config=${2:?usage: tools/long_study.sh --harvest CONFIG DEST}
    dest=${3:?usage: tools/long_study.sh --harvest CONFIG DEST}
    out=${LONG_STUDIES:-/work/long-studies}/$config/runs/$config
    mkdir -p "$dest"
    dest=$(cd "$dest" && pwd)
    cp "$out/study.json" "$dest/"
    # the records only (checkpoints, locks and models stay behind)
    if [ -d "$out/runs" ]; then
        (cd "$out" && find runs -name 'seed_*.json.gz' -print0 | xargs -0r cp --parents -t "$dest")
    fi
    echo "long_study: $(find "$dest" -name 'seed_*.json.gz' | wc -l) records in $dest"
    exit 0
fi
config=${1:?usage: tools/long_study.sh CONFIG COMMIT}
commit=${2:?usage: tools/long_study.sh CONFIG COMMIT}
root=${LONG_STUDIES:-/work/long-studies}
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
tree=$root/$config
mkdir -p "$root"
[ -d "$tree" ] || git -C "$repo" worktree add --detach "$tree" "$commit"
want=$(git -C "$repo" rev-parse "$commit^{commit}")
have=$(git -C "$tree" rev-parse HEAD)
[ "$have" = "$want" ] || { echo "long_study: $tree is at $have, not at the plan's commit $want" >&2; exit 2; }
make -C "$tree" install >/dev/null
cd "$tree"
# setsid: a session of its own, so a scheduling autogroup of its own, whose niceness the next line sets
setsid env OMP_NUM_THREADS=1 .venv/bin/python -m sb3_ablation study --config "$config" --no-progress --verbose 2 \
    >>"$root/$config.log" 2>&1 </dev/null &
pid=$!
# (once setsid has made the new session: before that, the process is still in this shell's autogroup)
for _ in $(seq 50); do
    [ "$(cut -d' ' -f1 "/proc/$pid/autogroup")" != "$(cut -d' ' -f1 /proc/self/autogroup)" ] && break
    sleep 0.1
done
[ "$(cut -d' ' -f1 "/proc/$pid/autogroup")" != "$(cut -d' ' -f1 /proc/self/autogroup)" ] \
    || { echo "long_study: pid $pid has no autogroup of its own; its priority is unchanged" >&2; exit 1; }
echo 19 >"/proc/$pid/autogroup"
echo "long_study: $config from $want in $tree, pid $pid ($(cat "/proc/$pid/autogroup")); log $root/$config.log"
