"""Experiments that rerun in minutes on a CPU."""
