#!/usr/bin/env bash
# `agentenvs eval` against llama.cpp's OpenAI server (llama-cpp-python's `python -m llama_cpp.server`), end
# to end on CPU, with default settings: a tiny random llama GGUF written offline (scripts/make_tiny_gguf.py),
# served with a 32,768-token context; two envs; the server is killed mid-run, restarted, the eval resumed,
# and the bundle verified by replay (scripts/eval_e2e.sh).
#
#   PYTHON=.venv/bin/python LLAMACPP_PYTHON=.venv-llamacpp/bin/python scripts/llamacpp_eval_e2e.sh
#
# PYTHON runs agentenvs (the test install); LLAMACPP_PYTHON runs the server and writes the model (a venv
# with `llama-cpp-python[server]` and `gguf`, see .ci/run). Every phase is bounded (PHASE_S seconds each,
# 600 by default), so the whole script ends within about 5 x PHASE_S. The script also prints what the
# server's token-count endpoints answer (llama-cpp-python has no /tokenize, it has /extras/tokenize and
# /extras/tokenize/count) and the settings the bundle recorded.
set -euo pipefail
cd "$(dirname "$0")/.."
LLAMACPP_PYTHON=${LLAMACPP_PYTHON:-.venv-llamacpp/bin/python}
PORT=${PORT:-8766}
N_CTX=${N_CTX:-32768}
ENVS=(agentenvs/Sokoban-v0 agentenvs/Search-NQ-v0)
EPISODES=6  # the smoke panel: 3 per env
SERVER_NAME="the llama.cpp server"
source scripts/eval_e2e.sh

serve() {
    "$LLAMACPP_PYTHON" -m llama_cpp.server --model "$WORK/tiny.gguf" --model_alias tiny --n_ctx "$N_CTX" \
        --host 127.0.0.1 --port "$PORT" >"$1" 2>&1 &
}

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

kill_resume_verify
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
