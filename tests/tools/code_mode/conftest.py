"""The sandboxes a run_code program runs in: the local one, and a real Docker container."""

import pytest

from sandboxes.local import LocalSandbox


@pytest.fixture(scope="module", params=["local", pytest.param("docker", marks=pytest.mark.docker)])
def box(request, tmp_path_factory):
    if request.param == "local":
        sb = LocalSandbox(tmp_path_factory.mktemp("work"))
    else:
        from sandboxes.docker import DockerSandbox
        from sandboxes.docker_container import DockerUnavailable
        from sandboxes.docker_options import DockerOptions

        try:
            sb = DockerSandbox.start(DockerOptions(labels={"harness.test": "code_mode"}))
        except DockerUnavailable as e:
            pytest.skip(f"Docker is not available: {e}")
    yield sb
    sb.close()
