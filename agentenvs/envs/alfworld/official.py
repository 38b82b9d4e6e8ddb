"""ALFWorld's official games, read from their published ``game.tw-pddl`` files.

Layout (as ``alfworld-download`` leaves it)::

    <data_dir>/json_2.1.1/{train,valid_seen,valid_unseen}/
        {task_type}-{Object}-{MovableReceptacle}-{Receptacle}-{scene}/trial_*/game.tw-pddl

``data_dir`` may hold a ``json_2.1.1`` folder (the one ALFWorld's own
configs read) or a ``json_2.1.2`` folder, or be that folder itself (a folder
holding both is refused: pass the one to play). ``game.tw-pddl`` is a JSON
object: ``pddl_domain`` (``alfred.pddl``), ``grammar`` (``alfred.twl2`` with
the task sentence written in), ``pddl_problem`` (objects, initial facts,
goal) and, in most files, ``solvable``. Like ALFWorld, only files marked
solvable (a file without the key is skipped, as ALFWorld skips it) of its six
task types, without movable receptacles or sliced objects, are kept (what is
left out is counted by reason in ``OfficialGames.skipped``); their problem
and task sentence load into the native engine.

Two versions of the files were published, and each file plays as its own
version (:func:`file_version` reads it from the file's domain and grammar):
the raw 2.1.1 files (``json_2.1.1_tw-pddl.zip``, what older installs and
many published agents used) and the 2.1.2 files that ALFWorld's
``patch_tw-pddl.py`` makes of them (``json_2.1.2_tw-pddl.zip``, what
``alfworld-download`` 0.4.x fetches): see
:class:`~agentenvs.envs.alfworld.text.FileVersion`.

Splits: ``train`` = ``train`` (3,553 games), ``valid`` = ``valid_seen``
(140), ``test`` = ``valid_unseen`` (134). A task id is the trial's path
below the version folder, e.g.
``valid_seen/pick_and_place_simple-Book-None-SideTable-329/trial_T2019...``.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path

from agentenvs.core import IdListTaskSource, UnknownTaskError
from agentenvs.envs.alfworld import text
from agentenvs.envs.alfworld.pddl import PddlError
from agentenvs.envs.alfworld.tasks import TASK_TYPES, Game

SPLIT_FOLDERS = {"train": "train", "valid": "valid_seen", "test": "valid_unseen"}
VERSION_FOLDERS = ("json_2.1.1", "json_2.1.2")
GAME_FILE = "game.tw-pddl"
_TASK_RULE = re.compile(r'"task"\s*:\s*\[\s*\{\s*"rhs"\s*:\s*("(?:[^"\\]|\\.)*")')
_SENTENCE = re.compile(r"^Your task is to: (.*)\.$", re.DOTALL)
_PUT_TEMPLATE = re.compile(r'action\s+PutObject\s*\{\s*template\s*::\s*"([^"]*)"')
_PUT_FEEDBACK = re.compile(r'"PutObject\.feedback"\s*:\s*\[\s*\{\s*"rhs"\s*:\s*"([^"]*)"')
_ARRIVAL = re.compile(r'"GotoLocation\.feedback"\s*:\s*\[\s*\{\s*"rhs"\s*:\s*"You arrive at \{(\w+)\.name\}')
_HELP_IN_DOMAIN = re.compile(r"\(:action\s+help\b", re.IGNORECASE)
_HELP_IN_GRAMMAR = re.compile(r"^\s*action\s+help\s*\{", re.MULTILINE)


def goal_text_of(grammar: str) -> str:
    """The goal of the grammar's ``task`` rule ("Your task is to: <goal>.")."""
    match = _TASK_RULE.search(grammar)
    if match is None:
        raise PddlError("the grammar has no task rule")
    sentence = _SENTENCE.match(json.loads(match.group(1)))
    if sentence is None:
        raise PddlError("the task rule does not read 'Your task is to: ...'")
    return sentence.group(1)


def _signature(version: text.FileVersion) -> tuple[object, ...]:
    """What a file of ``version`` says in the rules the versions differ in."""
    feedback = version.put_feedback.replace("{o}", "{o.name}").replace("{r}", "{r.name}")
    arrival = "lend" if version.arrival_names_location else "r"
    return version.put_command, feedback, arrival, version.has_help, version.has_help


