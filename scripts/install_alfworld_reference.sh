#!/usr/bin/env bash
# Installs the reference engine of the ALFWorld differential tests and benchmark:
# TextWorld's PDDL engine with Fast Downward, as the alfworld package pulls them in
# (alfworld -> textworld[pddl] -> fast-downward-textworld, GPL-3).
# fast-downward-textworld is built from source: it needs a C++ compiler and takes
# about 3 minutes on 2 cores. The native ALFWorld env itself only reads the alfworld
# package's data files (`pip install --no-deps alfworld==0.4.2` is enough for it).
set -euo pipefail
python -m pip install "alfworld==0.4.2"
python -c "import fast_downward, textworld; from alfworld.agents.environment.alfred_tw_env import AlfredDemangler"
echo "ALFWorld reference engine ready"
