"""The names pages show, in a screener's words, from one place: the heuristics, solvers and stopping rules
each carry their words in ``core`` (``core.strategies``, ``core.solvers``, ``core.stopping``); every page
reads them through here, so a session picker, a table and a caption say the same thing.  The code names
(``near-boundary``, ``lasvm``, ``consecutive:50``) stay in the files, the command line and under Advanced.

Also the names the New session form offers besides ``common``'s lists: the kernels and the ramp solver's
losses.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from core import solvers, stopping, strategies
from core.kernels import KERNEL_NAMES
from core.presets import preset_words
from core.priors import PRIOR
from core.solvers.ramp import LOSSES

#: how items are chosen, in a screener's words, where the code says "heuristic" or "strategy": the New session and
#: New project forms' choice, the Sessions list's column (a session's way), History's and My labels' (an answer's)
PICK_NEXT = "How to pick the next item"
PICKED_BY = "how items are picked"
CHOSEN_BY = "how it was chosen"

#: the team's agreement in words, its statistic's name beside it (the agreement file keeps the names alone)
AGREEMENT_ALL = "Agreement among all members (Fleiss' kappa)"
AGREEMENT_TWO = "agreement between the two (Cohen's kappa)"
KAPPA_MEANING = (
    "Agreement beyond chance: 1 when the answers always match, 0 when they match no more often than chance "
    "would make them, below 0 when less often."
)
#: the plain word beside a kappa (Landis & Koch 1977, "The measurement of observer agreement for categorical
#: data", Biometrics 33(1)): the upper end of each band, and its word; below 0 "poor"
KAPPA_BANDS = ((0.20, "slight"), (0.40, "fair"), (0.60, "moderate"), (0.80, "substantial"), (1.0, "almost perfect"))
KAPPA_SCALE = (
    "The word beside a value follows Landis & Koch (1977): below 0 poor, 0 to 0.20 slight, 0.21 to 0.40 fair, "
    "0.41 to 0.60 moderate, 0.61 to 0.80 substantial, 0.81 to 1 almost perfect."
)


def kappa_strength(value: float | None) -> str:
    """A kappa's plain word on Landis & Koch's (1977) scale (``KAPPA_BANDS``); "" when it is undefined."""
    if value is None:
        return ""
    if value < 0:
        return "poor"
    return next((word for top, word in KAPPA_BANDS if round(value, 2) <= top), KAPPA_BANDS[-1][1])


def kappa_words(value: float | None) -> str:
    """A kappa as the pages show it: three decimals and its word (``kappa_strength``); "–" when undefined."""
    return "–" if value is None else f"{value:.3f} {kappa_strength(value)}"


#: the heuristic of a label marked as known (``app.services.priors``) and of an imported one
OTHER_HEURISTICS = {PRIOR: "marked as known", "imported": "imported from a file"}


class Metric(NamedTuple):
    """A measure of the Compare page: its name in words, what it means in one line, its code name (for engineers,
    under Advanced)."""

    name: str
    meaning: str
    code: str


#: the Compare summary's measures, in words
METRIC_WORDS = {
    "alc": Metric(
        "learning speed",
        "how soon the model learned to rank the items, from 0 (no better than chance) to 1 (as good as with "
        "every item labelled, from the first label on); the mean ± spread over the seeds",
        "ALC (area under the test-AUC learning curve, normalised)",
    ),
    "wtl": Metric(
        "vs random: won/tied/lost",
        "on how many seeds the heuristic learned faster than random picks, as fast, or slower",
        "W / T / L (wins, ties, losses of the ALC against random)",
    ),
    "wss_95": Metric(
        "work saved at 95%",
        "the share of the items left unread once 95% of the positives were found, less the 5% that reading in "
        "random order would save",
        "WSS@95 (work saved over sampling at 95% recall)",
    ),
}


#: the K-class strategies in a screener's words (``target-class`` names its class: ``strategy_words``)
CLASS_STRATEGY_WORDS = {
    "smallest-margin": "Least sure between two classes",
    "least-certain-class": "Least sure class",
    "target-class": "Most likely {target}",
    "random": "Random",
}
#: the multi-label strategies in a screener's words
MULTI_LABEL_STRATEGY_WORDS = {"least-sure-class": "Least sure on any class", "random": "Random"}


#: what each way of picking items does, in a screener's words: the forms' help reads these beside the names above
#: (the two-class ones: the registry's words and meanings, ``core.strategies``), so a name changed in its one place
#: is changed in every list and help
STRATEGY_MEANINGS = strategies.REGISTRY.name_table(lambda e: e.meaning, where=lambda e: bool(e.meaning))
CLASS_STRATEGY_MEANINGS = {
    "smallest-margin": "the item whose two best classes score closest",
    "least-certain-class": "the class the model is least sure of, then the item it is least sure of for that class",
    "target-class": "the item most likely of the class you are looking for, named below (screening for it)",
    "random": "an unbiased sample",
}
MULTI_LABEL_STRATEGY_MEANINGS = {
    "least-sure-class": "the item the model is least sure of on any class",
    "random": "an unbiased sample",
}


def choices_help(meanings: Mapping[str, str], words=None) -> str:
    """A form's help for a choice of how to pick items: each choice's name (``words``: a name's words; the K-class
    and multi-label names by default, "Most likely <class>") and what it does."""
    name = words or (lambda s: strategy_words(s, "<class>"))
    return " ".join(f"{name(s)}: {meaning}." for s, meaning in meanings.items())


def strategy_words(strategy: str, target: str | None = None) -> str:
    """A K-class strategy in a screener's words ("Most likely <class>" for ``target-class``)."""
    words = CLASS_STRATEGY_WORDS.get(strategy) or MULTI_LABEL_STRATEGY_WORDS.get(strategy, strategy)
    return words.format(target=target if target is not None else "(a chosen class)")


