"""Task images: the repository at /testbed with its environment installed and committed as the baseline.

An instance's image comes from an official prebuilt image in the local engine, from a
local clone or bundle, or from a clone of GitHub made during the build (evals/swe/sources.py),
with the classic spec's steps on top. Whatever the installation wrote is committed inside
the image as `refs/harness/baseline` (and build droppings are ignored), so the agent's patch
holds only the agent's changes and applies cleanly in the grader's fresh container.

Build-time variables (`--build-env`, the spec's `build_env`) become Dockerfile ARGs: set
while the image is built, absent from the image's environment and from every container.
Each image is cached under a tag that hashes its Dockerfile and context.
"""

from __future__ import annotations

import json
import shlex
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import docker

from core.errors import HarnessError
from evals.swe.sources import how_to_provide, official_image
from evals.swe.specs import Spec
from evals.swe.task import SweInstance
from sandboxes.docker_options import BASE_IMAGE, DockerOptions
from sandboxes.image import ImageBuildError, build_base_image, build_derived, image_exists

AGENT_UID = 1000
VENV = "/opt/testbed"  # images built here: the spec's packages go to a virtual environment on PATH
CONDA_PATH = "/opt/miniconda3/envs/testbed/bin:/opt/miniconda3/bin"  # official images: conda env `testbed`
BASELINE_REF = "refs/harness/baseline"
# What running Python code leaves behind; never part of anyone's patch.
IGNORED = ["__pycache__/", "*.pyc", ".pytest_cache/", "*.egg-info/", ".eggs/"]
SYSTEM_PYTHON = "3.11"  # Debian bookworm's python3, which images built here use

SWE_BASE = f"""FROM {BASE_IMAGE}
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \\
    python3-pytest python3-setuptools && rm -rf /var/lib/apt/lists/*
"""


def swe_base_image(client: docker.DockerClient, log: Callable[[str], None] = print) -> str:
    build_base_image(client=client, log=log)
    return build_derived(SWE_BASE, None, repo="harness-swe-base", client=client, log=log)


def baseline_layer() -> str:
    """Commit what the environment's installation wrote, so diffs start after it."""
    exclude = " ".join(shlex.quote(p) for p in IGNORED)
    return (
        f"RUN cd /testbed && printf '%s\\n' {exclude} >> .git/info/exclude && git add -A"
        " && git -c user.name=harness -c user.email=harness@localhost commit -q --no-verify --allow-empty -m 'Environment baseline'"
        f" && git update-ref {BASELINE_REF} HEAD && chown -R {AGENT_UID}:{AGENT_UID} /testbed"
        " && git config --system --add safe.directory /testbed\n"
        "WORKDIR /testbed\n"
    )


def instance_image(inst: SweInstance, client: docker.DockerClient, log: Callable[[str], None] = print) -> str:
    """The task image for `inst`: a prebuilt image with the baseline on top, or one built from its spec."""
    prebuilt = inst.image or official_image(inst.instance_id)
    if _local(client, prebuilt):
        log(f"building image for {inst.instance_id} on {prebuilt}")
        dockerfile = f"FROM {prebuilt}\nUSER root\nENV PATH={CONDA_PATH}:$PATH\n" + baseline_layer()
        return _build(inst, dockerfile, None, client, log)
    if inst.image is not None:  # the record's own image is its environment: its eval script was written for it
        raise HarnessError(
            f"Instance {inst.instance_id}: its image {inst.image} is not in the local Docker engine and "
            f"nothing is pulled here; {how_to_provide(inst.instance_id, inst.repo)}."
        )
    spec = inst.spec
    if spec is None:
        raise HarnessError(
            f"Instance {inst.instance_id}: no image {prebuilt} in the local Docker engine and no spec "
            f"for {inst.repo} version {inst.version!r} to build one; pass --specs FILE, or "
            f"{how_to_provide(inst.instance_id, inst.repo)}."
        )
    base = swe_base_image(client, log)
    with tempfile.TemporaryDirectory(prefix="harness-swe-") as tmp:
        ctx = Path(tmp)
        dockerfile = (
            f"FROM {base}\n"
            + _build_args(inst, spec)
            + _environment(inst, spec)
            + _repository(inst, ctx)
            + _install(inst, spec)
        )
        log(f"building image for {inst.instance_id} from its spec")
        try:
            return _build(inst, dockerfile + baseline_layer(), ctx, client, log)
        except HarnessError as e:
            if inst.source is None:  # the GitHub clone is the usual failure offline
                raise HarnessError(
                    f"{e}\nWithout network access, {how_to_provide(inst.instance_id, inst.repo)}."
                ) from None
            raise


