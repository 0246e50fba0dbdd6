"""The engine's CPU kernels (the .c files here): compiled with the system C compiler on first
use into one shared library, loaded with ctypes.

They need AVX512-VNNI and a C compiler; `library()` returns the reason, as a string, where
this machine lacks either, or where HARNESS_CPU_KERNELS=0 turns them off (the engine then runs
torch's kernels only). The build lands in a per-user cache keyed by the sources and this
file, so a machine compiles it once (about two seconds). The library links the same OpenMP
runtime torch has loaded (libgomp.so.1), so the kernels' threads are torch's threads and
follow `torch.set_num_threads`.
"""

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from functools import cache
from pathlib import Path

_SOURCES = sorted(Path(__file__).parent.glob("*.c"))
_HEADERS = sorted(Path(__file__).parent.glob("*.h"))
_FLAGS = ["-O3", "-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512vnni", "-mf16c", "-mfma", "-ffast-math", "-fopenmp"]
SWITCH = "HARNESS_CPU_KERNELS"
_CPU_FLAGS = {"avx512f", "avx512bw", "avx512vl", "avx512_vnni", "f16c", "fma"}

_p, _i, _f = ctypes.c_void_p, ctypes.c_int, ctypes.c_float
SIGNATURES = {
    "q4_linear": [_i, _p, _i, _i, _p, _f, _p, _p, _i, _i],
    "q8_linear": [_i, _p, _i, _p, _f, _p, _p, _i],
    "decode_attention": [_i, _i, _i, _i, _p, _p, _p, _p, _p, _i, _i, _p, _p, _i, _p, _f, _p],
    "decode_layers": [_i, _p, _i, _p, _i, _i, _i, _f, _p, _p, _p, _p, _i, ctypes.c_int64, _i, _p, _p, _i, _p, _f],
}


def _cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "harness-engine"


@cache
def library() -> ctypes.CDLL | str:
    """The loaded kernels, or the reason they cannot run here."""
    if os.environ.get(SWITCH) == "0":
        return f"turned off by {SWITCH}=0"
    missing = _CPU_FLAGS - _cpu_flags()
    if missing:
        return f"this CPU lacks {', '.join(sorted(missing))}"
    compiler = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        return "no C compiler (gcc) on PATH"
    digest = hashlib.sha256()
    for source in [Path(__file__), *_HEADERS, *_SOURCES]:  # this file holds the flags and the recipe
        digest.update(source.read_bytes())
    target = _cache_dir() / f"kernels-{digest.hexdigest()[:16]}.so"
    try:
        if not target.exists():
            failed = _build(compiler, target)
            if failed:
                return failed
        lib = ctypes.CDLL(str(target))
    except OSError as e:  # an unwritable cache, a full disk, a library that does not load
        return f"the CPU kernels could not be built or loaded at {target}: {e}"
    for name, argtypes in SIGNATURES.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = argtypes, None
    return lib


def _build(compiler: str, target: Path) -> str | None:
    """Compile the sources into target; the reason where a step fails."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        built = Path(tmp) / target.name
        objects = [str(Path(tmp) / f"{source.stem}.o") for source in _SOURCES]
        # Compiled with -ffast-math but linked without it: linking with it adds crtfastmath.o,
        # which turns on flush-to-zero for the whole process when the library loads.
        steps = [[compiler, *_FLAGS, "-fPIC", "-c", str(s), "-o", o] for s, o in zip(_SOURCES, objects)]
        steps.append([compiler, "-shared", "-fopenmp", *objects, "-o", str(built), "-lm"])
        for cmd in steps:
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                return f"building the CPU kernels failed ({' '.join(cmd)}): {done.stderr.strip()[-2000:]}"
        built.replace(target)  # atomic: of two concurrent builds of the same sources, one wins whole
    return None


def unavailable_reason() -> str | None:
    lib = library()
    return lib if isinstance(lib, str) else None
