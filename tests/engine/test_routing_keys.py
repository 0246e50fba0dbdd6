"""What the replica routers read, without Ray: chained block hashes of a prompt, and several
replicas' metrics merged into one page."""

from engine.server.forward import block_hashes
from engine.server.merged_metrics import merge
from tests.engine.serving import metrics


def test_block_hashes_are_equal_exactly_as_long_as_the_prefixes_are():
    a = list(range(40))
    b = a[:20] + [999] + a[21:]
    ha, hb = block_hashes(a, 8), block_hashes(b, 8)
    assert len(ha) == 5, "full blocks only"
    assert ha[:2] == hb[:2] and all(x != y for x, y in zip(ha[2:], hb[2:])), "a change at 20 changes block 2 on"
    assert block_hashes(a[:39], 8) == ha[:4]


PAGE = """# HELP engine_prompt_tokens_total Prompt tokens
# TYPE engine_prompt_tokens_total counter
engine_prompt_tokens_total {prompt}
# HELP engine_cached_tokens_total Cached
# TYPE engine_cached_tokens_total counter
engine_cached_tokens_total {cached}
# HELP engine_cache_hit_rate Hit rate
# TYPE engine_cache_hit_rate gauge
engine_cache_hit_rate {rate}
# HELP engine_max_batch_seqs Most
# TYPE engine_max_batch_seqs gauge
engine_max_batch_seqs {most}
"""


def test_merged_metrics_are_per_replica_and_summed_with_the_hit_rate_recomputed():
    page = merge(
        {
            "a": PAGE.format(prompt=100, cached=90, rate=0.9, most=3),
            "b": PAGE.format(prompt=300, cached=30, rate=0.1, most=5),
        }
    )
    m = metrics(page)
    assert m["engine_prompt_tokens_total"] == 400 and m["engine_prompt_tokens_total{replica=b}"] == 300
    assert m["engine_cache_hit_rate"] == 120 / 400 and m["engine_cache_hit_rate{replica=a}"] == 0.9
    assert m["engine_max_batch_seqs"] == 5
