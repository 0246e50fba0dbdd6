"""Images without a registry: the mirror comes from apt's sources, derived images are cached by content."""

import os
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.sandbox import app
from sandboxes.docker import DockerSandbox
from sandboxes.docker_options import BASE_IMAGE, DockerOptions
from sandboxes.image import build_derived, context_hash
from sandboxes.shell import ShellExited


def test_context_hash_follows_dockerfile_and_context(tmp_path):
    (tmp_path / "a.txt").write_text("one")
    first = context_hash("FROM x", tmp_path)
    assert context_hash("FROM x", tmp_path) == first
    assert context_hash("FROM y", tmp_path) != first
    (tmp_path / "a.txt").write_text("two")
    assert context_hash("FROM x", tmp_path) != first


def test_build_command_skips_an_existing_base_image(docker_ready):
    result = CliRunner().invoke(app, ["build"])
    assert result.exit_code == 0, result.output
    assert "already exists" in result.output
    assert docker_ready.images.get(BASE_IMAGE).attrs["Config"]["WorkingDir"] == "/workspace"


def test_derived_image_is_built_once_and_runs(docker_ready, tmp_path: Path):
    (tmp_path / "hello.txt").write_text("from the context\n")
    # A fresh comment makes a fresh tag, so the build really runs (its layers may come from cache).
    dockerfile = f"# {uuid.uuid4()}\nFROM {BASE_IMAGE}\nCOPY hello.txt /opt/hello.txt\nRUN python3 -c 'print(1 + 1)' > /opt/two\n"
    tag = build_derived(dockerfile, tmp_path, repo="harness-test", client=docker_ready)
    assert tag.startswith("harness-test:")
    messages = []
    assert build_derived(dockerfile, tmp_path, repo="harness-test", client=docker_ready, log=messages.append) == tag
    assert messages == [f"{tag} already exists"]
    with DockerSandbox.start(DockerOptions(image=tag), client=docker_ready) as sb:
        assert sb.exec("cat /opt/hello.txt /opt/two", timeout=10).output == "from the context\n2\n"
    docker_ready.images.remove(tag)


def test_an_image_without_the_workdir_and_a_named_user_still_gets_a_writable_workspace(docker_ready):
    # Like a stock image from a registry: no /workspace, and the user given by name.
    dockerfile = f"FROM {BASE_IMAGE}\nRUN rm -rf /workspace && mkdir /src && echo root > /src/owned\nWORKDIR /\n"
    tag = build_derived(dockerfile, repo="harness-test", client=docker_ready)
    with DockerSandbox.start(DockerOptions(image=tag, user="nobody"), client=docker_ready) as sb:
        sb.write_file("made-by-write.txt", b"w")
        r = sb.exec("id -un; pwd; touch made-by-shell && stat -c %U made-by-write.txt made-by-shell", timeout=10)
        assert r.output == "nobody\n/workspace\nnobody\nnobody\n"
    # A workdir the image fills as root (a repository, say) is handed over whole.
    with DockerSandbox.start(DockerOptions(image=tag, workdir="/src"), client=docker_ready) as sb:
        assert sb.exec("echo edited >> owned && cat owned", timeout=10).output == "root\nedited\n"
        assert sb.exec("grep CapEff /proc/self/status", timeout=10).output.split()[1] == "0000000000000000"
    mine = {"label": ["harness.helper", f"harness.pid={os.getpid()}"]}
    assert not docker_ready.containers.list(all=True, filters=mine, ignore_removed=True)


def test_an_image_without_bash_is_refused_clearly_and_leaves_no_container(docker_ready):
    tag = build_derived(
        f"FROM {BASE_IMAGE}\nRUN rm -f /bin/bash /usr/bin/bash\n", repo="harness-test", client=docker_ready
    )
    with pytest.raises(ShellExited, match="needs bash"):
        DockerSandbox.start(DockerOptions(image=tag), client=docker_ready)
    assert not docker_ready.containers.list(all=True, filters={"ancestor": tag}, ignore_removed=True)


def test_a_rebuilt_base_gives_derived_images_a_new_tag(docker_ready):
    base = docker_ready.images.get(BASE_IMAGE)
    other = docker_ready.images.get(
        build_derived(f"FROM {BASE_IMAGE}\nLABEL harness.test=other\n", repo="harness-test", client=docker_ready)
    )
    dockerfile = "FROM harness-test-base:latest\nLABEL harness.test=derived\n"
    try:
        base.tag("harness-test-base", "latest")
        first = build_derived(dockerfile, repo="harness-test", client=docker_ready)
        other.tag("harness-test-base", "latest")  # the same name now means another image
        second = build_derived(dockerfile, repo="harness-test", client=docker_ready)
        assert first != second
    finally:
        docker_ready.images.remove("harness-test-base:latest")
