"""The Engine API: streaming, concurrency and batching statistics, chunked prefill, bad inputs."""

import asyncio

import gguf
import pytest
import torch

from engine import (
    ContextLengthError,
    Engine,
    EngineConfig,
    EngineError,
    InvalidRequestError,
    ModelConfig,
    ModelLoadError,
    SamplingParams,
    default_model_path,
    dummy_checkpoint,
)
from engine.cpu.build import unavailable_reason
from tests.engine.conftest import make_engine

GREEDY = SamplingParams(temperature=0, max_tokens=24, ignore_eos=True)


def test_default_model_is_the_embedded_smollm2():
    path = default_model_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file()


def test_concurrent_streams_are_batched_and_match_generate(engine):
    prompts = [engine.encode_chat([{"role": "user", "content": f"Count to {n}."}]) for n in (3, 5, 7, 9)]
    expected = [o.token_ids for o in engine.generate(prompts, GREEDY)]
    start_step = engine.num_steps

    async def consume(p):
        text, ids, chunks = "", [], []
        async for chunk in engine.stream(p, GREEDY):
            text += chunk.delta
            ids += chunk.token_ids
            chunks.append(chunk)
        return text, ids, chunks

    async def main():
        return await asyncio.gather(*(consume(p) for p in prompts))

    results = asyncio.run(main())
    for (text, ids, chunks), exp in zip(results, expected):
        assert ids == exp
        final = chunks[-1]
        assert final.finished and not any(c.finished for c in chunks[:-1])
        assert text == final.output.text and final.output.usage.completion_tokens == 24
        assert len(chunks) == 24  # one chunk per token
    steps = [s for s in engine.stats()["recent_steps"] if s.step >= start_step]
    assert max(s.num_seqs for s in steps) == 4  # the four requests ran in the same steps


def test_stream_holds_back_a_possible_stop_string(engine):
    prompt = engine.encode_chat([{"role": "user", "content": "Name some animals."}])
    full = engine.generate([prompt], SamplingParams(temperature=0, max_tokens=40))[0].text
    stop = full.split()[5]

    async def main():
        deltas = []
        async for chunk in engine.stream(prompt, SamplingParams(temperature=0, max_tokens=40, stop=[stop])):
            deltas.append(chunk.delta)
        return deltas

    deltas = asyncio.run(main())
    assert "".join(deltas) == full[: full.index(stop)]
    assert all(stop not in "".join(deltas[: i + 1]) for i in range(len(deltas)))


def test_long_prompt_is_chunked_and_does_not_stall_running_decodes(checkpoint, engine):
    long_prompt = engine.encode("The history of the printing press. " * 60)[:400]
    short_prompt = engine.encode("Hello there")
    expected = [o.token_ids for o in engine.generate([short_prompt, long_prompt], GREEDY)]
    eng = make_engine(checkpoint, kv_cache_bytes=64 << 20, max_num_batched_tokens=64)
    try:
        outs = eng.generate([short_prompt, long_prompt], GREEDY)
        assert [o.token_ids for o in outs] == expected
        steps = list(eng.step_stats)
        assert max(s.num_tokens for s in steps) <= 64
        # While the long prompt was prefilled in chunks, the short request kept decoding.
        mixed = [s for s in steps if s.num_decode == 1 and s.num_prefill == 1]
        assert len(mixed) >= 400 // 64 - 1
    finally:
        eng.shutdown()


def test_bad_inputs_get_clear_errors_and_the_engine_keeps_serving(engine, tmp_path):
    with pytest.raises(ModelLoadError, match="no such file"):
        Engine(tmp_path / "missing.gguf")
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a model at all")
    with pytest.raises(ModelLoadError, match="junk.gguf: not a GGUF file"):
        Engine(junk)
    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(default_model_path().read_bytes()[:2_000_000])
    with pytest.raises(ModelLoadError, match="truncated.gguf"):
        Engine(truncated)
    other = tmp_path / "gpt2.gguf"
    writer = gguf.GGUFWriter(str(other), "gpt2")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(ModelLoadError, match="unsupported architecture 'gpt2'"):
        Engine(other)
    with pytest.raises(ValueError, match="weights must be 'float32' or 'int4', got 'int8'"):
        EngineConfig(weights="int8")
    with pytest.raises(ValueError, match="cpu, cuda or cuda:N, got 'tpu'"):
        EngineConfig(device="tpu")
    with pytest.raises(ValueError, match="on cuda the weights are bfloat16"):
        EngineConfig(device="cuda", weights="int4")
    if not torch.cuda.is_available():
        with pytest.raises(EngineError, match="torch sees no CUDA GPU"):
            Engine(truncated.with_name("absent.gguf"), EngineConfig(device="cuda"))
    too_long = [5] * 9000
    with pytest.raises(ContextLengthError, match="9000 tokens") as err:
        engine.generate([too_long], GREEDY)
    assert isinstance(err.value, EngineError) and "shorten the prompt" in str(err.value)
    with pytest.raises(InvalidRequestError, match="empty"):
        engine.generate([[]], GREEDY)
    with pytest.raises(InvalidRequestError, match="token ids"):
        engine.generate([[1, 2, 10**9]], GREEDY)
    # A batch with one bad prompt queues nothing; good requests still run afterwards.
    with pytest.raises(ContextLengthError):
        engine.generate([[5, 6], too_long], GREEDY)
    assert not engine.scheduler.waiting and not engine.scheduler.running
    out = engine.generate([[5, 6, 7]], SamplingParams(temperature=0, max_tokens=3))[0]
    assert len(out.token_ids) == 3 and out.error is None


