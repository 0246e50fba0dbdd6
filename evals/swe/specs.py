"""Classic environments by repository and version, in the shape of the classic harness's
MAP_REPO_VERSION_TO_SPECS: a JSON or YAML file `{repo: {version: {...}}}` (in YAML, numbers stay text:
`1.10` is version "1.10").

Keys of the classic table keep their meaning: `python`, `packages` ("requirements.txt" or
requirement specifiers separated by spaces), `pip_packages`, `pre_install`, `install`,
`eval_commands`, `test_cmd` (no test files: those the test patch touches are appended).
Two more: `env` (variables set while installing and testing) and `build_env` (variables set
only while the image is built: CA bundle, proxy, version pretends), and `log_parser` (a
parser's name, as in swebench's PARSER_REGISTRY). Other keys of the classic table
(`nano_cpus`, `execute_test_as_nonroot`, ...) are accepted and not used.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from core.data_files import SafeLoader, load_yaml
from core.errors import HarnessError, describe_validation_error
from core.text_files import read_text_file


class Spec(BaseModel):
    model_config = ConfigDict(extra="ignore")

    python: str | None = None
    packages: str = ""
    pip_packages: list[str] = Field(default_factory=list)
    pre_install: list[str] = Field(default_factory=list)
    install: str = ""
    eval_commands: list[str] = Field(default_factory=list)
    test_cmd: str | list[str] = "pytest -rA -p no:cacheprovider"
    env: dict[str, str] = Field(default_factory=dict)
    build_env: dict[str, str] = Field(default_factory=dict)
    log_parser: str | None = None

    @field_validator("env", "build_env", mode="before")
    @classmethod
    def _strings(cls, v):
        return {str(k): str(x) for k, x in (v or {}).items()}

    @field_validator("python", mode="before")
    @classmethod
    def _version_string(cls, v):
        return None if v is None else str(v)


SpecTable = dict[str, dict[str, Spec]]


class _TextLoader(SafeLoader):
    """YAML without number resolution: versions such as 1.10 and `python: 3.10` stay as written."""


_TextLoader.yaml_implicit_resolvers = {
    first: [
        (tag, regexp) for tag, regexp in resolvers if tag not in ("tag:yaml.org,2002:float", "tag:yaml.org,2002:int")
    ]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_specs(path: str | Path) -> SpecTable:
    path = Path(path)
    raw = read_text_file(path, "spec file")
    try:
        data = json.loads(raw) if path.suffix == ".json" else load_yaml(raw, _TextLoader)
    except (json.JSONDecodeError, yaml.YAMLError, RecursionError) as e:  # json.loads raises it when nested too deeply
        raise HarnessError(
            f"Spec file {path} is not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {e}"
        ) from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise HarnessError(
            f"Spec file {path} must map each repository to its versions: {{repo: {{version: {{test_cmd: ...}}}}}}."
        )
    table: SpecTable = {}
    for repo, versions in data.items():
        table[repo] = {}
        for version, spec in versions.items():
            try:
                table[repo][str(version)] = Spec.model_validate(spec or {})
            except ValidationError as e:
                raise HarnessError(
                    describe_validation_error(e, f"Spec file {path}, {repo} version {version}")
                ) from None
    return table


def spec_for(table: SpecTable, repo: str, version: str) -> Spec | None:
    return table.get(repo, {}).get(str(version))
