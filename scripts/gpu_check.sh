#!/usr/bin/env bash
# Short device check: one GiGPO iteration with a randomly initialised model of a real size
# (default Qwen2.5-1.5B's architecture) on Sokoban, 8 tasks x 8 copies, on the first GPU.
# Prints the tokens generated per second and the generation / env / advantage / update split.
# Samples with transformers' generate on the GPU (gpu_check.yaml: sampler.backend transformers), so it
# runs where vLLM is not installed; the random model lives in memory, which vLLM cannot load.
#   scripts/gpu_check.sh [--cpu] [PRESET] [--set section.key=value ...]   PRESET: qwen2.5-0.5b | qwen2.5-1.5b | qwen2.5-7b
# --cpu runs the same check on the CPU in float32 (no GPU needed; add --set overrides to shrink it).
set -euo pipefail
cd "$(dirname "$0")/.."
device=(--set policy.device=cuda)
if [ "${1:-}" = "--cpu" ]; then device=(--set policy.device=cpu --set policy.dtype=float32); shift; fi
preset="${1:-qwen2.5-1.5b}"
shift || true
out="${GPU_CHECK_OUT:-$(mktemp -d)}/gpu_check"
if [ "${device[1]}" = policy.device=cuda ]; then
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv
    python -c "import torch; assert torch.cuda.is_available(), 'no CUDA device visible to torch'; print('torch', torch.__version__, torch.cuda.get_device_name(0))"
fi
python -m baselines.trainers --config baselines/configs/gpu_check.yaml \
    --set "policy.model=random:${preset}" "${device[@]}" --set "run.out_dir=${out}" "$@"
python - "${out}/metrics.jsonl" <<'PY'
import json, sys
record = json.loads(open(sys.argv[1]).read().splitlines()[-1])
total = sum(record[k] for k in ("time/generation_s", "time/env_s", "time/advantage_s", "time/update_s"))
print(f"episodes {record['episodes']:.0f}  turns/episode {record['turns']:.2f}  response tokens/turn {record['response_tokens']:.1f}")
print(f"generation {record['tokens_per_s']:.0f} tokens/s")
for key in ("time/generation_s", "time/env_s", "time/advantage_s", "time/update_s"):
    print(f"{key:18s} {record[key]:8.2f} s  ({100 * record[key] / total:5.1f}%)")
print(f"anchor groups {record['anchor/groups']:.0f}, singleton share {record['anchor/singleton_share']:.2f}")
PY
