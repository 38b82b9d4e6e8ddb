#!/usr/bin/env bash
# The wheel as a user gets it: build it from this checkout, install it in a fresh venv outside the checkout
# (torch's CPU build first, then the wheel with the envs and train extras), and from a folder that holds no
# checkout run every main id with its expert and one iteration of a training config found by name.
#
#   bash scripts/wheel_check.sh     # CI's wheel lane (3 to 5 minutes); PYTHON=python3.11 picks the interpreter
#
# Everything it writes lies in one temporary folder (mktemp -d), removed at the end (KEEP=1 keeps it).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-$(command -v python || command -v python3)}
work=$(mktemp -d "${TMPDIR:-/tmp}/agentenvs-wheel.XXXXXX")
if [ "${KEEP:-0}" = 1 ]; then echo "keeping ${work}"; else trap 'rm -rf "$work"' EXIT; fi
unset PYTHONPATH  # the venv must import the installed wheel, never the checkout
start=$SECONDS
step() { echo "=== wheel check: $* ($((SECONDS - start)) s so far)"; }

# A clean copy of what the wheel is built from (tracked files and new ones git does not ignore), so that
# no build/ folder or stale module of the checkout can slip into the wheel.
step "copying the sources"
sources=(pyproject.toml README.md LICENSE agentenvs baselines leaderboard retrieval_index)
mkdir "$work/src"
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$root" && git ls-files -z -co --exclude-standard -- "${sources[@]}" \
        | while IFS= read -r -d '' file; do if [ -f "$file" ]; then printf '%s\0' "$file"; fi; done \
        | xargs -0 cp --parents -t "$work/src")
else
    tar -C "$root" --exclude=__pycache__ -cf - "${sources[@]}" | tar -C "$work/src" -xf -
fi

step "building the wheel"
"$python" -m pip wheel --no-deps -q -w "$work/dist" "$work/src"
wheel=$(ls "$work"/dist/agentenvs-*.whl)
echo "$wheel"

step "installing torch==2.13.0 and the wheel [envs,train] in a fresh venv"
"$python" -m venv "$work/venv"
pip=("$work/venv/bin/python" -m pip install -q)
"${pip[@]}" torch==2.13.0
"${pip[@]}" "${wheel}[envs,train]"
export PATH="$work/venv/bin:$PATH"

mkdir "$work/run"
cd "$work/run"
step "checking that the venv imports the wheel, not a checkout"
python - "$work/venv" <<'EOF'
import sys
from pathlib import Path

import agentenvs
import baselines

venv = Path(sys.argv[1]).resolve()
for module in (agentenvs, baselines):
    where = Path(module.__file__).resolve()
    assert venv in where.parents, f"{module.__name__} imported from {where}, not from the venv {venv}"
print("imports from", venv)
EOF

step "every main id's code imports (its extra is installed, its data files are in the wheel)"
python - <<'EOF'
import agentenvs  # noqa: F401  (registers the ids)
from agentenvs.core.registration import main_ids, unavailable_reason

broken = {env_id: reason for env_id in main_ids() if (reason := unavailable_reason(env_id))}
assert not broken, broken
print(len(main_ids()), "main ids import")
EOF

step "agentenvs run all --agent expert --episodes 1"
agentenvs run all --agent expert --episodes 1

step "python -m baselines.trainers --config mini_sokoban, one iteration"
python -m baselines.trainers --config mini_sokoban --set run.iterations=1 --set "run.out_dir=$work/run/runs"
test -s "$work/run/runs/metrics.jsonl"

step "passed"
