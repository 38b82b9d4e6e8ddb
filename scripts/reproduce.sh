#!/usr/bin/env bash
# The papers' comparisons, three seeds each, on a GPU (local model directories only):
#   scripts/reproduce.sh gigpo-alfworld|gigpo-webshop|gigpo-sokoban|mt-ppo-sokoban|mt-grpo-search|sweet-rl-colbench MODEL_DIR
# Runs land in runs/<setting>/<variant>-s<seed>; plot: python -m baselines.metrics plot runs/<setting>/*/metrics.jsonl
# The estimators run the released code's arithmetic (preset=reference, see the README's table
# "paper form vs released code"); PRESET=paper runs the papers' formulas instead.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$#" -lt 2 ]; then sed -n 2,6p "$0"; exit 2; fi
setting="$1"; model="$2"; shift 2
preset="${PRESET:-reference}"
run() {  # trainer config variant overrides...
    local trainer="$1" config="$2" variant="$3"; shift 3
    for seed in ${SEEDS:-0 1 2}; do
        RUNS="runs/${setting}" scripts/train.sh "$trainer" "$config" "$model" --set "seed=${seed}" \
            --set "out_dir=runs/${setting}/${variant}-s${seed}" --set "preset=${preset}" "$@"
    done
}
case "$setting" in
    gigpo-alfworld)
        config=baselines/configs/gigpo_alfworld.yaml
        run critic_free "$config" gigpo --set estimator=gigpo
        run critic_free "$config" grpo --set estimator=grpo ;;
    gigpo-webshop|gigpo-sokoban)
        # verl-agent's WebShop and Sokoban scripts run GiGPO with mode=mean_norm (no std)
        config="baselines/configs/${setting/-/_}.yaml"
        run critic_free "$config" gigpo --set estimator=gigpo --set normalize=none
        run critic_free "$config" grpo --set estimator=grpo ;;
    mt-ppo-sokoban)
        # no released code for these runs' estimators: the papers' formulas
        config=baselines/configs/mt_ppo_sokoban.yaml
        run ppo "$config" mt-ppo --set reward_placement=turn
        run ppo "$config" ppo-or --set reward_placement=outcome
        run ppo "$config" ppo-mr --set reward_placement=summed
        run critic_free "$config" grpo-or --set estimator=grpo_or --set context=window --set preset=paper
        run critic_free "$config" grpo-mr --set estimator=grpo --set context=window --set preset=paper ;;
    mt-grpo-search)
        config=baselines/configs/mt_grpo_search.yaml
        code=reference_code=multi-turn-rl-agent
        run critic_free "$config" mt-grpo --set estimator=mt_grpo --set "$code"
        run critic_free "$config" grpo-or --set estimator=grpo_or --set "$code"
        run critic_free "$config" grpo-mr --set estimator=grpo --set "$code" ;;
    sweet-rl-colbench)
        # backend programming: sweet_rl's evaluate_code.py critic pairs, random top/bottom-half actor pairs
        run sweet_rl baselines/configs/sweet_rl_colbench.yaml sweet-rl --set reference_code=sweet-rl-backend ;;
    *) echo "unknown setting: $setting" >&2; exit 2 ;;
esac
