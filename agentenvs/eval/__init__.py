"""Evaluation: play agents on a panel, record their episodes, replay and check them.

==============  ================================================================
module          what lives there
==============  ================================================================
``panel``       the fixed evaluation panels (which tasks and seeds) and digests
``bundle``      the submission bundle format: JSON schemas, validation,
                reading and writing the files
``names``       what a submitted name or version may be (no look-alikes)
``statistics``  the summary with its intervals (Wilson, bootstrap) and the
                one tolerance for recorded numbers (``same_number``)
``episodes``    :class:`~agentenvs.eval.episodes.EpisodeRecord`, one episode
                (the bundle's episode is its JSON form), and ``play_episode``
                for a scripted agent (what ``agentenvs run --out`` writes)
``replay``      the one replay: records re-run in lock-step batches over
                :mod:`agentenvs.vector`, compared to what they claim with the
                one float tolerance (``agentenvs replay``, ``agentenvs eval``'s
                resume, the leaderboard)
``evaluate``    a chat model on a panel: ``agentenvs eval``, resumable
``data_check``  a data folder read through an env's official loader, played by
                the scripted agents (``agentenvs check-data``)
==============  ================================================================

May import: :mod:`agentenvs.agents` (the agents it plays), ``agentenvs.core``
and ``agentenvs.vector`` (the env families through ``gym.make``); it never
imports ``leaderboard`` or ``baselines``, which build on it.
"""
