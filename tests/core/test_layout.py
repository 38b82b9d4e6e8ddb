"""The house's import rules, read from the source with ``ast`` (nothing is imported to build the graph).

The graph has one node per module of ``agentenvs``, ``baselines``,
``leaderboard`` and ``retrieval_index``, and an edge ``a -> b`` wherever a
statement in ``a`` imports ``b``: absolute and relative imports, at module
level, inside functions and under ``if TYPE_CHECKING:`` alike. ``from p import
name`` imports the module ``p.name`` when there is one and the package ``p``
otherwise. The parent packages Python imports on the way to a module
(``agentenvs`` and ``agentenvs.core`` for ``agentenvs.core.keys``) are no
edges: they run first and never wait for the importer. ``importlib`` calls
are no statements and are not read: the registry finds the families and the
policies its entries name that way, so naming code by an import string adds
no edge.

Rules: no cycle; arrows point one way (``agentenvs`` never imports
``baselines`` or ``leaderboard``; ``agentenvs.core`` imports only itself); a
family (a subpackage of ``agentenvs.envs`` whose ``__init__`` lists ``ENVS``)
imports nothing of ``agentenvs`` but ``agentenvs.core`` and itself, and
``retrieval_index`` only where DESIGN.md allows it (Search, WebShop); an env
module never reaches its expert; every registry entry's expert and random
policy import string names an attribute that exists.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

import agentenvs
from agentenvs.core import registration
from agentenvs.core.registration import load_import_string, unavailable_reason

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("agentenvs", "baselines", "leaderboard", "retrieval_index")
MAY_USE_RETRIEVAL_INDEX = {"search", "webshop"}

Graph = dict[str, set[str]]


# ------------------------------------------------------------------ the checker
def module_files(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file under each package directory."""
    modules: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name] = path
    return modules


def _imported(module: str, is_package: bool, node: ast.AST, modules: Mapping[str, Path]) -> list[str]:
    """The project modules one import statement imports (outside modules are left out)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name in modules]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    targets = []
    for alias in node.names:
        submodule = f"{source}.{alias.name}"
        if submodule in modules:
            targets.append(submodule)
        elif source in modules:
            targets.append(source)
    return targets


def import_graph(root: Path, packages: Iterable[str]) -> Graph:
    """Module -> the project modules its statements import (every statement, at any depth)."""
    modules = module_files(root, packages)
    graph: Graph = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        graph[module] = {
            target
            for node in ast.walk(tree)
            for target in _imported(module, is_package, node, modules)
            if target != module
        }
    return graph


def find_cycle(graph: Graph) -> list[str] | None:
    """One cycle as ``[a, b, ..., a]`` (depth-first, modules in sorted order), or None."""
    state: dict[str, str] = {}  # "open" while on the current path, "done" after
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = "open"
        path.append(module)
        for target in sorted(graph.get(module, ())):
            if state.get(target) == "open":
                return path[path.index(target) :] + [target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        path.pop()
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state:
            found = visit(module)
            if found:
                return found
    return None


def reachable(graph: Graph, start: str) -> set[str]:
    """Every module ``start`` imports, directly or through others."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for target in graph.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def family_packages(root: Path) -> list[str]:
    """Subpackages of ``agentenvs.envs`` whose ``__init__`` assigns ``ENVS`` at module level."""
    families = []
    for init in sorted((root / "agentenvs" / "envs").glob("*/__init__.py")):
        tree = ast.parse(init.read_text(encoding="utf-8"))
        names = {
            target.id
            for node in tree.body
            if isinstance(node, ast.Assign)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        if "ENVS" in names:
            families.append(init.parent.name)
    return families


def family_violations(graph: Graph, families: Iterable[str]) -> list[str]:
    """``"a imports b"`` for each family module edge the layout forbids."""
    found = []
    for family in families:
        own = f"agentenvs.envs.{family}"
        for module in sorted(m for m in graph if m == own or m.startswith(own + ".")):
            for target in sorted(graph[module]):
                allowed = (
                    target == own
                    or target.startswith(own + ".")
                    or target == "agentenvs.core"
                    or target.startswith("agentenvs.core.")
                    or (target.split(".")[0] == "retrieval_index" and family in MAY_USE_RETRIEVAL_INDEX)
                )
                if not allowed:
                    found.append(f"{module} imports {target}")
    return found


# ------------------------------------------------------------- the checker's own tests
def _write_package(root: Path, files: Mapping[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_the_checker_reports_a_planted_cycle_through_function_level_and_type_checking_imports(tmp_path):
    _write_package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/env.py": "def expert():\n    from pkg.expert import Expert\n    return Expert()\n",
            "pkg/expert.py": "import typing\nif typing.TYPE_CHECKING:\n    from .env import expert\n",
            "pkg/other.py": "import pkg.env\n",
        },
    )
    graph = import_graph(tmp_path, ["pkg"])
    assert graph["pkg.env"] == {"pkg.expert"} and graph["pkg.expert"] == {"pkg.env"}
    assert find_cycle(graph) == ["pkg.env", "pkg.expert", "pkg.env"]


def test_the_checker_reads_relative_and_from_package_imports_and_skips_implicit_parents(tmp_path):
    _write_package(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.core.keys import key\n",
            "pkg/core/__init__.py": "from . import keys\nfrom .keys import key\n",
            "pkg/core/keys.py": "import os\nkey = 1\n",
            "pkg/family/__init__.py": "from ..core import key\n",
            "pkg/family/env.py": (
                "from pkg import core\nfrom pkg.core import keys, key\nimport pkg.core.keys as k\n"
            ),
        },
    )
    graph = import_graph(tmp_path, ["pkg"])
    # pkg.core.keys implies importing pkg and pkg.core: no edge back, so no cycle
    assert graph["pkg"] == {"pkg.core.keys"} and graph["pkg.core.keys"] == set()
    assert graph["pkg.core"] == {"pkg.core.keys"}
    assert graph["pkg.family"] == {"pkg.core"}
    assert graph["pkg.family.env"] == {"pkg.core", "pkg.core.keys"}
    assert find_cycle(graph) is None


