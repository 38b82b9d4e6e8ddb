#!/usr/bin/env bash
# Train one reference baseline on a GPU from a local model directory (never a hub download).
#   scripts/train.sh TRAINER CONFIG MODEL_DIR [--set key=value ...] [--resume]
#   TRAINER: critic_free (GiGPO, GRPO, RLOO, MT-GRPO) | ppo (MT-PPO, PPO-OR, PPO-MR) | sweet_rl
# e.g. scripts/train.sh critic_free baselines/configs/gigpo_alfworld.yaml /models/Qwen2.5-1.5B-Instruct
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$#" -lt 3 ]; then sed -n 2,5p "$0"; exit 2; fi
trainer="$1"; config="$2"; model="$3"; shift 3
case "$trainer" in critic_free|ppo|sweet_rl) ;; *) echo "unknown trainer: $trainer" >&2; exit 2;; esac
[ -d "$model" ] || { echo "model directory not found: $model" >&2; exit 2; }
name="$(basename "$config" .yaml)"
exec python -m "baselines.trainers.${trainer}" --config "$config" --set "model=${model}" \
    --set "out_dir=${RUNS:-runs}/${name}" "$@"
