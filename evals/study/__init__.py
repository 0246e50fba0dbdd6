"""The policy study: live runs of tasks × policies × seeds against one engine, with runs in flight at
once and a KV cache of a given size, measured from the engine's own figures and compared in pairs.

    spec = StudySpec(model="local", tasks=["chess", "ledger"], policies=["local", "local_compact"],
                     seeds=[0, 1], concurrency=[4], kv_cache_mb=[64])
    study, folder = run_study(spec, Path("runs"))   # folder/study.json, folder/study.html
"""

from evals.study.grid import StudySpec
from evals.study.runner import run_study

__all__ = ["StudySpec", "run_study"]
