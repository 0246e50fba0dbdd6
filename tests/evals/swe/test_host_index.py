"""A task image whose spec pip-installs from an HTTPS index that only the host trusts (a CA made here,
passed as the host's bundle through HARNESS_CA_BUNDLE): it builds with the host's bundle, and without
it the instance is an infra failure that names the certificate error."""

from __future__ import annotations

import ipaddress

import pytest

from evals.swe.batch import grade_file
from evals.swe.grader import Prediction
from evals.swe.image import instance_image, sandbox_options
from evals.swe.suite import load_instances, suite_path
from sandboxes.docker import DockerSandbox
from tests.evals.swe.https_index import PACKAGE, VERSION, https_index


@pytest.fixture
def index(docker_ready, tmp_path):
    # The host, seen from a build: the bridge's gateway. Docker 20.10 leaves it out of the default bridge's
    # IPAM config, where it is the subnet's first address.
    ipam = docker_ready.networks.get("bridge").attrs["IPAM"]["Config"][0]
    gateway = ipam.get("Gateway") or str(ipaddress.ip_network(ipam["Subnet"])[1])
    with https_index(tmp_path, gateway) as served:
        yield served


def needs_the_index(url: str):
    inst = load_instances(suite_path("builtin"))[0]
    # The index comes through the spec, so the host's settings hold only the CA: the images below the
    # task image (the SWE base) keep their tags from run to run.
    spec = inst.spec.model_copy(
        update={"pip_packages": [f"{PACKAGE}=={VERSION}"], "build_env": {"PIP_INDEX_URL": url, "PIP_RETRIES": "0"}}
    )
    return inst.model_copy(update={"instance_id": "acme__needs-index-1", "spec": spec})


def gold(inst):
    return {inst.instance_id: Prediction(inst.instance_id, "gold", inst.patch)}


def test_the_hosts_ca_bundle_lets_the_build_reach_the_index(docker_ready, index, tmp_path, monkeypatch):
    url, ca = index
    monkeypatch.setenv("HARNESS_CA_BUNDLE", str(ca))
    inst = needs_the_index(url)
    report = grade_file([inst], gold(inst), tmp_path / "grade", infra_retries=0)
    assert report.resolved_ids == [inst.instance_id] and report.infra_failure_ids == []
    image = instance_image(inst, docker_ready, log=lambda s: None)
    with DockerSandbox.start(sandbox_options(image, docker_ready), client=docker_ready) as box:
        assert box.exec(f"python -c 'import {PACKAGE}; print({PACKAGE}.VALUE)'", timeout=30).output == "42\n"
    docker_ready.images.remove(image)


def test_without_the_hosts_bundle_the_build_is_an_infra_failure_naming_the_certificate(
    docker_ready, index, tmp_path, monkeypatch
):
    url, _ = index
    monkeypatch.delenv("HARNESS_CA_BUNDLE", raising=False)  # the host's own bundle, which lacks the test CA
    inst = needs_the_index(url)
    report = grade_file([inst], gold(inst), tmp_path / "grade", infra_retries=1)
    failure = report.infra_failures[inst.instance_id]
    assert failure.cause == "build" and failure.attempts == 2
    assert "CERTIFICATE_VERIFY_FAILED" in failure.message
    assert "Step " in failure.message and "pip install" in failure.message  # the failing step is named
    assert report.error_ids == [inst.instance_id] and report.resolve_rate_over == 0
