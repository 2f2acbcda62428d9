#!/usr/bin/env bash
# Side by side: this Holon against another build (upstream Holon, built by
# you from its repository at a commit you pin), each in a temporary home.
# Prints daemon start, idle RSS, `daemon status` and `daemon stop` wall times
# and the ratios (ours / theirs). Neither talks to a model: a dummy OpenAI
# endpoint on a closed port satisfies configuration checks.
#
#   scripts/compare.sh target/release/holon /path/to/upstream/holon [runs]
set -euo pipefail

ours=$(realpath "${1:?usage: compare.sh OURS THEIRS [RUNS]}")
theirs=$(realpath "${2:?usage: compare.sh OURS THEIRS [RUNS]}")
runs=${3:-20}

now_ms() { date +%s%3N; }

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# measure BINARY -> "start_ms rss_kib status_ms stop_ms"
measure() {
  local bin=$1 home
  home=$(mktemp -d)
  export HOLON_HOME=$home HOLON_MODEL=openai/compare OPENAI_API_KEY=sk-compare \
    OPENAI_BASE_URL=http://127.0.0.1:9/v1
  local t0 t1 start stop pid rss
  t0=$(now_ms); "$bin" daemon start >/dev/null 2>&1; t1=$(now_ms); start=$((t1 - t0))
  sleep 3
  pid=$(pgrep -n -f "^$bin " || true)
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
  local status
  status=$(for _ in $(seq "$runs"); do
    t0=$(now_ms); "$bin" daemon status >/dev/null 2>&1 || true; t1=$(now_ms); echo $((t1 - t0))
  done | median)
  t0=$(now_ms); "$bin" daemon stop >/dev/null 2>&1 || true; t1=$(now_ms); stop=$((t1 - t0))
  pkill -f "^$bin " 2>/dev/null || true
  rm -rf "$home"
  echo "$start $rss $status $stop"
}

read -r o_start o_rss o_status o_stop < <(measure "$ours")
read -r t_start t_rss t_status t_stop < <(measure "$theirs")

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
printf '%-22s %12s %12s %8s\n' figure ours theirs ratio
printf '%-22s %10s ms %10s ms %8s\n' "daemon start" "$o_start" "$t_start" "$(ratio "$o_start" "$t_start")"
printf '%-22s %9s KiB %9s KiB %8s\n' "idle RSS (3 s)" "$o_rss" "$t_rss" "$(ratio "$o_rss" "$t_rss")"
printf '%-22s %10s ms %10s ms %8s\n' "daemon status (median)" "$o_status" "$t_status" "$(ratio "$o_status" "$t_status")"
printf '%-22s %10s ms %10s ms %8s\n' "daemon stop" "$o_stop" "$t_stop" "$(ratio "$o_stop" "$t_stop")"
