"""benchmarks/carry_wheels.py without the network: a folder packed and split, install.sh run once per part as
the GPU machine runs it (a folder holding one part a call), the conditional package chosen against what the
Python running it has; a damaged part refused; fat-binary pruning on an ELF file written here."""

from __future__ import annotations

import json
import os
import random
import struct
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import carry_wheels  # noqa: E402


def stage(root: Path) -> Path:
    """A folder as carry_wheels stages it: site/ (one package), conditional/ (four distributions: each used
    only where what a carried package, or a conditional one in use, asks of it is not met here) and
    needs.json."""
    s = root / "stage"
    (s / "site" / "carried_pkg").mkdir(parents=True)
    (s / "site" / "carried_pkg" / "__init__.py").write_text("VALUE = 42\n")
    (s / "site" / "carried_pkg" / "blob.bin").write_bytes(random.Random(0).randbytes(3000))  # xz leaves it 3 kB
    needs: dict = {"carried": "carried-pkg==1.0", "carried_names": ["carried-pkg"], "conditional": {}}
    needs["machine"] = {"packaging": [["carried-pkg", ">=999"], ["not-carried", ">=999"]]}
    asks = {
        "packaging": ["carried-pkg", ">=1"],  # met here: not used
        "absent-dist": ["carried-pkg", ""],  # not here at all: used
        "pytest": ["absent-dist", ">=999"],  # asked by a conditional package in use: used
        "pluggy": ["not-carried", ">=999"],  # asked only by a package nobody carries: not used
    }
    for name, asked in asks.items():
        mod = name.replace("-", "_")
        info = s / "conditional" / f"{mod}-9.0.dist-info"
        info.mkdir(parents=True)
        (s / "conditional" / f"{mod}_carried.py").write_text("")
        (info / "METADATA").write_text(f"Name: {name}\nVersion: 9.0\n")
        files = [f"{mod}_carried.py", f"{info.name}/METADATA"]
        needs["conditional"][name] = {"version": "9.0", "asked": [asked], "files": files}
    (s / "needs.json").write_text(json.dumps(needs))
    return s


def call(parts_dir: Path, part: Path, dest: Path, root: Path) -> subprocess.CompletedProcess:
    """One call on the GPU machine: a checkout whose .gpu/carry holds install.sh, SHA256SUMS and one part."""
    checkout = root / f"checkout-{part.name}"
    carried = checkout / ".gpu" / "carry"
    carried.mkdir(parents=True)
    for f in (parts_dir / "install.sh", parts_dir / "SHA256SUMS", part):
        (carried / f.name).write_bytes(f.read_bytes())
    bin_dir = root / "bin"
    bin_dir.mkdir(exist_ok=True)
    python3 = bin_dir / "python3"  # the python3 there has `packaging`, as this one does
    python3.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python3.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)
    cmd = ["bash", ".gpu/carry/install.sh", str(dest)]
    return subprocess.run(cmd, cwd=checkout, env=env, capture_output=True, text=True)


