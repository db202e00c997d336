"""``graphrelease budget`` through the CLI runner: reference numbers, sigma mode, grid, clean errors."""

from __future__ import annotations

from typer.testing import CliRunner

from cli.app import app

runner = CliRunner()


def test_budget_prints_pld_and_rdp_reference_values():
    res = runner.invoke(app, ["budget", "--sample-rate", "0.01", "--steps", "1000", "--noise-multiplier", "1.0",
                              "--delta", "1e-5"])
    assert res.exit_code == 0, res.output
    assert "1.8282" in res.output and "2.1014" in res.output


def test_budget_sigma_mode_from_dataset_and_batch():
    res = runner.invoke(app, ["budget", "--dataset-size", "10000", "--batch-size", "100", "--epochs", "10",
                              "--epsilon", "1.0", "--delta", "1e-5"])
    assert res.exit_code == 0, res.output
    assert "1,000" in res.output  # 10 epochs x ceil(10000/100) steps
    assert "1.51" in res.output and "1.41" in res.output  # RDP 1.5131, PLD 1.4147 (rtol 1e-3)


def test_budget_grid_rdp():
    res = runner.invoke(app, ["budget", "--sample-rate", "0.01", "--grid", "--accountant", "rdp",
                              "--sigmas", "1.0,2.0", "--epochs-grid", "10"])
    assert res.exit_code == 0, res.output
    assert "2.101" in res.output  # sigma 1, 10 epochs of ceil(1/0.01) = 1000 steps


def test_budget_errors_are_one_line():
    from cli.common import run_cli

    assert run_cli(app, ["budget", "--steps", "10", "--noise-multiplier", "1"]) == 2
    assert run_cli(app, ["budget", "--sample-rate", "0.01", "--steps", "10"]) == 2
