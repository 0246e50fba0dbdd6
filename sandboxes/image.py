"""Sandbox images without a registry.

The base image is a Debian bookworm minimal root filesystem made by
`debootstrap` (root only, about a minute), stored as a tarball under the cache
dir (`$HARNESS_CACHE`, default `~/.cache/harness/`) and imported into the local
Docker engine as `harness-base:bookworm-1`. Both steps are skipped when their
result already exists. Bump BASE_VERSION when the recipe changes.

Task images are ordinary Dockerfiles layered on it; `build_derived` tags each
by a hash of its Dockerfile and context, so an unchanged one is not rebuilt. Both
carry the host's CA bundle, package-index settings and proxies (host_network.py).

    python -m sandboxes.image          # build the base image if it is missing
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import docker
from docker.errors import BuildError, ImageNotFound

from core.cache import cache_dir
from sandboxes.docker_container import docker_client
from sandboxes.docker_options import BASE_IMAGE
from sandboxes.host_network import (
    HostNetwork,
    build_args,
    current,
    debian_mirror,
    digest,
    image_files,
    install_into,
    with_host_network,
)

SUITE = "bookworm"
PACKAGES = ["python3", "python3-pip", "python3-venv", "git", "patch", "ca-certificates"]
SANDBOX_UID = 1000  # the default DockerOptions.user; owns /workspace in the image

# Applied on import: what a Dockerfile would say after FROM scratch + ADD rootfs.
IMPORT_CHANGES = [
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "ENV LANG=C.UTF-8",
    "WORKDIR /workspace",
    'CMD ["bash"]',
]


class ImageBuildError(RuntimeError):
    """Building an image failed; the message says which step and why."""


def image_exists(client: docker.DockerClient, tag: str) -> bool:
    try:
        client.images.get(tag)
        return True
    except ImageNotFound:
        return False


def rootfs_tarball(version: str, mirror: str | None = None, log: Callable[[str], None] = print) -> Path:
    """The cached root filesystem tarball, made with debootstrap when it is not cached yet."""
    out = cache_dir() / f"rootfs-{version}.tar"
    if out.exists():
        log(f"using cached root filesystem {out}")
        return out
    if shutil.which("debootstrap") is None:
        raise ImageBuildError(
            "debootstrap is not installed; run `bash scripts/setup_system.sh` as root (apt-get install debootstrap)"
        )
    if os.geteuid() != 0:
        raise ImageBuildError("debootstrap needs root; run `sudo harness sandbox build` once (the result is cached)")
    mirror = mirror or current().apt_mirror or debian_mirror()
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix="rootfs-") as tmp:
        root = Path(tmp, "root")
        cmd = ["debootstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}", SUITE, str(root), mirror]
        log(f"running {' '.join(cmd)} (about a minute)")
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise ImageBuildError(
                f"debootstrap failed ({proc.returncode}) with mirror {mirror}:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}"
            )
        _prepare_rootfs(root)
        partial = Path(tmp, "rootfs.tar")
        subprocess.run(["tar", "--numeric-owner", "-C", str(root), "-cf", str(partial), "."], check=True)
        partial.rename(out)  # same filesystem: the cache never holds half a tarball
    log(f"cached root filesystem {out} ({out.stat().st_size // 2**20} MiB)")
    return out


def _prepare_rootfs(root: Path) -> None:
    """Add the sandbox user and its /workspace and the host's network settings (sandboxes/host_network.py);
    drop package caches nobody in a sandbox needs."""
    install_into(root, current())
    with open(root / "etc/passwd", "a") as f:
        f.write(f"harness:x:{SANDBOX_UID}:{SANDBOX_UID}:harness sandbox:/workspace:/bin/bash\n")
    with open(root / "etc/group", "a") as f:
        f.write(f"harness:x:{SANDBOX_UID}:\n")
    ws = root / "workspace"
    ws.mkdir(exist_ok=True)
    os.chown(ws, SANDBOX_UID, SANDBOX_UID)
    for junk in ["var/cache/apt/archives", "var/lib/apt/lists"]:
        for p in (root / junk).glob("*"):
            if p.is_file():
                p.unlink()


def build_base_image(
    tag: str = BASE_IMAGE,
    force: bool = False,
    client: docker.DockerClient | None = None,
    log: Callable[[str], None] = print,
) -> str:
    """Make `tag` exist in the local engine (debootstrap + import); skipped when it exists."""
    client = client or docker_client()
    if image_exists(client, tag) and not force:
        log(f"{tag} already exists")
        return tag
    repo, _, version = tag.rpartition(":")
    if not repo:
        repo, version = tag, "latest"
    cached = cache_dir() / f"rootfs-{version}.tar"
    if force and cached.exists():
        cached.unlink()  # --force redoes debootstrap too, e.g. to pick up security updates
    tarball = rootfs_tarball(version, log=log)
    log(f"importing {tarball.name} as {tag}")
    client.api.import_image_from_file(str(tarball), repository=repo, tag=version, changes=IMPORT_CHANGES)
    if not image_exists(client, tag):
        raise ImageBuildError(f"importing {tarball} did not produce {tag}")
    log(f"built {tag}")
    return tag


def context_hash(dockerfile: str, context_dir: Path | None, salt: str = "") -> str:
    """A digest of the Dockerfile, `salt`, and every file (path, mode, bytes) of the context."""
    h = hashlib.sha256(dockerfile.encode() + b"\0" + salt.encode())
    if context_dir is not None:
        for p in sorted(Path(context_dir).rglob("*")):
            if p.is_file():
                h.update(str(p.relative_to(context_dir)).encode("utf-8", "surrogateescape") + b"\0")
                h.update(oct(p.stat().st_mode).encode() + b"\0")
                h.update(p.read_bytes())
    return h.hexdigest()[:16]


def _from_ids(client: docker.DockerClient, dockerfile: str) -> str:
    ids = []
    for m in re.finditer(r"^\s*FROM\s+(?:--\S+\s+)*(\S+)", dockerfile, re.MULTILINE | re.IGNORECASE):
        try:
            ids.append(client.images.get(m.group(1)).id)
        except ImageNotFound:
            ids.append(m.group(1))  # a build stage's name, or missing: the build will say so
    return "\n".join(ids)


def build_derived(
    dockerfile: str,
    context_dir: Path | None = None,
    repo: str = "harness-task",
    client: docker.DockerClient | None = None,
    network: str = "bridge",
    log: Callable[[str], None] = print,
    host: HostNetwork | None = None,
) -> str:
    """Build `dockerfile` (usually FROM the base image) and return its tag `repo:<content hash>`.

    The build has the network (to install packages) with the host's CA bundle, package-index
    settings and proxies (`host`, default: detected, sandboxes/host_network.py); the sandboxes
    that run the image do not. Nothing is pulled: FROM must name a local image."""
    client = client or docker_client()
    host = current() if host is None else host
    # The base images' ids count too: a rebuilt base (`build --force`) makes new derived tags.
    # So do the host's settings; with none (HARNESS_HOST_NETWORK=off) the tags are those of images built without them.
    salt = _from_ids(client, dockerfile) + (f"\n{digest(host)}" if image_files(host) else "")
    tag = f"{repo}:{context_hash(dockerfile, context_dir, salt=salt)}"
    if image_exists(client, tag):
        log(f"{tag} already exists")
        return tag
    with tempfile.TemporaryDirectory(prefix="harness-build-") as tmp:
        ctx = Path(tmp, "ctx")
        if context_dir is not None:
            shutil.copytree(context_dir, ctx, symlinks=True)
        else:
            ctx.mkdir()
        name = ".harness.Dockerfile"
        (ctx / name).write_text(with_host_network(dockerfile, ctx, host, lambda image: _inspect(client, image)))
        log(f"building {tag}")
        try:
            client.images.build(
                path=str(ctx),
                dockerfile=name,
                tag=tag,
                rm=True,
                forcerm=True,
                pull=False,
                network_mode=network,
                buildargs=build_args(host),
            )
        except BuildError as e:
            raise ImageBuildError(
                build_failure(tag, e.msg, [str(x.get("stream", x.get("error", ""))) for x in e.build_log])
            ) from e
    return tag


def _inspect(client: docker.DockerClient, image: str) -> tuple[dict[str, str], str] | None:
    try:
        config = client.images.get(image).attrs["Config"] or {}
    except ImageNotFound:
        return None
    return config.get("Labels") or {}, config.get("User") or ""


def build_failure(tag: str, error: str, log: list[str], keep: int = 25) -> str:
    """What a failed build says: the step that failed (the last `Step N/M :` the builder began) and the
    last lines of that step's output."""
    lines = re.sub(r"\x1b\[[0-9;]*m", "", "".join(log)).splitlines()
    starts = [i for i, line in enumerate(lines) if re.match(r"\s*Step \d+/\d+ :", line)]
    where = f" at {lines[starts[-1]].strip()[:300]}" if starts else ""
    output = lines[starts[-1] + 1 :] if starts else lines
    tail = "\n".join(line for line in output[-keep:] if line.strip())
    return f"building {tag} failed{where}: {error.strip()}\n{tail}"


def main(argv: list[str]) -> int:
    try:
        build_base_image(force="--force" in argv)
    except (ImageBuildError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
