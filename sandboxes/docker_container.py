"""How a Docker sandbox's container is made: the engine client, the settings and labels that
DockerOptions turn into, and the short-lived root helpers that prepare its workspace.
Nothing is ever pulled: the image must be local.
"""

from __future__ import annotations

import os
import socket
import uuid
from datetime import UTC, datetime

import docker
from docker.errors import ContainerError, DockerException, ImageNotFound
from docker.types import DriverConfig, Mount
from docker.utils import parse_bytes

from sandboxes.docker_options import LABEL, OPTIONS_LABEL, RUN_LABEL, DockerOptions

# The container's init and idle process run as this user, never the sandbox user: without
# CAP_KILL, the sandbox user's `kill -9 -1` cannot reach them, so it cannot end the container.
# 65535 is the uid Kubernetes' pause container idles as: no image's own user.
IDLE_UID = 65535
IDLE_USER = f"{IDLE_UID}:{IDLE_UID}"


class DockerUnavailable(RuntimeError):
    """No Docker engine answers, or the image the options name is not there."""


def docker_client(timeout: float = 60) -> docker.DockerClient:
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
        return client
    except DockerException as e:
        raise DockerUnavailable(
            f"no Docker engine answers ({e}); start one with `bash scripts/setup.d/10-docker.sh` "
            "(as root) or `sudo dockerd &`, or set DOCKER_HOST"
        ) from e


def create_container(
    client: docker.DockerClient, opts: DockerOptions, image: str, name: str | None, run_dir: str | os.PathLike | None
):
    """A container of `image` with the options' settings, created but not started."""
    try:
        client.images.get(image)
    except ImageNotFound:
        raise DockerUnavailable(
            f"image {image!r} is not on this Docker engine and nothing is pulled; "
            "build the base image with `harness sandbox build`, or name a local image"
        ) from None
    return client.containers.create(
        image, name=name or f"harness-{uuid.uuid4().hex[:12]}", **run_kwargs(opts, run_labels(opts, run_dir))
    )


def numeric_user(user: str) -> tuple[int | None, int | None]:
    uid, _, gid = user.partition(":")
    if uid.isdigit() and (gid == "" or gid.isdigit()):
        return int(uid), int(gid or uid)
    return None, None


def run_kwargs(opts: DockerOptions, labels: dict[str, str]) -> dict:
    env = dict(opts.env)
    env.update({k: os.environ[k] for k in opts.env_from_host if k in os.environ})
    return dict(
        # The image's own entrypoint and command are replaced: the container only idles.
        entrypoint=["sleep"],
        command=["infinity"],
        init=True,  # a real pid 1 that reaps orphans
        # Every shell and helper names its own user (opts.user, or root for the helpers); the
        # idle process starts in / because IDLE_USER may not be allowed into the workdir.
        user=IDLE_USER,
        working_dir="/",
        environment=env,
        network_mode=opts.network,
        cap_drop=["ALL"],
        cap_add=opts.cap_add or None,
        security_opt=["no-new-privileges"] if opts.no_new_privileges else None,
        read_only=opts.read_only_root,
        tmpfs=dict(opts.tmpfs),
        mounts=[_workdir_mount(opts)],
        mem_limit=_memory_limit(opts),
        memswap_limit=_memory_limit(opts),
        nano_cpus=int(opts.cpus * 1e9),
        pids_limit=opts.pids,
        labels=labels,
    )


def _workdir_mount(opts: DockerOptions) -> Mount:
    """An anonymous volume, removed with the container; with a quota, a tmpfs of that size,
    which, unlike the engine's overlay on ext4, can be size-limited on any host (filled by
    `fill_workdir`; an empty one belongs to the sandbox user when the user is numeric)."""
    if not opts.disk:
        return Mount(opts.workdir, None, type="volume")
    tmpfs = f"size={opts.disk}"
    uid, gid = numeric_user(opts.user)
    if uid is not None:
        tmpfs += f",uid={uid},gid={gid},mode=0755"
    return Mount(
        opts.workdir,
        None,
        type="volume",
        no_copy=True,
        driver_config=DriverConfig("local", {"type": "tmpfs", "device": "tmpfs", "o": tmpfs}),
    )


def _memory_limit(opts: DockerOptions) -> int:
    """The workspace's tmpfs pages count against the container's memory: the limit covers both."""
    return parse_bytes(opts.memory) + (parse_bytes(opts.disk) if opts.disk else 0)


def owner_labels(opts: DockerOptions) -> dict[str, str]:
    """The labels every container the harness starts carries: what `harness sandbox prune` looks for."""
    return {
        **opts.labels,
        LABEL: "1",
        "harness.host": socket.gethostname(),
        "harness.pid": str(os.getpid()),
        "harness.started": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def run_labels(opts: DockerOptions, run_dir: str | os.PathLike | None) -> dict[str, str]:
    """A sandbox's labels: its owner, and, for a run's sandbox, the run's folder and the
    options, so the container can be found, reattached and recreated from them alone."""
    labels = owner_labels(opts)
    if run_dir is not None:
        labels[RUN_LABEL] = os.path.abspath(run_dir)
        labels[OPTIONS_LABEL] = opts.model_dump_json()
    return labels


def fill_workdir(client: docker.DockerClient, container, opts: DockerOptions) -> None:
    """A tmpfs volume starts empty when its container starts (the engine's own copy of the
    image's files goes into a mount it then drops): copy the image's workdir into it, owners
    and modes kept, with a short-lived root helper that has only what `cp -a` needs."""
    container.reload()
    volume = next(m["Name"] for m in container.attrs["Mounts"] if m["Destination"] == opts.workdir)
    try:
        client.containers.run(
            container.image.id,
            entrypoint=["sh", "-c", '[ ! -d "$1" ] || cp -a "$1"/. /.harness-into/', "fill", opts.workdir],
            command=[],
            user="0",
            mounts=[Mount("/.harness-into", volume, type="volume")],
            network_mode="none",
            cap_drop=["ALL"],
            cap_add=["CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID"],
            security_opt=["no-new-privileges"],
            labels={**owner_labels(opts), "harness.helper": "fill"},
            remove=True,
        )
    except ContainerError as e:
        last = (e.stderr or b"").decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
        image = (container.image.tags or [opts.image])[0]
        raise DockerUnavailable(
            f"the files {image} has in {opts.workdir} could not be copied into the sandbox's workspace of "
            f"{opts.disk} ({last[0][-200:]}); raise DockerOptions.disk"
        ) from e


def chown_workdir(
    client: docker.DockerClient, container, opts: DockerOptions, uid: int | None, gid: int | None
) -> None:
    """An image without the workdir (or with a root-owned one) gives a volume the sandbox
    user cannot write: hand it, and whatever the image put in it, to that user.

    A short-lived helper container that shares the volume does it, with CAP_CHOWN
    only, so the sandbox itself never holds that capability."""
    client.containers.run(
        opts.image,
        entrypoint=["chown", "-R", f"{uid}:{gid}", opts.workdir],
        command=[],
        user="0",
        volumes_from=[container.id],
        network_mode="none",
        cap_drop=["ALL"],
        cap_add=["CHOWN"],
        security_opt=["no-new-privileges"],
        labels={**owner_labels(opts), "harness.helper": "chown"},
        remove=True,
    )
