"""uv, with the package sources pip would use here: `python scripts/uv.py pip install --python VENV/bin/python ...`.

uv installs in parallel and resolves in seconds where pip takes minutes, but it reads neither pip's config files
nor its PIP_* variables: this reads what pip would use (`pip config list`: its files and environment, the
environment over an `[install]` section over `[global]`) and hands the indexes, find-links, constraints,
certificate and timeout to uv as its own variables, then runs the uv installed beside this Python. Several
indexes are searched as pip does, for the best version across all of them, and installed modules are compiled to
bytecode as pip does: uv leaves that to the first import, and where PYTHONDONTWRITEBYTECODE is set every process
would compile torch, Ray and the rest again (`import torch, ray, transformers` took 15 s instead of 8).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

# pip's option, uv's variable, and how uv separates several values.
OPTIONS = {
    "index-url": ("UV_DEFAULT_INDEX", " "),
    "extra-index-url": ("UV_INDEX", " "),
    "find-links": ("UV_FIND_LINKS", ","),
    "constraint": ("UV_CONSTRAINT", " "),
    "cert": ("SSL_CERT_FILE", " "),
    "default-timeout": ("UV_HTTP_TIMEOUT", " "),
}
SECTIONS = (":env:", "install", "global")  # pip's precedence, highest first


def pip_settings() -> dict[str, str]:
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True
    ).stdout
    settings = {}
    for line in listed.splitlines():
        key, _, value = line.partition("=")
        settings[key] = ast.literal_eval(value)
    return settings


def uv_environment(settings: dict[str, str]) -> dict[str, str]:
    env = {"UV_INDEX_STRATEGY": "unsafe-best-match", "UV_COMPILE_BYTECODE": "1"}
    for option, (variable, separator) in OPTIONS.items():
        for section in SECTIONS:
            if f"{section}.{option}" in settings:
                env[variable] = separator.join(settings[f"{section}.{option}"].split())
                break
    return env


def main() -> None:
    uv = Path(sys.executable).parent / "uv"
    if not uv.exists():
        sys.exit(f"no uv beside {sys.executable}: install it first ({sys.executable} -m pip install uv)")
    env = {**uv_environment(pip_settings()), **os.environ}  # uv settings of its own win
    os.execve(uv, [str(uv), *sys.argv[1:]], env)


if __name__ == "__main__":
    main()
