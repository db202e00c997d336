"""``graphrelease budget``: plan a DP-SGD schedule's privacy (rendering only; the work is
graphrelease.privacy.planner)."""

from __future__ import annotations

from typing import Optional

import typer

from cli.common import console

_EPS_HELP = ("epsilon: the (epsilon, delta)-DP guarantee of the whole schedule; PLD = privacy loss distribution "
             "accountant (tight upper bound, default), RDP = Rényi DP with the Balle et al. 2020 conversion")


def register(app: typer.Typer) -> None:
    @app.command("budget")
    def budget(
        dataset_size: Optional[int] = typer.Option(None, "--dataset-size", help="number of examples N"),
        batch_size: Optional[int] = typer.Option(None, "--batch-size", help="expected batch size B (rate B/N)"),
        sample_rate: Optional[float] = typer.Option(None, "--sample-rate", help="sampling rate q (instead of N, B)"),
        epochs: Optional[float] = typer.Option(None, "--epochs", help="epochs (steps = epochs * ceil(N/B))"),
        steps: Optional[int] = typer.Option(None, "--steps", help="number of noisy steps T"),
        noise_multiplier: Optional[float] = typer.Option(None, "--noise-multiplier", help="sigma: noise std / C"),
        epsilon: Optional[float] = typer.Option(None, "--epsilon", help="target epsilon: print the sigma needed"),
        delta: float = typer.Option(1e-5, "--delta", help="delta of the (epsilon, delta) guarantee"),
        sampling: str = typer.Option("poisson", "--sampling", help="poisson | wor (fixed batch, replace-one)"),
        neighboring: Optional[str] = typer.Option(None, "--neighboring", help="add_remove | replace_one (default: "
                                                  "add_remove for poisson, replace_one for wor)"),
        grid: bool = typer.Option(False, "--grid", help="table of epsilon over sigma x epochs"),
        sigmas: str = typer.Option("0.6,0.8,1.0,1.5,2.0", "--sigmas", help="grid: comma-separated sigmas"),
        epochs_grid: str = typer.Option("1,5,10,20,50", "--epochs-grid", help="grid: comma-separated epochs"),
        accountant: str = typer.Option("pld", "--accountant", help="grid accountant: pld | rdp"),
    ) -> None:
        """Print epsilon (PLD and RDP) for a schedule and noise multiplier, or the noise multiplier for --epsilon."""
        from rich.table import Table

        from graphrelease.errors import OptionError
        from graphrelease.privacy.planner import plan_budget, plan_grid

        from graphrelease.privacy.planner import neighboring_for

        neighboring = neighboring_for(sampling, neighboring)
        if grid:
            try:
                sig = [float(x) for x in sigmas.split(",") if x.strip()]
                eps_list = [float(x) for x in epochs_grid.split(",") if x.strip()]
            except ValueError as err:
                raise OptionError(f"--sigmas/--epochs-grid must be comma-separated numbers ({err})") from err
            with console.status(f"accounting {len(sig) * len(eps_list)} schedules ({accountant})"):
                rows = plan_grid(delta=delta, sigmas=sig, epochs=eps_list, dataset_size=dataset_size,
                                 batch_size=batch_size, sample_rate=sample_rate, sampling=sampling,
                                 neighboring=neighboring, accountant=accountant)
            table = Table(title=f"epsilon ({accountant}) at delta={delta:g}, sampling={sampling}, {neighboring}",
                          caption=_EPS_HELP)
            table.add_column("sigma \\ epochs", style="bold")
            for e in eps_list:
                table.add_column(f"{e:g}", justify="right")
            for s in sig:
                cells = [f"{r['epsilon']:.3f}" for r in rows if r["noise_multiplier"] == s]
                table.add_row(f"{s:g}", *cells)
            console.print(table)
            return
        with console.status("accounting under PLD and RDP (the PLD grid takes a few seconds)"):
            plan = plan_budget(delta=delta, dataset_size=dataset_size, batch_size=batch_size,
                               sample_rate=sample_rate, epochs=epochs, steps=steps,
                               noise_multiplier=noise_multiplier, epsilon=epsilon, sampling=sampling,
                               neighboring=neighboring)
        table = Table(title="privacy budget plan", show_header=False, caption=_EPS_HELP)
        table.add_column("quantity", style="bold")
        table.add_column("value")
        table.add_row("sample rate q", f"{plan.sample_rate:.6g} ({plan.sampling}, {plan.neighboring})")
        table.add_row("steps T", f"{plan.steps:,}")
        table.add_row("delta", f"{plan.delta:g}")
        if plan.mode == "epsilon":
            table.add_row("noise multiplier sigma", f"{plan.noise_multiplier:g}")
            for name, value in plan.epsilons.items():
                table.add_row(f"epsilon ({name.upper()})", f"{value:.4f}")
        else:
            table.add_row("target epsilon", f"{plan.target_epsilon:g}")
            for name, value in plan.noise_multipliers.items():
                table.add_row(f"sigma needed ({name.upper()})", f"{value:.4f}")
        console.print(table)