def test_the_checker_flags_a_family_importing_a_sibling_or_the_agents(tmp_path):
    _write_package(
        tmp_path,
        {
            "agentenvs/__init__.py": "",
            "agentenvs/core/__init__.py": "",
            "agentenvs/agents/__init__.py": "",
            "agentenvs/envs/__init__.py": "",
            "agentenvs/envs/cats/__init__.py": "ENVS = ()\n",
            "agentenvs/envs/cats/env.py": (
                "from agentenvs.core import x\nfrom agentenvs.envs.dogs.world import y\n"
            ),
            "agentenvs/envs/dogs/__init__.py": "ENVS = ()\n",
            "agentenvs/envs/dogs/world.py": "def f():\n    import agentenvs.agents\n",
        },
    )
    graph = import_graph(tmp_path, ["agentenvs"])
    families = family_packages(tmp_path)
    assert families == ["cats", "dogs"]
    assert family_violations(graph, families) == [
        "agentenvs.envs.cats.env imports agentenvs.envs.dogs.world",
        "agentenvs.envs.dogs.world imports agentenvs.agents",
    ]


# ------------------------------------------------------------------ the house
@pytest.fixture(scope="module")
def graph() -> Graph:
    return import_graph(ROOT, PACKAGES)


def test_the_import_graph_has_no_cycle(graph):
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_families_import_only_core_and_themselves(graph):
    families = family_packages(ROOT)
    assert set(families) >= {"alfworld", "babyai", "colbench", "search", "sokoban", "textcraft", "webshop"}
    assert family_violations(graph, families) == []


def test_the_registry_imports_exactly_the_family_packages():
    """Registering scans agentenvs/envs/ alone: every package there is a family, and nothing else is."""
    assert registration.family_packages() == family_packages(ROOT)
    assert {entry.entry_point.split(".")[2] for entry in agentenvs.ENV_ENTRIES} == set(family_packages(ROOT))


def test_no_env_module_reaches_its_expert(graph):
    pairs = {
        (entry.entry_point.split(":")[0], entry.expert.split(":")[0])
        for entry in agentenvs.ENV_ENTRIES
        if entry.expert is not None
    }
    assert len(pairs) >= 7
    reached = sorted(f"{env} reaches {expert}" for env, expert in pairs if expert in reachable(graph, env))
    assert reached == []


def _top_level_names(path: Path) -> set[str]:
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {target.id for target in node.targets if isinstance(target, ast.Name)}
    return names


def test_every_entrys_expert_and_random_policy_names_an_existing_attribute():
    modules = module_files(ROOT, PACKAGES)
    strings = sorted(
        {entry.random_policy for entry in agentenvs.ENV_ENTRIES}
        | {entry.expert for entry in agentenvs.ENV_ENTRIES if entry.expert is not None}
    )
    # read from the source, so an entry whose extra is missing here is checked all the same
    missing = [s for s in strings if s.split(":")[1] not in _top_level_names(modules[s.split(":")[0]])]
    assert missing == []
    # and resolved by the registry's own loader wherever the extra is installed
    for entry in agentenvs.ENV_ENTRIES:
        if unavailable_reason(entry.env_id) is None:
            for string in filter(None, (entry.expert, entry.random_policy)):
                assert callable(load_import_string(string)), string


def test_arrows_point_one_way(graph):
    """``agentenvs`` and ``retrieval_index`` never import trainers or the board; core imports only core."""
    back = sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        for target in targets
        if (
            module.startswith(("agentenvs", "retrieval_index"))
            and target.startswith(("baselines", "leaderboard"))
        )
        or (module.startswith("agentenvs.core") and not target.startswith("agentenvs.core"))
    )
    assert back == []


def test_the_agents_never_import_the_eval_package(graph):
    """``agentenvs.eval`` plays and checks the agents' episodes and imports them; no arrow points back."""
    back = sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        if module.startswith("agentenvs.agents")
        for target in targets
        if target.startswith("agentenvs.eval")
    )
    assert back == []


def test_the_leaderboard_imports_nothing_from_the_cli(graph):
    """Neither the ``agentenvs.cli`` package nor any of its modules (``agentenvs.cli.common``, ...)."""
    assert "agentenvs.cli.common" in graph  # the CLI is a package: its modules are in the graph
    from_cli = sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        if module.startswith("leaderboard")
        for target in targets
        if target == "agentenvs.cli" or target.startswith("agentenvs.cli.")
    )
    assert from_cli == []


def test_family_packages_import_only_the_registry(graph):
    """Registering stays import-light: a family's ``__init__`` names its code by import strings only."""
    assert {
        f"agentenvs.envs.{family}": graph[f"agentenvs.envs.{family}"] - {"agentenvs.core.registration"}
        for family in family_packages(ROOT)
    } == {f"agentenvs.envs.{family}": set() for family in family_packages(ROOT)}
