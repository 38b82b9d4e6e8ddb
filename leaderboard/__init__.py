"""The agentenvs leaderboard: submissions re-checked by replay, stored in SQLite, shown on a web page.

``leaderboard.verify``  replay verification of a submission document
``leaderboard.store``   the SQLite store (WAL)
``leaderboard.pages``   the board and submission pages (HTML)
``leaderboard.app``     the FastAPI app (upload, board, transcripts)
``leaderboard.seed``    the random and expert agents of every env, as submissions
``leaderboard.cli``     the ``leaderboard`` command

May import: ``agentenvs.core``, :mod:`agentenvs.agents` and
:mod:`agentenvs.eval` (bundles, panels, replay); nothing in agentenvs imports
it.
"""