def heuristic_words(name: str | None, target: str | None = None) -> str:
    """The heuristic that asked about an item, in words (a strategy, a cold start, the recall check's draws; a
    session's or project's with named classes too, ``target`` the class "Most likely" looks for)."""
    if not name:
        return ""
    if name == stopping.CHECK_STRATEGY:
        return stopping.CHECK_WORDS
    if name in OTHER_HEURISTICS:
        return OTHER_HEURISTICS[name]
    if name not in strategies.REGISTRY and (name in CLASS_STRATEGY_WORDS or name in MULTI_LABEL_STRATEGY_WORDS):
        return strategy_words(name, target)
    return strategies.strategy_words(name)


def strategy_target(params: dict | None) -> str | None:
    """The class a session's or project's "Most likely" strategy looks for (its stored ``params``), or None."""
    return ((params or {}).get("strategy_params") or {}).get("target")


def solver_words(name: str | None) -> str:
    """A solver in words ("the quick model"); a name this version does not know stays as it is."""
    if not name:
        return ""
    return solvers.get(name).label if name in solvers.REGISTRY else str(name)


def model_words(solver: str | None, params: dict | None = None) -> str:
    """The model a session or project runs, in words: a named model of ``core.presets`` (its stored ``params``'
    ``"model"``, "review") by the preset's words, whichever solver learns it on the rows
    (``core.presets.solver_for``: ``dual-cd`` for documents, though ``solver`` says ``ramp``); else the solver's."""
    return preset_words((params or {}).get("model")) or solver_words(solver)


#: the recall check in a screener's words ("random check") and, said once beside it, what it is
CHECK_NAME, CHECK_MEANING = stopping.CHECK_NAME, stopping.CHECK_MEANING

#: what the stopping rules' words are in the model's terms ("items the model is unsure of": inside the margin), for
#: engineers, under Advanced
RULE_TERMS = stopping.RULE_TERMS


def rule_words(rule: str) -> str:
    """A stopping rule in words ("stop after 50 irrelevant in a row")."""
    return stopping.rule_words(rule)


def how_labelled(strategy: str | None, solver: str | None, params: dict | None = None) -> str:
    """A session's or project's heuristic and model in words, for its line in a picker (``params``: its stored
    settings, for the class a "Most likely" strategy looks for)."""
    return ", ".join(w for w in (heuristic_words(strategy, strategy_target(params)), model_words(solver, params)) if w)


__all__ = [
    "CLASS_STRATEGY_MEANINGS",
    "MULTI_LABEL_STRATEGY_MEANINGS",
    "STRATEGY_MEANINGS",
    "choices_help",
    "AGREEMENT_ALL",
    "AGREEMENT_TWO",
    "KAPPA_MEANING",
    "KAPPA_BANDS",
    "KAPPA_SCALE",
    "kappa_strength",
    "kappa_words",
    "CHOSEN_BY",
    "PICK_NEXT",
    "PICKED_BY",
    "CHECK_MEANING",
    "CHECK_NAME",
    "CLASS_STRATEGY_WORDS",
    "KERNEL_NAMES",
    "LOSSES",
    "METRIC_WORDS",
    "MULTI_LABEL_STRATEGY_WORDS",
    "RULE_TERMS",
    "Metric",
    "heuristic_words",
    "how_labelled",
    "model_words",
    "rule_words",
    "solver_words",
    "strategy_target",
    "strategy_words",
]
