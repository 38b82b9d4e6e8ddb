# The end-to-end run of `agentenvs eval` against a real OpenAI-compatible server, shared by
# scripts/vllm_eval_e2e.sh and scripts/llamacpp_eval_e2e.sh (sourced, not run): the server is started, the
# eval is killed with it once two episodes are in the bundle, the server is restarted, the same command
# resumes and finishes the bundle, and `leaderboard verify` replays it.
#
# The sourcing script sets ENVS (an array), EPISODES (how many the smoke panel plays over them),
# SERVER_NAME (for messages) and defines `serve LOG` (start the server in the background on 127.0.0.1:$PORT,
# writing LOG); it reads PYTHON, PORT and PHASE_S (600 by default). Every phase is bounded by PHASE_S
# seconds; on any exit, a TERM or an INT the server and every process below it are killed by PID.
set -euo pipefail
PYTHON=${PYTHON:-python}
PHASE_S=${PHASE_S:-600}
WORK=$(mktemp -d)
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

stop_server() {  # SIGKILL the server and everything it started, by PID, and check that none is left
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
    if [ -n "$alive" ]; then echo "$SERVER_NAME processes still alive after SIGKILL:$alive" >&2; return 1; fi
    echo "stopped $SERVER_NAME: PIDs" $pids
    SERVER_PID=""
}
trap 'stop_server || true; rm -rf "$WORK"' EXIT
trap 'exit 143' TERM INT

start_server() {  # start_server NAME: serve, then wait until /v1/models answers (PHASE_S seconds at most)
    serve "$WORK/server-$1.log"
    SERVER_PID=$!
    for _ in $(seq "$PHASE_S"); do
        if "$PYTHON" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
            "http://127.0.0.1:$PORT/v1/models" 2>/dev/null; then
            echo "$SERVER_NAME up (PID $SERVER_PID)"
            return 0
        fi
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 1
    done
    echo "$SERVER_NAME did not start; its log:" >&2
    tail -40 "$WORK/server-$1.log" >&2
    return 1
}

lines() { [ -f "$BUNDLE/episodes.jsonl" ] && wc -l <"$BUNDLE/episodes.jsonl" || echo 0; }

kill_resume_verify() {  # the server must be up; ends with the bundle verified and the server still up
    local eval_command=(timeout "$PHASE_S" "$PYTHON" -m agentenvs.cli eval "${ENVS[@]}" --model tiny
                        --base-url "http://127.0.0.1:$PORT/v1" --panel smoke --out "$BUNDLE")
    # the first run: kill the server once two episodes are in the bundle (polled often: a tiny model
    # plays an episode in about a second)
    "${eval_command[@]}" >"$WORK/eval-first.log" 2>&1 &
    local eval_pid=$! first_status=0
    for _ in $(seq $((10 * PHASE_S))); do
        [ "$(lines)" -ge 2 ] && break
        kill -0 "$eval_pid" 2>/dev/null || break
        sleep 0.1
    done
    if [ "$(lines)" -lt 2 ]; then
        echo "the first run wrote $(lines) episodes; its log:" >&2
        cat "$WORK/eval-first.log" >&2
        exit 1
    fi
    stop_server
    wait "$eval_pid" || first_status=$?
    echo "first run ended with status $first_status after $(lines) of $EPISODES episodes:"
    tail -5 "$WORK/eval-first.log"
    if [ "$first_status" -eq 0 ]; then echo "the first run finished before the kill; nothing was resumed" >&2; exit 1; fi

    # the rerun: the same command resumes and finishes the bundle
    start_server second
    "${eval_command[@]}" | tee "$WORK/eval-second.log"
    grep -q "already in" "$WORK/eval-second.log"
    timeout "$PHASE_S" "$PYTHON" -m leaderboard verify "$BUNDLE"
}
