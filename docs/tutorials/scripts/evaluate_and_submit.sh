#!/usr/bin/env bash
# From a model behind an OpenAI-compatible endpoint to a verified row on a local leaderboard.
# Run from the repository root; everything it writes goes under $WORK.
set -euo pipefail
WORK=${WORK:-runs/tutorial-eval}
MODEL_PORT=${MODEL_PORT:-8000}
BOARD_PORT=${BOARD_PORT:-8080}
mkdir -p "$WORK"
SERVERS=()
trap 'kill "${SERVERS[@]}" 2>/dev/null || true' EXIT

wait_for() {  # poll a URL until it answers (at most 120 s)
    for _ in $(seq 240); do
        python -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "$1" 2>/dev/null && return 0
        sleep 0.5
    done
    echo "no answer from $1" >&2
    return 1
}

# 1. A model behind an OpenAI-compatible endpoint. With vLLM on a GPU this is
#    `vllm serve MODEL --port 8000`; here a tiny random chat model, built offline, served on the CPU.
python scripts/tiny_chat_model.py "$WORK/tiny-model" agentenvs/Sokoban-v0
python -m agentenvs.agents.openai_server --model "$WORK/tiny-model" --name tiny --port "$MODEL_PORT" &
SERVERS+=($!)
wait_for "http://127.0.0.1:$MODEL_PORT/v1/models"

# 2. Play the smoke panel (3 episodes per env; `--panel test` is the board's 50) and write the bundle.
agentenvs eval Sokoban-v0 --model tiny --model-size 0.6M --panel smoke --max-tokens 16 \
    --base-url "http://127.0.0.1:$MODEL_PORT/v1" --out "$WORK/bundle"

# 3. Re-check the bundle by replay, exactly as the board will.
leaderboard verify "$WORK/bundle"

# 4. A local board: its floor and ceiling (the random and expert agents), a token, the submission.
leaderboard seed --db "$WORK/board.sqlite" --panel smoke --env agentenvs/Sokoban-v0
LEADERBOARD_TOKENS=local-token leaderboard serve --db "$WORK/board.sqlite" --port "$BOARD_PORT" &
SERVERS+=($!)
wait_for "http://127.0.0.1:$BOARD_PORT/"
LEADERBOARD_TOKEN=local-token leaderboard submit "$WORK/bundle" --url "http://127.0.0.1:$BOARD_PORT" --wait

# 5. The board's pages as static HTML: the new row sits beside the random and expert agents.
leaderboard export --db "$WORK/board.sqlite" --out "$WORK/site"
