"""Which execution path runs the model: chosen by the engine's device.

CPU: float32 weights and the reference path (engine/runner.py, engine/model.py,
engine/attention.py). CUDA: bf16 weights and cache, Triton kernels over the paged
cache and CUDA graphs for decode (engine/cuda/). Both take a scheduled batch's
items and return logits, and share the scheduler, prefix cache and block pool.
"""

import torch

from engine import runner
from engine.config import EngineConfig
from engine.kv_cache import KVCache
from engine.model import Model


class CpuRunner:
    def __init__(self, model: Model, kv: KVCache, block_size: int):
        self.model, self.kv, self.block_size = model, kv, block_size

    def prepare(self, items):
        return runner.prepare(items, self.block_size, self.model.device)

    def run(self, inputs, all_logits: bool = False) -> torch.Tensor:
        return runner.run(self.model, self.kv, inputs, all_logits)


def make_runner(model, kv: KVCache, config: EngineConfig, max_model_len: int):
    if model.device.type == "cuda":
        from engine.cuda.runner import CudaRunner  # imports Triton, which a CPU install need not have

        return CudaRunner(model, kv, config.block_size, max_model_len, config.max_num_seqs)
    return CpuRunner(model, kv, config.block_size)
