"""ALFWorld's official games, read from their published ``json_2.1.1`` tree.

Layout (as ``alfworld-download`` leaves it)::

    <data_dir>/json_2.1.1/{train,valid_seen,valid_unseen}/
        {task_type}-{Object}-{MovableReceptacle}-{Receptacle}-{scene}/trial_*/game.tw-pddl

``game.tw-pddl`` is a JSON object: ``pddl_domain`` (``alfred.pddl``),
``grammar`` (``alfred.twl2`` with the task sentence written in),
``pddl_problem`` (objects, initial facts, goal), ``solvable`` and
``walkthrough``. Like ALFWorld, only solvable games of its six task types
are kept; their problem and task sentence load into the native engine.

Splits: ``train`` = ``train`` (3,553 games), ``valid`` = ``valid_seen``
(140), ``test`` = ``valid_unseen`` (134). A task id is the trial's path
below ``json_2.1.1``, e.g.
``valid_seen/pick_and_place_simple-Book-None-SideTable-329/trial_T2019...``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from agentenvs.alfworld.generator import TASK_TYPES, Game
from agentenvs.alfworld.pddl import PddlError
from agentenvs.core import IdListTaskSource, UnknownTaskError

SPLIT_FOLDERS = {"train": "train", "valid": "valid_seen", "test": "valid_unseen"}
GAME_FILE = "game.tw-pddl"
_TASK_RULE = re.compile(r'"task"\s*:\s*\[\s*\{\s*"rhs"\s*:\s*("(?:[^"\\]|\\.)*")')
_SENTENCE = re.compile(r"^Your task is to: (.*)\.$", re.DOTALL)


def goal_text_of(grammar: str) -> str:
    """The goal of the grammar's ``task`` rule ("Your task is to: <goal>.")."""
    match = _TASK_RULE.search(grammar)
    if match is None:
        raise PddlError("the grammar has no task rule")
    sentence = _SENTENCE.match(json.loads(match.group(1)))
    if sentence is None:
        raise PddlError("the task rule does not read 'Your task is to: ...'")
    return sentence.group(1)


def read_game(path: str | os.PathLike[str], name: str) -> Game:
    """One ``game.tw-pddl`` file as a :class:`Game`."""
    data = json.loads(Path(path).read_text())
    return Game.from_text(name, name.split("-", 1)[0], goal_text_of(data["grammar"]), data["pddl_problem"])


class OfficialGames(IdListTaskSource[Game]):
    """The solvable games of an ALFWorld data folder (``data_dir`` or its ``json_2.1.1``)."""

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        root = Path(data_dir)
        if (root / "json_2.1.1").is_dir():
            root = root / "json_2.1.1"
        if not root.is_dir():
            raise FileNotFoundError(f"no ALFWorld data at {data_dir} (expected a json_2.1.1 folder)")
        self.root = root
        super().__init__({split: self._scan(folder) for split, folder in SPLIT_FOLDERS.items()})

    def _scan(self, folder: str) -> list[str]:
        ids = []
        for game_file in sorted((self.root / folder).glob(f"*/*/{GAME_FILE}")):
            if game_file.parent.parent.name.split("-", 1)[0] not in TASK_TYPES:
                continue
            with open(game_file) as handle:
                if json.load(handle).get("solvable", False):
                    ids.append(game_file.parent.relative_to(self.root).as_posix())
        return ids

    def load(self, task_id: str) -> Game:
        parts = task_id.split("/")
        folders = set(SPLIT_FOLDERS.values())
        path = self.root / task_id / GAME_FILE
        if len(parts) != 3 or parts[0] not in folders or ".." in parts or not path.is_file():
            raise UnknownTaskError(f"unknown ALFWorld game {task_id!r}")
        return read_game(path, name=parts[1])
