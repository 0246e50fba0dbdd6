"""The CUDA path against the CPU path, transformers, and itself (cached vs cold, graph vs eager).

Dummy weights of SmolLM2-135M's shape (the GGUF file need not be on the GPU machine).
bf16 against float32 is compared by relative error ||a - b|| / ||b||.
"""

import dataclasses

import pytest
import torch
import torch.nn.functional as F

from engine import Engine, EngineConfig, ModelConfig, SamplingParams, dummy_checkpoint
from engine.config import SMOLLM2_135M, transformers_config

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

BF16_TOL = 2e-2


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double().cpu(), b.double().cpu()
    return float((a - b).norm() / b.norm())


def prompt(n: int, seed: int) -> list[int]:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(3, SMOLLM2_135M.vocab_size, (n,), generator=g).tolist()


@pytest.fixture(scope="module")
def ckpt():
    return dummy_checkpoint(SMOLLM2_135M, seed=3)


def cuda_engine(ckpt, **kw) -> Engine:
    return Engine(ckpt, EngineConfig(device="cuda", kv_cache_bytes=1 << 30, max_num_seqs=16, **kw))


def capture_first_logits(store: list):
    def proc(generated, logits):
        if not generated:
            store.append(logits.float().clone())
        return logits

    return proc


# Head dims of the Llama-3.2-1B and Llama-3-8B shapes; 5 decode rows are few (sequence, KV head)
# programs for the GPU, 20 are enough to fill it: the two take different tiles (decode_attention.tile).
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("copies", [1, 4])
def test_decode_and_prefill_kernels_match_a_float64_reference(d, copies):
    from engine.cuda.decode_attention import decode_attention
    from engine.cuda.prefill_attention import prefill_attention
    from tests.engine.paged_attention import reference

    torch.manual_seed(0)
    dev, h, kvh, bs, nb = "cuda", 32, 8, 16, 600
    kc = torch.randn(nb, bs, kvh, d, device=dev, dtype=torch.bfloat16)
    vc = torch.randn_like(kc)
    scale = d**-0.5

    def ref(qr, table, kv_len, q_len):
        return reference(qr, kc, vc, table, kv_len, q_len, scale)

    lens = [1, 17, 300, 5000, 0] * copies  # one partition, several (merged in-kernel), a long context, a padding row
    tables = [torch.randperm(nb, device=dev)[: -(-n // bs)] for n in lens]
    width = max(len(t) for t in tables) + 3
    tt = torch.zeros(len(lens), width, dtype=torch.int32, device=dev)
    for i, t in enumerate(tables):
        tt[i, : len(t)] = t
    q = torch.randn(len(lens), h, d, device=dev, dtype=torch.bfloat16)
    outs = []
    for _ in range(2):  # the second launch finds the merge counters reset by the first
        out = torch.full_like(q, float("nan"))
        decode_attention(q, kc, vc, tt, torch.tensor(lens, dtype=torch.int32, device=dev), scale, out)
        outs.append(out)
    assert torch.equal(outs[0], outs[1])
    for i, n in enumerate(lens):
        if n:
            assert rel(out[i], ref(q[i : i + 1], tables[i], n, 1)[0]) < 1e-2
        else:
            assert (out[i] == 0).all()

    specs = [(0, 200, 200), (200, 77, 77 + 1000), (277, 16, 16 + 64)]  # cold, after a prefix, one block
    t_rows = sum(s[1] for s in specs)
    q = torch.randn(t_rows, h, d, device=dev, dtype=torch.bfloat16)
    tables = [torch.randperm(nb, device=dev)[: -(-kl // bs)] for _, _, kl in specs]
    tt = torch.zeros(len(specs), max(len(t) for t in tables), dtype=torch.int32, device=dev)
    for i, t in enumerate(tables):
        tt[i, : len(t)] = t
    col = lambda j: torch.tensor([s[j] for s in specs], dtype=torch.int32, device=dev)  # noqa: E731
    out = torch.full_like(q, float("nan"))
    prefill_attention(q, kc, vc, tt, col(0), col(1), col(2), max(s[1] for s in specs), scale, out)
    for (qs, ql, kl), t in zip(specs, tables):
        assert rel(out[qs : qs + ql], ref(q[qs : qs + ql], t, kl, ql)) < 1e-2


# A decode step's rows (one token per program), and prefill chunks of 2 and 8 tokens per program
# with a part-filled last block (rope_store.token_block); with Qwen3's per-head norm and without.
@pytest.mark.parametrize("qk_norm", [False, True], ids=["plain", "qk_norm"])
@pytest.mark.parametrize("t", [3, 2051, 9001])
def test_rope_and_store_match_a_float64_reference(t, qk_norm):
    from engine.cuda.rope_store import rope_and_store

    torch.manual_seed(t)
    dev, h, kvh, d, bs, eps = "cuda", 32, 8, 128, 16, 1e-6
    qkv = torch.randn(t, (h + 2 * kvh) * d, device=dev, dtype=torch.bfloat16)
    pos = torch.randint(0, 4096, (t,), device=dev)
    angles = torch.rand(4096, d // 2, device=dev) * 6.3
    cos, sin = angles.cos(), angles.sin()
    slots = torch.randperm(2 * t, device=dev)[:t]
    slots[::5] = -1  # padding rows store nothing
    kc = torch.zeros(-(-2 * t // bs), bs, kvh, d, device=dev, dtype=torch.bfloat16)
    vc = torch.zeros_like(kc)
    norm = (1 + 0.3 * torch.randn(h + kvh, d, device=dev)).to(torch.bfloat16) if qk_norm else None
    q = rope_and_store(qkv, pos, cos, sin, slots, kc, vc, h, kvh, d, qk_norm=norm, eps=eps)

    x = qkv.view(t, h + 2 * kvh, d)[:, : h + kvh]
    if norm is not None:  # rounded as transformers rounds it: the normalised head, then the weighted one
        x = F.rms_norm(x.float(), (d,), None, eps).to(x.dtype) * norm
    x = x.double()
    c, s = cos[pos].double()[:, None], sin[pos].double()[:, None]
    x1, x2 = x[..., 0::2], x[..., 1::2]  # pair-ordered heads
    rotated = torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1)
    assert rel(q, rotated[:, :h]) < 1e-2
    kept = slots >= 0
    flat_k, flat_v = kc.view(-1, kvh, d), vc.view(-1, kvh, d)
    assert rel(flat_k[slots[kept]], rotated[kept, h:]) < 1e-2
    assert torch.equal(flat_v[slots[kept]], qkv.view(t, h + 2 * kvh, d)[kept, h + kvh :])
    untouched = torch.ones(flat_k.shape[0], dtype=torch.bool, device=dev)
    untouched[slots[kept]] = False
    assert (flat_k[untouched] == 0).all() and (flat_v[untouched] == 0).all()
    # keep_k: the same, and every row's rotated K heads written back over their place in qkv
    kept_qkv = qkv.clone()
    assert torch.equal(rope_and_store(kept_qkv, pos, cos, sin, slots, kc, vc, h, kvh, d, norm, eps, keep_k=True), q)
    heads, before = kept_qkv.view(t, h + 2 * kvh, d), qkv.view(t, h + 2 * kvh, d)
    assert torch.equal(heads[kept, h : h + kvh], flat_k[slots[kept]])
    assert rel(heads[:, h : h + kvh], rotated[:, h:]) < 1e-2
    assert torch.equal(heads[:, :h], before[:, :h]) and torch.equal(heads[:, h + kvh :], before[:, h + kvh :])


# The engine's own tiles, and one that keeps two weight tiles in flight (several tiles along k).
TILES = [None, (8, 256, 4, 2)]


def use_tile(monkeypatch, tile) -> None:
    from engine.cuda import linear

    if tile is not None:
        monkeypatch.setattr(linear, "gemv_config", lambda n, k: tile)


@pytest.mark.parametrize("tile", TILES)
@pytest.mark.parametrize("rows,fused_rows", [(1, 1), (3, 4), (7, 1)])  # the fused kernel (1 and 3 rows), cuBLAS
@pytest.mark.parametrize("n,k", [(300, 576), (1000, 1536)])  # edges inside a tile; several tiles along k
def test_projections_match_a_float64_reference(rows, fused_rows, n, k, tile, monkeypatch):
    from engine.cuda import linear
    from engine.cuda.linear import project

    monkeypatch.setattr(linear, "GEMV_MAX_ROWS", fused_rows)
    use_tile(monkeypatch, tile)

    torch.manual_seed(rows * n)
    dev, eps = "cuda", 1e-5
    bf = {"device": dev, "dtype": torch.bfloat16}
    w, g, bias = torch.randn(n, k, **bf) * 0.05, torch.rand(k, **bf) + 0.5, torch.randn(n, **bf)
    x, xg, r = torch.randn(rows, k, **bf), torch.randn(rows, 2 * k, **bf), torch.randn(rows, n, **bf)
    wd, xd, xgd = w.double(), x.double(), xg.double()
    normed = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + eps) * g.double()
    act = torch.nn.functional.silu(xgd[:, :k]) * xgd[:, k:]
    cases = {
        "bias": (lambda: project(x, w, bias=bias), xd @ wd.T + bias.double()),
        "norm, float32 out": (lambda: project(x, w, norm=g, eps=eps, out_dtype=torch.float32), normed @ wd.T),
        "gated": (lambda: project(xg, w, gated=True), act @ wd.T),
    }
    for name, (run, want) in cases.items():
        got = run()
        assert got.isfinite().all(), name
        assert rel(got, want) < 1e-2, name
    res = r.clone()
    got = project(xg, w, gated=True, residual=res)
    assert got.data_ptr() == res.data_ptr()
    assert rel(res, r.double() + act @ wd.T) < 1e-2


@pytest.mark.parametrize("tile", TILES)
@pytest.mark.parametrize("rows", [1, 3])  # the fused kernel's argmax, and the chunked one after cuBLAS
def test_projection_greedy_tokens_are_the_first_maximum_of_its_logits(rows, tile, monkeypatch):
    from engine.cuda.linear import project

    use_tile(monkeypatch, tile)
    torch.manual_seed(rows)
    bf = {"device": "cuda", "dtype": torch.bfloat16}
    half = torch.randn(500, 576, **bf)
    w = torch.cat([half, half, torch.zeros(3, 576, **bf)])  # every logit twice, in different programs
    x = torch.randn(rows, 576, **bf)
    x[0] = 0  # all logits 0: the first one wins
    ids = torch.full((rows,), -1, dtype=torch.long, device="cuda")
    logits = project(x, w, norm=torch.ones(576, **bf), eps=1e-5, out_dtype=torch.float32, ids=ids)
    assert ids.tolist() == logits.argmax(-1).tolist()
    assert ids[0] == 0 and (ids[1:] < 500).all()


def test_cuda_logits_match_the_cpu_path(ckpt):
    prompts = [prompt(40, 1), prompt(300, 2)]
    cpu = Engine(ckpt, EngineConfig(kv_cache_bytes=256 << 20))
    want = cpu.prompt_logits(prompts)
    cpu.shutdown()
    gpu = cuda_engine(ckpt)
    got = gpu.prompt_logits(prompts)
    gpu.shutdown()
    for g, w in zip(got, want):
        assert rel(g, w) < BF16_TOL


@pytest.mark.parametrize("tile", TILES)
def test_single_sequence_decode_logits_match_the_cpu_path(ckpt, tile, monkeypatch):
    """One sequence decodes through the fused kernels (projections with the norm, SiLU, residual
    add and RoPE + K/V store in them) replayed from a CUDA graph."""
    use_tile(monkeypatch, tile)
    ids = prompt(50, 9)
    got: list = []

    def keep(generated, logits):
        got.append(logits.float().clone())
        return logits

    gpu = cuda_engine(ckpt)
    out = gpu.generate([ids], SamplingParams(temperature=0, max_tokens=8, ignore_eos=True, logits_processor=keep))[0]
    gpu.shutdown()
    cpu = Engine(ckpt, EngineConfig(kv_cache_bytes=256 << 20))
    want = cpu.prompt_logits([ids + out.token_ids[:-1]])[0][len(ids) - 1 :]
    cpu.shutdown()
    assert len(got) == len(want) == 8
    for g, w in zip(got, want):
        assert rel(g, w) < BF16_TOL


QWEN3_SMALL = ModelConfig(
    vocab_size=1024,
    hidden_size=256,
    intermediate_size=512,
    num_layers=2,
    num_heads=4,
    num_kv_heads=2,
    head_dim=64,
    max_position_embeddings=1024,
    tie_word_embeddings=False,
    qk_norm=True,
)
# A sparse layer, then a dense one.
QWEN3_MOE_SMALL = dataclasses.replace(
    QWEN3_SMALL, num_experts=8, num_experts_per_tok=2, moe_intermediate_size=128, norm_topk_prob=True, moe_layers=(0,)
)


@pytest.mark.parametrize("config", [QWEN3_SMALL, QWEN3_MOE_SMALL], ids=["qwen3", "qwen3_moe"])
def test_qwen3_prefill_and_decode_logits_match_the_cpu_path(config):
    """Per-head Q/K norms (pair-ordered on the GPU as the Q/K rows are) and experts (grouped kernels,
    routed on the device): both decode from CUDA graphs."""
    qwen = dummy_checkpoint(config, seed=4)
    g = torch.Generator().manual_seed(4)
    for name, t in qwen.tensors.items():
        if name.endswith("norm.weight"):  # not all ones, so that a misordered norm weight shows
            t.copy_(1 + 0.3 * torch.randn(t.shape, generator=g))
        elif name.endswith("mlp.gate.weight"):  # routers far from uniform: bf16 picks the same experts
            t.copy_(0.5 * torch.randn(t.shape, generator=g))
    ids = torch.randint(3, config.vocab_size, (40,), generator=g).tolist()
    got: list = []

    def keep(generated, logits):
        got.append(logits.float().clone())
        return logits

    gpu = cuda_engine(qwen)
    assert gpu.runner.graphs is not None
    prefill = gpu.prompt_logits([ids])[0]
    out = gpu.generate([ids], SamplingParams(temperature=0, max_tokens=8, ignore_eos=True, logits_processor=keep))[0]
    gpu.shutdown()
    cpu = Engine(qwen, EngineConfig(kv_cache_bytes=64 << 20))
    want = cpu.prompt_logits([ids + out.token_ids[:-1]])[0]
    cpu.shutdown()
    assert rel(prefill, want[: len(ids)]) < BF16_TOL
    assert len(got) == 8
    for g_row, w_row in zip(got, want[len(ids) - 1 :]):
        assert rel(g_row, w_row) < BF16_TOL


def test_cuda_logits_match_transformers(ckpt):
    transformers = pytest.importorskip("transformers")
    c = SMOLLM2_135M
    with torch.device("cuda"):  # float32: the reference is held to a higher precision than the bf16 engine
        ref = transformers.LlamaForCausalLM(transformers_config(c))
    ref.load_state_dict({k: v.to("cuda") for k, v in ckpt.tensors.items()}, strict=False)
    ref.tie_weights()
    ref.eval()
    ids = prompt(200, 5)
    with torch.inference_mode():
        want = ref(torch.tensor([ids], device="cuda")).logits[0].float()
    gpu = cuda_engine(ckpt)
    got = gpu.prompt_logits([ids])[0]
    gpu.shutdown()
    assert rel(got, want) < BF16_TOL


def test_prefix_cached_prefill_equals_cold_prefill(ckpt):
    base = prompt(700, 7)
    follow = base[:640] + prompt(50, 8)
    warm = cuda_engine(ckpt, max_num_batched_tokens=256)  # chunked: chunks after a prefix as well
    warm.generate([base], SamplingParams(temperature=0, max_tokens=1))
    got: list = []
    out = warm.generate(
        [follow], SamplingParams(temperature=0, max_tokens=1, logits_processor=capture_first_logits(got))
    )[0]
    warm.shutdown()
    assert out.usage.cached_tokens == 640
    cold = cuda_engine(ckpt, enable_prefix_cache=False, max_num_batched_tokens=4096)
    want: list = []
    out = cold.generate(
        [follow], SamplingParams(temperature=0, max_tokens=1, logits_processor=capture_first_logits(want))
    )[0]
    cold.shutdown()
    assert out.usage.cached_tokens == 0
    assert rel(got[0], want[0]) < 1e-2


def test_graph_decode_equals_eager_decode(ckpt):
    from engine.cuda.runner import CudaRunner

    prompts = [prompt(30 + 9 * i, 20 + i) for i in range(5)]
    sp = SamplingParams(temperature=0, max_tokens=12, ignore_eos=True)
    graphed = cuda_engine(ckpt)
    assert graphed.runner.graphs is not None
    want = [o.token_ids for o in graphed.generate(prompts, sp)]
    graphed.shutdown()
    eager = cuda_engine(ckpt)
    eager.runner = CudaRunner(eager.model, eager.kv, eager.config.block_size, eager.max_model_len, 16, use_graphs=False)
    got = [o.token_ids for o in eager.generate(prompts, sp)]
    eager.shutdown()
    assert got == want


def test_decode_ahead_equals_synchronous_steps(ckpt):
    """The graphs' double-buffered inputs and the tokens fed from one step into the next on
    the GPU: the same tokens as reading each step before launching the next, with requests
    ending at different steps and one sampled (which turns running ahead off)."""
    prompts = [prompt(20 + 13 * i, 40 + i) for i in range(6)]
    params = [SamplingParams(temperature=0, max_tokens=n, ignore_eos=True) for n in (40, 3, 17, 33, 1, 25)]
    params[5] = SamplingParams(temperature=0.9, seed=5, max_tokens=25, ignore_eos=True)
    outs = {}
    for on in (False, True):
        eng = cuda_engine(ckpt, decode_ahead=on)
        assert eng.runner.ahead_batch == (16 if on else 0)
        launched = [0]
        real = eng.runner.launch

        def spy(inputs, ids_from=None, real=real, launched=launched):
            launched[0] += ids_from is not None
            return real(inputs, ids_from)

        eng.runner.launch = spy
        outs[on] = [o.token_ids for o in eng.generate(prompts, params)]
        outs[on, "alone"] = [o.token_ids for o in eng.generate(prompts[:1], params[:1])]
        assert (launched[0] > 30) == on
        assert eng.pool.num_free + eng.radix.num_nodes == eng.pool.num_blocks and eng.radix.num_locked == 0
        eng.shutdown()
    assert outs[True] == outs[False] and outs[True, "alone"] == outs[False, "alone"]
    assert [len(t) for t in outs[True]] == [40, 3, 17, 33, 1, 25]


# 300: more pairs than the counting sort takes; 600: more than the Triton kernels take where the widths allow
# CUTLASS's grouped GEMM (multiples of 16), and the Triton kernels' many-pair tiles where they do not; the
# grouped GEMM's pairs once more, captured in a CUDA graph as a decode step of 512 rows is.
@pytest.mark.parametrize(("tokens", "hidden", "width", "captured"), [(1, 200, 72, False), (3, 200, 72, False), (33, 200, 72, False), (300, 200, 72, False), (600, 200, 72, False), (600, 256, 128, False), (512, 256, 128, True)])  # fmt: skip
def test_grouped_expert_kernels_match_the_expert_loop(tokens, hidden, width, captured):
    """engine/cuda/moe.py against engine/moe.py, the experts one at a time: tile edges (hidden, width and the
    expert count not multiples of a tile), experts chosen by no token, and runs longer than a chunk."""
    from engine.cuda.moe import experts_add, grouped_mm_fits
    from engine.moe import mixture, route

    g = torch.Generator(device="cuda").manual_seed(tokens)
    experts, top_k = 20, 4
    h = torch.randn(tokens, hidden, generator=g, device="cuda").to(torch.bfloat16)
    router = torch.randn(experts, hidden, generator=g, device="cuda")
    gate_up = (0.1 * torch.randn(experts, 2 * width, hidden, generator=g, device="cuda")).to(torch.bfloat16)
    down = (0.1 * torch.randn(experts, hidden, width, generator=g, device="cuda")).to(torch.bfloat16)
    x = torch.randn(tokens, hidden, generator=g, device="cuda").to(torch.bfloat16)
    got = x.clone()
    experts_add(got, h, router, gate_up, down, top_k, True)
    if captured:  # replayed over the eager result's input: the graph's own output
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            experts_add(got, h, router, gate_up, down, top_k, True)
        got.copy_(x)
        graph.replay()
    assert grouped_mm_fits(tokens * top_k, gate_up, down) == (hidden == 256)
    weights, ids = route(h, router, top_k, True)

    def expert(e: int, rows: torch.Tensor) -> torch.Tensor:
        gate, up = (rows.float() @ gate_up[e].float().t()).chunk(2, dim=-1)
        return (torch.nn.functional.silu(gate) * up) @ down[e].float().t()

    want = x.float() + mixture(h.float(), weights, ids, expert)
    assert rel(got.float() - x.float(), want - x.float()) < BF16_TOL


# The Qwen3-30B-A3B layer, then widths, hidden size and expert count that no tile divides.
@pytest.mark.parametrize(
    ("hidden", "width", "experts", "top_k"), [(2048, 768, 128, 8), (200, 72, 20, 4), (130, 33, 9, 3)]
)
@pytest.mark.parametrize("renormalise", [True, False])
# The engine's tiles, then the down kernel's work in one part and in many (split.py).
@pytest.mark.parametrize("tiles", [None, ((16, 256, 4), (16, 256, 4, 1)), ((8, 64, 4), (8, 64, 4, 8))])
# Two experts tied for the first place: gate/up picks and down ranks, and both must put them in the same slots.
@pytest.mark.parametrize("tied", [False, True], ids=["distinct", "tied"])
def test_one_row_expert_kernels_match_the_expert_loop(hidden, width, experts, top_k, renormalise, tiles, tied):
    """A batch-1 step's three kernels (experts_add_decode: the norm in the router's kernel, gate/up
    routing itself, down into the stream) against engine/moe.py on the normalised row, in float32:
    within 2^-7 of the exact sum, relatively (of 0.05 near zero), everywhere: bf16's rounding of it, so every
    expert and weight was the same; the same bits on every launch, and the split kernels' counters left at zero."""
    from engine.cuda.moe import experts_add_decode
    from engine.cuda.split import counters
    from tests.engine.one_row_experts import EPS, expected, layer, ulps

    x, norm, router, gate_up, down = layer(hidden, width, experts, "cuda", tied)
    got = x.clone()
    experts_add_decode(got, norm, EPS, router, gate_up, down, top_k, renormalise, tiles)
    assert int(counters("experts", got.device, 1).abs().sum()) == 0
    again = [x.clone() for _ in range(20)]  # whichever part finishes last, the same sum, bit for bit
    for y in again:
        experts_add_decode(y, norm, EPS, router, gate_up, down, top_k, renormalise, tiles)
    assert all(torch.equal(y, got) for y in again)
    want = expected(x, norm, router, gate_up, down, top_k, renormalise)
    assert ulps(got, want) < 2
    assert rel(got.float() - x.float(), want - x.float()) < BF16_TOL


def test_flash_prefill_matches_the_triton_kernel():
    """FlashAttention-4's paged varlen kernel on the chunks that follow a step's decode rows: cold,
    after a cached prefix, one block, a table padded past its length. Needs the cuda-kernels extra."""
    pytest.importorskip("flash_attn.cute.interface")
    from engine.cuda.flash import flash_missing, flash_prefill
    from engine.cuda.prefill_attention import prefill_attention

    assert flash_missing() is None, flash_missing()
    torch.manual_seed(1)
    dev, h, kvh, d, bs, nb, nd = "cuda", 32, 8, 128, 16, 600, 3
    kc = torch.randn(nb, bs, kvh, d, device=dev, dtype=torch.bfloat16)
    vc = torch.randn_like(kc)
    specs = [(nd, 200, 200), (nd + 200, 77, 77 + 1000), (nd + 277, 16, 16 + 64), (nd + 293, 2048, 2048)]
    q = torch.randn(nd + sum(s[1] for s in specs), h, d, device=dev, dtype=torch.bfloat16)
    tables = [torch.randperm(nb, device=dev)[: -(-kl // bs)] for _, _, kl in specs]
    tt = torch.zeros(len(specs), max(len(t) for t in tables) + 2, dtype=torch.int32, device=dev)
    for i, t in enumerate(tables):
        tt[i, : len(t)] = t
    col = lambda j: torch.tensor([s[j] for s in specs], dtype=torch.int32, device=dev)  # noqa: E731
    cu = torch.tensor([s[0] - nd for s in specs] + [q.shape[0] - nd], dtype=torch.int32, device=dev)
    want, got = torch.zeros_like(q), torch.zeros_like(q)
    prefill_attention(q, kc, vc, tt, col(0), col(1), col(2), 2048, d**-0.5, want)
    flash_prefill(q[nd:], kc, vc, tt, cu, col(2), 2048, d**-0.5, got[nd:])
    assert (got[:nd] == 0).all()  # the decode rows are not the prefill kernel's
    for qs, ql, _ in specs:
        assert rel(got[qs : qs + ql], want[qs : qs + ql]) < 1e-2


def test_flash_prefill_of_fresh_prompts_matches_the_triton_kernel():
    """Chunks that start at position 0, their keys and values read from the QKV projection's output
    (strided views) instead of the paged cache, against the Triton kernel reading the cache.
    Needs the cuda-kernels extra."""
    pytest.importorskip("flash_attn.cute.interface")
    from engine.cuda.flash import flash_prefill_fresh
    from engine.cuda.prefill_attention import prefill_attention

    torch.manual_seed(2)
    dev, h, kvh, d, bs, nd = "cuda", 32, 8, 128, 16, 2
    lens = [200, 1, 77, 2048]
    rows = nd + sum(lens)
    qkv = torch.randn(rows, h + 2 * kvh, d, device=dev, dtype=torch.bfloat16)
    q, k, v = qkv[:, :h].contiguous(), qkv[:, h : h + kvh], qkv[:, h + kvh :]
    blocks = [-(-n // bs) for n in lens]
    kc = torch.zeros(sum(blocks) + 4, bs, kvh, d, device=dev, dtype=torch.bfloat16)
    vc = torch.zeros_like(kc)
    order = torch.randperm(kc.shape[0], device=dev)
    tt = torch.zeros(len(lens), max(blocks) + 1, dtype=torch.int32, device=dev)
    starts, at, used = [], nd, 0
    for i, n in enumerate(lens):
        tt[i, : blocks[i]] = order[used : used + blocks[i]]
        slots = (tt[i, : blocks[i]].long()[:, None] * bs + torch.arange(bs, device=dev)).flatten()[:n]
        kc.view(-1, kvh, d)[slots], vc.view(-1, kvh, d)[slots] = k[at : at + n], v[at : at + n]
        starts.append(at)
        at, used = at + n, used + blocks[i]
    col = lambda xs: torch.tensor(xs, dtype=torch.int32, device=dev)  # noqa: E731
    want, got = torch.zeros_like(q), torch.zeros_like(q)
    prefill_attention(q, kc, vc, tt, col(starts), col(lens), col(lens), max(lens), d**-0.5, want)
    cu = col([s - nd for s in starts] + [rows - nd])
    flash_prefill_fresh(q[nd:], k[nd:], v[nd:], cu, max(lens), d**-0.5, got[nd:])
    assert (got[:nd] == 0).all()
    for qs, ql in zip(starts, lens, strict=True):
        assert rel(got[qs : qs + ql], want[qs : qs + ql]) < 1e-2


def test_optional_kernels_match_the_torch_path(ckpt, monkeypatch):
    """Every projection of more than one row on quack's GEMMs (any tile that is correct wins, the
    gate/up projection's SiLU·up in its epilogue among them) and prefill attention on FlashAttention-4 where installed, against the same engine on cuBLAS and
    Triton only: prefill and batched decode logits. Needs the cuda-kernels extra."""
    pytest.importorskip("quack.gemm_interface")
    from engine.cuda import gemm
    from engine.cuda.flash import flash_missing

    monkeypatch.setattr(gemm, "TIMED", {})
    monkeypatch.setattr(gemm, "MIN_GAIN", 0.0)  # quack and FlashAttention wherever they are correct
    prompts = [prompt(300, 40), prompt(90, 41), prompt(20, 42)]
    steps: dict[str, list[dict]] = {}
    for kernels in ("auto", "torch"):
        engine = cuda_engine(ckpt, cuda_kernels=kernels)
        if kernels == "auto":
            assert "quack" in engine.runner.kernels, engine.runner.kernels
            assert any(engine.runner.model.layers[0].gate_up.quack_swiglu), engine.runner.kernels
            assert engine.runner.flash == (flash_missing() is None), engine.runner.kernels
        else:
            assert engine.runner.kernels.startswith("cuBLAS")
        steps[kernels] = [{} for _ in prompts]

        def record(seen: dict):
            def proc(generated, step_logits):
                seen[tuple(generated)] = step_logits.float().clone()
                return step_logits

            return proc

        sps = [
            SamplingParams(temperature=0, max_tokens=6, ignore_eos=True, logits_processor=record(seen))
            for seen in steps[kernels]
        ]
        engine.generate(prompts, sps)
        engine.shutdown()
    cpu = Engine(ckpt, EngineConfig(kv_cache_bytes=256 << 20))
    exact = cpu.prompt_logits(prompts)
    cpu.shutdown()
    # The prefill's last row against float32: the optional kernels no further from it than cuBLAS and Triton
    # (on an H100 both were about 1.5% away, the optional ones a little nearer).
    for got, want, truth in zip(steps["auto"], steps["torch"], exact, strict=True):
        assert rel(got[()], truth[-1]) < min(BF16_TOL, 1.1 * rel(want[()], truth[-1]))
    # Then every step where both had generated the same tokens so far (bf16 sums in another order may flip a
    # near-tie). Two bf16 paths each ~1.5% from float32 differ from each other by up to about as much.
    for got, want in zip(steps["auto"], steps["torch"], strict=True):
        shared = got.keys() & want.keys()
        assert () in shared and len(shared) >= 2
        for generated in shared:
            assert rel(got[generated], want[generated]) < BF16_TOL
