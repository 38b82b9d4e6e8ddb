#!/usr/bin/env bash
# GiGPO from scratch on 8 small Sokoban rooms, on the CPU. Run from the repository root.
set -euo pipefail
OUT=${OUT:-runs/gigpo-sokoban}
ITERATIONS=${ITERATIONS:-50}
# Pin the CPU kernels torch and MKL pick, so that any x86-64 CPU with AVX2 trains bit for bit
# the run recorded in baselines/experiments/results/estimators.json.
export ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=COMPATIBLE ONEDNN_MAX_CPU_ISA=AVX2 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1

python -m baselines.trainers --config baselines/configs/mini_sokoban.yaml \
    --set run.iterations="$ITERATIONS" --set run.out_dir="$OUT"
python docs/tutorials/scripts/read_metrics.py "$OUT/metrics.jsonl"
python -m baselines.metrics plot "$OUT/metrics.jsonl" --metric success --out "$OUT/success.png"
