"""A decode-attention function with a kernel module's partitions at a given tile and warps
(and any further constexprs its kernel takes, such as AHEAD)."""

import torch
import triton


def make(module, block_n: int, warps: int, **constexprs):
    def attn(q, k_cache, v_cache, block_tables, context_lens, scale, out):
        b, h, d = q.shape
        _, bs, kvh, _ = k_cache.shape
        width = block_tables.shape[1]
        sms = torch.cuda.get_device_properties(q.device).multi_processor_count
        part = module.partition_size(width * bs, b * kvh, sms)
        num_parts = triton.cdiv(width * bs, part)
        m = torch.empty((b, h, num_parts), dtype=torch.float32, device=q.device)
        acc = torch.empty((b, h, num_parts, d), dtype=torch.float32, device=q.device)
        module._decode_kernel[(b, kvh, num_parts)](
            q,
            k_cache,
            v_cache,
            block_tables,
            context_lens,
            m,
            torch.empty_like(m),
            acc,
            module._counter_buffer(q.device, b * kvh),
            out,
            scale,
            block_tables.stride(0),
            num_parts,
            G=h // kvh,
            GP=max(16, triton.next_power_of_2(h // kvh)),
            KVH=kvh,
            D=d,
            BS=bs,
            PART=part,
            BLOCK_N=block_n,
            num_warps=warps,
            num_stages=2,
            launch_pdl=True,
            **constexprs,
        )

    return attn
