"""A Harbor task's image: its environment/ folder built in the local engine, nothing pulled.

Task Dockerfiles start FROM public images (python:3.13-slim-bookworm, ubuntu:24.04...) that a machine
without a registry cannot pull. `--base-image FROM=LOCAL` turns such a FROM into a local image, and the
build says so; a FROM that is neither local nor rewritten is refused before the build, naming the flag.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

import docker

from core.errors import HarnessError
from evals.tasks.task import HarborTask
from sandboxes.image import ImageBuildError, build_derived, image_exists

FROM_LINE = re.compile(r"^(\s*FROM\s+(?:--\S+\s+)*)(\S+)(.*)$", re.IGNORECASE)
STAGE = re.compile(r"\s+AS\s+(\S+)", re.IGNORECASE)


def parse_base_images(pairs: list[str] | None) -> dict[str, str]:
    """`--base-image FROM=LOCAL` options as a mapping."""
    rewrites = {}
    for pair in pairs or []:
        image, sep, local = pair.partition("=")
        if not sep or not image.strip() or not local.strip():
            raise HarnessError(
                f"--base-image {pair!r}: write it as FROM=LOCAL, e.g. "
                "--base-image python:3.13-slim-bookworm=harness-base:bookworm-1."
            )
        rewrites[image.strip()] = local.strip()
    return rewrites


def rewrite_from(dockerfile: str, rewrites: Mapping[str, str]) -> tuple[str, list[tuple[str, str]]]:
    """The Dockerfile with each FROM image that `rewrites` names replaced, and the (from, to) pairs replaced."""
    stages: set[str] = set()
    done: list[tuple[str, str]] = []
    lines = []
    for line in dockerfile.splitlines():
        m = FROM_LINE.match(line)
        if m:
            head, image, tail = m.groups()
            if image in rewrites and image not in stages:
                done.append((image, rewrites[image]))
                line = f"{head}{rewrites[image]}{tail}"
            stage = STAGE.match(tail)
            if stage:
                stages.add(stage.group(1))
        lines.append(line)
    return "\n".join(lines) + "\n", done


def from_images(dockerfile: str) -> list[str]:
    """The images the FROM lines name, build stages left out."""
    stages: set[str] = set()
    images = []
    for line in dockerfile.splitlines():
        m = FROM_LINE.match(line)
        if m:
            _, image, tail = m.groups()
            if image not in stages and image.lower() != "scratch":
                images.append(image)
            stage = STAGE.match(tail)
            if stage:
                stages.add(stage.group(1))
    return images


def task_image(
    task: HarborTask,
    client: docker.DockerClient,
    rewrites: Mapping[str, str] | None = None,
    log: Callable[[str], None] = print,
) -> str:
    """Build the task's environment/ (its Dockerfile, FROM images rewritten) and return the image's tag."""
    dockerfile, done = rewrite_from(task.dockerfile, rewrites or {})
    for image, local in done:
        log(f"{task.instance_id}: FROM {image} is built on the local image {local} (--base-image)")
    missing = [i for i in from_images(dockerfile) if not image_exists(client, i)]
    if missing:
        raise HarnessError(
            f"Task {task.instance_id}: its Dockerfile builds FROM {', '.join(missing)}, which the local Docker "
            f"engine does not have, and nothing is pulled here. Load the image (docker load), or build on a "
            f"local one: --base-image {missing[0]}=harness-base:bookworm-1."
        )
    try:
        return build_derived(dockerfile, task.environment_dir, repo="harness-harbor-task", client=client, log=log)
    except ImageBuildError as e:
        raise HarnessError(f"Task {task.instance_id}: {e}") from None
