#!/usr/bin/env bash
# GiGPO on verl (multi-GPU / multi-node on Ray): agentenvs episodes as verl's multi-turn agent loop,
# the agentenvs estimator registered as algorithm.adv_estimator=agentenvs_gigpo.
#   scripts/verl_gigpo.sh ENV_ID MODEL_DIR [verl hydra overrides ...]
# e.g. scripts/verl_gigpo.sh agentenvs/Sokoban-Verl-v0 /models/Qwen2.5-1.5B-Instruct trainer.n_gpus_per_node=8
# To reproduce verl-agent's arithmetic: AGENTENVS_PRESET=reference (or +algorithm.agentenvs.preset=reference);
# any estimator option goes the same way (+algorithm.agentenvs.eps_mode=add, ...). The overrides target
# verl's packaged config/ppo_trainer.yaml; algorithm.agentenvs is not in it, hence its "+".
# DATA (runs/verl_data), TRAIN_TASKS (4096) and VALID_TASKS (128) set the dataset written first.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$#" -lt 2 ]; then sed -n 2,5p "$0"; exit 2; fi
env_id="$1"; model="$2"; shift 2
data="${DATA:-runs/verl_data}/$(echo "$env_id" | tr '/' '_')"
mkdir -p "$data"
python - "$env_id" "$data" "${TRAIN_TASKS:-4096}" "${VALID_TASKS:-128}" <<'PY'
import sys
import pandas as pd
from baselines.verl.agent_loop import task_rows
env_id, out, train, valid = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
pd.DataFrame(task_rows(env_id, "train", train)).to_parquet(f"{out}/train.parquet")
pd.DataFrame(task_rows(env_id, "valid", valid)).to_parquet(f"{out}/valid.parquet")
PY
export AGENTENVS_OMEGA="${AGENTENVS_OMEGA:-1.0}" AGENTENVS_ANCHOR="${AGENTENVS_ANCHOR:-obs}"
exec python -m baselines.verl.main \
    algorithm.adv_estimator=agentenvs_gigpo algorithm.gamma=0.95 algorithm.use_kl_in_reward=false \
    data.train_files="$data/train.parquet" data.val_files="$data/valid.parquet" \
    data.train_batch_size=16 data.max_prompt_length=2048 data.max_response_length=4096 \
    actor_rollout_ref.model.path="$model" \
    actor_rollout_ref.actor.optim.lr=1e-6 actor_rollout_ref.actor.use_kl_loss=true \
    actor_rollout_ref.actor.kl_loss_coef=0.01 actor_rollout_ref.actor.kl_loss_type=low_var_kl \
    actor_rollout_ref.actor.entropy_coeff=0.001 actor_rollout_ref.actor.ppo_mini_batch_size=16 \
    actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.mode=async actor_rollout_ref.rollout.n=8 \
    actor_rollout_ref.rollout.multi_turn.enable=true \
    actor_rollout_ref.rollout.agent.default_agent_loop=agentenvs \
    trainer.total_epochs=150 trainer.logger='["console"]' "$@"
