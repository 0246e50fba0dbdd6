"""The engine's CUDA path: Triton kernels over the paged KV cache, a fused forward
pass in bf16, and CUDA graphs for decode.

It shares everything above the forward pass with the CPU path (scheduler, radix
prefix cache, block pool, sampler): only how a scheduled batch becomes logits differs.
The CPU path (engine/model.py, engine/attention.py) stays the reference the CUDA
path is checked against.
"""

# A batch-1 projection that follows another is a programmatic dependent launch: it starts while
# the one in front finishes and waits for it only where it reads its output (linear.py). Read at
# every launch (so at graph capture); benchmarks/bench_gpu.py turns it off to measure its worth.
PDL = True
