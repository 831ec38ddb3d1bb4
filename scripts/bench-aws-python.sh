#!/usr/bin/env bash
# bench-aws-python.sh: the AWS backoff study's sweep, herdlab against the
# study's own Python simulator, in CPU time (user+sys of each process, by
# /usr/bin/time), run in turn on this machine.
#
#   scripts/bench-aws-python.sh SIMULATOR.py [ROUNDS]
#
# SIMULATOR.py is src/backoff_simulator.py of the repository
# aws-samples/aws-arch-backoff-simulator (the simulator behind the AWS
# Architecture Blog's "Exponential Backoff And Jitter", 2015). It carries
# no licence, so herdlab does not ship it: fetch it and pass its path (or
# set AWS_BACKOFF_SIMULATOR). scripts/aws_sim_sweep.py runs it unmodified
# but for the number of client counts it sweeps.
#
# Each round runs, in turn:
#   the 9,500-run sweep: 10 to 190 clients in steps of 10, 5 strategies,
#     100 runs each; the Python simulator with range_max = 19, and
#     herdlab sweep scenarios/aws-occ-10.yaml --vary workload.requests=10,...,190
#   the Python simulator's own default sweep: 10 to 50 clients (2,500 runs),
#     and herdlab's sweep of the same points.
# herdlab is bin/herdlab, built first if missing (or $HERDLAB). It skips,
# exiting 0, without python3, /usr/bin/time or the simulator.
set -euo pipefail
cd "$(dirname "$0")/.."

sim=${1:-${AWS_BACKOFF_SIMULATOR:-}}
rounds=${2:-1}
if ! command -v python3 >/dev/null; then echo "SKIP: no python3"; exit 0; fi
if [ ! -x /usr/bin/time ]; then echo "SKIP: no /usr/bin/time"; exit 0; fi
if [ -z "$sim" ] || [ ! -f "$sim" ]; then
	echo "SKIP: no simulator: pass the path of backoff_simulator.py (aws-samples/aws-arch-backoff-simulator, src/) or set AWS_BACKOFF_SIMULATOR"
	exit 0
fi
sim=$(cd "$(dirname "$sim")" && pwd)/$(basename "$sim")
herdlab=${HERDLAB:-bin/herdlab}
if [ ! -x "$herdlab" ]; then make build >/dev/null; fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# cpu CMD...: runs CMD, output discarded, and prints its CPU seconds (user+sys).
cpu() {
	/usr/bin/time -f '%U %S' -o "$work/time" "$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
	awk '{printf "%.2f", $1 + $2}' "$work/time"
}

# py_sweep RANGE_MAX: the simulator's sweep of 10 to RANGE_MAX*10 clients.
py_sweep() {
	rm -rf "$work/py" && mkdir "$work/py"
	cpu python3 scripts/aws_sim_sweep.py "$sim" "$1" "$work/py"
}

# herd_sweep RANGE_MAX: herdlab's sweep of the same points.
herd_sweep() {
	rm -rf "$work/herd"
	cpu "$herdlab" sweep scenarios/aws-occ-10.yaml --vary "workload.requests=$(seq -s, 10 10 $(($1 * 10)))" -q -o "$work/herd"
}

echo "round sweep runs python_cpu_s herdlab_cpu_s ratio"
for r in $(seq 1 "$rounds"); do
	for points in 19 5; do
		p=$(py_sweep "$points")
		h=$(herd_sweep "$points")
		echo "$r 10..$((points * 10)) $((points * 500)) $p $h $(awk -v p="$p" -v h="$h" 'BEGIN{printf "%.1fx", p / h}')"
	done
done
