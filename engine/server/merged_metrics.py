"""Several replicas' Prometheus metrics as one page: every sample once per replica (a `replica`
label) and once summed over them, with the ratio and the maximum recomputed rather than summed."""

from collections import defaultdict

from prometheus_client.parser import text_string_to_metric_families

HIT_RATE = "engine_cache_hit_rate"
MAXIMA = {"engine_max_batch_seqs"}


def _labels(labels: dict[str, str]) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def merge(pages: dict[str, str]) -> str:
    """`pages`: each replica's /metrics text by replica name."""
    families: dict[str, tuple[str, str]] = {}
    per_replica: dict[str, list[str]] = defaultdict(list)
    totals: dict[str, dict[tuple[str, str], float]] = defaultdict(dict)
    for replica, text in pages.items():
        for family in text_string_to_metric_families(text):
            if family.name.endswith("_created"):  # creation times: neither summable nor used
                continue
            families.setdefault(family.name, (family.type, family.documentation))
            for s in family.samples:
                if s.name.endswith("_created"):
                    continue
                per_replica[family.name].append(f"{s.name}{_labels({**s.labels, 'replica': replica})} {s.value}")
                key = (s.name, _labels(s.labels))
                seen = totals[family.name].get(key)
                if seen is None:
                    totals[family.name][key] = s.value
                else:
                    totals[family.name][key] = max(seen, s.value) if family.name in MAXIMA else seen + s.value
    prompt = totals.get("engine_prompt_tokens", {}).get(("engine_prompt_tokens_total", ""), 0.0)
    cached = totals.get("engine_cached_tokens", {}).get(("engine_cached_tokens_total", ""), 0.0)
    if HIT_RATE in totals:
        totals[HIT_RATE] = {(HIT_RATE, ""): cached / prompt if prompt else 0.0}
    lines = []
    for name, (kind, doc) in families.items():
        lines += [f"# HELP {name} {doc}", f"# TYPE {name} {kind}"]
        lines += [f"{sample}{labels} {value}" for (sample, labels), value in totals[name].items()]
        lines += per_replica[name]
    return "\n".join(lines) + "\n"
