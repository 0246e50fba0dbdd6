"""Task images: the repository at /testbed on a Python-and-pytest layer over the local base image.

Each image is built once and cached under a tag that hashes its Dockerfile and
context, so a second batch starts containers at once. The build has the network
(to install packages); the agent's and the grader's containers do not.
"""

from __future__ import annotations

import shlex
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import docker

from evals.swe.task import SweInstance
from sandboxes.docker_options import BASE_IMAGE
from sandboxes.image import build_base_image, build_derived

AGENT_UID = 1000

SWE_BASE = f"""FROM {BASE_IMAGE}
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \\
    python3-pytest python3-setuptools && rm -rf /var/lib/apt/lists/*
"""


def swe_base_image(client: docker.DockerClient, log: Callable[[str], None] = print) -> str:
    build_base_image(client=client, log=log)
    return build_derived(SWE_BASE, None, repo="harness-swe-base", client=client, log=log)


def instance_image(inst: SweInstance, client: docker.DockerClient, log: Callable[[str], None] = print) -> str:
    """The image to run `inst` in; a prebuilt `image` is used as it is."""
    if inst.image is not None:
        return inst.image
    base = swe_base_image(client, log)
    env = inst.environment
    lines = [f"FROM {base}"]
    if env.apt:
        lines.append(
            "RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "
            + " ".join(shlex.quote(p) for p in env.apt)
            + " && rm -rf /var/lib/apt/lists/*"
        )
    with tempfile.TemporaryDirectory(prefix="harness-swe-") as tmp:
        ctx = Path(tmp)
        source = Path(inst.source)
        if source.is_dir():
            shutil.copytree(source, ctx / "repo", symlinks=True)
            lines.append("COPY repo /testbed")
        else:
            shutil.copy(source, ctx / "repo.bundle")
            lines += ["COPY repo.bundle /tmp/repo.bundle", "RUN git clone -q /tmp/repo.bundle /testbed && rm /tmp/repo.bundle"]
        lines.append(f"RUN cd /testbed && git checkout -q {shlex.quote(inst.base_commit)} && git remote remove origin 2>/dev/null; true")
        lines += [f"RUN cd /testbed && {command}" for command in env.install]
        lines += [
            f"RUN chown -R {AGENT_UID}:{AGENT_UID} /testbed && git config --system --add safe.directory /testbed",
            "WORKDIR /testbed",
        ]
        return build_derived("\n".join(lines) + "\n", ctx, repo="harness-swe-task", client=client, log=log)