@pytest.mark.parametrize("weights, intermediate", [("float32", 96), ("int4", 96), ("int4", 40)])
def test_dummy_weights_of_any_size_run_from_token_ids(weights, intermediate):
    config = ModelConfig(
        vocab_size=300,
        hidden_size=64,
        intermediate_size=intermediate,
        num_layers=2,
        num_heads=4,
        num_kv_heads=2,
        head_dim=16,
        max_position_embeddings=256,
        tie_word_embeddings=False,
        qkv_bias=True,
    )
    eng = Engine(dummy_checkpoint(config, seed=1), EngineConfig(kv_cache_bytes=1 << 20, weights=weights))
    try:
        if weights == "int4":
            # The engine's kernel takes whole blocks of 64 inputs, torch's whole groups of 32:
            # a projection with neither (96 or 40 inputs) stays dense.
            kernels = unavailable_reason() is None
            kind, whole = ("q4", 64) if kernels else ("int4", 32)
            layer = eng.model.layers[0]
            assert layer.qkv.kind == kind and (layer.down.kind == kind) == (intermediate % whole == 0)
            assert (eng.model.lm_head.kind == "q8") == kernels
        a = eng.generate([[1, 2, 3]], SamplingParams(temperature=0, max_tokens=10, ignore_eos=True))[0]
        assert len(a.token_ids) == 10 and all(0 <= t < 300 for t in a.token_ids)
        assert (
            eng.generate([[1, 2, 3]], SamplingParams(temperature=0, max_tokens=10, ignore_eos=True))[0].token_ids
            == a.token_ids
        )
        with pytest.raises(InvalidRequestError, match="no tokenizer"):
            eng.generate(["text"], GREEDY)
        with pytest.raises(ContextLengthError):
            eng.generate([[1] * 256], GREEDY)
    finally:
        eng.shutdown()


def test_the_model_runs_only_on_the_engine_thread(engine, monkeypatch):
    """torch work from a second thread slows every step (engine/loop.py says why), so calls made
    from other threads, prompt_logits included, are carried out by the loop thread."""
    import threading

    seen = []
    run = engine.runner.run

    def spy(*args, **kwargs):
        seen.append(threading.current_thread())
        return run(*args, **kwargs)

    monkeypatch.setattr(engine.runner, "run", spy)
    engine.prompt_logits([engine.encode("Hello there")])
    engine.generate([[5, 6, 7]], SamplingParams(temperature=0, max_tokens=2))
    assert seen and all(t is engine.loop.thread for t in seen) and threading.current_thread() not in seen


def test_a_scheduler_fault_fails_the_queued_requests_and_the_engine_keeps_serving(checkpoint, monkeypatch):
    """Fault injection (a patched schedule() that raises once): no real input makes the
    scheduler fail, and the loop must survive it if one ever does."""
    eng = make_engine(checkpoint, kv_cache_bytes=32 << 20)
    try:
        real, calls = eng.scheduler.schedule, []

        def once():
            calls.append(1)
            if len(calls) == 1:
                raise RuntimeError("scheduler bug")
            return real()

        monkeypatch.setattr(eng.scheduler, "schedule", once)
        outs = eng.generate([[5, 6, 7], [8, 9]], SamplingParams(temperature=0, max_tokens=4))
        assert [o.finish_reason for o in outs] == ["error", "error"]
        assert all("scheduler bug" in o.error for o in outs)
        out = eng.generate([[5, 6, 7]], SamplingParams(temperature=0, max_tokens=4, ignore_eos=True))[0]
        assert out.finish_reason == "length" and len(out.token_ids) == 4
        assert eng.pool.num_free + eng.radix.num_nodes == eng.pool.num_blocks
    finally:
        eng.shutdown()
