"""The named policies and how a policy is chosen: the one preset table, a TOML/YAML/JSON file that
`extends` a preset (read by core/policy_file.py), and `+memory` after either for the same policy with the
agent's memory tool on."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from core.context_policy import Compact, DiscloseTools, MaskObservations, RepoMap, StripReasoning
from core.errors import HarnessError, describe_validation_error
from core.policy import DispatchPolicy, HarnessPolicy, ModelParams, StopPolicy
from core.policy_file import deep_merge, read_policy_file

# The one preset table: name -> (what it does, the policy). Context numbers are starting points for
# 100k-token-class models; a policy file varies them.
_PRESETS: list[tuple[str, HarnessPolicy]] = [
    ("append-only context, first_write_wins dispatch, 50 steps", HarnessPolicy(name="default")),
    (
        "only the first tool call of each reply runs",
        HarnessPolicy(name="one_call", dispatch=DispatchPolicy(parallel="one_call_only")),
    ),
    (
        "every tool call of a reply runs, in order",
        HarnessPolicy(name="parallel", dispatch=DispatchPolicy(parallel="all")),
    ),
    ("every message resent verbatim: the cache's best case, the context's worst", HarnessPolicy(name="append_only")),
    (
        "past reasoning stripped, all but the last 5 tool outputs replaced by placeholders",
        HarnessPolicy(name="lean", context=[StripReasoning(keep="last_turn"), MaskObservations(keep_last=5)]),
    ),
    (
        "all but the last 5 tool outputs replaced by placeholders, the mask moving 10 outputs at a time and past "
        "reasoning kept, so the prompt is append-only in between",
        HarnessPolicy(
            name="masked_batched", context=[StripReasoning(keep="all"), MaskObservations(keep_last=5, every=10)]
        ),
    ),
    (
        "at 12k tokens, a fresh summary of all but the last 4 steps rewrites the history",
        HarnessPolicy(
            name="compact_naive",
            context=[Compact(trigger_tokens=12000, keep_recent_steps=4, layout="rewrite", summariser_prompt="fresh")],
        ),
    ),
    (
        "at 12k tokens, fold every step after the first 7k tokens of steps; memory changes are appended after "
        "those, so the prefix never moves",
        HarnessPolicy(
            name="compact_cache_aware",
            context=[
                Compact(
                    trigger_tokens=12000,
                    keep_first_tokens=7000,
                    keep_recent_steps=0,
                    layout="append",
                    summariser_prompt="fork",
                )
            ],
        ),
    ),
    (
        "tool summaries in every request, full schemas through describe_tool",
        HarnessPolicy(name="disclosed", context=[DiscloseTools()]),
    ),
    (
        "search_code, find_symbol and repo_map beside the tool set, and a 1,024-token repository map after the task",
        HarnessPolicy(name="code_search", code_tools=["search_code", "find_symbol", "repo_map"], context=[RepoMap()]),
    ),
    # A small local model wanders in free text; a grammar that admits only a schema-valid tool call,
    # and a short cap per reply, keep it acting and every step bounded.
    (
        "the embedded model's default: every reply one grammar-constrained tool call of at most 256 tokens, 30 steps",
        HarnessPolicy(
            name="local", model=ModelParams(tool_choice="required", max_tokens=256), stop=StopPolicy(max_steps=30)
        ),
    ),
]
PRESETS: dict[str, HarnessPolicy] = {p.name: p for _, p in _PRESETS}
PRESET_SUMMARIES: dict[str, str] = {p.name: what for what, p in _PRESETS}


MEMORY_ON = "+memory"  # after a policy's name: the same policy with the memory tool on


def memory_on(policy: HarnessPolicy) -> HarnessPolicy:
    """`policy` with the agent's memory tool on, named NAME+memory."""
    memory = policy.memory.model_copy(update={"tool": True})
    return policy.model_copy(update={"name": policy.name + MEMORY_ON, "memory": memory})


def load_policy(name_or_path: str) -> HarnessPolicy:
    """A preset name, or a .toml/.yaml/.yml/.json file (which may `extends` a preset); either followed by
    `+memory` is the same policy with the memory tool on."""
    if name_or_path.endswith(MEMORY_ON):
        return memory_on(load_policy(name_or_path.removesuffix(MEMORY_ON)))
    if name_or_path in PRESETS:
        return PRESETS[name_or_path]
    path = Path(name_or_path)
    if path.is_dir():
        raise HarnessError(
            f"Policy {name_or_path} is a folder, not a policy: name a .toml or .yaml policy file (in it, or "
            f"anywhere), or a preset: {', '.join(sorted(PRESETS))}."
        )
    if path.is_file() and not path.suffix:
        raise HarnessError(
            f"Policy file {name_or_path} has no .toml, .yaml or .json suffix, so its format is unknown: rename it."
        )
    if not path.suffix:
        raise HarnessError(
            f"Unknown policy preset {name_or_path!r}. Known presets: {', '.join(sorted(PRESETS))}. "
            "Or pass a path to a .toml or .yaml policy file; either followed by +memory turns the memory tool on."
        )
    data = read_policy_file(path)
    base = data.pop("extends", "default")
    if not isinstance(base, str) or base not in PRESETS:
        raise HarnessError(f"Policy file {path} extends unknown preset {base!r}; known: {', '.join(sorted(PRESETS))}.")
    merged = deep_merge(PRESETS[base].model_dump(), data)
    if "name" not in data:
        merged["name"] = path.stem
    try:
        return HarnessPolicy.model_validate(merged)
    except ValidationError as e:
        raise HarnessError(describe_validation_error(e, f"Policy file {path}")) from None
