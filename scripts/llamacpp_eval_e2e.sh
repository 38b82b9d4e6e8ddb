#!/usr/bin/env bash
# `agentenvs eval` against llama.cpp's OpenAI server (llama-cpp-python's `python -m llama_cpp.server`), end
# to end on CPU, with default settings: a tiny random llama GGUF written offline (scripts/make_tiny_gguf.py),
# served with a 32,768-token context; two envs; the server is killed mid-run, restarted, the eval resumed,
# and the bundle verified by replay.
#
#   PYTHON=.venv/bin/python LLAMACPP_PYTHON=.venv-llamacpp/bin/python scripts/llamacpp_eval_e2e.sh
#
# PYTHON runs agentenvs (the test install); LLAMACPP_PYTHON runs the server and writes the model (a venv
# with `llama-cpp-python[server]` and `gguf`, see .ci/run). Every phase is bounded (PHASE_S seconds each,
# 600 by default), so the whole script ends within about 5 x PHASE_S; on any exit, a TERM or an INT the
# server is killed by its PID. The script also prints what the server's token-count endpoints answer
# (llama-cpp-python has no /tokenize, it has /extras/tokenize and /extras/tokenize/count) and the
# settings the bundle recorded.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python}
LLAMACPP_PYTHON=${LLAMACPP_PYTHON:-.venv-llamacpp/bin/python}
PORT=${PORT:-8766}
PHASE_S=${PHASE_S:-600}
N_CTX=${N_CTX:-32768}
WORK=$(mktemp -d)
ENVS=(agentenvs/Sokoban-v0 agentenvs/Search-NQ-v0)
EPISODES=6  # the smoke panel: 3 per env
BUNDLE="$WORK/bundle"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
SERVER_PID=""

descendants() {  # every process below PID $1, children first
    local child
    for child in $(pgrep -P "$1" || true); do
        descendants "$child"
        echo "$child"
    done
}

stop_server() {  # SIGKILL the server (and anything it started), by PID, and check that none is left
    [ -n "$SERVER_PID" ] || return 0
    local pids alive=""
    pids="$(descendants "$SERVER_PID") $SERVER_PID"
    kill -9 $pids 2>/dev/null || true
    for _ in $(seq 50); do
        alive=""
        for pid in $pids; do kill -0 "$pid" 2>/dev/null && alive="$alive $pid"; done
        [ -z "$alive" ] && break
        sleep 0.2
    done
    if [ -n "$alive" ]; then echo "llama.cpp server processes still alive after SIGKILL:$alive" >&2; return 1; fi
    echo "stopped the llama.cpp server: PIDs" $pids
    SERVER_PID=""
}
trap 'stop_server || true; rm -rf "$WORK"' EXIT
trap 'exit 143' TERM INT

start_server() {
    "$LLAMACPP_PYTHON" -m llama_cpp.server --model "$WORK/tiny.gguf" --model_alias tiny --n_ctx "$N_CTX" \
        --host 127.0.0.1 --port "$PORT" >"$WORK/server-$1.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq "$PHASE_S"); do
        if "$PYTHON" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
            "http://127.0.0.1:$PORT/v1/models" 2>/dev/null; then
            echo "llama.cpp server up (PID $SERVER_PID)"
            return 0
        fi
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 1
    done
    echo "the llama.cpp server did not start; its log:" >&2
    tail -40 "$WORK/server-$1.log" >&2
    return 1
}

lines() { [ -f "$BUNDLE/episodes.jsonl" ] && wc -l <"$BUNDLE/episodes.jsonl" || echo 0; }

EVAL=(timeout "$PHASE_S" "$PYTHON" -m agentenvs.cli eval "${ENVS[@]}" --model tiny --base-url "http://127.0.0.1:$PORT/v1"
      --panel smoke --out "$BUNDLE")

"$LLAMACPP_PYTHON" scripts/make_tiny_gguf.py "$WORK/tiny.gguf"
start_server first

# what the server answers where agentenvs looks for a context length and token counts (for the record)
"$PYTHON" - "http://127.0.0.1:$PORT" <<'PY'
import json, sys, urllib.error, urllib.request
root = sys.argv[1]
probes = [
    ("GET", "/v1/models", None),
    ("POST", "/tokenize", {"model": "tiny", "messages": [{"role": "user", "content": "x"}], "add_generation_prompt": True}),
    ("POST", "/tokenize", {"content": "hello world"}),
    ("POST", "/extras/tokenize", {"model": "tiny", "input": "hello world"}),
    ("POST", "/extras/tokenize/count", {"model": "tiny", "input": "hello world"}),
    ("GET", "/props", None),
]
for method, path, body in probes:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(root + path, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            answer = f"{response.status} {response.read()[:300].decode()}"
    except urllib.error.HTTPError as exc:
        answer = f"{exc.code} {exc.read()[:120].decode()}"
    print(f"{method} {path} {json.dumps(body) if body else ''} -> {answer}")
PY

# the first run: kill the server once two episodes are in the bundle
"${EVAL[@]}" >"$WORK/eval-first.log" 2>&1 &
EVAL_PID=$!
for _ in $(seq $((10 * PHASE_S))); do  # polled often: the tiny model plays an episode in about a second
    [ "$(lines)" -ge 2 ] && break
    kill -0 "$EVAL_PID" 2>/dev/null || break
    sleep 0.1
done
if [ "$(lines)" -lt 2 ]; then echo "the first run wrote $(lines) episodes; its log:" >&2; cat "$WORK/eval-first.log" >&2; exit 1; fi
stop_server
first_status=0
wait "$EVAL_PID" || first_status=$?
echo "first run ended with status $first_status after $(lines) of $EPISODES episodes:"
tail -5 "$WORK/eval-first.log"
if [ "$first_status" -eq 0 ]; then echo "the first run finished before the kill; nothing was resumed" >&2; exit 1; fi

# the rerun: the same command resumes and finishes the bundle
start_server second
"${EVAL[@]}" | tee "$WORK/eval-second.log"
grep -q "already in" "$WORK/eval-second.log"
timeout "$PHASE_S" "$PYTHON" -m leaderboard verify "$BUNDLE"
"$PYTHON" - "$BUNDLE" "$EPISODES" <<'PY'
import json, sys
bundle, episodes = sys.argv[1], int(sys.argv[2])
with open(f"{bundle}/episodes.jsonl") as handle:
    assert sum(1 for line in handle if line.strip()) == episodes
settings = json.load(open(f"{bundle}/metadata.json"))["settings"]
assert settings["token_count"] in ("server", "estimate", "none"), settings
print("settings:", json.dumps(settings, sort_keys=True))
PY
stop_server
