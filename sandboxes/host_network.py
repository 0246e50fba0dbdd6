"""What the host knows about reaching package indexes, carried into every image the harness builds.

Behind a TLS-intercepting proxy or with a local mirror, the host's pip and apt work because of
its CA bundle, its pip config and its apt proxy; an image built from a distribution's root
filesystem carries none of that, so `pip install` inside a build fails with
CERTIFICATE_VERIFY_FAILED. Detected once from the host, each setting can be overridden:

    HARNESS_CA_BUNDLE            a PEM file images trust besides their own CAs (default: SSL_CERT_FILE,
                                 REQUESTS_CA_BUNDLE, PIP_CERT, else the system bundle); empty: none
    HARNESS_PIP_INDEX_URL        pip's index-url (default: PIP_INDEX_URL, else pip's config files)
    HARNESS_PIP_EXTRA_INDEX_URL  pip's extra-index-url, space-separated (default: the same way)
    HARNESS_PIP_TRUSTED_HOST     pip's trusted-host, space-separated (default: the same way)
    HARNESS_APT_PROXY            apt's proxy (default: Acquire::http(s)::Proxy in /etc/apt/apt.conf*)
    HARNESS_APT_MIRROR           replaces http://deb.debian.org/debian in images' apt sources
                                 (default: the host's Debian mirror, when the host is Debian)
    HARNESS_HOST_NETWORK=off     none of it (images get the tags they had before these settings)

Only http(s) index URLs are carried: a `file://` index or a local find-links folder does not
exist inside a build. The proxy variables (HTTP_PROXY, HTTPS_PROXY, NO_PROXY and their
lower-case forms) go to every build as Docker's predefined build arguments, which stay out of
the image. The rest becomes files in the build context and one layer after each FROM
(`with_host_network`): the bundle added to the image's trust store, /etc/xdg/pip/pip.conf,
an apt.conf.d file, the mirror rewritten; SSL_CERT_FILE and REQUESTS_CA_BUNDLE are build
arguments, set while the image is built. The debootstrap root filesystem gets the same files
(`install_into`).
"""

from __future__ import annotations

import configparser
import hashlib
import os
import re
import ssl
from collections.abc import Callable, Mapping
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, Field

from core.errors import HarnessError

DEFAULT_MIRROR = "http://deb.debian.org/debian"
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "FTP_PROXY", "ALL_PROXY")
BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
HOST_CA = "/usr/local/share/ca-certificates/harness-host.crt"
PIP_CONF = "/etc/xdg/pip/pip.conf"
APT_CONF = "/etc/apt/apt.conf.d/99harness-host"
INSTALL = "/etc/harness-host/install.sh"
CONTEXT = ".harness-host"  # the folder in the build context that is copied onto the image's root
LABEL = "harness.host-network"
# The image's trust store gains the host's CAs: through update-ca-certificates where the image
# has it (so a later run of it keeps them), else appended to the bundle.
INSTALL_SCRIPT = f"""set -e
if [ -f {HOST_CA} ]; then
  command -v update-ca-certificates >/dev/null 2>&1 && update-ca-certificates >/dev/null 2>&1 || true
  first=$(sed -n 2p {HOST_CA})
  grep -qF "$first" {BUNDLE} 2>/dev/null || {{ mkdir -p /etc/ssl/certs && cat {HOST_CA} >> {BUNDLE}; }}
fi
if [ -s /etc/harness-host/apt-mirror ]; then
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*; do
    [ -f "$f" ] && sed -i "s|{DEFAULT_MIRROR}|$(cat /etc/harness-host/apt-mirror)|g" "$f"
  done
fi
true
"""


class HostNetwork(BaseModel):
    """The settings detected (or overridden); empty fields carry nothing."""

    ca_bundle: str = ""  # PEM text
    ca_source: str = ""  # the file it came from, for messages
    pip_index_url: str = ""
    pip_extra_index_urls: list[str] = Field(default_factory=list)
    pip_trusted_hosts: list[str] = Field(default_factory=list)
    apt_proxy: str = ""
    apt_mirror: str = ""
    proxies: dict[str, str] = Field(default_factory=dict)


