"""A suite as the commands take it: the records, the spec table, local repositories, build variables.

    harness swe --suite FILE --specs FILE --repos DIR --build-env KEY=VALUE ...

A bundled suite (evals/swe/suites/<name>/) may hold `specs.yaml`, used when no --specs is
given. Loading resolves each instance's classic spec and local repository here, so workers
(threads or Ray tasks) get instances that need nothing else.
"""

from __future__ import annotations

from pathlib import Path

from core.errors import HarnessError
from evals.swe.sources import local_repository
from evals.swe.specs import load_specs, spec_for
from evals.swe.task import SweInstance, read_records
from evals.swe.testlog import check_parser

SUITES = Path(__file__).resolve().parent / "suites"


def suite_path(name: str) -> Path:
    """`builtin` or another bundled suite name, else a path to a JSON or JSONL file."""
    bundled = SUITES / name / "instances.jsonl"
    if bundled.exists():
        return bundled
    if Path(name).exists():
        return Path(name)
    known = sorted(p.name for p in SUITES.iterdir() if (p / "instances.jsonl").exists())
    raise HarnessError(
        f"No suite {name!r}: bundled suites are {', '.join(known) or '(none)'}; or pass a JSON or JSONL file."
    )


def parse_build_env(pairs: list[str] | None, option: str = "--build-env") -> dict[str, str]:
    """KEY=VALUE pairs of a repeatable option (`--build-env`, `--test-env`) as a mapping."""
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.isidentifier():
            raise HarnessError(f"{option} {pair!r} must look like KEY=VALUE (KEY a variable name).")
        out[key] = value
    return out


def load_instances(
    path: str | Path,
    specs: str | Path | None = None,
    repos: str | Path | None = None,
    build_env: dict[str, str] | None = None,
) -> list[SweInstance]:
    """The records of `path`, each with its spec, its local repository (if any) and the build variables."""
    path = Path(path)
    if specs is None and (path.parent / "specs.yaml").exists():
        specs = path.parent / "specs.yaml"
    table = load_specs(specs) if specs is not None else {}
    if repos is not None and not Path(repos).is_dir():
        raise HarnessError(f"--repos {repos} is not a folder.")
    instances, missing = [], set()
    for inst in read_records(path):
        spec = spec_for(table, inst.repo, inst.version)
        source = inst.source
        if repos is not None and source is None:
            found = local_repository(Path(repos), inst.instance_id, inst.repo, inst.base_commit)
            source = str(found) if found else None
        if spec is None and inst.eval_script is None:
            missing.add((inst.repo, inst.version))
        inst = inst.model_copy(update={"spec": spec, "source": source, "build_env": dict(build_env or {})})
        check_parser(inst)
        instances.append(inst)
    if missing:
        pairs = ", ".join(f"{repo} version {version!r}" for repo, version in sorted(missing))
        where = f"the spec file {specs}" if specs else "no spec file (pass --specs FILE)"
        raise HarnessError(
            f"{path}: no environment for {pairs}: classic records need an entry in {where}, shaped "
            f"{{repo: {{version: {{test_cmd: ..., install: ...}}}}}}, or the records need an eval_script."
        )
    return instances


def unknown_predictions(instances: list[SweInstance], predicted: list[str]) -> list[str]:
    """Prediction ids the dataset does not hold; they are not graded, and each deserves a warning."""
    ids = {i.instance_id for i in instances}
    return [p for p in predicted if p not in ids]
