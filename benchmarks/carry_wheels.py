"""Pip requirements carried to a machine with no package index, in parts small enough for one call each.

    ~/.pyenv/versions/3.12.1/bin/python benchmarks/carry_wheels.py vllm==0.22.1 --out .gpu/vllm \\
        --there gpu-packages.txt --skip torch torchaudio torchvision triton flashinfer-python ... \\
        --drop 'vllm/vllm_flash_attn/_vllm_fa2_C*' vllm/vllm-rs

Run it with a Python of the target's version (its pip resolves, and pip reads environment markers off the
Python that runs it). It resolves the requirements with pip for the target's platform (binary wheels only),
then keeps what the target lacks:

- `--there FILE` names the packages already on the target, one a line, `name` or `name==version`. A
  package there with a known version is left to it, and any requirement it misses is printed. One there
  at an unknown version that something carried asks a version of is carried *conditionally* (when its
  wheel is at most `--conditional-kb`): `install.sh` uses the target's copy when it satisfies every such
  requirement and the carried one otherwise.
- `--skip` names packages never carried, nor anything needed only through them (optional kernel
  libraries, what the target has at the right version anyway).

Everything kept is installed (`pip install --target`, no dependencies, the target's tags) into one folder,
`--drop` globs are deleted from it, and the folder goes into one xz-compressed tar, split into `part-NN`
files of at most `--part-mb` MB, with `SHA256SUMS` (each part and the whole) and `install.sh` beside
them. On the target, from the folder holding one part at a time:

    bash install.sh DEST     # stashes this call's part in DEST/stash; with all parts there, joins,
                             # checks, unpacks into DEST/site and prints `export PYTHONPATH=DEST/site`

`install.sh` needs only bash and the target's python3 (tarfile, lzma, hashlib; `packaging` for the
conditional packages).
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import lzma
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
from collections import defaultdict
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

FATBIN_MAGIC = 0xBA55ED50  # a CUDA fat binary's container; its entries: kind 1 PTX, 2 machine code


def target_args(args) -> list[str]:
    """pip's options for the target's interpreter and platform, binary wheels only."""
    major, minor = args.python_version.split(".")
    platforms = [f"manylinux_2_{v}_{args.arch}" for v in range(17, args.glibc + 1)]
    platforms += [f"manylinux2014_{args.arch}", f"linux_{args.arch}"]
    out = ["--only-binary=:all:", "--python-version", args.python_version, "--implementation", "cp"]
    out += [x for abi in (f"cp{major}{minor}", "abi3", "none") for x in ("--abi", abi)]
    return out + [x for p in platforms for x in ("--platform", p)]


def marker_env(args, extra: str = "") -> dict[str, str]:
    return {
        "python_version": args.python_version,
        "python_full_version": f"{args.python_version}.0",
        "platform_machine": args.arch,
        "sys_platform": "linux",
        "platform_system": "Linux",
        "os_name": "posix",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "extra": extra,
    }


def applies(marker: Marker | None, extras: set[str], args) -> bool:
    return marker is None or any(marker.evaluate(marker_env(args, e)) for e in {"", *extras})


def resolve(requirements: list[str], args, work: Path) -> dict[str, dict]:
    """pip's resolution for the target: canonical name -> the report's metadata of the chosen release."""
    report = work / "report.json"
    if report.exists():  # a kept work folder's resolution, reused
        return {
            canonicalize_name(i["metadata"]["name"]): i["metadata"] for i in json.loads(report.read_text())["install"]
        }
    cmd = [args.pip_python, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet"]
    cmd += ["--report", str(report), "--target", str(work / "dry"), *target_args(args), *requirements]
    subprocess.run(cmd, check=True)
    return {canonicalize_name(i["metadata"]["name"]): i["metadata"] for i in json.loads(report.read_text())["install"]}


def reach(requirements: list[str], resolved: dict[str, dict], skip: set[str], there: dict, args):
    """The releases the requirements need, not through a skipped one nor through one the target has at a
    known version, and every requirement made of each: (names, {name: [(who, specifier)]}). One there at
    an unknown version may be carried (conditionally), so what it asks of others there is followed too."""
    extras: dict[str, set[str]] = defaultdict(set)
    asked: dict[str, list[tuple[str, str]]] = defaultdict(list)
    queue = []
    for text in requirements:
        r = Requirement(text)
        queue.append((canonicalize_name(r.name), set(r.extras)))
        asked[canonicalize_name(r.name)].append(("(asked)", str(r.specifier)))
    seen: set[tuple[str, frozenset[str]]] = set()
    while queue:
        name, want = queue.pop()
        if name in skip or (name, frozenset(want)) in seen:
            continue
        seen.add((name, frozenset(want)))
        extras[name] |= want
        if name in there and there[name] is not None:
            continue
        for text in resolved[name].get("requires_dist") or []:
            r = Requirement(text)
            if not applies(r.marker, extras[name], args):
                continue
            dep = canonicalize_name(r.name)
            asked[dep].append((name, str(r.specifier)))
            if name not in there or dep in there:  # a package there brings what it needs, but may be carried
                queue.append((dep, set(r.extras)))
    return set(extras), asked


def read_there(path: Path | None) -> dict[str, str | None]:
    there: dict[str, str | None] = {}
    for line in path.read_text().splitlines() if path else []:
        line = line.split("#")[0].strip()
        if not line:
            continue
        name, _, version = line.partition("==")
        there[canonicalize_name(name)] = version or None
    return there


def plan(reached, asked, resolved, there, skip) -> tuple[list[str], list[str], list[str]]:
    """(carried, conditional, warnings), as name==version for the first two."""
    carried, conditional, warnings = [], [], []
    for name in sorted(reached - skip):
        pin = f"{resolved[name]['name']}=={resolved[name]['version']}"
        if name not in there:
            carried.append(pin)
            continue
        specs = [(who, s) for who, s in asked[name] if s and who not in skip]
        if there[name] is None:
            (conditional if specs else []).append(pin)
            continue
        for who, s in sorted(set(specs)):
            if not SpecifierSet(s).contains(there[name], prereleases=True):
                warnings.append(f"{who} asks {name}{s}; the target has {there[name]} (left to it)")
    return carried, conditional, warnings


def download(pins: list[str], args, into: Path) -> dict[str, Path]:
    """The wheels of `pins`, no dependencies: canonical name -> wheel file."""
    into.mkdir(parents=True, exist_ok=True)
    if pins:
        cmd = [args.pip_python, "-m", "pip", "download", "--quiet", "--no-deps", *target_args(args), "-d", str(into)]
        subprocess.run(cmd + pins, check=True)
    wheels = {canonicalize_name(w.name.split("-")[0]): w for w in into.glob("*.whl")}
    return {canonicalize_name(p.split("==")[0]): wheels[canonicalize_name(p.split("==")[0])] for p in pins}


def install(wheels: list[Path], args, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    if wheels:
        cmd = [args.pip_python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--target", str(target)]
        subprocess.run(cmd + target_args(args) + [str(w) for w in wheels], check=True)
    for junk in [target / "bin", *target.rglob("__pycache__")]:
        shutil.rmtree(junk, ignore_errors=True)


def drop(site: Path, globs: list[str]) -> list[str]:
    gone = []
    for path in sorted(site.rglob("*")):
        rel = path.relative_to(site).as_posix()
        if path.is_file() and any(fnmatch.fnmatch(rel, g) for g in globs):
            gone.append(f"{rel} ({path.stat().st_size:,} bytes)")
            path.unlink()
    return gone


def elf_section(data: bytes | bytearray, name: str) -> tuple[int, int] | None:
    """(file offset, size) of a 64-bit little-endian ELF file's section `name`, or None."""
    if data[:6] != b"\x7fELF\x02\x01":
        return None
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_at = headers[shstrndx][4]
    for sh_name, _, _, _, offset, size in headers:
        end = data.index(b"\0", names_at + sh_name)
        if data[names_at + sh_name : end] == name.encode():
            return offset, size
    return None


