"""A run's Docker sandbox outlives the process that started it: found again, reattached,
checkpointed, and pruned only once its run is dead.

    box = DockerSandbox.start(options, run_dir=run_dir)        # labelled with the run's folder
    checkpoint(box, step=7)                                      # workspace -> image, last KEEP kept
    state = box.shell_state()                                    # cwd + exported env, to journal
    # ... the process is killed; later, in a new process holding the run's journal:
    back = reattach(run_dir, container_id, state)                # the same container, or the newest checkpoint

A run is alive while some process holds the lock on its journal (core/journal_lock.py). A
container labelled with a run is pruned only when that run is dead; one without a
run label only when the process that started it (its `harness.pid` label) is gone.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
from dataclasses import asdict, dataclass
from typing import Literal

import docker
from docker.errors import APIError, NotFound
from docker.types import Mount

from core.journal_lock import run_alive
from sandboxes.docker import DockerSandbox
from sandboxes.docker_container import docker_client, owner_labels
from sandboxes.docker_options import LABEL, OPTIONS_LABEL, RUN_LABEL, DockerOptions
from sandboxes.docker_shells import ShellState

log = logging.getLogger("harness.sandbox")

CHECKPOINT_REPO = "harness-checkpoint"
CHECKPOINT_LABEL = "harness.checkpoint"  # on checkpoint images: the step it was taken after
SHELL_LABEL = "harness.shell"  # on checkpoint images: the shell's cwd and exported variables then (JSON)
KEPT_LABEL = "harness.checkpoint.kept"  # on checkpoints kept for forks: outside KEEP, and kept when the run ends
KEEP = 3  # checkpoints kept per run; older ones are removed when a new one is taken


class SandboxGone(RuntimeError):
    """Neither the run's container nor a checkpoint of it is left."""


@dataclass(frozen=True)
class Checkpoint:
    image: str  # image id
    step: int
    run_dir: str
    shell: ShellState | None = None  # the shell when it was taken (None: an older checkpoint)
    kept: bool = False  # kept for forks (`checkpoint.fork_every`)


@dataclass
class Reattached:
    sandbox: DockerSandbox
    how: Literal["reconnected", "checkpoint"]
    checkpoint: Checkpoint | None  # with "checkpoint": which one; steps after its `step` must be reconciled


def _ours(labels: dict[str, str]) -> bool:
    return labels.get("harness.host") == socket.gethostname()


def _dead(labels: dict[str, str]) -> bool:
    """True for a container of this host whose run (or, without a run, whose starting process) is gone."""
    if not _ours(labels):
        return False
    if RUN_LABEL in labels:
        return not run_alive(labels[RUN_LABEL])
    try:
        os.kill(int(labels.get("harness.pid", "0")), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, ValueError):
        return False
    return False


def prune(client: docker.DockerClient | None = None, everything: bool = False) -> list[str]:
    """Remove sandbox containers of dead runs, and checkpoint images of runs whose folder is
    gone (or, with `everything`, all of both). Returns the names and tags removed.

    Checkpoints of a dead run whose folder remains are kept: `harness resume` may need them."""
    client = client or docker_client()
    removed = []
    # Other runs remove their containers while this lists them: one gone before its inspection is skipped.
    for c in client.containers.list(all=True, filters={"label": LABEL}, ignore_removed=True):
        if everything or _dead(c.labels):
            try:
                c.remove(force=True, v=True)
                removed.append(c.name)
            except NotFound:
                pass
    for image in client.images.list(filters={"label": CHECKPOINT_LABEL}):
        labels = image.labels or {}
        if everything or (_ours(labels) and not os.path.isdir(labels.get(RUN_LABEL, ""))):
            removed += _remove_image(client, image)
    return removed


def _remove_image(client: docker.DockerClient, image) -> list[str]:
    try:
        client.images.remove(image.id, force=True)
    except NotFound:
        return []
    except APIError as e:  # a container still runs from it: removed with a later prune
        log.info("checkpoint %s kept: %s", image.id[:19], e)
        return []
    return image.tags or [image.id[:19]]


