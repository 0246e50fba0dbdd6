"""Failures of the machine, not the model: their causes, and how they are told from the rest.

A graded instance is resolved, unresolved, an empty patch, a patch that did not apply, or an
infra failure with its cause:

    build             its task image did not build (the message names the failing step and its last lines)
    start             its container did not start
    eval_timeout      the eval script ran past its timeout
    missing_test_ids  the log names no test at all: the test output markers are missing, the test patch
                      did not apply, or the runner reported nothing
    daemon            the Docker engine did not answer, or the container died under the grader

Infra failures are retried (`--infra-retries N`, default 2), reported apart (`infra_failure_ids`,
`infra_failures`) and left out of the resolve rate. They stay in the official `error_ids`, as the
official harness would count them.
"""

from __future__ import annotations

from typing import Literal

import docker
import requests
from pydantic import BaseModel

from sandboxes.base import SandboxDead
from sandboxes.docker_container import DockerUnavailable
from sandboxes.shell import ShellExited

INFRA_RETRIES = 2
Cause = Literal["build", "start", "eval_timeout", "missing_test_ids", "daemon"]


class InfraFailure(BaseModel):
    cause: Cause
    message: str
    attempts: int = 1  # gradings (or runs) tried, the retries included


def daemon_failure(e: BaseException) -> bool:
    """The engine did not answer, or the container went away: not the image's fault, nor the patch's."""
    if isinstance(e, (docker.errors.BuildError, docker.errors.ImageNotFound)):
        return False
    if isinstance(e, DockerUnavailable):  # "no engine answers", unless it is a missing image
        return "no Docker engine answers" in str(e)
    return isinstance(
        e,
        (
            docker.errors.DockerException,
            requests.exceptions.ConnectionError,
            SandboxDead,
            ShellExited,
            ConnectionError,
            EOFError,
        ),
    )


def infra_cause(e: BaseException, otherwise: Cause) -> Cause:
    return "daemon" if daemon_failure(e) else otherwise


def resolve_line(resolved: int, over: int, failures: dict[str, InfraFailure]) -> str:
    """One line: the resolve rate, what it covers, and the infra failures it leaves out, by cause."""
    line = f"resolved {resolved} of {over} ({resolved / over if over else 0.0:.0%})"
    if failures:
        causes: dict[str, int] = {}
        for failure in failures.values():
            causes[failure.cause] = causes.get(failure.cause, 0) + 1
        named = ", ".join(f"{cause} {n}" for cause, n in sorted(causes.items()))
        line += f"; {len(failures)} infra failure{'s' if len(failures) != 1 else ''} left out ({named})"
    return line
