"""The board's SQLite store (WAL mode: the page reads while the worker writes).

A submission is stored ``pending`` with its uploaded document; the
verification worker turns it ``verified`` (the recomputed summary and the
replayed transcripts are stored) or ``rejected`` (with the problems; a
verification that failed on the board itself ends rejected too, with that
reason, so nothing stays pending). Every value goes through SQL parameters,
never into the SQL text.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from agentenvs.eval.bundle import utc_now
from leaderboard.verify import Verdict

SCHEMA = """
CREATE TABLE IF NOT EXISTS submissions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    model TEXT NOT NULL,
    model_size TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    panel TEXT NOT NULL,
    created TEXT NOT NULL,
    received TEXT NOT NULL,
    submitter TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'verified', 'rejected')),
    problems TEXT NOT NULL DEFAULT '[]',
    metadata TEXT NOT NULL,
    summary TEXT,
    families TEXT,
    document TEXT
);
CREATE TABLE IF NOT EXISTS episodes (
    submission_id INTEGER NOT NULL REFERENCES submissions(id),
    position INTEGER NOT NULL,
    env_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    seed INTEGER NOT NULL,
    success INTEGER NOT NULL,
    score REAL NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    transcript TEXT NOT NULL,
    PRIMARY KEY (submission_id, position)
);
"""
# what a page shows of a submission (its raw upload stays out)
ROW_COLUMNS = (
    "id, model, model_size, endpoint, panel, created, received, submitter, status, problems, metadata,"
    " summary, families"
)
# columns added since the first release, added to older board files on open
ADDED_COLUMNS = {"families": "TEXT"}


class Store:
    """One SQLite file; safe to share between the app's threads."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._lock = threading.Lock()
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._db.executescript(SCHEMA)
            present = {row["name"] for row in self._db.execute("PRAGMA table_info(submissions)")}
            for name, kind in ADDED_COLUMNS.items():
                if name not in present:
                    self._db.execute(f"ALTER TABLE submissions ADD COLUMN {name} {kind}")

    @property
    def journal_mode(self) -> str:
        with self._lock:
            return self._db.execute("PRAGMA journal_mode").fetchone()[0]

    def add_pending(self, document: dict[str, Any], submitter: str) -> int:
        """Store an uploaded (schema-valid) document for verification; its id."""
        metadata = document["metadata"]
        with self._lock:
            cursor = self._db.execute(
                "INSERT INTO submissions (model, model_size, endpoint, panel, created, received, submitter,"
                " status, metadata, document) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)",
                (
                    metadata["model"],
                    metadata["model_size"],
                    metadata["endpoint"],
                    metadata["panel"],
                    metadata["created"],
                    utc_now(),
                    submitter,
                    json.dumps(metadata),
                    json.dumps(document),
                ),
            )
            if cursor.lastrowid is None:  # sqlite3 sets it on every INSERT
                raise RuntimeError("the submission's INSERT reported no row id")
            return cursor.lastrowid

    def model_names(self) -> list[str]:
        """The model names of every submission not rejected (on the board or pending), first stored first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT model FROM submissions WHERE status != 'rejected' GROUP BY model ORDER BY min(id)"
            ).fetchall()
        return [row["model"] for row in rows]

    def pending_ids(self) -> list[int]:
        with self._lock:
            rows = self._db.execute(
                "SELECT id FROM submissions WHERE status = 'pending' ORDER BY id"
            ).fetchall()
        return [row["id"] for row in rows]

    def document(self, submission_id: int) -> dict[str, Any]:
        with self._lock:
            row = self._db.execute(
                "SELECT document FROM submissions WHERE id = ?", (submission_id,)
            ).fetchone()
        return json.loads(row["document"])

    def finish(self, submission_id: int, verdict: Verdict) -> None:
        """Record the verdict; a verified submission keeps its episodes and drops the raw upload."""
        document = self.document(submission_id)
        with self._lock:
            self._db.execute("BEGIN")
            try:
                if verdict.verified:
                    self._db.executemany(
                        "INSERT INTO episodes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [
                            (
                                submission_id,
                                position,
                                episode["env_id"],
                                episode["task_id"],
                                episode["seed"],
                                int(episode["success"]),
                                episode["score"],
                                episode["prompt_tokens"],
                                episode["completion_tokens"],
                                json.dumps(transcript),
                            )
                            for position, (episode, transcript) in enumerate(
                                zip(document["episodes"], verdict.transcripts, strict=False)
                            )
                        ],
                    )
                self._db.execute(
                    "UPDATE submissions SET status = ?, problems = ?, summary = ?, families = ?,"
                    " document = NULL WHERE id = ?",
                    (
                        "verified" if verdict.verified else "rejected",
                        json.dumps(verdict.problems),
                        json.dumps(verdict.summary) if verdict.verified else None,
                        json.dumps(verdict.families) if verdict.verified else None,
                        submission_id,
                    ),
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def reject(self, submission_id: int, reason: str) -> None:
        """End a submission whose verification failed on the board: rejected, with ``reason``."""
        with self._lock:
            self._db.execute(
                "UPDATE submissions SET status = 'rejected', problems = ?, document = NULL WHERE id = ?",
                (json.dumps([reason]), submission_id),
            )

    def submission(self, submission_id: int) -> dict[str, Any] | None:
        """One submission's row (metadata, summary, problems decoded), or None."""
        with self._lock:
            row = self._db.execute(
                f"SELECT {ROW_COLUMNS} FROM submissions WHERE id = ?", (submission_id,)
            ).fetchone()
        return None if row is None else _decoded(row)

    def episodes(self, submission_id: int) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT position, env_id, task_id, seed, success, score, prompt_tokens, completion_tokens,"
                " transcript FROM episodes WHERE submission_id = ? ORDER BY position",
                (submission_id,),
            ).fetchall()
        return [
            {**dict(row), "success": bool(row["success"]), "transcript": json.loads(row["transcript"])}
            for row in rows
        ]

    def board(self) -> list[dict[str, Any]]:
        """Every verified submission, newest first."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {ROW_COLUMNS} FROM submissions WHERE status = 'verified' ORDER BY id DESC"
            ).fetchall()
        return [_decoded(row) for row in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _decoded(row: sqlite3.Row) -> dict[str, Any]:
    data = dict(row)
    for name in ("problems", "metadata", "summary", "families"):
        data[name] = json.loads(data[name]) if data[name] is not None else None
    return data
