"""Which execution path runs the model: chosen by the engine's device.

CPU: float32 weights and the reference path (engine/runner.py, engine/model.py,
engine/attention.py). CUDA: bf16 weights and cache, Triton kernels over the paged
cache and CUDA graphs for decode (engine/cuda/). Both flatten a scheduled batch the
same way (engine/batch.py), return logits, and share the scheduler, prefix cache and
block pool.
"""

from engine.config import EngineConfig
from engine.kv_cache import KVCache
from engine.runner import CpuRunner


def make_runner(model, kv: KVCache, config: EngineConfig, max_model_len: int):
    if model.device.type == "cuda":
        from engine.cuda.runner import (
            CudaRunner,  # imports Triton, which a CPU install need not have
        )

        return CudaRunner(
            model,
            kv,
            config.block_size,
            max_model_len,
            config.max_num_seqs,
            ahead=config.decode_ahead is not False,
            kernels=config.cuda_kernels,
            max_rows=config.max_num_batched_tokens,
        )
    return CpuRunner(model, kv, config.max_num_seqs if config.decode_ahead else 0)
