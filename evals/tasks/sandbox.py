"""The Docker sandbox a Harbor task's agent and verifier share: the task's image, network and limits.

Harbor's containers run as the image's user (root unless the Dockerfile says otherwise) on a writable
root filesystem, with the task's working directory; the harness's sandbox defaults (uid 1000, read-only
root) would break most task images, so a task's sandbox takes Harbor's, and keeps what costs them
nothing: every capability dropped but those package managers and file owners need (not CAP_KILL, so the
agent's `kill -9 -1` cannot end the container), no-new-privileges, a process limit.
"""

from __future__ import annotations

import os
import re
from typing import Any

import docker

from evals.tasks.network import container_network
from evals.tasks.task import HarborTask

# Docker's default capabilities less CAP_KILL, NET_RAW and the rest that no package manager needs.
CAPABILITIES = ["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "SETGID", "SETUID", "SETFCAP", "NET_BIND_SERVICE"]
DEFAULT_WORKDIR = "/app"  # Terminal-Bench's images work in /app; an image without a WORKDIR gets it
PIDS = 4096  # builds and test runners start many processes
TEMPLATE = re.compile(r"\$\{(\w+)(?::-([^}]*))?\}")


def host_value(text: str) -> str:
    """Harbor's `${VAR}` and `${VAR:-default}` in task.toml's env values, filled from the host."""
    return TEMPLATE.sub(lambda m: os.environ.get(m.group(1), m.group(2) or ""), text)


def task_sandbox_options(task: HarborTask, image: str, client: docker.DockerClient) -> dict[str, Any]:
    """DockerOptions fields for the task (recorded in run.json, so a resume reopens the same sandbox)."""
    config = client.images.get(image).attrs["Config"]
    image_env = dict(e.split("=", 1) for e in config.get("Env") or [] if "=" in e)
    env = {"PATH": image_env.get("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")}
    user = str(task.config.agent.user if task.config.agent.user is not None else (config.get("User") or "0:0"))
    env.update({"HOME": "/root" if user in ("0", "0:0", "root") else "/tmp", "LANG": image_env.get("LANG", "C.UTF-8")})
    env.update({k: host_value(v) for k, v in task.config.environment.env.items()})
    limits = task.config.environment
    options: dict[str, Any] = {
        "network": container_network(task),
        "user": user,
        "workdir": limits.workdir or (config.get("WorkingDir") or "/").rstrip("/") or DEFAULT_WORKDIR,
        "read_only_root": False,
        "tmpfs": {},  # /tmp is the image's own, as in Harbor's containers: test tools install through it
        "disk": f"{limits.storage_mb}m" if limits.storage_mb else None,
        "pids": PIDS,
        "cap_add": CAPABILITIES,
        "env": env,
    }
    if task.memory():
        options["memory"] = task.memory()
    if limits.cpus:
        options["cpus"] = float(limits.cpus)
    return options