def prune_fatbins(site: Path, arch: int) -> list[str]:
    """Zero, in every shared library's CUDA fat binary, the code the GPU of compute capability `arch` (90
    for sm_90 and sm_90a) never loads: machine code for other architectures and PTX for newer ones. The
    entries and their headers stay where they are, so nothing moves; the zeros compress to nothing. The
    runtime picks one entry a kernel by its header's architecture and unpacks only that one."""
    out = []
    for lib in sorted(site.rglob("*.so*")):
        data = bytearray(lib.read_bytes())
        section = elf_section(data, ".nv_fatbin")
        if section is None:
            continue
        pos, end_of_section = section[0], section[0] + section[1]
        cut = 0
        while pos + 16 <= end_of_section:
            magic, _, header, size = struct.unpack_from("<IHHQ", data, pos)
            if magic != FATBIN_MAGIC:
                pos += 8
                continue
            entry, end = pos + header, pos + header + size
            while entry < end:
                kind, _, entry_header, payload = struct.unpack_from("<HHIQ", data, entry)
                (entry_arch,) = struct.unpack_from("<I", data, entry + 28)
                start = entry + entry_header
                unused = (kind == 2 and entry_arch != arch) or (kind == 1 and entry_arch > arch)
                if unused and any(data[start : start + payload]):
                    data[start : start + payload] = bytes(payload)
                    cut += payload
                entry += entry_header + payload
            pos = end
        if cut:
            lib.write_bytes(data)
            out.append(f"{lib.relative_to(site)}: {cut:,} of {section[1]:,} fat-binary bytes zeroed")
    return out


