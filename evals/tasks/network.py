"""The network of each phase: a task may give its agent and its verifier different ones (`[agent]` and
`[verifier] network_mode` over `[environment]`'s), and both phases share one container.

A container made without a network can never join one, so a task whose phases differ gets a container on
the bridge network, and each phase connects or disconnects it first: disconnected, it has only the
loopback interface, as with no network at all. A task whose phases agree gets that network from the start.
"""

from __future__ import annotations

from typing import Literal

from evals.tasks.task import HarborTask
from sandboxes.docker import DockerSandbox

BRIDGE = "bridge"


def container_network(task: HarborTask) -> str:
    public = {task.network("agent"), task.network("verifier")} & {"public"}
    return BRIDGE if public else "none"


def enter_phase(task: HarborTask, box: DockerSandbox, phase: Literal["agent", "verifier"]) -> None:
    """Connect or disconnect the bridge as `phase` wants; nothing when the container's network is the phase's."""
    if container_network(task) != BRIDGE or task.network("agent") == task.network("verifier"):
        return
    bridge = box.client.networks.get(BRIDGE)
    box.container.reload()
    connected = BRIDGE in box.container.attrs["NetworkSettings"]["Networks"]
    wanted = task.network(phase) == "public"
    if wanted and not connected:
        bridge.connect(box.container)
    elif connected and not wanted:
        bridge.disconnect(box.container)