def test_parts_join_check_and_unpack_one_call_at_a_time(tmp_path):
    out = tmp_path / "parts"
    parts = carry_wheels.write_parts(stage(tmp_path), out, tmp_path / "carry.tar.xz", 900, "carried-pkg==1.0")
    assert len(parts) >= 2 and all(p.stat().st_size <= 900 for p in parts)
    dest = tmp_path / "dest"
    for part in parts[:-1]:
        done = call(out, part, dest, tmp_path)
        assert done.returncode == 0, done.stderr
        assert "still to carry" in done.stdout and "export PYTHONPATH" not in done.stdout
    done = call(out, parts[-1], dest, tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"all {len(parts)} parts" in done.stdout
    assert done.stdout.strip().endswith(f"export PYTHONPATH={dest}/site")
    site = dest / "site"
    assert (site / "carried_pkg" / "__init__.py").read_text() == "VALUE = 42\n"
    assert (site / "carried_pkg" / "blob.bin").read_bytes() == random.Random(0).randbytes(3000)
    for name, used in [("packaging", False), ("absent_dist", True), ("pytest", True), ("pluggy", False)]:
        assert (site / f"{name}_carried.py").exists() == used, name
        assert (site / f"{name}-9.0.dist-info" / "METADATA").exists() == used, name
    assert "packaging: the machine's" in done.stdout and "pytest: carried 9.0 used" in done.stdout
    assert "warning: carried-pkg asks packaging>=999" in done.stdout and "not-carried" not in done.stdout
    assert not (dest / "stash").exists() and not (site / "conditional").exists()
    again = call(out, parts[0], dest, tmp_path / "again")
    assert again.returncode == 0 and "already unpacked" in again.stdout


def test_a_damaged_part_is_refused(tmp_path):
    out = tmp_path / "parts"
    parts = carry_wheels.write_parts(stage(tmp_path), out, tmp_path / "carry.tar.xz", 900, "carried-pkg==1.0")
    data = bytearray(parts[0].read_bytes())
    data[10] ^= 0xFF
    parts[0].write_bytes(data)
    done = call(out, parts[0], tmp_path / "dest", tmp_path)
    assert done.returncode != 0 and "part-00: sha256 does not match" in done.stderr
    assert not (tmp_path / "dest" / "stash" / "part-00").exists()


def elf_with_fatbin(entries: list[tuple[int, int, bytes]]) -> tuple[bytes, int, int]:
    """A 64-bit ELF file with .text and .nv_fatbin sections; the fat binary holds (kind, arch, payload)
    entries in one container. Returns the file and the section's offset and size."""
    body = b""
    for kind, arch, payload in entries:
        header = bytearray(64)
        struct.pack_into("<HHIQ", header, 0, kind, 0x101, 64, len(payload))
        struct.pack_into("<I", header, 28, arch)
        body += bytes(header) + payload
    fatbin = struct.pack("<IHHQ", carry_wheels.FATBIN_MAGIC, 1, 16, len(body)) + body
    text = b"\x90" * 32
    names = b"\0.text\0.nv_fatbin\0.shstrtab\0"
    text_at, fat_at = 64, 64 + len(text)
    names_at = fat_at + len(fatbin)
    sh_at = names_at + len(names)
    sections = [(0, 0, 0, 0), (1, 1, text_at, len(text)), (7, 1, fat_at, len(fatbin)), (18, 3, names_at, len(names))]
    ident = b"\x7fELF\x02\x01\x01" + bytes(9)
    elf = bytearray(ident + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, sh_at, 0, 64, 0, 0, 64, len(sections), 3))
    elf += text + fatbin + names
    for name, kind, offset, size in sections:
        elf += struct.pack("<IIQQQQIIQQ", name, kind, 0, 0, offset, size, 0, 0, 1, 0)
    return bytes(elf), fat_at, len(fatbin)


def test_fatbin_pruning_keeps_only_what_the_gpu_loads(tmp_path):
    kept_cubin, kept_ptx = b"\x11" * 40, b"\x22" * 24
    elf, at, size = elf_with_fatbin(
        [(2, 80, b"sm80" * 12), (2, 90, kept_cubin), (1, 80, kept_ptx), (1, 100, b"p100" * 8), (2, 120, b"s120" * 2)]
    )
    lib = tmp_path / "vllm" / "_C.abi3.so"
    lib.parent.mkdir()
    lib.write_bytes(elf)
    (tmp_path / "plain.so").write_bytes(b"not an ELF file")
    assert carry_wheels.elf_section(elf, ".nv_fatbin") == (at, size)
    report = carry_wheels.prune_fatbins(tmp_path, 90)
    assert report == [f"vllm/_C.abi3.so: {48 + 32 + 8:,} of {size:,} fat-binary bytes zeroed"]
    after = lib.read_bytes()
    assert len(after) == len(elf) and after[:at] == elf[:at] and after[at + size :] == elf[at + size :]
    assert kept_cubin in after and kept_ptx in after
    section = after[at : at + size]
    assert b"sm80" not in section and b"p100" not in section and b"s120" not in section
    assert carry_wheels.prune_fatbins(tmp_path, 90) == []  # nothing left to zero