def detect(
    env: Mapping[str, str] = os.environ,
    pip_configs: list[Path] | None = None,
    apt_confs: list[Path] | None = None,
    apt_sources: list[Path] | None = None,
) -> HostNetwork:
    """The host's settings, each overridden by its HARNESS_* variable."""
    if env.get("HARNESS_HOST_NETWORK", "").lower() in ("off", "0", "false", "no"):
        return HostNetwork()
    pip = _pip_settings(env, _pip_config_files(env) if pip_configs is None else pip_configs)
    ca_path = _override(env, "HARNESS_CA_BUNDLE", _default_ca(env))
    apt_proxy = _override(env, "HARNESS_APT_PROXY", _apt_proxy(apt_confs))
    mirror = debian_mirror(apt_sources)
    host_mirror = mirror if "debian" in mirror and mirror != DEFAULT_MIRROR else ""
    return HostNetwork(
        ca_bundle=_read_pem(ca_path),
        ca_source=ca_path,
        pip_index_url=_override(env, "HARNESS_PIP_INDEX_URL", pip.get("index-url", "")),
        pip_extra_index_urls=_override(env, "HARNESS_PIP_EXTRA_INDEX_URL", pip.get("extra-index-url", "")).split(),
        pip_trusted_hosts=_override(env, "HARNESS_PIP_TRUSTED_HOST", pip.get("trusted-host", "")).split(),
        apt_proxy=apt_proxy,
        apt_mirror=_override(env, "HARNESS_APT_MIRROR", host_mirror).rstrip("/"),
        proxies={k: v for name in PROXY_VARS for k in (name, name.lower()) if (v := env.get(k))},
    )


# What detection reads from the environment: a change to any of them detects again.
DECIDING = (
    "HARNESS_HOST_NETWORK",
    "HARNESS_CA_BUNDLE",
    "HARNESS_PIP_INDEX_URL",
    "HARNESS_PIP_EXTRA_INDEX_URL",
    "HARNESS_PIP_TRUSTED_HOST",
    "HARNESS_APT_PROXY",
    "HARNESS_APT_MIRROR",
    "PIP_CONFIG_FILE",
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_TRUSTED_HOST",
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "PIP_CERT",
    "VIRTUAL_ENV",
    "XDG_CONFIG_HOME",
    *PROXY_VARS,
    *(p.lower() for p in PROXY_VARS),
)


def current() -> HostNetwork:
    """The host's settings, detected once per value of the variables that decide them."""
    return _detected(tuple((n, os.environ.get(n)) for n in DECIDING))


@lru_cache(maxsize=8)
def _detected(key: tuple[tuple[str, str | None], ...]) -> HostNetwork:
    return detect({k: v for k, v in key if v is not None})


def _override(env: Mapping[str, str], name: str, detected: str) -> str:
    """A HARNESS_* variable that is set wins, even empty (which turns the setting off)."""
    return env[name].strip() if name in env else detected


def _default_ca(env: Mapping[str, str]) -> str:
    for name in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "PIP_CERT"):
        if env.get(name) and Path(env[name]).is_file():
            return env[name]
    paths = ssl.get_default_verify_paths()
    return next((p for p in (paths.cafile, paths.openssl_cafile, BUNDLE) if p and Path(p).is_file()), "")


def _read_pem(path: str) -> str:
    if not path:
        return ""
    try:
        text = Path(path).read_text(errors="replace")
    except OSError as e:
        raise HarnessError(f"The CA bundle {path} cannot be read ({e.strerror}); fix HARNESS_CA_BUNDLE.") from None
    blocks = re.findall(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", text, re.DOTALL)
    if not blocks:
        raise HarnessError(f"The CA bundle {path} holds no PEM certificate; fix HARNESS_CA_BUNDLE.")
    return "\n".join(blocks) + "\n"


def _pip_config_files(env: Mapping[str, str]) -> list[Path]:
    """pip's config files, in the order pip reads them (a later one wins)."""
    home = Path.home()
    files = [Path("/etc/xdg/pip/pip.conf"), Path("/etc/pip.conf"), home / ".pip/pip.conf"]
    files.append(Path(env.get("XDG_CONFIG_HOME") or home / ".config") / "pip/pip.conf")
    if env.get("VIRTUAL_ENV"):
        files.append(Path(env["VIRTUAL_ENV"]) / "pip.conf")
    if env.get("PIP_CONFIG_FILE"):
        files.append(Path(env["PIP_CONFIG_FILE"]))
    return files


def _pip_settings(env: Mapping[str, str], files: list[Path]) -> dict[str, str]:
    """index-url, extra-index-url and trusted-host from pip's files ([global], then [install]) and PIP_*;
    only what a build can reach: http(s) URLs."""
    found: dict[str, str] = {}
    for path in files:
        parser = configparser.RawConfigParser(strict=False)
        try:
            parser.read(path)
        except (configparser.Error, OSError):
            continue
        for section in ("global", "install"):
            if parser.has_section(section):
                for key in ("index-url", "extra-index-url", "trusted-host"):
                    if parser.has_option(section, key):
                        found[key] = " ".join(parser.get(section, key).split())
    for key in ("index-url", "extra-index-url", "trusted-host"):
        value = env.get("PIP_" + key.upper().replace("-", "_"))
        if value is not None:
            found[key] = value
    for key in ("index-url", "extra-index-url"):
        found[key] = " ".join(u for u in found.get(key, "").split() if u.startswith(("http://", "https://")))
    return found


def _apt_proxy(confs: list[Path] | None) -> str:
    if confs is None:
        confs = [Path("/etc/apt/apt.conf"), *sorted(Path("/etc/apt/apt.conf.d").glob("*"))]
    for path in confs:
        if path.is_file():
            m = re.search(r'Acquire::https?::Proxy\s+"([^"]+)"', path.read_text(errors="replace"), re.IGNORECASE)
            if m and m.group(1).upper() != "DIRECT":
                return m.group(1)
    return ""


def debian_mirror(sources: list[Path] | None = None) -> str:
    """The first Debian (not security) mirror named in /etc/apt/sources.list*, both formats."""
    if sources is None:
        sources = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]
    for path in sources:
        if not path.is_file() or not re.search(r"\.(list|sources)$", path.name):
            continue
        for line in path.read_text(errors="replace").splitlines():
            line = line.strip()
            urls = []
            if line.startswith("URIs:"):
                urls = line.split()[1:]
            elif line.startswith("deb "):
                urls = [w for w in line.split()[1:] if "://" in w][:1]
            for url in urls:
                if "security" not in url and url.startswith("http"):
                    return url.rstrip("/")
    return DEFAULT_MIRROR