# -- checkpoints ----------------------------------------------------------------


def _tag(run_dir: str, step: int) -> str:
    return f"{CHECKPOINT_REPO}:{hashlib.sha256(run_dir.encode()).hexdigest()[:16]}-{step}"


def checkpoints(run_dir: str | os.PathLike, client: docker.DockerClient | None = None) -> list[Checkpoint]:
    """The run's checkpoint images, newest (highest step, then latest) first."""
    client = client or docker_client()
    run_dir = os.path.abspath(run_dir)
    images = client.images.list(filters={"label": [CHECKPOINT_LABEL, f"{RUN_LABEL}={run_dir}"]})
    images.sort(key=lambda i: (int(i.labels[CHECKPOINT_LABEL]), i.attrs["Created"]), reverse=True)
    return [_checkpoint_of(i, run_dir) for i in images]


def _checkpoint_of(image, run_dir: str) -> Checkpoint:
    labels = image.labels
    shell = json.loads(labels[SHELL_LABEL]) if SHELL_LABEL in labels else None
    return Checkpoint(
        image.id,
        int(labels[CHECKPOINT_LABEL]),
        run_dir,
        ShellState(shell["cwd"], shell["env"]) if shell is not None else None,
        KEPT_LABEL in labels,
    )


def checkpoint(sandbox: DockerSandbox, step: int, keep: int = KEEP, kept: bool = False) -> Checkpoint:
    """Commit the sandbox's workspace to an image labelled with its run, `step` and shell; keep the newest `keep`
    (`kept`: one kept for forks, beside those and after the run ends).

    The workdir is a volume, which `docker commit` leaves out, so a helper container (root,
    with only the capabilities `cp -a` needs, no network) copies it into its own root
    filesystem and is committed. The sandbox is paused meanwhile, so the copy is of one
    moment. /tmp (a tmpfs) is not kept, nor root-filesystem changes when `read_only_root` is off."""
    run_dir = sandbox.container.labels.get(RUN_LABEL)
    if run_dir is None:
        raise ValueError(
            f"sandbox {sandbox.name} was started without a run_dir, so its checkpoints could never be found"
        )
    client, workdir = sandbox.client, sandbox.workdir
    with sandbox._lock:
        sandbox.container.reload()
        volume = next(m["Name"] for m in sandbox.container.attrs["Mounts"] if m["Destination"] == workdir)
        helper = client.containers.create(
            sandbox.container.image.id,
            entrypoint=["sh", "-c", 'rm -rf "$1" && mkdir -p "$1" && cp -a /.harness-from/. "$1"/', "copy", workdir],
            command=[],
            user="0",
            mounts=[Mount("/.harness-from", volume, type="volume", read_only=True)],
            network_mode="none",
            cap_drop=["ALL"],
            cap_add=["CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID"],
            security_opt=["no-new-privileges"],
            labels=owner_labels(sandbox.options),  # without a run label: pruned once this process is gone
        )
        try:
            sandbox.container.pause()
            try:
                helper.start()
                code = helper.wait(timeout=900)["StatusCode"]
            finally:
                sandbox.container.unpause()
            if code != 0:
                raise OSError(
                    f"checkpoint of {sandbox.name} failed (exit {code}): {helper.logs(tail=20).decode(errors='replace')}"
                )
            repo, tag = _tag(run_dir, step).split(":")
            labels = {
                LABEL: "1",
                "harness.host": socket.gethostname(),
                RUN_LABEL: run_dir,
                OPTIONS_LABEL: sandbox.options.model_dump_json(),
                CHECKPOINT_LABEL: str(step),
                SHELL_LABEL: json.dumps(asdict(sandbox.shell_state())),
            } | ({KEPT_LABEL: "1"} if kept else {})
            image = helper.commit(repository=repo, tag=tag, conf={"Labels": labels})
        finally:
            helper.remove(force=True, v=True)
    newest = {image.id} | {c.image for c in [c for c in checkpoints(run_dir, client) if not c.kept][:keep]}
    for old in checkpoints(run_dir, client):
        if old.image not in newest and not old.kept:
            _remove_image(client, client.images.get(old.image))
    return _checkpoint_of(image, run_dir)


