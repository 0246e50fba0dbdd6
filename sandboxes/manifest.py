"""Every file under a sandbox's workdir with the sha256 of its content: what says two worlds hold the same files.

Computed by a command in the sandbox (find, sort, sha256sum), so it reads the files as the sandbox's own commands
see them, in the local sandbox and in a container alike. Files only: directories, links and modes are not in it.
`.git/index` is left out: git keeps the files' times and inode numbers there, which no two sandboxes share even
when every file is the same.
"""

from __future__ import annotations

import hashlib
import shlex

from sandboxes.base import Sandbox

LEFT_OUT = ("./.git/index",)
COMMAND = "cd {workdir} && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum"


def manifest(sandbox: Sandbox, timeout: float = 300.0) -> dict[str, str]:
    """path (relative to the workdir, `./` first) -> sha256 of its bytes. A subshell, so a container's shell keeps
    its directory. Raises OSError when the listing fails."""
    r = sandbox.exec(f"( {COMMAND.format(workdir=shlex.quote(sandbox.workdir))} )", timeout=timeout)
    if r.exit_code != 0 or r.output_capped:
        why = "the listing passed the output cap" if r.output_capped else f"exit {r.exit_code}"
        raise OSError(f"the workspace's files could not be listed ({why}): {r.output[-500:]}")
    files = {}
    for line in r.output.splitlines():
        digest, sep, path = line.partition("  ")
        if sep and len(digest.lstrip("\\")) == 64 and path not in LEFT_OUT:
            files[path] = digest.lstrip("\\")
    return files


def digest(files: dict[str, str]) -> str:
    """One sha256 for a manifest: equal exactly when every path and every file's content are."""
    return hashlib.sha256("".join(f"{h}  {p}\n" for p, h in sorted(files.items())).encode()).hexdigest()
