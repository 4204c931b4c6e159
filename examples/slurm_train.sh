#!/usr/bin/env bash
# examples/slurm_train.sh: examples/train_resnet50.py on several nodes under Slurm, with DDP.
#
#   sbatch --nodes 2 --gpus-per-node 8 examples/slurm_train.sh --data /data/train --loader stoker
#
# One torchrun per node (srun --ntasks-per-node 1); each torchrun starts one process per GPU and
# the torchruns meet through the c10d rendezvous on the first node of the allocation. Every rank
# then gets torchrun's LOCAL_RANK / RANK / WORLD_SIZE, from which stoker takes the rank's GPU
# (through CUDA_VISIBLE_DEVICES, by PCI bus id) and the reader's shard. With BIND=1 (default)
# `stoker bind` places each rank on its GPU's NUMA node (CPUs and memory) before Python starts;
# NUMA_BINDING picks torchrun's mode (node, socket, exclusive, core-complex).
#
# The alternative without torchrun (srun --ntasks-per-node 8 --gpus-per-task 1, one task per
# GPU) needs MASTER_ADDR/MASTER_PORT and RANK/WORLD_SIZE/LOCAL_RANK exported from SLURM_PROCID,
# SLURM_NTASKS and SLURM_LOCALID for torch.distributed; stoker itself reads the SLURM_ names.
#
# Arguments after the script's name go to train_resnet50.py. Environment: GPUS_PER_NODE (default:
# SLURM_GPUS_ON_NODE, else 8), RDZV_PORT (29500), STOKER (path of the stoker CLI; default
# `stoker` on PATH, as `pip install .` puts it), BIND (1), NUMA_BINDING (node), PYTHON (python3).
#SBATCH --job-name=stoker-rn50
#SBATCH --ntasks-per-node=1
#SBATCH --exclusive
set -euo pipefail

if [[ -z "${SLURM_JOB_ID:-}" ]]; then
  echo "slurm_train.sh: run it with sbatch (or inside salloc); see the header" >&2
  exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# sbatch copies the script to a spool directory: find the example through the submit directory.
[[ -f "$here/train_resnet50.py" ]] || here="${SLURM_SUBMIT_DIR:-$PWD}/examples"
nodes=${SLURM_JOB_NUM_NODES:-${SLURM_NNODES:-1}}
gpus_per_node=${GPUS_PER_NODE:-${SLURM_GPUS_ON_NODE:-8}}
head_node=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
port=${RDZV_PORT:-29500}
python=${PYTHON:-python3}

worker=("$python" "$here/train_resnet50.py" "$@")
if [[ "${BIND:-1}" == 1 ]]; then
  # stoker bind reads torchrun's LOCAL_RANK, binds, then execs the worker.
  worker=("${STOKER:-stoker}" bind --numa-binding "${NUMA_BINDING:-node}" -- "${worker[@]}")
fi

echo "slurm_train.sh: $nodes node(s) x $gpus_per_node GPU(s), rendezvous at $head_node:$port"
srun --ntasks-per-node 1 --kill-on-bad-exit=1 \
  torchrun --nnodes "$nodes" --nproc-per-node "$gpus_per_node" \
  --rdzv-id "$SLURM_JOB_ID" --rdzv-backend c10d --rdzv-endpoint "$head_node:$port" \
  --no-python "${worker[@]}"
