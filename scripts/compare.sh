#!/usr/bin/env bash
# Side by side: this Holon against another build (upstream Holon, built by
# you from its repository at a commit you pin), each in a temporary home,
# each driven through its own CLI. Prints, with the ratio ours / theirs:
#   daemon start, idle RSS, `daemon status` (median), `daemon stop`;
#   send wall (`send` here, `prompt` upstream; median of RUNS);
#   admissions per second from 8 concurrent CLI clients (8 x 25 prompts);
#   bytes on disk per prompt (the store's files after N prompts and a stop,
#   less the same after none, as the runtime left them and compacted: redb
#   grows its file in regions, SQLite keeps a WAL; every turn fails at once:
#   no model answers);
#   `daemon stop` with a model call in flight (a local endpoint that accepts
#   the request and never answers).
#
#   scripts/compare.sh target/release/holon /path/to/upstream/holon [runs]
set -euo pipefail

ours=$(realpath "${1:?usage: compare.sh OURS THEIRS [RUNS]}")
theirs=$(realpath "${2:?usage: compare.sh OURS THEIRS [RUNS]}")
runs=${3:-20}
prompts=200

now_ms() { date +%s%3N; }

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# The endpoint that never answers: accepts, reads, notes it in $1, waits.
hang_server() {
  python3 - "$1" >/dev/null 2>&1 <<'PY' &
import socket, sys, threading, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(16)
open(sys.argv[1] + ".port", "w").write(str(s.getsockname()[1]))
def hold(c):
    c.recv(65536); open(sys.argv[1], "a").write("request\n"); time.sleep(600)
while True:
    c, _ = s.accept(); threading.Thread(target=hold, args=(c,), daemon=True).start()
PY
  echo $!
}

# The prompt subcommand of a build: `send` here, `prompt` upstream.
send_cmd() { if "$1" --help 2>/dev/null | grep -qE '^  send '; then echo send; else echo prompt; fi; }

# Bytes of the store's files (not the run directory, logs or indexes).
store_bytes() {
  du -sb --exclude=run --exclude=logs --exclude=indexes --exclude=agents --exclude=config \
    "$1" 2>/dev/null | awk '{print $1}'
}

# Bring the store to rest before measuring it: `holon store compact` here;
# a checkpointed, vacuumed SQLite upstream.
compact_store() {
  if "$1" store --help >/dev/null 2>&1; then
    "$1" store compact >/dev/null 2>&1 || true
  else
    find "$2" -name '*.sqlite*' -not -name '*-wal' -not -name '*-shm' -print0 |
      xargs -0 -r -n1 python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("PRAGMA wal_checkpoint(TRUNCATE)"); c.execute("VACUUM"); c.close()' 2>/dev/null || true
  fi
}

env_for() {
  export HOLON_HOME=$1 HOLON_MODEL=openai/compare OPENAI_API_KEY=sk-compare \
    OPENAI_BASE_URL=$2 HOLON_LISTEN=off
}

# measure BINARY -> one line of figures
measure() {
  local bin=$1 home send t0 t1 start stop pid rss status sendw
  send=$(send_cmd "$bin")
  home=$(mktemp -d)
  env_for "$home" http://127.0.0.1:9/v1
  t0=$(now_ms); "$bin" daemon start >/dev/null 2>&1; t1=$(now_ms); start=$((t1 - t0))
  sleep 3
  pid=$(pgrep -n -f "^$bin " || true)
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
  status=$(for _ in $(seq "$runs"); do
    t0=$(now_ms); "$bin" daemon status >/dev/null 2>&1 || true; t1=$(now_ms); echo $((t1 - t0))
  done | median)
  t0=$(now_ms); "$bin" daemon stop >/dev/null 2>&1 || true; t1=$(now_ms); stop=$((t1 - t0))
  local base; compact_store "$bin" "$home"; base=$(store_bytes "$home")

  # Send wall, then prompts for the disk figure, then 8 concurrent clients.
  "$bin" daemon start >/dev/null 2>&1
  sendw=$(for n in $(seq "$runs"); do
    t0=$(now_ms); "$bin" "$send" "send wall probe $n" >/dev/null 2>&1 || true; t1=$(now_ms); echo $((t1 - t0))
  done | median)
  for n in $(seq $((prompts - runs))); do
    "$bin" "$send" "prompt $n: look at the failing build and report what broke" >/dev/null 2>&1 || true
  done
  sleep 5
  "$bin" daemon stop >/dev/null 2>&1 || true
  local raw; raw=$(( ($(store_bytes "$home") - base) / prompts ))
  compact_store "$bin" "$home"
  local disk; disk=$(( ($(store_bytes "$home") - base) / prompts ))
  "$bin" daemon start >/dev/null 2>&1
  t0=$(now_ms)
  for c in $(seq 8); do
    ( for n in $(seq 25); do "$bin" "$send" "client $c prompt $n" >/dev/null 2>&1 || true; done ) &
  done
  wait
  t1=$(now_ms)
  local rate; rate=$(awk -v ms=$((t1 - t0)) 'BEGIN { printf "%.0f", 200 * 1000 / ms }')
  "$bin" daemon stop >/dev/null 2>&1 || true
  pkill -f "^$bin " 2>/dev/null || true
  rm -rf "$home"

  # Stop with a model call in flight.
  home=$(mktemp -d)
  local log=$home/hang.log hang port inflight
  hang=$(hang_server "$log")
  for _ in $(seq 100); do [ -s "$log.port" ] && break; sleep 0.05; done
  port=$(cat "$log.port")
  env_for "$home" "http://127.0.0.1:$port/v1"
  "$bin" daemon start >/dev/null 2>&1
  "$bin" "$send" "this call never returns" >/dev/null 2>&1 || true
  for _ in $(seq 200); do [ -s "$log" ] && break; sleep 0.05; done
  t0=$(now_ms); "$bin" daemon stop >/dev/null 2>&1 || true; t1=$(now_ms); inflight=$((t1 - t0))
  [ -s "$log" ] || inflight=-1
  kill "$hang" 2>/dev/null || true
  pkill -f "^$bin " 2>/dev/null || true
  rm -rf "$home"
  echo "$start $rss $status $stop $sendw $rate $raw $disk $inflight"
}

read -r o_start o_rss o_status o_stop o_send o_rate o_raw o_disk o_inflight < <(measure "$ours")
read -r t_start t_rss t_status t_stop t_send t_rate t_raw t_disk t_inflight < <(measure "$theirs")

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
row() { printf '%-34s %12s %12s %8s\n' "$1" "$2" "$3" "$(ratio "$4" "$5")"; }
printf '%-34s %12s %12s %8s\n' figure ours theirs ratio
row "daemon start" "$o_start ms" "$t_start ms" "$o_start" "$t_start"
row "idle RSS (3 s)" "$o_rss KiB" "$t_rss KiB" "$o_rss" "$t_rss"
row "daemon status (median)" "$o_status ms" "$t_status ms" "$o_status" "$t_status"
row "daemon stop" "$o_stop ms" "$t_stop ms" "$o_stop" "$t_stop"
row "send wall (median)" "$o_send ms" "$t_send ms" "$o_send" "$t_send"
row "admissions/s, 8 CLI clients" "$o_rate/s" "$t_rate/s" "$o_rate" "$t_rate"
row "store growth per prompt, as left" "$o_raw B" "$t_raw B" "$o_raw" "$t_raw"
row "store bytes per prompt, compacted" "$o_disk B" "$t_disk B" "$o_disk" "$t_disk"
row "stop with a model call in flight" "$o_inflight ms" "$t_inflight ms" "$o_inflight" "$t_inflight"