def discard_checkpoints(run_dir: str | os.PathLike, client: docker.DockerClient | None = None) -> list[str]:
    """Remove every checkpoint of a run that has ended for good (it will not be resumed), but those kept for
    forks: `harness sandbox prune` removes them once the run's folder is gone."""
    client = client or docker_client()
    removed = []
    for cp in checkpoints(run_dir, client):
        if not cp.kept:
            removed += _remove_image(client, client.images.get(cp.image))
    return removed


# -- reattaching ----------------------------------------------------------------


def remove_containers(run_dir: str | os.PathLike, client: docker.DockerClient | None = None) -> list[str]:
    """Remove every container labelled with `run_dir`: a run that begins again keeps none of its old ones."""
    client = client or docker_client()
    mine = client.containers.list(
        all=True, filters={"label": f"{RUN_LABEL}={os.path.abspath(run_dir)}"}, ignore_removed=True
    )
    for c in mine:
        c.remove(force=True, v=True)
    return [c.name for c in mine]


def reattach(
    run_dir: str | os.PathLike,
    container_id: str | None,
    state: ShellState,
    *,
    client: docker.DockerClient | None = None,
) -> Reattached:
    """The run's sandbox again, for a process that now holds the run's journal.

    The container `container_id` (or, when it is None or gone, the newest one labelled with
    `run_dir`) is reconnected when it still runs (a paused one is resumed): what its old shells were
    running is ended, and a fresh shell starts in `state.cwd` with `state.env` exported.
    Otherwise a new container starts from the newest checkpoint, with the same options.
    Any other container of the run is removed. Raises SandboxGone when neither is left."""
    client = client or docker_client()
    run_dir = os.path.abspath(run_dir)
    mine = client.containers.list(all=True, filters={"label": f"{RUN_LABEL}={run_dir}"}, ignore_removed=True)
    mine.sort(key=lambda c: c.attrs["Created"], reverse=True)
    if container_id is not None:
        try:
            named = client.containers.get(container_id)
        except NotFound:
            named = None  # the run's other containers, if any, are still candidates
        if named is not None and named.labels.get(RUN_LABEL) != run_dir:
            raise ValueError(
                f"container {named.name} belongs to run {named.labels.get(RUN_LABEL)!r}, not {run_dir!r}; "
                "pass the container id journaled by this run"
            )
        if named is not None:
            mine = [named] + [c for c in mine if c.id != named.id]
    chosen = next((c for c in mine if c.status in ("running", "paused")), None)
    for c in mine:
        if chosen is None or c.id != chosen.id:
            c.remove(force=True, v=True)  # stopped (a tmpfs workspace is gone with it) or a stray
    if chosen is not None:
        if chosen.status == "paused":  # the process died mid-checkpoint
            chosen.unpause()
        options = DockerOptions.model_validate_json(chosen.labels[OPTIONS_LABEL])
        return Reattached(DockerSandbox.adopt(client, chosen, options, state), "reconnected", None)
    found = checkpoints(run_dir, client)
    if not found:
        raise SandboxGone(f"the sandbox of run {run_dir} is gone and no checkpoint of it exists")
    return Reattached(from_checkpoint(found[0], run_dir, state, client), "checkpoint", found[0])


def from_checkpoint(
    cp: Checkpoint, run_dir: str | os.PathLike, state: ShellState, client: docker.DockerClient | None = None
) -> DockerSandbox:
    """A new container of `run_dir` (a run's own checkpoint, or a parent's for a fork) from checkpoint `cp`, with
    the options it was taken with, its shell in `state.cwd` with `state.env` exported."""
    client = client or docker_client()
    options = DockerOptions.model_validate_json(client.images.get(cp.image).labels[OPTIONS_LABEL])
    sandbox = DockerSandbox.start(options, client=client, run_dir=run_dir, image=cp.image)
    try:
        sandbox.restore(state)
    except BaseException:
        sandbox.close()
        raise
    return sandbox
