"""Scripted batch anonymisation: plans, executors (local process pool, Ray), runs and summaries."""

from graphrelease.batch.executors import LocalExecutor, RayExecutor, make_executor
from graphrelease.batch.plan import Job, Plan, load_plan, parse_plan
from graphrelease.batch.run import BatchSummary, JobResult, run_job, run_plan

__all__ = [
    "BatchSummary", "Job", "JobResult", "LocalExecutor", "Plan", "RayExecutor", "load_plan", "make_executor",
    "parse_plan", "run_job", "run_plan",
]
