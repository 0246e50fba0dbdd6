"""Options of the Docker sandbox: a pydantic model, so a policy file can hold them.

The defaults are the safe ones. Each loosening is a field someone has to set:
`network="bridge"`, `read_only_root=False`, `cap_add=[...]`, `env_from_host=[...]`.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

from sandboxes.base import DEFAULT_OUTPUT_CAP

BASE_IMAGE = "harness-base:bookworm-1"
LABEL = "harness.sandbox"  # every container the harness starts carries it; prune looks for it
RUN_LABEL = "harness.run_dir"  # the folder of the run a container belongs to
OPTIONS_LABEL = "harness.options"  # the DockerOptions as JSON: enough to recreate the container
# Host variables that look like credentials are never copied in, even when named.
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|^AWS_|^GOOGLE_APPLICATION", re.IGNORECASE)


class DockerOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    image: str = Field(BASE_IMAGE, description="local image to run; never pulled")
    network: str = Field("none", description='"none" (default), "bridge", or a network name')
    user: str = Field("1000:1000", description="uid:gid (or a user name the image knows); never root by default")
    workdir: str = Field("/workspace", description="writable volume where commands start")
    read_only_root: bool = True
    tmpfs: dict[str, str] = Field(default_factory=lambda: {"/tmp": "rw,exec,nosuid,nodev,size=256m,mode=1777"})
    memory: str = Field("1g", description="memory limit of the processes; swap is not allowed on top of it")
    disk: str | None = Field(
        "1g",
        description="size of the workdir (a tmpfs volume; the container's memory limit grows by as much); "
        "None: an ordinary disk volume without a quota",
    )
    cpus: float = Field(1.0, gt=0)
    pids: int = Field(256, gt=8, description="process limit: contains fork bombs")
    env: dict[str, str] = Field(
        default_factory=lambda: {
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": "/tmp",
            "LANG": "C.UTF-8",
        },
        description="the container's whole environment (besides what the image itself sets)",
    )
    env_from_host: list[str] = Field(default_factory=list, description="host variables copied in, by exact name")
    cap_add: list[str] = Field(default_factory=list, description="capabilities given back after dropping all")
    no_new_privileges: bool = True
    shell: list[str] = Field(default_factory=lambda: ["bash", "--noprofile", "--norc"])
    output_cap: int = Field(DEFAULT_OUTPUT_CAP, gt=0)
    labels: dict[str, str] = Field(default_factory=dict)

    @field_validator("env_from_host")
    @classmethod
    def _no_credentials(cls, names: list[str]) -> list[str]:
        secret = [n for n in names if SECRET_NAME.search(n)]
        if secret:
            raise ValueError(
                f"{', '.join(secret)} look like credentials and are never copied from the host; "
                "if the sandbox truly needs one, put its value in `env` explicitly"
            )
        return names
