"""BabyAI on minigrid: ``agentenvs/BabyAI-v0`` (the BALROG task mix) and one id per level.

Registration stays import-light: the level names below are a static copy of
minigrid's ``BabyAI-*`` registry (a test keeps them in step), so registering
never imports minigrid. ``gym.make`` imports it and names the extra to install
(``pip install "agentenvs[babyai]"``) when it is missing.

Lives here: ``env`` (the env), ``describe`` (the text layer), ``tasks``
(levels and seeds per split), ``expert`` (minigrid's bot answering in text).

May import: ``agentenvs.core`` and this package (minigrid only in the
modules ``gym.make`` imports), by the rule every family follows (see
:mod:`agentenvs.core.registration`).
"""

from types import MappingProxyType

from agentenvs.core.registration import EnvEntry

FAMILY = "BabyAI"
EXPERT = "agentenvs.envs.babyai.expert:BabyAIExpert"

MINIGRID_LEVEL_IDS: tuple[str, ...] = (
    "BabyAI-GoToRedBallGrey-v0",
    "BabyAI-GoToRedBall-v0",
    "BabyAI-GoToRedBallNoDists-v0",
    "BabyAI-GoToObj-v0",
    "BabyAI-GoToObjS4-v0",
    "BabyAI-GoToObjS6-v1",
    "BabyAI-GoToLocal-v0",
    "BabyAI-GoToLocalS5N2-v0",
    "BabyAI-GoToLocalS6N2-v0",
    "BabyAI-GoToLocalS6N3-v0",
    "BabyAI-GoToLocalS6N4-v0",
    "BabyAI-GoToLocalS7N4-v0",
    "BabyAI-GoToLocalS7N5-v0",
    "BabyAI-GoToLocalS8N2-v0",
    "BabyAI-GoToLocalS8N3-v0",
    "BabyAI-GoToLocalS8N4-v0",
    "BabyAI-GoToLocalS8N5-v0",
    "BabyAI-GoToLocalS8N6-v0",
    "BabyAI-GoToLocalS8N7-v0",
    "BabyAI-GoTo-v0",
    "BabyAI-GoToOpen-v0",
    "BabyAI-GoToObjMaze-v0",
    "BabyAI-GoToObjMazeOpen-v0",
    "BabyAI-GoToObjMazeS4R2-v0",
    "BabyAI-GoToObjMazeS4-v0",
    "BabyAI-GoToObjMazeS5-v0",
    "BabyAI-GoToObjMazeS6-v0",
    "BabyAI-GoToObjMazeS7-v0",
    "BabyAI-GoToImpUnlock-v0",
    "BabyAI-GoToSeq-v0",
    "BabyAI-GoToSeqS5R2-v0",
    "BabyAI-GoToRedBlueBall-v0",
    "BabyAI-GoToDoor-v0",
    "BabyAI-GoToObjDoor-v0",
    "BabyAI-Open-v0",
    "BabyAI-OpenRedDoor-v0",
    "BabyAI-OpenDoor-v0",
    "BabyAI-OpenDoorDebug-v0",
    "BabyAI-OpenDoorColor-v0",
    "BabyAI-OpenDoorLoc-v0",
    "BabyAI-OpenTwoDoors-v0",
    "BabyAI-OpenRedBlueDoors-v0",
    "BabyAI-OpenRedBlueDoorsDebug-v0",
    "BabyAI-OpenDoorsOrderN2-v0",
    "BabyAI-OpenDoorsOrderN4-v0",
    "BabyAI-OpenDoorsOrderN2Debug-v0",
    "BabyAI-OpenDoorsOrderN4Debug-v0",
    "BabyAI-Pickup-v0",
    "BabyAI-UnblockPickup-v0",
    "BabyAI-PickupLoc-v0",
    "BabyAI-PickupDist-v0",
    "BabyAI-PickupDistDebug-v0",
    "BabyAI-PickupAbove-v0",
    "BabyAI-PutNextLocal-v0",
    "BabyAI-PutNextLocalS5N3-v0",
    "BabyAI-PutNextLocalS6N4-v0",
    "BabyAI-PutNextS4N1-v0",
    "BabyAI-PutNextS5N2-v0",
    "BabyAI-PutNextS5N1-v0",
    "BabyAI-PutNextS6N3-v0",
    "BabyAI-PutNextS7N4-v0",
    "BabyAI-PutNextS5N2Carrying-v0",
    "BabyAI-PutNextS6N3Carrying-v0",
    "BabyAI-PutNextS7N4Carrying-v0",
    "BabyAI-Unlock-v0",
    "BabyAI-UnlockLocal-v0",
    "BabyAI-UnlockLocalDist-v0",
    "BabyAI-KeyInBox-v0",
    "BabyAI-UnlockPickup-v0",
    "BabyAI-UnlockPickupDist-v0",
    "BabyAI-BlockedUnlockPickup-v0",
    "BabyAI-UnlockToUnlock-v0",
    "BabyAI-ActionObjDoor-v0",
    "BabyAI-FindObjS5-v0",
    "BabyAI-FindObjS6-v0",
    "BabyAI-FindObjS7-v0",
    "BabyAI-KeyCorridor-v0",
    "BabyAI-KeyCorridorS3R1-v0",
    "BabyAI-KeyCorridorS3R2-v0",
    "BabyAI-KeyCorridorS3R3-v0",
    "BabyAI-KeyCorridorS4R3-v0",
    "BabyAI-KeyCorridorS5R3-v0",
    "BabyAI-KeyCorridorS6R3-v0",
    "BabyAI-OneRoomS8-v0",
    "BabyAI-OneRoomS12-v0",
    "BabyAI-OneRoomS16-v0",
    "BabyAI-OneRoomS20-v0",
    "BabyAI-MoveTwoAcrossS5N2-v0",
    "BabyAI-MoveTwoAcrossS8N9-v0",
    "BabyAI-Synth-v0",
    "BabyAI-SynthS5R2-v0",
    "BabyAI-SynthLoc-v0",
    "BabyAI-SynthSeq-v0",
    "BabyAI-MiniBossLevel-v0",
    "BabyAI-BossLevel-v0",
    "BabyAI-BossLevelNoUnlock-v0",
)

# Levels agentenvs adds on the same engine (see ``agentenvs.envs.babyai.tasks``).
EXTRA_LEVELS: tuple[str, ...] = ("PickUpSeqGoToLocal",)


def level_name(minigrid_id: str) -> str:
    """``"BabyAI-GoToLocal-v0"`` -> ``"GoToLocal"``."""
    return minigrid_id.removeprefix("BabyAI-").rsplit("-v", 1)[0]


LEVELS: tuple[str, ...] = tuple(level_name(i) for i in MINIGRID_LEVEL_IDS) + EXTRA_LEVELS

_ENTRY_POINT = "agentenvs.envs.babyai.env:BabyAIEnv"

ENVS = (
    EnvEntry(
        name="BabyAI",
        entry_point=_ENTRY_POINT,
        family=FAMILY,
        expert=EXPERT,
        summary="BabyAI grid world (minigrid) as text: the BALROG task mix "
        "(goto, pickup, open, putnext, pick up then go to)",
        extra="babyai",
    ),
    *(
        EnvEntry(
            name=f"BabyAI-{level}",
            entry_point=_ENTRY_POINT,
            family=FAMILY,
            expert=EXPERT,
            summary=f"BabyAI level {level} (minigrid) as text",
            kwargs=MappingProxyType({"level": level}),
            extra="babyai",
            variant_of="BabyAI",
        )
        for level in LEVELS
    ),
)
