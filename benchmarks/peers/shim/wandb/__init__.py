"""Stand-in for ``wandb`` (not installed here): the peers' ``core/loggers/wandb.py`` annotates a method with
``wandb.wandb_run.Run`` at class-definition time, which fails with a NameError when wandb is absent. Nothing here
logs; the harness never enables the peers' W&B logger, and any real use raises."""


def __getattr__(name):
    raise ImportError(f"wandb is not installed (shim): wandb.{name}")