def image_files(net: HostNetwork) -> dict[str, str]:
    """The files an image gets, by their path in the image."""
    files = {}
    if net.ca_bundle:
        files[HOST_CA] = net.ca_bundle
    pip = [f"cert = {BUNDLE}"] if net.ca_bundle else []
    if net.pip_index_url:
        pip.append(f"index-url = {net.pip_index_url}")
    if net.pip_extra_index_urls:
        pip.append("extra-index-url = " + " ".join(net.pip_extra_index_urls))
    if net.pip_trusted_hosts:
        pip.append("trusted-host = " + " ".join(net.pip_trusted_hosts))
    if pip:
        files[PIP_CONF] = "[global]\n" + "\n".join(pip) + "\n"
    if net.apt_proxy:
        files[APT_CONF] = f'Acquire::http::Proxy "{net.apt_proxy}";\nAcquire::https::Proxy "{net.apt_proxy}";\n'
    if net.apt_mirror:
        files["/etc/harness-host/apt-mirror"] = net.apt_mirror
    if files:
        files[INSTALL] = INSTALL_SCRIPT
    return files


def digest(net: HostNetwork) -> str:
    h = hashlib.sha256()
    for path, text in sorted(image_files(net).items()):
        h.update(path.encode() + b"\0" + text.encode() + b"\0")
    return h.hexdigest()[:16]


def build_args(net: HostNetwork) -> dict[str, str]:
    """What every build gets as build arguments: the proxy variables (Docker keeps them out of the image)."""
    return dict(net.proxies)


def with_host_network(
    dockerfile: str, ctx: Path, net: HostNetwork, inspect: Callable[[str], tuple[dict[str, str], str] | None]
) -> str:
    """`dockerfile` with the host's layer after each FROM, and its files written under `ctx`.
    `inspect(image)` gives a FROM image's labels and user (None: not a local image, e.g. a stage's
    name). An image that already has this layer gets only the build arguments (they do not inherit)."""
    files = image_files(net)
    if not files:
        return dockerfile
    for path, text in files.items():
        target = ctx / CONTEXT / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    tag = digest(net)
    args = "".join(f"ARG {name}={BUNDLE}\n" for name in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE") if net.ca_bundle)

    def layer(m: re.Match[str]) -> str:
        if m.group(2).lower() == "scratch":  # an empty stage has no shell to run the layer, nor anything to trust
            return m.group(0)
        labels, user = inspect(m.group(2)) or ({}, "")
        if labels.get(LABEL) == tag:
            return m.group(0) + "\n" + args.rstrip("\n")
        steps = f"COPY {CONTEXT}/ /\nRUN sh {INSTALL}\n"
        if user not in ("", "root", "0", "0:0"):  # the layer writes as root, then the image's user returns
            steps = f"USER root\n{steps}USER {user}\n"
        return m.group(0) + "\n" + steps + args + f"LABEL {LABEL}={tag}"

    return re.sub(r"^(\s*FROM\s+(?:--\S+\s+)*(\S+).*)$", layer, dockerfile, flags=re.MULTILINE | re.IGNORECASE)


def install_into(root: Path, net: HostNetwork) -> None:
    """The same files in a root filesystem (the debootstrap base), the host's CAs appended to its bundle."""
    for path, text in image_files(net).items():
        if path.startswith("/etc/harness-host/"):  # the Docker layer's own: debootstrap used the mirror already
            continue
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    bundle = root / BUNDLE.lstrip("/")
    if net.ca_bundle:
        bundle.parent.mkdir(parents=True, exist_ok=True)
        with open(bundle, "a") as f:
            f.write(net.ca_bundle)
