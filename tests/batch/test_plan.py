"""Plan parsing: job expansion, per-input budget sharing, clear errors naming the plan and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphrelease.batch.plan import load_plan
from graphrelease.errors import OptionError


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "plan.toml"
    path.write_text(text)
    return path


def _imdb_plan(tmp_path: Path, data_dir: Path, extra: str = "", members: str = '"0:4"') -> Path:
    return _write(tmp_path, f"""
name = "imdb"
output = "out"
delta = 1e-5
[[inputs]]
name = "imdb"
path = "{data_dir / 'collections' / 'IMDB-MULTI'}"
members = {members}
sharing = "compose"
epsilon_cap = 3.5
{extra}
[[runs]]
methods = ["a", "b"]
epsilons = [0.5, 1.0]
""")


def test_expands_members_methods_budgets(tmp_path, data_dir):
    plan = load_plan(_imdb_plan(tmp_path, data_dir), member_counts={"imdb": 1500})
    assert len(plan.jobs) == 4 * 2 * 2
    assert len(plan.jobs_by_input()) == 4  # each member is its own private graph
    ids = {j.job_id for j in plan.jobs}
    assert "imdb/m00003/b/eps0p5" in ids
    assert all(j.out.parent.parent.parent.parent == tmp_path / "out" for j in plan.jobs)


def test_all_members_counts_the_collection(tmp_path, data_dir):
    plan = load_plan(_imdb_plan(tmp_path, data_dir, members='"all"'))
    assert len(plan.jobs_by_input()) == 1500  # IMDB-MULTI has 1500 graphs
    assert len(plan.jobs) == 1500 * 4


def test_compose_refuses_plans_over_the_cap(tmp_path, data_dir):
    text = _imdb_plan(tmp_path, data_dir).read_text().replace("epsilon_cap = 3.5", "epsilon_cap = 2.9")
    with pytest.raises(OptionError, match=r"epsilon 3 in total .* above epsilon_cap 2\.9"):
        load_plan(_write(tmp_path, text), member_counts={"imdb": 1500})


def test_several_jobs_on_one_graph_must_say_how_budget_is_shared(tmp_path, data_dir):
    text = _imdb_plan(tmp_path, data_dir).read_text().replace('sharing = "compose"\nepsilon_cap = 3.5\n', "")
    with pytest.raises(OptionError, match="say how they share its budget"):
        load_plan(_write(tmp_path, text), member_counts={"imdb": 1500})


def test_split_divides_the_total_in_proportion(tmp_path, data_dir):
    text = _imdb_plan(tmp_path, data_dir).read_text().replace(
        'sharing = "compose"\nepsilon_cap = 3.5', 'sharing = "split"\nepsilon_total = 6.0\ndelta_total = 6e-5')
    plan = load_plan(_write(tmp_path, text), member_counts={"imdb": 1500})
    first = plan.jobs_by_input()["imdb[0]"]
    assert sum(j.epsilon for j in first) == pytest.approx(6.0)
    assert sum(j.delta for j in first) == pytest.approx(6e-5)
    assert sorted(j.epsilon for j in first) == pytest.approx([1.0, 1.0, 2.0, 2.0])


def test_seeded_plans_give_stable_per_job_seeds(tmp_path, data_dir):
    path = _imdb_plan(tmp_path, data_dir, extra="")
    text = "seed = 7\n" + path.read_text()
    a = load_plan(_write(tmp_path, text), member_counts={"imdb": 1500})
    b = load_plan(_write(tmp_path, text), member_counts={"imdb": 1500})
    assert [j.seed for j in a.jobs] == [j.seed for j in b.jobs]
    assert len({j.seed for j in a.jobs}) == len(a.jobs)


@pytest.mark.parametrize(
    "text, message",
    [
        ("[[runs]]\nmethods=['a']\nepsilons=[1]\n", "needs at least one \\[\\[inputs\\]\\]"),
        ("[[inputs]]\npath='nope.csv'\n[[runs]]\nmethods=['a']\nepsilons=[1]\n", "does not exist"),
        ("[[inputs]]\npath='g.csv'\n[[runs]]\nmethods=['a']\nepsilons=[-1]\n", "positive number"),
        ("[[inputs]]\npath='g.csv'\n[[runs]]\nmethods=[]\nepsilons=[1]\n", "methods must be"),
        ("[[inputs]]\npath='g.csv'\nbogus=1\n[[runs]]\nmethods=['a']\nepsilons=[1]\n", "unknown key"),
        ("[[inputs]]\npath='g.csv'\n[[runs]]\ninputs=['x']\nmethods=['a']\nepsilons=[1]\n", "unknown input"),
        ("[[inputs]]\npath='g.csv'\nsharing='maybe'\n[[runs]]\nmethods=['a']\nepsilons=[1]\n", "sharing must be"),
        ("this is = = not toml", "not valid TOML"),
        ("[[inputs]]\npath='g.csv'\n[[runs]]\nmethods=['a']\nepsilons=[1]\n[runs.options.a]\nseed=3\n",
         "'seed' is not a method option"),
    ],
)
def test_bad_plans_name_the_problem(tmp_path, text, message):
    (tmp_path / "g.csv").write_text("0,1\n")
    with pytest.raises(OptionError, match=message) as err:
        load_plan(_write(tmp_path, text))
    assert "plan.toml" in str(err.value)
