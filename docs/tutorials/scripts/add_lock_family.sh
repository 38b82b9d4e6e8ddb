#!/usr/bin/env bash
# Add the Lock family to this checkout and run the checks every family must pass. Run from the repository root.
set -euo pipefail
cp -r docs/tutorials/scripts/lock agentenvs/envs/lock        # the family package: import agentenvs discovers it
mkdir -p tests/envs/lock && cp docs/tutorials/scripts/test_lock.py tests/envs/lock/  # the family's own tests

python docs/tutorials/scripts/play_lock.py               # registered, gym.make, the expert opens every test lock
python -m pytest -q tests/envs/lock                          # the family's rules
python -m pytest -q tests/core/test_contract.py tests/core/test_layout.py tests/core/test_reward_hacking.py -k "Lock-v0 and not Unlock or test_layout"
