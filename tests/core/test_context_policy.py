"""Compaction budgets as a share of the model's context window: "N%" with N a whole number from 1 to 100,
resolved as N% of the window rounded down, never below 1 token; anything else is refused naming both forms."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from core.context_policy import Compact, MaskObservations, check_window, tokens
from core.errors import HarnessError


@given(st.integers(1, 100), st.integers(1, 10_000_000))
def test_a_share_is_n_percent_of_the_window_rounded_down_and_never_zero(n, window):
    resolved = tokens(f"{n}%", window)
    assert resolved == max(1, n * window // 100)
    assert 1 <= resolved <= window
    assert resolved <= n * window / 100 or resolved == 1  # rounded down unless that would be 0


@given(st.integers(1, 10_000_000), st.one_of(st.none(), st.integers(1, 10_000_000)))
def test_a_number_of_tokens_is_itself_whatever_the_window(value, window):
    assert tokens(value, window) == value


def test_the_same_share_scales_with_the_window():
    assert tokens("80%", 8_000) == 6_400 and tokens("80%", 200_000) == 160_000 and tokens("100%", 8_000) == 8_000


@pytest.mark.parametrize("field", ["trigger_tokens", "keep_first_tokens", "max_memory_tokens"])
def test_each_budget_takes_tokens_or_a_share(field):
    assert getattr(Compact(**{field: "80%"}), field) == "80%"
    assert getattr(Compact(**{field: 12000}), field) == 12000
    assert Compact(**{field: "80%"}).model_dump(mode="json")[field] == "80%"  # run.json records it as written


@pytest.mark.parametrize("bad", ["80", "abc%", "150%", "0%", "-5%", "80.5%", "080%", " 80%", "80 %", 1.5, True, None])
def test_anything_else_is_refused_with_the_accepted_forms(bad):
    with pytest.raises(ValidationError) as e:
        Compact(trigger_tokens=bad)
    message = str(e.value)
    assert "trigger_tokens" in message and "a whole number of tokens, at least 1 (e.g. 12000)" in message
    assert '"N%" with N a whole number from 1 to 100 (e.g. "80%")' in message


def test_a_number_below_the_fields_own_bound_is_refused():
    assert Compact(keep_first_tokens=0).keep_first_tokens == 0
    with pytest.raises(ValidationError, match="at least 1"):
        Compact(trigger_tokens=0)
    with pytest.raises(ValidationError, match="at least 0"):
        Compact(keep_first_tokens=-1)


def test_a_policy_file_value_goes_through_the_same_check(tmp_path):
    from core.presets import load_policy

    path = tmp_path / "p.toml"
    path.write_text('extends = "default"\n[[context]]\nkind = "compact"\ntrigger_tokens = "80"\n')
    with pytest.raises(HarnessError, match=r'context.0.compact.trigger_tokens.*"N%" with N a whole number'):
        load_policy(str(path))
    path.write_text('extends = "default"\n[[context]]\nkind = "compact"\ntrigger_tokens = "80%"\n')
    assert load_policy(str(path)).context[0].trigger_tokens == "80%"


def test_a_share_needs_a_known_window_and_the_error_names_the_field_and_the_fixes():
    steps = [MaskObservations(), Compact(keep_first_tokens="40%")]
    check_window(steps, 8000)  # known: fine
    check_window([Compact(trigger_tokens=12000)], None)  # only tokens: no window needed
    with pytest.raises(HarnessError) as e:
        check_window(steps, None)
    message = str(e.value)
    assert 'context[1].keep_first_tokens = "40%"' in message and "`[model] context_window`" in message
    assert "a model whose window is known" in message
    with pytest.raises(HarnessError, match="context window"):
        tokens("80%", None)