def pack(stage: Path, archive: Path) -> None:
    """stage's contents as one tar, xz at its strongest preset (xz's threads where the command is here)."""
    raw = archive.with_suffix("")
    with tarfile.open(raw, "w", format=tarfile.PAX_FORMAT) as tar:
        for item in sorted(stage.iterdir()):
            tar.add(item, arcname=item.name)
    if shutil.which("xz"):
        subprocess.run(["xz", "-9e", "-T0", "-f", str(raw)], check=True)
        raw.with_suffix(".tar.xz").rename(archive)
    else:
        with raw.open("rb") as src, lzma.open(archive, "wb", preset=9 | lzma.PRESET_EXTREME) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        raw.unlink()


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def split(archive: Path, out: Path, part_bytes: int) -> list[Path]:
    parts = []
    with archive.open("rb") as f:
        while block := f.read(part_bytes):
            parts.append(out / f"part-{len(parts):02d}")
            parts[-1].write_bytes(block)
    return parts


INSTALL = r"""#!/bin/bash
# Carried by benchmarks/carry_wheels.py: @REQS@
# bash install.sh DEST -- stash this folder's part in DEST/stash; with all @N@ parts there, join, check,
# unpack into DEST/site and print the PYTHONPATH to use.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=$(python3 -c 'import os, sys; print(os.path.abspath(sys.argv[1]))' "${1:?usage: install.sh DEST}")
if [ -f "$dest/site/.carried" ]; then echo "already unpacked"; echo "export PYTHONPATH=$dest/site"; exit 0; fi
mkdir -p "$dest/stash"
cp "$here/SHA256SUMS" "$dest/stash/"
for p in "$here"/part-*; do
  [ -e "$p" ] || continue
  cp "$p" "$dest/stash/"
  echo "stashed $(basename "$p")"
done
python3 - "$dest" @N@ <<'PY'
import hashlib, json, os, shutil, sys, tarfile
from pathlib import Path
dest, n = Path(sys.argv[1]), int(sys.argv[2])
stash = dest / "stash"
sums = dict(reversed(line.split()) for line in (stash / "SHA256SUMS").read_text().splitlines())
def digest(paths):
    h = hashlib.sha256()
    for p in paths:
        with open(p, "rb") as f:
            while b := f.read(1 << 20):
                h.update(b)
    return h.hexdigest()
parts = [stash / f"part-{i:02d}" for i in range(n)]
for p in parts:
    if p.exists() and digest([p]) != sums[p.name]:
        p.unlink()
        sys.exit(f"{p.name}: sha256 does not match SHA256SUMS; removed, carry it again")
missing = [p.name for p in parts if not p.exists()]
if missing:
    print(f"{n - len(missing)} of {n} parts in {stash}; still to carry: {' '.join(missing)}")
    sys.exit(0)
whole = digest(parts)
if whole != sums["carry.tar.xz"]:
    sys.exit(f"joined parts: sha256 {whole} is not {sums['carry.tar.xz']}")
print(f"all {n} parts, sha256 {whole} checked")

class Joined:  # the parts read as one file, never written joined
    def __init__(self, paths):
        self.files, self.i = [open(p, "rb") for p in paths], 0
    def read(self, size=-1):
        out = b""
        while self.i < len(self.files) and (size < 0 or len(out) < size):
            b = self.files[self.i].read(-1 if size < 0 else size - len(out))
            if not b:
                self.i += 1
            out += b
        return out

tmp = dest / "unpacking"
shutil.rmtree(tmp, ignore_errors=True)
with tarfile.open(fileobj=Joined(parts), mode="r|xz") as tar:
    tar.extractall(tmp, filter="data")
site, cond = tmp / "site", tmp / "conditional"
needs = json.loads((tmp / "needs.json").read_text())
try:
    from importlib.metadata import PackageNotFoundError, version
    from packaging.specifiers import SpecifierSet
except ImportError as e:
    sys.exit(f"python3 lacks {e.name}, which choosing the conditional packages needs")
def theirs(name):
    try:
        return version(name)
    except PackageNotFoundError:
        return None
carried, used = {"(asked)", *needs["carried_names"]}, set()
def unmet(asked, have):  # what the carried packages, and the conditional ones in use, ask and miss
    return [f"{who}: {spec or 'any'}" for who, spec in asked
            if (who in carried or who in used) and (have is None or not SpecifierSet(spec).contains(have, prereleases=True))]
while more := [n for n, info in needs["conditional"].items() if n not in used and unmet(info["asked"], theirs(n))]:
    used.update(more)  # a conditional package in use may ask more of the others
for name, info in needs["conditional"].items():
    have = theirs(name)
    if name not in used:
        print(f"{name}: the machine's {have} serves; carried {info['version']} not used")
        continue
    print(f"{name}: carried {info['version']} used (machine: {have or 'none'}; {'; '.join(unmet(info['asked'], have))})")
    for rel in info["files"]:
        src = cond / rel
        if src.exists():
            (site / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.move(src, site / rel)
for name, asked in needs["machine"].items():
    have = theirs(name)
    for who, spec in asked:
        if (who in carried or who in used) and (have is None or not SpecifierSet(spec).contains(have, prereleases=True)):
            print(f"warning: {who} asks {name}{spec}; the machine has {have or 'none'}")
shutil.rmtree(cond)
(site / ".carried").write_text(needs["carried"])
shutil.rmtree(dest / "site", ignore_errors=True)
site.rename(dest / "site")
shutil.rmtree(tmp)
shutil.rmtree(stash)
PY
if [ -f "$dest/site/.carried" ]; then echo "export PYTHONPATH=$dest/site"; fi
"""