def file_version(domain: str, grammar: str) -> text.FileVersion:
    """The published version a game file's domain and grammar belong to (raw 2.1.1 or patched 2.1.2)."""
    found = tuple(
        match.group(1) if match else None
        for match in (_PUT_TEMPLATE.search(grammar), _PUT_FEEDBACK.search(grammar), _ARRIVAL.search(grammar))
    ) + (bool(_HELP_IN_DOMAIN.search(domain)), bool(_HELP_IN_GRAMMAR.search(grammar)))
    for version in (text.RAW_2_1_1, text.PATCHED_2_1_2):
        if found == _signature(version):
            return version
    raise PddlError(
        "the game file's domain and grammar match neither published ALFWorld version "
        f"(placing command, its feedback, arrival name, help in domain, help in grammar: {found})"
    )


def read_game(path: str | os.PathLike[str], name: str) -> Game:
    """One ``game.tw-pddl`` file as a :class:`Game` of its own file version."""
    data = json.loads(Path(path).read_text())
    version = file_version(data["pddl_domain"], data["grammar"])
    return Game.from_text(
        name, name.split("-", 1)[0], goal_text_of(data["grammar"]), data["pddl_problem"], version
    )


def games_root(data_dir: str | os.PathLike[str]) -> Path:
    """The folder holding the split folders: ``data_dir``'s version folder, or ``data_dir`` itself."""
    root = Path(data_dir)
    versions = [root / name for name in VERSION_FOLDERS if (root / name).is_dir()]
    if len(versions) > 1:
        raise ValueError(
            f"{data_dir} holds both {' and '.join(v.name for v in versions)}: pass the one to play as "
            "data_dir"
        )
    if versions:
        return versions[0]
    if any((root / folder).is_dir() for folder in SPLIT_FOLDERS.values()):
        return root
    raise FileNotFoundError(
        f"no ALFWorld data at {data_dir} (expected a json_2.1.1 or json_2.1.2 folder, or its split folders)"
    )


def skip_reason(task_folder: str, game: object) -> str | None:
    """Why ALFWorld's own game collection leaves a game out (None: kept), in its order of checks:
    movable-receptacle and sliced-object folders, task types other than its six, a file without
    the ``solvable`` key, a file marked unsolvable."""
    if "movable" in task_folder or "Sliced" in task_folder:
        return "movable receptacle or sliced object (ALFWorld leaves these out)"
    if task_folder.split("-", 1)[0] not in TASK_TYPES:
        return "task type not among ALFWorld's six"
    if not isinstance(game, dict) or "solvable" not in game:
        return "no 'solvable' key in game.tw-pddl"
    if not game["solvable"]:
        return "marked unsolvable"
    return None


class OfficialGames(IdListTaskSource[Game]):
    """The solvable games of an ALFWorld data folder (see the module docstring for the layout).

    ``skipped`` counts the games ALFWorld's rules leave out, by reason.
    """

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.root = games_root(data_dir)
        self._skipped: Counter[str] = Counter()
        super().__init__({split: self._scan(folder) for split, folder in SPLIT_FOLDERS.items()})

    @property
    def skipped(self) -> dict[str, int]:
        return dict(self._skipped)

    def _scan(self, folder: str) -> list[str]:
        ids = []
        for game_file in sorted((self.root / folder).glob(f"*/*/{GAME_FILE}")):
            task_folder = game_file.parent.parent.name
            game: object = None
            if "movable" not in task_folder and "Sliced" not in task_folder:
                try:
                    game = json.loads(game_file.read_text(encoding="utf-8"))
                except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                    raise ValueError(f"{game_file}: not a game.tw-pddl file ({exc})") from None
            reason = skip_reason(task_folder, game)
            if reason is not None:
                self._skipped[reason] += 1
                continue
            ids.append(game_file.parent.relative_to(self.root).as_posix())
        return ids

    def load(self, task_id: str) -> Game:
        parts = task_id.split("/")
        folders = set(SPLIT_FOLDERS.values())
        path = self.root / task_id / GAME_FILE
        if len(parts) != 3 or parts[0] not in folders or ".." in parts or not path.is_file():
            raise UnknownTaskError(f"unknown ALFWorld game {task_id!r}")
        return read_game(path, name=parts[1])
