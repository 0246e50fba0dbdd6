"""The host's network settings: detected from pip's and apt's files and the environment, overridden by
HARNESS_* variables, and carried into every image built (a real build checks what the image holds)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.sandbox import app
from core.errors import HarnessError
from sandboxes.docker import DockerSandbox
from sandboxes.docker_options import BASE_IMAGE, DockerOptions
from sandboxes.host_network import (
    BUNDLE,
    LABEL,
    HostNetwork,
    debian_mirror,
    detect,
    digest,
    install_into,
    with_host_network,
)
from sandboxes.image import build_derived, context_hash
from tests.evals.swe.https_index import make_certs

INDEX = "https://pypi.corp.example/simple"


def no_files(**env):
    return detect(env, pip_configs=[], apt_confs=[], apt_sources=[])


@pytest.fixture
def ca(tmp_path) -> Path:
    return make_certs(tmp_path, "127.0.0.1")[0]


def test_pip_settings_come_from_its_files_then_pip_variables_then_harness_overrides(tmp_path, ca):
    conf = tmp_path / "pip.conf"
    conf.write_text(
        "[global]\nindex-url = http://mirror.local/simple\nextra-index-url = file:///opt/pypi/simple\n"
        "  https://extra.example/simple\n[install]\ntrusted-host = mirror.local\nfind-links = /opt/wheels\n"
    )
    net = detect({"SSL_CERT_FILE": str(ca)}, pip_configs=[conf], apt_confs=[], apt_sources=[])
    assert net.pip_index_url == "http://mirror.local/simple"
    assert net.pip_extra_index_urls == ["https://extra.example/simple"]  # a file:// index is not reachable in a build
    assert net.pip_trusted_hosts == ["mirror.local"]
    assert net.ca_source == str(ca) and net.ca_bundle.startswith("-----BEGIN CERTIFICATE-----")
    net = detect({"PIP_INDEX_URL": INDEX, "SSL_CERT_FILE": str(ca)}, pip_configs=[conf], apt_confs=[], apt_sources=[])
    assert net.pip_index_url == INDEX
    env = {"PIP_INDEX_URL": INDEX, "HARNESS_PIP_INDEX_URL": "", "HARNESS_PIP_TRUSTED_HOST": "a b"}
    net = detect(env, pip_configs=[conf], apt_confs=[], apt_sources=[])
    assert net.pip_index_url == "" and net.pip_trusted_hosts == ["a", "b"]  # set but empty: none


def test_the_ca_bundle_proxies_and_apt_settings(tmp_path, ca):
    apt = tmp_path / "01proxy"
    apt.write_text('Acquire::http::Proxy "http://apt-cache.local:3142";\n')
    sources = tmp_path / "debian.sources"
    sources.write_text("Types: deb\nURIs: http://mirror.example.org/debian/\nSuites: bookworm\n")
    env = {"HARNESS_CA_BUNDLE": str(ca), "https_proxy": "http://proxy.local:3128", "NO_PROXY": "localhost"}
    net = detect(env, pip_configs=[], apt_confs=[apt], apt_sources=[sources])
    assert net.ca_source == str(ca)
    assert net.apt_proxy == "http://apt-cache.local:3142" and net.apt_mirror == "http://mirror.example.org/debian"
    assert net.proxies == {"https_proxy": "http://proxy.local:3128", "NO_PROXY": "localhost"}
    assert (
        no_files(HARNESS_CA_BUNDLE="", HARNESS_APT_MIRROR="http://m.local/debian/").apt_mirror
        == "http://m.local/debian"
    )
    assert detect({**env, "HARNESS_HOST_NETWORK": "off"}) == HostNetwork()
    (tmp_path / "empty.pem").write_text("not a certificate\n")
    with pytest.raises(HarnessError, match="holds no PEM certificate; fix HARNESS_CA_BUNDLE"):
        no_files(HARNESS_CA_BUNDLE=str(tmp_path / "empty.pem"))


def test_mirror_from_deb822_sources(tmp_path):
    f = tmp_path / "debian.sources"
    f.write_text(
        "Types: deb\nURIs: http://deb.example.org/debian-security\nSuites: bookworm-security\n\n"
        "Types: deb\nURIs: http://mirror.example.org/debian/\nSuites: bookworm\n"
    )
    assert debian_mirror([f]) == "http://mirror.example.org/debian"


def test_mirror_from_one_line_sources_and_the_default(tmp_path):
    f = tmp_path / "sources.list"
    f.write_text("# comment\ndeb [arch=amd64] http://ftp.example.org/debian bookworm main\n")
    assert debian_mirror([f]) == "http://ftp.example.org/debian"
    assert debian_mirror([tmp_path / "missing.list"]) == "http://deb.debian.org/debian"


def test_the_layer_follows_every_from_and_is_not_repeated(tmp_path, ca):
    net = HostNetwork(ca_bundle=ca.read_text(), pip_index_url=INDEX)
    images = {"base": ({}, "app"), "done": ({LABEL: digest(net)}, "")}
    dockerfile = "FROM base AS build\nRUN make\nFROM done\nCOPY --from=build /out /out\n"
    out = with_host_network(dockerfile, tmp_path, net, images.get)
    lines = out.splitlines()
    assert lines[:4] == [
        "FROM base AS build",
        "USER root",
        "COPY .harness-host/ /",
        "RUN sh /etc/harness-host/install.sh",
    ]
    assert lines[4] == "USER app" and f"LABEL {LABEL}={digest(net)}" in lines
    after_done = lines[lines.index("FROM done") + 1 :]
    assert after_done[:2] == [f"ARG SSL_CERT_FILE={BUNDLE}", f"ARG REQUESTS_CA_BUNDLE={BUNDLE}"]
    assert "COPY .harness-host/ /" not in after_done  # that image has this layer already
    assert "index-url = " + INDEX in (tmp_path / ".harness-host/etc/xdg/pip/pip.conf").read_text()
    assert with_host_network(dockerfile, tmp_path, HostNetwork(), images.get) == dockerfile
    assert with_host_network("FROM scratch\nCOPY x /x\n", tmp_path, net, images.get) == "FROM scratch\nCOPY x /x\n"


def test_the_debootstrap_root_gets_the_same_files(tmp_path, ca):
    (tmp_path / "etc/ssl/certs").mkdir(parents=True)
    (tmp_path / "etc/ssl/certs/ca-certificates.crt").write_text("distribution CAs\n")
    install_into(tmp_path, HostNetwork(ca_bundle=ca.read_text(), apt_proxy="http://apt-cache.local:3142"))
    bundle = (tmp_path / "etc/ssl/certs/ca-certificates.crt").read_text()
    assert bundle.startswith("distribution CAs\n") and ca.read_text().strip() in bundle
    assert "apt-cache.local" in (tmp_path / "etc/apt/apt.conf.d/99harness-host").read_text()
    assert (tmp_path / "etc/xdg/pip/pip.conf").read_text() == f"[global]\ncert = {BUNDLE}\n"


def test_a_built_image_trusts_the_hosts_cas_and_builds_with_its_proxy(docker_ready, ca):
    system = Path(BUNDLE).read_text()  # a whole bundle, as a host's is, with the test CA at its end
    net = HostNetwork(
        ca_bundle=system + ca.read_text(), pip_index_url=INDEX, proxies={"HTTP_PROXY": "http://p.local:1"}
    )
    dockerfile = f'# {uuid.uuid4()}\nFROM {BASE_IMAGE}\nRUN echo "$HTTP_PROXY $SSL_CERT_FILE" > /opt/build-env\n'
    tag = build_derived(dockerfile, repo="harness-test", client=docker_ready, host=net)
    try:
        with DockerSandbox.start(DockerOptions(image=tag), client=docker_ready) as box:
            assert box.exec("cat /opt/build-env", timeout=10).output == f"http://p.local:1 {BUNDLE}\n"
            test_ca_line = ca.read_text().splitlines()[1]
            assert box.exec(f"grep -c '{test_ca_line}' {BUNDLE}", timeout=10).output.strip() != "0"
            assert INDEX in box.exec("pip3 config list", timeout=30).output
        env = docker_ready.images.get(tag).attrs["Config"]["Env"]
        assert not any(e.startswith(("HTTP_PROXY", "SSL_CERT_FILE")) for e in env)  # build time only
        plain = build_derived(dockerfile, repo="harness-test", client=docker_ready, host=HostNetwork())
        assert plain != tag  # other host settings, another image
        docker_ready.images.remove(plain)
    finally:
        docker_ready.images.remove(tag)


def test_harness_sandbox_network_prints_what_images_get(ca, monkeypatch):
    monkeypatch.setenv("HARNESS_CA_BUNDLE", str(ca))
    monkeypatch.setenv("HARNESS_PIP_INDEX_URL", INDEX)
    result = CliRunner().invoke(app, ["network"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    assert shown["ca_source"] == str(ca) and shown["ca_certificates"] == 1 and shown["pip_index_url"] == INDEX
    monkeypatch.setenv("HARNESS_CA_BUNDLE", str(ca.parent / "missing.pem"))
    result = CliRunner().invoke(app, ["network"])
    assert result.exit_code == 2 and "missing.pem cannot be read" in result.output


def test_without_host_settings_an_image_keeps_the_tag_it_had_before_them(docker_ready, tmp_path):
    dockerfile = f"FROM {BASE_IMAGE}\nLABEL harness.test=host-network-off\n"
    tag = build_derived(dockerfile, repo="harness-test", client=docker_ready, host=HostNetwork())
    try:
        salt = docker_ready.images.get(BASE_IMAGE).id  # what the tag hashed before the host's settings existed
        assert tag == f"harness-test:{context_hash(dockerfile, None, salt=salt)}"
    finally:
        docker_ready.images.remove(tag)