def write_parts(stage: Path, out: Path, archive: Path, part_bytes: int, label: str) -> list[Path]:
    """stage packed into `archive`, split into out/part-NN with SHA256SUMS and install.sh beside them."""
    out.mkdir(parents=True, exist_ok=True)
    for old in [*out.glob("part-*"), out / "SHA256SUMS", out / "install.sh"]:
        old.unlink(missing_ok=True)
    pack(stage, archive)
    parts = split(archive, out, part_bytes)
    sums = [f"{sha256(p)}  {p.name}" for p in parts] + [f"{sha256(archive)}  carry.tar.xz"]
    (out / "SHA256SUMS").write_text("\n".join(sums) + "\n")
    (out / "install.sh").write_text(INSTALL.replace("@N@", str(len(parts))).replace("@REQS@", label))
    return parts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("requirements", nargs="+")
    ap.add_argument("--out", type=Path, required=True, help="folder for part-NN, SHA256SUMS and install.sh")
    ap.add_argument("--there", type=Path, help="packages on the target, one a line: name or name==version")
    ap.add_argument("--skip", nargs="*", default=[], help="never carried, nor what only they need")
    ap.add_argument("--drop", nargs="*", default=[], help="globs of files deleted from the installed folder")
    ap.add_argument("--cuda-arch", type=int, help="zero fat-binary code no GPU of this capability loads (90)")
    ap.add_argument("--part-mb", type=float, default=52.0, help="largest part, in 10^6 bytes")
    ap.add_argument("--conditional-kb", type=int, default=4000)
    ap.add_argument("--python-version", default="3.12")
    ap.add_argument("--arch", default="x86_64")
    ap.add_argument("--glibc", type=int, default=35, help="newest manylinux_2_N the target runs")
    ap.add_argument("--pip-python", default=sys.executable, help="the Python whose pip resolves")
    ap.add_argument("--keep", type=Path, help="work folder kept (pip's resolution, reused; wheels; the folder)")
    args = ap.parse_args()

    skip = {canonicalize_name(s) for s in args.skip}
    there = read_there(args.there)
    work = args.keep or Path(tempfile.mkdtemp(prefix="carry-"))
    work.mkdir(parents=True, exist_ok=True)
    resolved = resolve(args.requirements, args, work)
    reached, asked = reach(args.requirements, resolved, skip, there, args)
    carried, conditional, warnings = plan(reached, asked, resolved, there, skip)

    wheels = download(carried + conditional, args, work / "wheels")
    for pin in list(conditional):
        size = wheels[canonicalize_name(pin.split("==")[0])].stat().st_size
        if size > args.conditional_kb * 1000:
            conditional.remove(pin)
            warnings.append(f"{pin} not carried ({size:,} bytes): the target's copy, of unknown version, must do")
    stage = work / "stage"
    shutil.rmtree(stage, ignore_errors=True)
    install([wheels[canonicalize_name(p.split("==")[0])] for p in carried], args, stage / "site")
    install([wheels[canonicalize_name(p.split("==")[0])] for p in conditional], args, stage / "conditional")
    gone = drop(stage / "site", args.drop)
    if args.cuda_arch:
        gone += prune_fatbins(stage / "site", args.cuda_arch)

    carried_names = sorted(canonicalize_name(p.split("==")[0]) for p in carried)
    needs: dict = {"carried": " ".join(carried), "carried_names": carried_names, "conditional": {}, "machine": {}}
    for info in (stage / "conditional").glob("*.dist-info"):
        dist, version = info.name.removesuffix(".dist-info").rsplit("-", 1)
        name = canonicalize_name(dist)
        files = [line.rsplit(",", 2)[0] for line in (info / "RECORD").read_text().splitlines()]
        needs["conditional"][name] = {
            "version": version,
            "asked": sorted({(who, s) for who, s in asked[name] if who not in skip}),
            "files": [f for f in files if not f.startswith("..") and (stage / "conditional" / f).exists()],
        }
    brought = {canonicalize_name(p.split("==")[0]) for p in carried + conditional}
    for name in sorted(reached - skip - brought):
        specs = sorted({(who, s) for who, s in asked[name] if s and who not in skip})
        if specs:
            needs["machine"][name] = specs
    (stage / "needs.json").write_text(json.dumps(needs, indent=1))

    archive = work / "carry.tar.xz"
    parts = write_parts(stage, args.out, archive, int(args.part_mb * 1e6), " ".join(args.requirements))
    (args.out / "carried.txt").write_text("\n".join(carried + [f"{p} (conditional)" for p in conditional]) + "\n")

    print(f"carried: {len(carried)} ({' '.join(carried)})")
    print(f"conditional: {len(conditional)} ({' '.join(conditional)})")
    print(f"skipped: {' '.join(sorted(skip & set(resolved)))}")
    print(f"left to the target: {' '.join(sorted(reached - skip - brought))}")
    for line in gone:
        print(f"dropped {line}")
    for line in warnings:
        print(f"warning: {line}")
    print(f"{archive.stat().st_size:,} bytes in {len(parts)} parts, sha256 {sha256(archive)}")
    if not args.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
