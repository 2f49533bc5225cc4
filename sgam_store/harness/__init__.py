"""Harnesses around the store: scenario replay, the description-memory baseline and the
generated retrieval evaluation (`sgam_store.harness.render` draws them for the CLI)."""

from sgam_store.harness.baseline import DescriptionMemory
from sgam_store.harness.evaluation import compare_modes, generate
from sgam_store.harness.scenario import Answer, Scenario, Turn, load_scenario, replay, tally

__all__ = [
    "Answer",
    "DescriptionMemory",
    "Scenario",
    "Turn",
    "compare_modes",
    "generate",
    "load_scenario",
    "replay",
    "tally",
]
