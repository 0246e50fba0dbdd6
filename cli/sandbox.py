"""`harness sandbox ...`: build the base image, show the host settings images get, remove containers left behind."""

from __future__ import annotations

import typer

# Only pydantic here: the docker SDK is imported by the commands, so `harness` itself
# starts without the optional `sandbox` extra installed.
from cli.output import console, exits_on_error, print_json, text
from core.errors import HarnessError
from sandboxes.docker_options import BASE_IMAGE

app = typer.Typer(
    help="Docker sandboxes: build the base image (no registry needed), prune leftover containers.", no_args_is_help=True
)


@app.command()
@exits_on_error
def build(
    tag: str = typer.Option(BASE_IMAGE, help="name:version of the image to build"),
    force: bool = typer.Option(False, "--force", help="rebuild even if the tag exists (redoes debootstrap)"),
) -> None:
    """Build the Debian bookworm base image locally with debootstrap (cached; needs root once)."""
    from sandboxes.docker_container import DockerUnavailable
    from sandboxes.image import ImageBuildError, build_base_image

    try:
        build_base_image(tag=tag, force=force, log=lambda m: console.print(text((m, "dim"))))
    except (ImageBuildError, DockerUnavailable) as e:
        raise HarnessError(f"The base image {tag} was not built: {e}") from None
    console.print(text(("ready:", "green"), f" {tag}"))


@app.command("network")
@exits_on_error
def network_cmd() -> None:
    """Print what every image built here gets from the host: its CA bundle, pip index settings, apt proxy
    and mirror, proxy variables (HARNESS_CA_BUNDLE, HARNESS_PIP_INDEX_URL, ... override; see evals/swe/README.md)."""
    from sandboxes.host_network import current

    net = current()
    certificates = net.ca_bundle.count("-----BEGIN CERTIFICATE-----")
    print_json({**net.model_dump(exclude={"ca_bundle"}), "ca_certificates": certificates})


@app.command("prune")
@exits_on_error
def prune_cmd(
    all_: bool = typer.Option(
        False, "--all", help="also remove sandboxes and checkpoints whose run may still be going"
    ),
) -> None:
    """Remove sandbox containers of dead runs (no process holds the run's journal), and checkpoint
    images of runs whose folder is gone; --all removes every one."""
    from sandboxes.docker_container import DockerUnavailable
    from sandboxes.docker_runs import prune

    try:
        removed = prune(everything=all_)
    except DockerUnavailable as e:
        raise HarnessError(f"Nothing was pruned: {e}") from None
    for name in removed:
        console.print(text("removed ", (name, "bold")))
    console.print(text((f"{len(removed)} removed", "green")))
