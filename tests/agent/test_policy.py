import pytest

from core.context_policy import MaskObservations
from core.errors import HarnessError
from core.presets import PRESETS, load_policy


def test_presets_load_by_name():
    for name in PRESETS:
        assert load_policy(name).name == name


def test_a_toml_file_extends_a_preset_and_overrides_fields(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('extends = "lean"\n[stop]\nmax_steps = 7\n[dispatch]\nparallel = "all"\n')
    policy = load_policy(str(path))
    assert policy.name == "mine" and policy.stop.max_steps == 7 and policy.dispatch.parallel == "all"
    assert MaskObservations(keep_last=5) in policy.context  # inherited from the preset


def test_a_yaml_file_with_context_steps(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("context:\n  - kind: strip_reasoning\n    keep: none\n")
    assert load_policy(str(path)).context[0].keep == "none"


@pytest.mark.parametrize(
    "body, expected",
    [
        (
            '[dispatch]\nparallel = "some"\n',
            ["dispatch.parallel", "'first_write_wins', 'all' or 'one_call_only'", "'some'"],
        ),
        ("[stop]\nmax_stepz = 3\n", ["stop.max_stepz", "not a known field"]),
        ("[stop]\nmax_steps = 0\n", ["stop.max_steps", "greater than or equal to 1"]),
        ("[dispatch\n", ["not valid TOML"]),
        ('extends = "nope"\n', ["unknown preset 'nope'"]),
    ],
)
def test_bad_policy_files_get_one_paragraph_naming_the_field(tmp_path, body, expected):
    path = tmp_path / "bad.toml"
    path.write_text(body)
    with pytest.raises(HarnessError) as err:
        load_policy(str(path))
    message = str(err.value)
    assert "\n" not in message.strip() or "TOML" in message
    for fragment in expected:
        assert fragment in message


def test_unknown_preset_and_missing_file():
    with pytest.raises(HarnessError, match="Known presets: .*default"):
        load_policy("fast")
    with pytest.raises(HarnessError, match="Cannot read policy file"):
        load_policy("/no/such/policy.toml")


def test_any_policy_followed_by_plus_memory_has_the_memory_tool_on(tmp_path):
    lean = load_policy("lean+memory")
    assert lean.name == "lean+memory" and lean.memory.tool and lean.context == load_policy("lean").context
    path = tmp_path / "mine.toml"
    path.write_text('extends = "compact_naive"\n[stop]\nmax_steps = 7\n')
    mine = load_policy(f"{path}+memory")
    assert (mine.name, mine.memory.tool, mine.stop.max_steps) == ("mine+memory", True, 7)
