#!/usr/bin/env bash
# The papers' comparisons, three seeds each, on a GPU (local model directories only):
#   scripts/reproduce.sh gigpo-alfworld|gigpo-webshop|gigpo-sokoban|mt-ppo-sokoban|mt-grpo-search|sweet-rl-colbench MODEL_DIR
# Runs land in runs/<setting>/<variant>-s<seed>; plot: python -m baselines.metrics plot runs/<setting>/*/metrics.jsonl
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$#" -lt 2 ]; then sed -n 2,4p "$0"; exit 2; fi
setting="$1"; model="$2"; shift 2
run() {  # trainer config variant overrides...
    local trainer="$1" config="$2" variant="$3"; shift 3
    for seed in ${SEEDS:-0 1 2}; do
        RUNS="runs/${setting}" scripts/train.sh "$trainer" "$config" "$model" --set "seed=${seed}" \
            --set "out_dir=runs/${setting}/${variant}-s${seed}" "$@"
    done
}
case "$setting" in
    gigpo-alfworld|gigpo-webshop|gigpo-sokoban)
        config="baselines/configs/${setting/-/_}.yaml"
        run critic_free "$config" gigpo --set estimator=gigpo
        run critic_free "$config" grpo --set estimator=grpo ;;
    mt-ppo-sokoban)
        config=baselines/configs/mt_ppo_sokoban.yaml
        run ppo "$config" mt-ppo --set reward_placement=turn
        run ppo "$config" ppo-or --set reward_placement=outcome
        run ppo "$config" ppo-mr --set reward_placement=summed
        run critic_free "$config" grpo-or --set estimator=grpo_or --set context=window
        run critic_free "$config" grpo-mr --set estimator=grpo --set context=window ;;
    mt-grpo-search)
        config=baselines/configs/mt_grpo_search.yaml
        run critic_free "$config" mt-grpo --set estimator=mt_grpo
        run critic_free "$config" grpo-or --set estimator=grpo_or
        run critic_free "$config" grpo-mr --set estimator=grpo ;;
    sweet-rl-colbench)
        run sweet_rl baselines/configs/sweet_rl_colbench.yaml sweet-rl ;;
    *) echo "unknown setting: $setting" >&2; exit 2 ;;
esac
