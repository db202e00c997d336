"""Executors run independent batch jobs: a local process pool (default) or a Ray cluster.

Both take a picklable function and a list of jobs and yield ``(job, result)`` as jobs finish. Jobs never share
state, every job writes its own release atomically, and a job's randomness depends only on the job (its own seed,
or the OS's secure generator), so the results do not depend on which executor ran them or in which order.
"""

from __future__ import annotations

import os
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from multiprocessing import get_context
from typing import Any, Callable, Iterator, Sequence

from graphrelease.errors import OptionError

JobFn = Callable[[Any], Any]


def _init_worker() -> None:
    # Two threads per worker on two cores were 5-10x slower in measurements: one thread per worker.
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["MKL_NUM_THREADS"] = "1"
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:  # torch is a dependency; this only guards odd environments
        pass


class LocalExecutor:
    """A process pool with one thread per worker (``spawn`` start method: no inherited locks or torch state)."""

    name = "local"

    def __init__(self, workers: int | None = None) -> None:
        if workers is not None and workers < 1:
            raise OptionError(f"--workers must be >= 1, got {workers}")
        self.workers = workers or max(1, min(os.cpu_count() or 1, 8))

    def run(self, fn: JobFn, jobs: Sequence[Any]) -> Iterator[tuple[Any, Any]]:
        if not jobs:
            return
        pool = ProcessPoolExecutor(
            max_workers=min(self.workers, len(jobs)), mp_context=get_context("spawn"), initializer=_init_worker
        )
        pending: dict[Future, Any] = {}
        queue = list(jobs)
        try:
            # Keep a bounded window in flight so that Ctrl-C has few jobs to abandon.
            window = 2 * self.workers
            while queue or pending:
                while queue and len(pending) < window:
                    job = queue.pop(0)
                    pending[pool.submit(fn, job)] = job
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    job = pending.pop(future)
                    yield job, future.result()
        finally:
            for future in pending:
                future.cancel()
            pool.shutdown(wait=True, cancel_futures=True)


class RayExecutor:
    """Runs the same jobs as Ray tasks (one CPU each) on a local instance or the cluster at ``address``."""

    name = "ray"

    def __init__(self, address: str | None = None, workers: int | None = None) -> None:
        self.address = address
        self.workers = workers

    def run(self, fn: JobFn, jobs: Sequence[Any]) -> Iterator[tuple[Any, Any]]:
        if not jobs:
            return
        try:
            import ray
        except ImportError as err:
            raise OptionError("--executor ray needs the 'ray' package: pip install 'graphrelease[ray]'") from err
        started_here = not ray.is_initialized()
        if started_here:
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                      "runtime_env": {"env_vars": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}}}
            if self.address:
                kwargs["address"] = self.address
            elif self.workers:
                kwargs["num_cpus"] = self.workers
            try:
                ray.init(**kwargs)
            except ConnectionError as err:
                raise OptionError(f"--address {self.address}: cannot connect to a Ray cluster ({err})") from err
        remote_fn = ray.remote(num_cpus=1, max_retries=0)(fn)
        refs = {remote_fn.remote(job): job for job in jobs}
        try:
            while refs:
                done, _ = ray.wait(list(refs), num_returns=1)
                for ref in done:
                    job = refs.pop(ref)
                    yield job, ray.get(ref)
        finally:
            for ref in refs:
                ray.cancel(ref, force=True)
            if started_here:
                ray.shutdown()


def make_executor(name: str, *, workers: int | None = None, address: str | None = None):
    if name == "local":
        if address:
            raise OptionError("--address applies only to --executor ray")
        return LocalExecutor(workers)
    if name == "ray":
        return RayExecutor(address=address, workers=workers)
    raise OptionError(f"--executor must be 'local' or 'ray', got {name!r}")
