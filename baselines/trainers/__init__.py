"""Trainers, one algorithm per module; ``common`` holds what they share."""