def _local(client: docker.DockerClient, image: str) -> bool:
    try:
        return image_exists(client, image)
    except docker.errors.DockerException:  # an id that makes no valid image name has no official image
        return False


def _build(
    inst: SweInstance, dockerfile: str, ctx: Path | None, client: docker.DockerClient, log: Callable[[str], None]
) -> str:
    try:
        return build_derived(dockerfile, ctx, repo="harness-swe-task", client=client, log=log)
    except ImageBuildError as e:
        raise HarnessError(f"Instance {inst.instance_id}: {e}") from None


def _build_args(inst: SweInstance, spec: Spec) -> str:
    values = {**spec.build_env, **inst.build_env}
    return "".join(f"ARG {k}={json.dumps(v)}\n" for k, v in values.items())


def _environment(inst: SweInstance, spec: Spec) -> str:
    if spec.python and spec.python != SYSTEM_PYTHON and not spec.python.startswith(SYSTEM_PYTHON + "."):
        raise HarnessError(
            f"Instance {inst.instance_id}: the spec for {inst.repo} version {inst.version} asks for "
            f"Python {spec.python}; images built here have Python {SYSTEM_PYTHON} (Debian bookworm). "
            f'Use the official prebuilt image, or set `python: "{SYSTEM_PYTHON}"` if the project supports it.'
        )
    lines = [f"RUN python3 -m venv --system-site-packages {VENV}", f"ENV VIRTUAL_ENV={VENV} PATH={VENV}/bin:$PATH"]
    lines += [f"ENV {k}={json.dumps(v)}" for k, v in spec.env.items()]
    return "\n".join(lines) + "\n"


def _repository(inst: SweInstance, ctx: Path) -> str:
    commit = shlex.quote(inst.base_commit)
    checkout = f"RUN cd /testbed && git checkout -q {commit} && (git remote remove origin 2>/dev/null; true)\n"
    if inst.source is None:
        return f"RUN git clone -q https://github.com/{inst.repo}.git /testbed\n" + checkout
    source = Path(inst.source)
    if source.is_dir():
        shutil.copytree(source, ctx / "repo", symlinks=True)
        return "COPY repo /testbed\nRUN cd /testbed && git reset -q --hard && git clean -fdxq\n" + checkout
    shutil.copy(source, ctx / "repo.bundle")
    return (
        "COPY repo.bundle /tmp/repo.bundle\nRUN git clone -q /tmp/repo.bundle /testbed && rm /tmp/repo.bundle\n"
        + checkout
    )


def _install(inst: SweInstance, spec: Spec) -> str:
    steps = list(spec.pre_install)
    if spec.packages == "requirements.txt":
        steps.append("pip install -r requirements.txt")
    elif spec.packages == "environment.yml":
        raise HarnessError(
            f"Instance {inst.instance_id}: the spec installs a conda environment.yml, which images built "
            f"here cannot (they have no conda); use the official prebuilt image, or list pip_packages."
        )
    elif spec.packages.strip():
        steps.append("pip install " + spec.packages.strip())
    if spec.pip_packages:
        steps.append("pip install " + " ".join(shlex.quote(p) for p in spec.pip_packages))
    if spec.install.strip():
        steps.append(spec.install.strip())
    return "".join(f"RUN cd /testbed && {step}\n" for step in steps)


def sandbox_options(image: str, client: docker.DockerClient, **changes) -> DockerOptions:
    """Sandbox options for a task image: its PATH (virtual or conda environment first) and /testbed."""
    options = DockerOptions(image=image, workdir="/testbed", **changes)
    env = dict(e.split("=", 1) for e in client.images.get(image).attrs["Config"].get("Env") or [] if "=" in e)
    if "PATH" in env:
        options = options.model_copy(update={"env": {**options.env, "PATH": env["PATH"]}})
    return options
