"""Every package opens with a docstring that says what lives there and what it may import.

The ``May import:`` paragraph of each package's docstring is checked against the package's real imports:
each project module imported by a module of the package (function-level and ``TYPE_CHECKING``
imports included) is a root package itself (``import agentenvs`` registers the ids), lies
inside the package, or lies under one of the modules it quotes
(````name```` or ``:mod:`name```). A package whose paragraph says ``nothing`` imports no
other part of the project.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ("agentenvs", "baselines", "leaderboard", "retrieval_index")
# the paragraph that opens with "May import", and the module names it quotes (``name`` or :mod:`name`)
MAY_IMPORT = re.compile(r"(?:^|\n)[ \t]*May import:(.*?)(?:\n[ \t]*\n|$)", re.DOTALL | re.IGNORECASE)
QUOTED = re.compile(r"(?:``|:mod:`~?)([a-z_][\w.]*)`")


def packages() -> list[Path]:
    return sorted(init.parent for top in PROJECT for init in (ROOT / top).rglob("__init__.py"))


def dotted(folder: Path) -> str:
    return ".".join(folder.relative_to(ROOT).parts)


def allowed_prefixes(package: Path) -> tuple[str, ...]:
    docstring = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8")))
    assert docstring, f"{dotted(package)} has no docstring"
    found = MAY_IMPORT.search(docstring)
    assert found, f"{dotted(package)}'s docstring has no 'May import:' paragraph"
    names = tuple(name for name in QUOTED.findall(found.group(1)) if name.split(".")[0] in PROJECT)
    assert names or "nothing" in found.group(1).split(), f"{dotted(package)}: say which modules, or nothing"
    return names


def project_imports(module: Path, package_name: str) -> set[str]:
    """The project modules ``module`` imports, absolute and relative, at any depth of its code."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package_name.split(".")[: len(package_name.split(".")) - (node.level - 1)]
                names.add(".".join(base + ([node.module] if node.module else [])))
            elif node.module:
                names.add(node.module)
    return {name for name in names if name.split(".")[0] in PROJECT}


def within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def test_the_checker_finds_an_import_the_line_does_not_allow(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from agentenvs.cli import main\n    from . import sibling\n")
    found = project_imports(module, "agentenvs.core")
    assert found == {"agentenvs.cli", "agentenvs.core"}
    assert not any(within("agentenvs.cli", prefix) for prefix in ("agentenvs.core", "agentenvs.clinic"))


@pytest.mark.parametrize("package", packages(), ids=dotted)
def test_each_package_imports_only_what_its_docstring_allows(package: Path) -> None:
    name = dotted(package)
    allowed = allowed_prefixes(package)
    # a subpackage is checked against its own line, so only this package's own modules are read here
    offending = {
        f"{module.relative_to(ROOT)} imports {imported}"
        for module in package.glob("*.py")
        for imported in project_imports(module, name)
        if imported not in PROJECT  # a root itself (``import agentenvs`` registers the ids) is open to all
        and not within(imported, name)
        and not any(within(imported, prefix) for prefix in allowed)
    }
    assert not offending, f"{name} may import {allowed or 'nothing'}; but:\n" + "\n".join(sorted(offending))
