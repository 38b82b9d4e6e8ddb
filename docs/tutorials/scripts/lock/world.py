"""The lock: dials from 0 to 9 that start at 0, a hidden code, and a hint per dial."""

from __future__ import annotations

from dataclasses import dataclass, field

LOWEST, HIGHEST = 0, 9


@dataclass
class Lock:
    """Dials and the code that opens them; dials stop at 0 and 9 (no wrap-around)."""

    code: tuple[int, ...]
    dials: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.dials:
            self.dials = [LOWEST] * len(self.code)

    def can_turn(self, dial: int, step: int) -> bool:
        return 0 <= dial < len(self.dials) and LOWEST <= self.dials[dial] + step <= HIGHEST

    def turn(self, dial: int, step: int) -> None:
        """Move one dial by ``step`` (+1 or -1); the caller checks :meth:`can_turn` first."""
        self.dials[dial] += step

    def hint(self, dial: int) -> str:
        """``higher``, ``lower`` or ``set``: where the code's digit lies from the dial's."""
        wanted, shown = self.code[dial], self.dials[dial]
        return "set" if wanted == shown else ("higher" if wanted > shown else "lower")

    def distance(self) -> int:
        """Σ over dials of |code digit − dial|: the fewest turns still needed."""
        return sum(abs(wanted - shown) for wanted, shown in zip(self.code, self.dials, strict=False))

    def is_open(self) -> bool:
        return self.distance() == 0
