#!/usr/bin/env bash
# Train one reference baseline on a GPU from a local model directory (never a hub download).
#   scripts/train.sh CONFIG MODEL_DIR [--set section.key=value ...] [--resume] [--print-config]
#   CONFIG names its algorithm (algorithm.name: critic_free | ppo | sweet_rl); --print-config prints
#   the resolved config and exits (MODEL_DIR need not exist then).
# e.g. scripts/train.sh baselines/configs/gigpo_alfworld.yaml /models/Qwen2.5-1.5B-Instruct
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$#" -lt 2 ]; then sed -n 2,6p "$0"; exit 2; fi
config="$1"; model="$2"; shift 2
[ -f "$config" ] || { echo "config file not found: $config" >&2; exit 2; }
case " $* " in
    *" --print-config "*) ;;
    *) [ -d "$model" ] || { echo "model directory not found: $model" >&2; exit 2; } ;;
esac
name="$(basename "$config" .yaml)"
exec python -m baselines.trainers --config "$config" --set "policy.model=${model}" \
    --set "run.out_dir=${RUNS:-runs}/${name}" "$@"
