"""When can the analyst stop?  Stopping rules and an estimate of the positives still unlabelled.

Every rule here is a pure function of a session's history: the labels in the
order they were given (+1 / -1; skips are not labels), which of them were random
draws of a recall check, and a few read-outs of the model (items inside the
margin, agreement of successive models on a stop set).  No rule reads the true
labels of unlabelled items.  Each returns a :class:`RuleState`: whether the
analyst may stop, and the state in words.

Rules (``RULE_NAMES``; ``parse_rules("statistical,knee,consecutive:50")``):

``margin``
    Schohn & Cohn (2000), "Less is more: active learning with support vector
    machines": stop when no unlabelled item lies inside the margin (|f(x)| < 1).
    Vlachos (2008), "A stopping criterion for active learning", studies such
    confidence-based criteria on unlabelled data.  A tolerance (items allowed
    inside the margin) is a parameter; the rule waits for both classes.
``stability``
    Bloodgood & Vijay-Shanker (2009), "A method for stopping active learning
    based on stabilizing predictions and the need for user-adjustable
    stopping": predictions of successive models on a fixed stop set of
    unlabelled items (drawn once, never labelled for the purpose); stop when
    Cohen's kappa between successive models, averaged over the last ``window``
    (3) comparisons, reaches ``threshold`` (0.99).  Models are compared every
    ``step`` labels (default 10): one label moves an online SVM too little for
    the agreement of single-label successors to mean anything.  Kappa is
    undefined when both models predict one class only; such a comparison does
    not count towards the window.
``knee``
    Cormack & Grossman (2016), "Engineering quality and reliability in
    technology-assisted review" (SIGIR): the knee of the gain curve (positives
    found against labels) at s labels is the point farthest from the chord from
    (0, 0) to (s, relret(s)); its slope ratio is
    rho = (relret(i) / i) / ((relret(s) - relret(i) + 1) / (s - i)); stop when
    rho >= 156 - min(relret(s), 150), and (the minimum-effort guard) only once
    at least ``min_labels`` (150) labels were given.  The threshold is 6 once
    150 positives have been found and higher before, which keeps the rule from
    firing on a curve with few positives; since rho < s - knee, that threshold
    alone already needs at least 156 labels, so the guard binds only when
    ``min_labels`` is raised above that.
``consecutive:N``
    ASReview LAB's rule: N negative labels in a row since the last positive
    (ASReview's simulation stopper also fires on a run before any positive;
    here the rule waits for the first positive).
``statistical``
    Callaghan & Müller-Hansen (2020), "Statistical stopping criteria for
    automated screening in systematic reviews" (Systematic Reviews 9:273).
    After the heuristic phase the analyst labels items drawn at random from the
    unlabelled rest (the urn: N_s items when the check started, r_AL positives
    found before it).  With k positives among n draws, K_tar =
    floor((r_AL + k) / target - r_AL) + 1 is the fewest positives the urn must
    have held for recall to be below the target, and the hypergeometric
    p-value P(X <= k | N_s, K_tar, n) (``scipy.stats.hypergeom``) tests
    "recall < target"; the rule stops when it is below the level.  Random
    draws are labels like any other.  Three choices of ours make the stated
    confidence hold for the whole session, not only for one test:
    (1) the paper tests after every draw, and repeated at one level that test
    stops below the target more often than the level says (8% instead of 5%
    for an urn of 2,600 items with 340 positives found, computed exactly by
    :func:`sequential_error`), so the level of every look is lowered until the
    exact worst case over what the urn may hold is within the check's budget
    (:func:`check_design`); (2) a check ends, and the session goes back to the
    heuristic, when its draws show recall below the target (the k-th positive
    came so early that "recall >= target" is rejected at 1 - confidence):
    many positives are left, and the heuristic finds them faster than random
    draws; (3) the j-th check of a session may spend 0.9 (j = 1), then
    0.1 / 2^(j-1) of 1 - confidence (:func:`check_alpha`), which sum to 1.
    When a check starts does not touch the guarantee (the start is decided
    before any of its draws, and the test holds for any urn), only its cost:
    about N_s ln(1/level) / K_tar draws, more for every positive drawn, and a
    failed check leaves the next one a smaller budget.  Any check is suggested
    after ``patience`` * N_u / K_tar labels without a positive (N_u items
    unlabelled): the mean gap between positives if only K_tar were left, in
    random order.  The first check is suggested sooner, at the knee of the gain
    curve (Cormack & Grossman 2016, as the ``knee`` rule: slope ratio
    rho >= 156 - min(relret, 150), at least 150 labels), once the heuristic has
    gone ``KNEE_RUN_SHARE`` (half) of that run without a positive, or, without
    that wait, once more heuristic labels no longer pay (:func:`waiting_pays`,
    idea (1) of issue 33: a check started now needs about b_0 = f N_u draws,
    and each positive of the urn it meets, with probability about f, about
    ``EXTRA_DRAWS_PER_POSITIVE`` * N_u / K_tar more; a heuristic label costs 1
    and saves f plus that times the yield of the last ``YIELD_WINDOW`` labels);
    while fewer than ``FEW_POSITIVES`` positives are found (the knee's threshold
    is then above 6 and on a pool with 2% positives it never came), half the
    run alone suggests it.  All of it reads only the labels already given.
    The knee alone fired too early on simulated rankings (checks that failed);
    :func:`probable_labels` gives the draws a check will probably still need.
``statistical-knee``
    The same test; the first check starts at the knee after half the run, any
    check after the whole run (the default before the yield start).
``statistical-run``
    The same test; every check, the first too, is suggested only after the
    whole run of ``patience`` * N_u / K_tar labels without a positive (the
    rule as it was before the knee start).

:func:`estimate_remaining` gives the positives still unlabelled with an
interval and the recall it implies, never above the items still unlabelled:
from the random draws of the latest check when there are any (unbiased, an
exact hypergeometric interval), otherwise from the model (Platt-scaled
decision values summed over the unlabelled items, once enough of both classes
were scored when asked), and then labelled as model-based: the labelled items
were not chosen at random, so that estimate carries no guarantee (and none
is given when most labels were asked by ``largest-positive``, under which it
ran high in simulation).  While neither can be had it says "cannot estimate
yet" and why, not a number.
Shares are written to two significant digits.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from scipy import special, stats

from core.agreement import cohen_kappa
from core.formatting import count, for_people
from core.metrics import roc_auc
from core.strategies import strategy_words

RULE_NAMES = ("statistical", "statistical-knee", "statistical-run", "knee", "margin", "stability", "consecutive")
#: when each statistical rule suggests starting a recall check (the test is the same)
CHECK_STARTS = {"statistical": "yield", "statistical-knee": "knee", "statistical-run": "run"}
#: at the knee, the first check also waits for this share of the run ``statistical-run`` waits for
KNEE_RUN_SHARE = 0.5
#: ``statistical``: labels over which the heuristic's recent yield (positives per label) is measured
YIELD_WINDOW = 150
#: ``statistical``: further draws a positive among a check's draws costs, in units of N_u / K_tar (b_1 - b_0)
EXTRA_DRAWS_PER_POSITIVE = 1.55
#: ``statistical``: below this many positives found the knee's threshold (156 - found) is above 6 and may never
#: be reached; half the run alone then suggests the first check
FEW_POSITIVES = 150
DEFAULT_RULES = "statistical,knee,margin,stability,consecutive:50"
DEFAULT_TARGET_RECALL = 0.95
DEFAULT_CONFIDENCE = 0.95
#: provenance (the label's heuristic) of an item drawn at random for the statistical rule's check
CHECK_STRATEGY = "random (recall check)"
#: each rule in a screener's words (the app shows these; the names stay for the settings under Advanced, the
#: files and the command line); ``rule_words`` fills in a rule's number
RULE_WORDS = {
    "statistical": "a random check shows you found enough",
    "statistical-run": "a random check after irrelevant in a row",
    "statistical-knee": "a random check once finding levels off",
    "knee": "relevant items found level off",
    "margin": "the model is sure of every item left",
    "stability": "the model has stopped changing",
    "consecutive": "stop after {n} irrelevant in a row",
}
#: the recall check in a screener's words (the app's buttons and messages say "random check"), and what it is, said
#: next to it once on the stopping panel; "recall check" stays its name in the files and the design notes
CHECK_NAME = "random check"
CHECK_MEANING = (
    "Random check: a check by random sample that you found enough (a recall check): items drawn at random "
    "from those not yet labelled, which you label as any other, until they show with the stated confidence "
    "that you found at least the target share of the positives."
)
#: the words of the recall check's random draws, as the heuristic that asked
CHECK_WORDS = "drawn at random to check you found enough"
#: knee rule: labels before the rule may fire (Cormack & Grossman's minimum effort)
KNEE_MIN_LABELS = 150
#: stability rule: stop-set size, labels between compared models, comparisons averaged, kappa to reach
STOP_SET_SIZE = 2000
STABILITY_STEP = 10
STABILITY_WINDOW = 3
STABILITY_THRESHOLD = 0.99
#: the rules' messages say the model's terms in words (``RULE_WORDS``' readers are screeners); what each of those
#: words is in the model's terms, for engineers (the Label page's Advanced)
RULE_TERMS = {
    "items the model is unsure of": "the unlabelled items inside the margin, |f(x)| < 1 (the margin rule)",
    "agreement between the last two models": "Cohen's kappa of their predictions (the stability rule)",
    "a fixed set of check items": (
        f"the stability rule's stop set, up to {STOP_SET_SIZE:,} pool items drawn once at random"
    ),
}


# --------------------------------------------------------------------------- rule names


@dataclass(frozen=True)
class RuleSpec:
    """A rule and its parameter (``consecutive:N`` takes N; ``margin:T`` a tolerance)."""

    name: str
    param: int | None = None

    def __str__(self) -> str:
        return self.name if self.param is None else f"{self.name}:{self.param}"


def rule_words(rule: str | RuleSpec) -> str:
    """A rule in a screener's words: ``consecutive:50`` -> "stop after 50 irrelevant in a row"; a name this
    version does not know stays as it is."""
    name, _, param = str(rule).partition(":")
    words = RULE_WORDS.get(name.strip())
    if words is None:
        return str(rule)
    if "{n}" in words:
        return words.format(n=param or "N")
    return words + (f" (tolerance {param})" if param else "")


def parse_rules(rules: str | Iterable[str | RuleSpec]) -> list[RuleSpec]:
    """``"statistical,knee,margin,stability,consecutive:50"`` -> rule specs (order kept, repeats refused)."""
    items = [r.strip() for r in rules.split(",")] if isinstance(rules, str) else list(rules)
    out: list[RuleSpec] = []
    for item in items:
        if isinstance(item, RuleSpec):
            spec = item
        elif not item:
            continue
        else:
            name, _, param = str(item).partition(":")
            name = name.strip()
            if name not in RULE_NAMES:
                raise ValueError(
                    f"unknown stopping rule {item!r}; choose from {', '.join(RULE_NAMES)} "
                    "(consecutive:N with N a whole number, e.g. consecutive:50)"
                )
            if name == "consecutive" and not param:
                raise ValueError("consecutive needs the number of negatives in a row, e.g. consecutive:50")
            if param and name not in ("consecutive", "margin"):
                raise ValueError(f"the {name} rule takes no parameter, got {item!r}")
            value = None
            if param:
                try:
                    value = int(param)
                except ValueError:
                    raise ValueError(f"{item!r}: {param!r} is not a whole number") from None
                if value < (1 if name == "consecutive" else 0):
                    raise ValueError(f"{item!r}: the number must be at least {1 if name == 'consecutive' else 0}")
            spec = RuleSpec(name, value)
        if str(spec) in {str(s) for s in out}:
            raise ValueError(f"the stopping rule {spec} is listed twice")
        out.append(spec)
    if not out:
        raise ValueError("give at least one stopping rule")
    return out


def check_target(target_recall: float, confidence: float) -> tuple[float, float]:
    """Both as floats strictly between 0 and 1, or a ValueError naming the bad one."""
    values = []
    for name, value in (("target recall", target_recall), ("confidence", confidence)):
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"the {name} must be a number between 0 and 1, not {value!r}") from None
        if not 0.0 < v < 1.0:
            raise ValueError(f"the {name} must lie strictly between 0 and 1, not {value!r}")
        values.append(v)
    return values[0], values[1]


# --------------------------------------------------------------------------- rule results


@dataclass(frozen=True)
class RuleState:
    """One rule's verdict on a session: may the analyst stop, and why, in words."""

    rule: str
    stop: bool
    message: str
    value: float | None = None  # the rule's statistic (items in the margin, slope ratio, kappa, p-value, run)
    needed: int | None = None  # labels the rule still needs at least (random draws for statistical)


def _labels(labels) -> np.ndarray:
    y = np.asarray(labels, dtype=np.int64).reshape(-1)
    if y.size and not np.all(np.abs(y) == 1):
        raise ValueError("labels must be +1 or -1 (skips are not labels)")
    return y


def _both_classes(y: np.ndarray) -> bool:
    return bool(np.any(y > 0) and np.any(y < 0))


def margin_rule(n_in_margin: float, labels, *, tolerance: int = 0) -> RuleState:
    """Schohn & Cohn (2000): stop when at most ``tolerance`` unlabelled items lie inside the margin."""
    y = _labels(labels)
    name = "margin" if not tolerance else f"margin:{tolerance}"
    if not _both_classes(y):
        return RuleState(name, False, f"{name}: waits for a positive and a negative label")
    if n_in_margin is None or not np.isfinite(n_in_margin):
        return RuleState(name, False, f"{name}: not tracked (the pool is too large to keep every score current)")
    count = int(n_in_margin)
    items = "item" if count == 1 else "items"
    if count <= tolerance:
        said = "no unlabelled item" if count == 0 else f"{count:,} unlabelled {items} (tolerance {tolerance})"
        return RuleState(name, True, f"{name}: {said} the model is unsure of — you can stop", value=count)
    return RuleState(name, False, f"{name}: {count:,} unlabelled {items} the model is unsure of", value=count)


def consecutive_rule(labels, n: int) -> RuleState:
    """ASReview LAB's rule: ``n`` negatives in a row since the last positive."""
    y = _labels(labels)
    name = f"consecutive:{n}"
    if not np.any(y > 0):
        return RuleState(name, False, f"{name}: waits for the first positive", value=0, needed=None)
    run = int(len(y) - 1 - np.flatnonzero(y > 0)[-1])
    if run >= n:
        return RuleState(
            name,
            True,
            f"{name}: {count(run, 'negative')} in a row since the last positive — you can stop",
            value=run,
            needed=0,
        )
    return RuleState(
        name,
        False,
        f"{name}: {count(run, 'negative')} in a row since the last positive (stops at {n})",
        value=run,
        needed=n - run,
    )


def gain_curve(labels) -> np.ndarray:
    """Positives found after each label: relret(1..s)."""
    return np.cumsum(_labels(labels) > 0)


def knee_point(gain) -> int | None:
    """The knee of a gain curve: the label count i (1..s-1) farthest above the chord from (0, 0) to (s, relret(s)).

    The distance of (i, relret(i)) from that line is proportional to
    relret(i) - i * relret(s) / s; the largest wins (the first of equals).
    Same point as Kneedle (Satopää et al. 2011) on the curve scaled to the unit square.
    """
    g = np.asarray(gain, dtype=np.float64)
    s = len(g)
    if s < 2 or g[-1] <= 0:
        return None
    i = np.arange(1, s)  # candidate knees; the last point has no slope after it
    above = g[:-1] - i * (g[-1] / s)
    k = int(np.argmax(above))
    return int(i[k]) if above[k] > 0 else None


def knee_rule(labels, *, min_labels: int = KNEE_MIN_LABELS, pool_size: int | None = None) -> RuleState:
    """Cormack & Grossman (2016) knee method with the adjusted threshold and minimum effort (on a pool of
    ``pool_size`` items smaller than the minimum effort it cannot fire before the end, and says so)."""
    g = gain_curve(labels)
    s, relret = len(g), int(g[-1]) if len(g) else 0
    threshold = 156 - min(relret, 150)
    if relret == 0:
        return RuleState("knee", False, "knee: waits for the first positive")
    knee = knee_point(g)
    if knee is None:
        return RuleState(
            "knee",
            False,
            f"knee: no knee in the gain curve yet ({relret:,} positives in {s:,} labels)",
            needed=max(0, min_labels - s) or None,
        )
    rho = (g[knee - 1] / knee) / ((relret - g[knee - 1] + 1) / (s - knee))  # slope before / slope after
    # (the slope ratio, in words: positives per label before the knee over those after it)
    if rho >= 1:
        said = f"positives came {rho:.1f}× as often before label {knee:,} as after it; it stops at {threshold}×"
    else:
        # (below 1 only through the rule's adjustment, one more positive counted after the knee)
        said = (
            f"finding has not slowed after label {knee:,}; it stops when positives came {threshold}× as often "
            "before a label as after it"
        )
    if pool_size is not None and min_labels > pool_size:
        return RuleState(
            "knee",
            False,
            f"knee: {said}, after at least {min_labels:,} labels: more than the {pool_size:,} items of the pool, so "
            "it cannot stop before every item is labelled",
            value=float(rho),
        )
    if s < min_labels:
        return RuleState(
            "knee",
            False,
            f"knee: {said}, after at least {min_labels:,} labels ({min_labels - s:,} more)",
            value=float(rho),
            needed=min_labels - s,
        )
    if rho >= threshold:
        return RuleState("knee", True, f"knee: {said} — you can stop", value=float(rho), needed=0)
    return RuleState("knee", False, f"knee: {said}", value=float(rho))


# --------------------------------------------------------------------------- stability


def cohens_kappa(a, b) -> float:
    """Cohen's kappa between two binary predictions (NaN when both predict one and the same class only).

    ``core.agreement.cohen_kappa`` of the signs (> 0), its undefined ``None`` as NaN.
    """
    a = np.asarray(a).reshape(-1) > 0
    b = np.asarray(b).reshape(-1) > 0
    if len(a) != len(b):
        raise ValueError(f"{len(a)} predictions against {len(b)}")
    value = cohen_kappa(a, b).value
    return float("nan") if value is None else value


def stop_set(n_items: int, seed: int, size: int = STOP_SET_SIZE) -> np.ndarray:
    """The stability rule's fixed stop set: ``size`` pool items drawn once at random (sorted)."""
    rng = np.random.default_rng([int(seed), 0x5709])
    size = min(int(size), int(n_items))
    return np.sort(rng.choice(int(n_items), size=size, replace=False)).astype(np.intp)


@dataclass
class StabilityTracker:
    """Predictions of the model on the stop set every ``step`` labels (the stability rule's history).

    ``record(n_labels, scores)`` after a label brings the count to a multiple
    of ``step`` (scores: f(x) on the stop set); ``forget_after(n)`` after an
    undo.  Stored as packed bits (``to_arrays`` / ``from_arrays``: plain arrays).
    """

    stop_set: np.ndarray
    step: int = STABILITY_STEP
    checkpoints: dict[int, np.ndarray] = field(default_factory=dict)

    def due(self, n_labels: int) -> bool:
        return n_labels > 0 and n_labels % self.step == 0

    def record(self, n_labels: int, scores) -> None:
        s = np.asarray(scores, dtype=np.float64).reshape(-1)
        if len(s) != len(self.stop_set):
            raise ValueError(f"{len(s)} scores for a stop set of {len(self.stop_set)} items")
        self.checkpoints[int(n_labels)] = s >= 0

    def forget_after(self, n_labels: int) -> None:
        for k in [k for k in self.checkpoints if k > n_labels]:
            del self.checkpoints[k]

    def kappas(self) -> list[tuple[int, float]]:
        """(labels, kappa with the model ``step`` labels before) for each pair of checkpoints ``step`` apart."""
        keys = sorted(self.checkpoints)
        return [
            (k, cohens_kappa(self.checkpoints[k - self.step], self.checkpoints[k]))
            for k in keys
            if k - self.step in self.checkpoints
        ]

    def to_arrays(self) -> dict[str, np.ndarray]:
        keys = sorted(self.checkpoints)
        n_bytes = (len(self.stop_set) + 7) // 8  # (no checkpoint yet: 0 rows of that width)
        bits = np.array([np.packbits(self.checkpoints[k]) for k in keys], dtype=np.uint8).reshape(len(keys), n_bytes)
        return {
            "stop_set": np.asarray(self.stop_set, dtype=np.int64),
            "at": np.asarray(keys, dtype=np.int64),
            "bits": bits,
            "step": np.asarray([self.step], dtype=np.int64),
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> StabilityTracker:
        stop = np.asarray(arrays["stop_set"], dtype=np.intp)
        tracker = cls(stop_set=stop, step=int(np.asarray(arrays["step"]).reshape(-1)[0]))
        for k, row in zip(np.asarray(arrays["at"]).tolist(), np.asarray(arrays["bits"], dtype=np.uint8), strict=True):
            tracker.checkpoints[int(k)] = np.unpackbits(row)[: len(stop)].astype(bool)
        return tracker


def stability_rule(
    kappas: Sequence[tuple[int, float]],
    *,
    window: int = STABILITY_WINDOW,
    threshold: float = STABILITY_THRESHOLD,
    step: int = STABILITY_STEP,
    stop_set_size: int | None = None,
) -> RuleState:
    """Bloodgood & Vijay-Shanker (2009): mean kappa of the last ``window`` successive comparisons >= ``threshold``."""
    on = f" on a fixed set of {stop_set_size:,} check items" if stop_set_size else ""
    recent = list(kappas)[-window:]
    defined = [k for _, k in recent if np.isfinite(k)]
    if len(recent) < window or len(defined) < window:
        have = len(defined)
        return RuleState(
            "stability",
            False,
            f"stability: {have} of the {window} comparisons of successive models it averages "
            f"(one every {step} labels{on})",
            needed=(window - have) * step,
        )
    mean = float(np.mean(defined))
    said = (
        f"stability: agreement between the last two models{on}, mean of the last {window} comparisons: "
        f"{mean:.3f}; stops at {threshold:g}"
    )
    if mean >= threshold:
        return RuleState("stability", True, said + " — you can stop", value=mean, needed=0)
    return RuleState("stability", False, said, value=mean)


# --------------------------------------------------------------------------- statistical


#: share of 1 - confidence the first check of a session may spend (most sessions need one check)
FIRST_CHECK_SHARE = 0.9


def check_alpha(check_number: int, confidence: float) -> float:
    """Error budget of the j-th recall check of a session, as a share of 1 - confidence.

    0.9 for the first, then 0.1 / 2^(j-1): 0.05, 0.025, ... (the shares sum to 1), so all
    the checks of a session together stop below the target with probability at most 1 - confidence.
    """
    if check_number < 1:
        raise ValueError("checks are numbered from 1")
    share = FIRST_CHECK_SHARE if check_number == 1 else (1.0 - FIRST_CHECK_SHARE) / 2 ** (check_number - 1)
    return (1.0 - float(confidence)) * share


@functools.lru_cache(maxsize=65536)
def k_target(found_before: int, positives_drawn: int, target_recall: float) -> int:
    """K_tar: the fewest positives the urn must have held for recall (r_AL + k) / (r_AL + K) < target.

    floor((r_AL + k) / target - r_AL) + 1, in exact rational arithmetic (0.95 is 19/20 here, so
    19 positives found give K_tar = 2, not a rounding's 1).
    """
    tau = Fraction(str(float(target_recall)))
    return math.floor(Fraction(found_before + positives_drawn) / tau - found_before) + 1


def hypergeometric_p_value(
    draws: int, positives_drawn: int, urn: int, found_before: int, target_recall: float
) -> float:
    """P(X <= k) for X ~ Hypergeom(urn, K_tar, draws): the p-value of "recall < target" (Callaghan & Müller-Hansen)."""
    big_k = k_target(found_before, positives_drawn, target_recall)
    if big_k > urn:  # even an urn of positives only would leave recall at or above the target
        return 0.0
    return float(stats.hypergeom.cdf(positives_drawn, urn, big_k, draws))


def pass_draws(urn: int, found_before: int, positives: int, target_recall: float, level: float | tuple) -> int:
    """b_k: the fewest draws at which ``positives`` (k) positives among them reject "recall < target" (p < level)."""
    return int(_pass_bounds(urn, found_before, target_recall, level, positives)[positives])


@functools.lru_cache(maxsize=1024)
def _pass_bounds(urn: int, before: int, target: float, level: float | tuple, k_max: int) -> np.ndarray:
    """b_0..b_k_max (non-decreasing), by a bisection over n vectorised across k.

    ``level``: one level for every k, or ``("union", budget)`` for budget * 6 / (pi^2 (k + 1)^2) with k positives.
    """
    ks = np.arange(k_max + 1)
    big = np.array([k_target(before, int(k), target) for k in ks])
    levels = _levels(level, k_max)
    immediate = big > urn  # recall stays at the target whatever the urn holds: k draws suffice
    low, high = ks.copy(), np.full(len(ks), int(urn))
    while np.any(low < high):  # smallest n in [k, urn] with cdf(k; urn, K_tar(k), n) < level (it falls with n)
        mid = (low + high) // 2
        p = np.where(immediate, 0.0, stats.hypergeom.cdf(ks, urn, np.minimum(big, urn), mid))
        ok = p < levels
        high = np.where(ok, mid, high)
        low = np.where(ok, low, mid + 1)
    out = np.maximum.accumulate(low)
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=1024)
def _fail_bounds(urn: int, before: int, target: float, beta: float, k_max: int) -> np.ndarray:
    """g_0..g_k_max: the k-th positive drawn at or before draw g_k shows recall < target at level beta
    (P(X >= k | K_tar(k) - 1) < beta: the most positives an urn may hold with recall still at the target); -1: never."""
    ks = np.arange(1, k_max + 1)
    big = np.minimum(np.array([k_target(before, int(k), target) - 1 for k in ks]), urn)
    possible = stats.hypergeom.sf(ks - 1, urn, big, ks) < beta
    low, high = ks.copy(), np.full(len(ks), int(urn))
    while np.any(low < high):  # largest n in [k, urn] with sf < beta (it rises with n)
        mid = (low + high + 1) // 2
        ok = stats.hypergeom.sf(ks - 1, urn, big, mid) < beta
        low = np.where(ok, mid, low)
        high = np.where(ok, high, mid - 1)
    out = np.concatenate([[-1], np.where(possible, low, -1)])
    out.setflags(write=False)
    return out


def _levels(level: float | tuple, k_max: int) -> np.ndarray:
    """The level of the look at each number of positives 0..k_max (see ``_pass_bounds``)."""
    if isinstance(level, tuple):
        budget = float(level[1])
        return budget * 6.0 / (math.pi**2 * (np.arange(k_max + 1) + 1.0) ** 2)
    return np.full(k_max + 1, float(level))


def _largest_level(before: int, big_k: int, target: float) -> int:
    """J(K): the largest number of drawn positives k with K_tar(k) <= K (stops at levels 0..J miss the target)."""
    j = 0
    while k_target(before, j + 1, target) <= big_k:
        j += 1
    return j


def _stop_paths(n: int, passes: dict, fails: dict, dist: np.ndarray, error: np.ndarray, top: np.ndarray) -> None:
    """At draw n: paths that pass (an error where K >= K_tar(j)) or go back leave ``dist`` (in place)."""
    for j in passes.get(n, ()):
        error += np.where(top >= j, dist[:, : j + 1].sum(axis=1), 0.0)
        dist[:, : j + 1] = 0.0
    for j in fails.get(n, ()):
        dist[:, j:] = 0.0


def sequential_error(
    urn: int, found_before: int, target_recall: float, level: float | tuple, beta: float, width: int = 48
) -> tuple[float, int | None]:
    """The largest probability, over the positives K the urn may hold, that a check stops with recall below target.

    The check draws without replacement; after n draws with k positives it
    passes when n >= b_k (the hypergeometric test at ``level``, per k when a
    tuple) and goes back to the heuristic when the k-th positive came at or
    before draw g_k (recall < target shown at ``beta``).  For each K the
    distribution of the positives drawn is carried draw by draw (a positive
    comes with probability (K - x) / (urn - n)), for a batch of K at once;
    a pass at level k is an error when K >= K_tar(k).  K runs from K_tar(0)
    (below it no stop misses the target) until the error has fallen to a
    thousandth of the budget's scale and keeps falling.  Returns (worst error, its K).
    """
    k0 = k_target(found_before, 0, target_recall)
    if k0 > urn:
        return 0.0, None
    worst, arg = 0.0, None
    start = k0
    while start <= urn:
        ks = np.arange(start, min(start + width, urn + 1))
        error = _errors(urn, found_before, target_recall, level, beta, ks)
        k = int(np.argmax(error))
        if error[k] > worst:
            worst, arg = float(error[k]), int(ks[k])
        tail = error[-8:]
        if len(tail) and tail[-1] < 1e-3 * max(worst, 1e-3) and np.all(np.diff(tail) <= 0):
            break
        start += width
    return worst, arg


def _errors(
    urn: int, found_before: int, target_recall: float, level: float | tuple, beta: float, ks: np.ndarray
) -> np.ndarray:
    """The probability that a check stops below the target, for each number ``ks`` of positives in the urn."""
    ks = np.asarray(ks, dtype=np.int64)
    top = np.array([_largest_level(found_before, int(k), target_recall) for k in ks])
    big_j = int(top.max())
    b = _pass_bounds(urn, found_before, target_recall, level, big_j)
    g = _fail_bounds(urn, found_before, target_recall, beta, big_j)
    passes: dict[int, list[int]] = {}
    fails: dict[int, list[int]] = {}
    for j in range(big_j + 1):
        passes.setdefault(int(b[j]), []).append(j)
        if j and g[j] >= 0:
            fails.setdefault(int(g[j]), []).append(j)
    dist = np.zeros((len(ks), big_j + 1))
    dist[:, 0] = 1.0
    error = np.zeros(len(ks))
    x = np.arange(big_j + 1)[None, :]
    positives = ks[:, None].astype(np.float64)

    _stop_paths(0, passes, fails, dist, error, top)
    for n in range(int(b[big_j])):
        moved = dist * np.clip((positives - x) / (urn - n), 0.0, 1.0)
        dist -= moved
        dist[:, 1:] += moved[:, :-1]  # beyond the largest level a path can no longer miss: dropped
        _stop_paths(n + 1, passes, fails, dist, error, top)
    return error


#: largest urn whose check level is calibrated by :func:`sequential_error` (larger: per-draw-count union bound)
CALIBRATE_MAX_URN = 20_000


@dataclass(frozen=True)
class CheckDesign:
    """How one recall check decides: its error budget, the level of each look, and how that level was set."""

    urn: int
    found_before: int
    target_recall: float
    budget: float  # the check's share of 1 - confidence
    beta: float  # level of the test that sends the session back to the heuristic
    method: str  # "calibrated" or "union bound"
    level: float | tuple  # one level for every look (calibrated), or ("union", budget): one per positives drawn
    worst_error: float  # the largest chance of stopping below the target, over what the urn may hold

    def level_at(self, k: int) -> float:
        return float(_levels(self.level, k)[k])

    def pass_draws(self, k: int) -> int:
        return pass_draws(self.urn, self.found_before, k, self.target_recall, self.level)

    def fail_draws(self, k: int) -> int:
        """g_k (-1 when k positives can never show recall below the target)."""
        return (
            int(_fail_bounds(self.urn, self.found_before, self.target_recall, self.beta, max(k, 1))[k])
            if k >= 1
            else -1
        )


@functools.lru_cache(maxsize=256)
def check_design(urn: int, found_before: int, target_recall: float, budget: float, beta: float) -> CheckDesign:
    """The design of a check that may stop below the target with probability at most ``budget``.

    Callaghan & Müller-Hansen test after every draw at the same level; taken
    that way the repeated test stops below the target more often than its
    level (here 8% at a level of 5% for an urn of 2,600 with 340 positives
    found).  So the level of the looks is lowered until :func:`sequential_error`
    (exact) is within ``budget``.  Urns above ``CALIBRATE_MAX_URN`` use a union
    bound instead (level budget * 6 / (pi^2 (k + 1)^2) with k positives drawn).
    """
    if urn > CALIBRATE_MAX_URN:
        return CheckDesign(urn, found_before, target_recall, budget, beta, "union bound", ("union", budget), budget)
    level, error = budget, sequential_error(urn, found_before, target_recall, budget, beta)[0]
    tried = 0
    while error > budget and tried < 30:  # the error grows about in proportion to the level
        level *= max(0.5, min(0.98, 0.98 * budget / error))
        error = sequential_error(urn, found_before, target_recall, level, beta)[0]
        tried += 1
    if error > budget:
        raise ArithmeticError(f"no level keeps the check's error within {budget} (urn {urn})")
    return CheckDesign(urn, found_before, target_recall, budget, beta, "calibrated", level, error)


@dataclass(frozen=True)
class CheckRun:
    """One recall check: where it started and what its draws found."""

    start: int  # labels before it
    draws: int
    positives: int
    urn: int  # unlabelled items when it started
    found_before: int  # positives labelled before it
    failed_at: int | None = None  # draws after which it showed recall < target (the session went back)


def check_runs(
    labels,
    drawn,
    check_starts: Sequence[int],
    pool_size: int,
    target_recall: float = DEFAULT_TARGET_RECALL,
    confidence: float = DEFAULT_CONFIDENCE,
) -> list[CheckRun]:
    """The recall checks of a history: each start's consecutive random draws (up to the next start).

    A check ends when it shows recall below the target (its k-th positive came
    at or before draw g_k); draws after that (the app goes back to the
    heuristic at once) are not part of it.
    """
    y, d = _labels(labels), np.asarray(drawn, dtype=bool).reshape(-1)
    if len(d) != len(y):
        raise ValueError(f"{len(y)} labels but {len(d)} draw flags")
    starts = sorted({int(s) for s in check_starts if 0 <= int(s) <= len(y)})
    found = np.concatenate([[0], np.cumsum(y > 0)])
    beta = 1.0 - float(confidence)
    runs = []
    for k, start in enumerate(starts):
        bound = starts[k + 1] if k + 1 < len(starts) else len(y)  # the next check's draws are its own
        urn, before = int(pool_size) - start, int(found[start])
        end, positives, failed = start, 0, None
        while end < bound and d[end]:
            end += 1
            if y[end - 1] > 0:
                positives += 1
                g = int(_fail_bounds(urn, before, target_recall, beta, positives)[positives])
                if end - start <= g:
                    failed = end - start
                    break
        runs.append(
            CheckRun(
                start=start, draws=end - start, positives=positives, urn=urn, found_before=before, failed_at=failed
            )
        )
    return runs


@dataclass(frozen=True)
class RecallCheck:
    """The statistical rule's view of a session (see :func:`recall_check`)."""

    phase: str  # "heuristic", "checking", "passed" or "failed" (the current or the last check)
    checking: bool  # the session is drawing random items now
    check_number: int  # j of the current (or next) check
    alpha: float  # its error budget
    urn: int  # unlabelled items when it started (now, for a check not started yet)
    found_before: int
    k_target: int
    draws: int
    positives_drawn: int
    suggest: bool  # the heuristic has stalled: starting a check is suggested
    gap: int  # labels since the last positive
    gap_needed: int | None  # gap at which a check is suggested
    target_recall: float
    confidence: float
    last: CheckRun | None = None  # the latest check with draws
    design: CheckDesign | None = None  # of the current check (None before one is on)
    start: str = "yield"  # when a check is suggested (see :func:`check_suggested`)
    knee: RuleState | None = None  # the knee rule's state, while it may suggest a check (the first check only)

    @property
    def rule(self) -> str:
        """The rule's name: ``statistical``, ``statistical-knee`` or ``statistical-run`` (``CHECK_STARTS``)."""
        return next(name for name, start in CHECK_STARTS.items() if start == self.start)

    @property
    def p_value(self) -> float | None:
        """The hypergeometric p-value of "recall < target" after the draws so far (None before any draw)."""
        if self.design is None or not self.draws:
            return None
        return hypergeometric_p_value(self.draws, self.positives_drawn, self.urn, self.found_before, self.target_recall)

    @property
    def level(self) -> float:
        """Level of the current look (the check's budget, a lower bound on the draws, before a check is on)."""
        return self.design.level_at(self.positives_drawn) if self.design is not None else self.alpha

    @property
    def planned(self) -> int:
        """Draws the check needs with its positives so far and none more (before a check: at least this many)."""
        if self.design is not None:
            return self.design.pass_draws(self.positives_drawn)
        return pass_draws(self.urn, self.found_before, 0, self.target_recall, self.alpha)

    @property
    def needed(self) -> int:
        """Random draws still to make (0 once the check passed or failed)."""
        return max(0, self.planned - self.draws) if self.phase in ("checking", "heuristic") else 0


def labels_since_last_positive(labels) -> int:
    y = _labels(labels)
    pos = np.flatnonzero(y > 0)
    return int(len(y) - 1 - pos[-1]) if len(pos) else int(len(y))


def suggested_gap(labels, pool_size: int, target_recall: float, patience: float = 1.0) -> int | None:
    """Labels without a positive after which a check is suggested: patience * N_u / K_tar (None before a positive)."""
    y = _labels(labels)
    found = int(np.sum(y > 0))
    if found == 0:
        return None
    unlabelled = int(pool_size) - len(y)
    return max(1, math.ceil(patience * unlabelled / k_target(found, 0, target_recall)))


def _start_rule(start: str) -> str:
    if start not in ("yield", "knee", "run"):
        raise ValueError(
            "a recall check starts when the heuristic's 'yield' no longer pays, at the 'knee' or "
            f"after a 'run' of negatives, not {start!r}"
        )
    return start


def check_suggested(
    labels,
    pool_size: int,
    target_recall: float = DEFAULT_TARGET_RECALL,
    patience: float = 1.0,
    *,
    start: str = "yield",
    checks_done: int = 0,
    confidence: float = DEFAULT_CONFIDENCE,
) -> bool:
    """Whether a recall check is suggested now, for a session not checking (what :func:`recall_check` says
    then in ``suggest``, computed without its p-values; simulations call it after every heuristic label).

    ``start``: ``"run"`` after ``patience`` * N_u / K_tar labels without a positive; ``"knee"``
    also, for the session's first check, as soon as the knee rule would stop and the heuristic has gone
    ``KNEE_RUN_SHARE`` of that run without a positive (``checks_done``: checks of the session that drew
    items; after one, only the whole run suggests the next); ``"yield"`` (the default) as ``"knee"``, and
    for the first check also at the knee once waiting no longer pays (:func:`waiting_pays`), or after half
    the run alone while fewer than ``FEW_POSITIVES`` positives are found.  Every start is decided on the
    labels already given, before any draw of the check, so the check's guarantee holds whichever it is."""
    y = _labels(labels)
    gap_needed = suggested_gap(y, pool_size, target_recall, patience)
    if gap_needed is None:
        return False
    gap = labels_since_last_positive(y)
    return gap >= gap_needed or _first_start(
        y, pool_size, gap, gap_needed, _start_rule(start), checks_done, target_recall, confidence
    )


def waiting_pays(
    labels,
    pool_size: int,
    target_recall: float = DEFAULT_TARGET_RECALL,
    confidence: float = DEFAULT_CONFIDENCE,
    *,
    window: int = YIELD_WINDOW,
) -> bool:
    """Whether more heuristic labels probably cost fewer labels in all than a recall check started now.

    Started now, a check needs about b_0 = f N_u draws if none is positive (f: share of the N_u unlabelled
    items, :func:`pass_draws` at the first check's budget), and each positive of the urn is met with
    probability about f and then costs ``EXTRA_DRAWS_PER_POSITIVE`` * N_u / K_tar more draws (b_1 - b_0 at
    that level; K_tar: :func:`k_target`).  One more heuristic label costs 1 and saves f (one item fewer in
    the urn) plus, at the yield rho of the last ``window`` labels (positives per label), rho f 1.55 N_u / K_tar:
    waiting pays while rho > (1 / f - 1) K_tar / (1.55 N_u).  It reads only the labels given so far, so a
    check it starts keeps its guarantee.  Before ``window`` labels: True."""
    y = _labels(labels)
    n, urn = len(y), int(pool_size) - len(y)
    if n < window or urn <= 0:
        return n < window
    found = int(np.sum(y > 0))
    share = pass_draws(urn, found, 0, target_recall, check_alpha(1, confidence)) / urn
    if share >= 1.0:
        return True
    rho = float(np.sum(y[-window:] > 0)) / window
    return rho > (1.0 / share - 1.0) * k_target(found, 0, target_recall) / (EXTRA_DRAWS_PER_POSITIVE * urn)


def _first_start(
    y: np.ndarray,
    pool_size: int,
    gap: int,
    gap_needed: int,
    start: str,
    checks_done: int,
    target_recall: float,
    confidence: float,
) -> bool:
    """The early start of the first check (``knee`` and ``yield``; see :func:`check_suggested`)."""
    if start == "run" or checks_done or len(y) >= int(pool_size):
        return False
    half = gap >= math.ceil(KNEE_RUN_SHARE * gap_needed)
    if start == "yield" and half and int(np.sum(y > 0)) < FEW_POSITIVES:
        return True
    if not half and (start == "knee" or waiting_pays(y, pool_size, target_recall, confidence)):
        return False
    return knee_rule(y).stop


def recall_check(
    labels,
    drawn,
    check_starts: Sequence[int],
    *,
    checking: bool,
    pool_size: int,
    target_recall: float = DEFAULT_TARGET_RECALL,
    confidence: float = DEFAULT_CONFIDENCE,
    patience: float = 1.0,
    start: str = "yield",
) -> RecallCheck:
    """The statistical rule (Callaghan & Müller-Hansen 2020) over a session's history.

    ``labels``: +1 / -1 in the order given; ``drawn``: which were random draws of a
    check; ``check_starts``: label counts at which checks were started (starts
    beyond the labels, after an undo, are ignored); ``checking``: the session
    draws random items now (the last start is the current check);
    ``pool_size``: items in the pool (labelled, skipped and unlabelled); ``start``: when a check is
    suggested (see :func:`check_suggested`).
    """
    target_recall, confidence = check_target(target_recall, confidence)
    start = _start_rule(start)
    y = _labels(labels)
    n = len(y)
    beta = 1.0 - confidence
    runs = check_runs(y, drawn, check_starts, pool_size, target_recall, confidence)
    gap = labels_since_last_positive(y)
    gap_needed = suggested_gap(y, pool_size, target_recall, patience)
    done = [r for r in runs if r.draws > 0]
    current = runs[-1] if runs and checking else None
    if current is not None and current.start + current.draws != n:
        current = None  # labels other than its draws came after it (or after its failure): it is over
    last = done[-1] if done else None
    design = None
    if current is not None:
        number = 1 + sum(1 for r in done if r.start < current.start)
        urn, before = current.urn, current.found_before
        draws, positives = current.draws, current.positives
        alpha = check_alpha(number, confidence)
        design = check_design(urn, before, target_recall, alpha, beta)
        if current.failed_at is not None:
            phase = "failed"
        elif draws >= design.pass_draws(positives):
            phase = "passed"
        else:
            phase = "checking"
    else:
        number = 1 + len(done)
        urn, before, draws, positives = int(pool_size) - n, int(np.sum(y > 0)), 0, 0
        alpha = check_alpha(number, confidence)
        phase = "heuristic"
        if last is not None and last.start + last.draws == n:
            # the latest labels were the draws of a check that is no longer drawing
            last_number = sum(1 for r in done if r.start <= last.start)
            last_design = check_design(
                last.urn, last.found_before, target_recall, check_alpha(last_number, confidence), beta
            )
            if last.failed_at is not None:
                phase = "failed"
            elif last.draws >= last_design.pass_draws(last.positives):
                phase = "passed"
    knee = knee_rule(y) if start != "run" and not done and n < int(pool_size) else None
    suggest = (
        current is None
        and phase == "heuristic"
        and gap_needed is not None
        and (
            gap >= gap_needed
            or _first_start(y, pool_size, gap, gap_needed, start, len(done), target_recall, confidence)
        )
    )
    return RecallCheck(
        phase=phase,
        checking=current is not None and phase in ("checking", "passed"),
        check_number=number,
        alpha=alpha,
        urn=urn,
        found_before=before,
        k_target=k_target(before, positives, target_recall),
        draws=draws,
        positives_drawn=positives,
        suggest=suggest,
        gap=gap,
        gap_needed=gap_needed,
        target_recall=target_recall,
        confidence=confidence,
        last=last,
        design=design,
        start=start,
        knee=knee,
    )


def _pct(x: float) -> str:
    """An estimated share as a percentage to two significant digits: 0.09111 -> "9.1%", 0.1105 -> "11%"."""
    value = 100.0 * float(x)
    if not math.isfinite(value):
        return "unknown"
    if value == 0:
        return "0%"
    decimals = max(0, 1 - math.floor(math.log10(abs(value))))
    rounded = round(value, decimals)
    decimals = max(0, 1 - math.floor(math.log10(abs(rounded)))) if rounded else decimals  # 9.96 -> 10, not 10.0
    return f"{rounded:.{decimals}f}%"


def _setting_pct(x: float) -> str:
    """A setting (target recall, confidence) as a percentage, as given: 0.95 -> "95%", 0.975 -> "97.5%"."""
    return f"{for_people(100.0 * float(x))}%"


def simulated_analyst(check: RecallCheck) -> str:
    """What an analyst following the statistical rule does next (simulations; the app does the same).

    ``"stop"`` when the check passed; ``"draw"`` a random item while a check is
    on; ``"start"`` a check when the rule suggests it; otherwise ``"heuristic"``
    (also right after a check failed: the app switches back on its own).
    """
    if check.phase == "passed":
        return "stop"
    if check.checking:
        return "draw"
    if check.suggest:
        return "start"
    return "heuristic"


def statistical_rule(check: RecallCheck) -> RuleState:
    """The statistical rule's state in words (see :func:`recall_check`)."""
    name = check.rule
    goal = f"recall ≥ {_setting_pct(check.target_recall)} at {_setting_pct(check.confidence)} confidence"
    if check.phase == "passed":
        return RuleState(
            name,
            True,
            f"{name}: {goal} ({check.draws:,} random draws, {check.positives_drawn:,} positive; "
            f"p = {check.p_value if check.p_value is not None else 0:.4f} < {check.level:.4f}) "
            "— you can stop",
            value=check.p_value,
            needed=0,
        )
    if check.phase == "checking":
        found = (
            "no positive"
            if not check.positives_drawn
            else (f"{check.positives_drawn} positive{'s' if check.positives_drawn > 1 else ''}")
        )
        return RuleState(
            name,
            False,
            f"{name}: draw {check.needed:,} more random items to test {goal} "
            f"({check.draws:,} drawn, {found} so far; check {check.check_number}); "
            f"{_probably(check)}",
            value=check.p_value,
            needed=check.needed,
        )
    if check.phase == "failed":
        last = check.last
        return RuleState(
            name,
            False,
            f"{name}: the random draws found {last.positives if last else 0:,} positives in "
            f"{last.draws if last else 0:,}, which shows recall below "
            f"{_setting_pct(check.target_recall)}; "
            "back to the model's picks, and start a new check when they stop finding positives",
            needed=None,
        )
    if check.phase == "heuristic" and check.urn == 0:  # nothing left unlabelled: recall is 1 exactly
        return RuleState(
            name,
            True,
            f"{name}: every item of the pool is labelled, so recall is 100% — you can stop",
            value=None,
            needed=0,
        )
    if check.gap_needed is None:
        return RuleState(name, False, f"{name}: waits for the first positive")
    knee = ""
    half = math.ceil(KNEE_RUN_SHARE * check.gap_needed)
    if check.start == "yield" and check.knee is not None and check.found_before < FEW_POSITIVES:
        knee = f"after {half:,} while fewer than {FEW_POSITIVES} positives are found"
    elif check.knee is not None and check.knee.value is not None:
        shown = (
            "it does"
            if check.knee.stop
            else f"slope ratio {check.knee.value:.1f}, needs {156 - min(check.found_before, 150)}"
            + (f" and {check.knee.needed:,} more labels" if check.knee.needed else "")
        )
        knee = f"after {half:,} once the gain curve shows its knee ({shown})"
        if check.start == "yield":
            knee += (
                f", sooner at the knee once the last {YIELD_WINDOW} labels find too few positives for "
                "more of the model's picks to pay"
            )
    if check.suggest:
        when = "a random check is suggested now"
    elif check.gap_needed >= check.urn:  # a gap that long would go through every unlabelled item
        n_found = check.found_before
        why = f": one missed positive in {n_found + 1} is already below the target" if check.k_target <= 1 else ""
        when = (
            f"too few positives found ({n_found}) for a random check to be suggested yet{why}; start one when "
            "the model's picks stop finding positives"
        )
    else:
        when = (
            f"a random check is suggested once {check.gap_needed:,} labels in a row bring no positive, or "
            f"{knee}; now: {check.gap:,} in a row"
            if knee
            else f"a random check is suggested once {check.gap_needed:,} labels in a row bring no positive "
            f"(now: {check.gap:,} in a row)"
        )
    return RuleState(
        name,
        False,
        f"{name}: {when}; it would draw at least {check.planned:,} random items to test {goal}",
        value=None,
        needed=check.planned,
    )


def probable_labels(check: RecallCheck) -> int | None:
    """Labels the guarantee will probably still need: the median number of further draws until the
    current check passes, if its urn holds the positives its draws so far suggest (k of n drawn from
    N_s: round(k N_s / n); with none drawn yet, none more: the fewest draws).  0 once the check passed
    or every item is labelled; None before a check (only a lower bound is known then: ``planned``),
    after a failed one, or when the check would more probably fail than pass.  Never above the items
    left in its urn.  Paths that fail (recall shown below the target) never pass."""
    if check.phase == "passed" or (check.phase == "heuristic" and check.urn == 0):
        return 0
    if check.phase != "checking" or check.design is None:
        return None
    design, n0, k0 = check.design, check.draws, check.positives_drawn
    urn = design.urn
    if n0 >= design.pass_draws(k0):
        return 0
    if k0 == 0:
        return design.pass_draws(0) - n0
    rest = max(0, min(round(k0 * urn / n0), urn - (n0 - k0)) - k0)  # positives left among the undrawn
    top = k0 + rest
    b = _pass_bounds(urn, design.found_before, design.target_recall, design.level, top)
    g = _fail_bounds(urn, design.found_before, design.target_recall, design.beta, top)
    dist = np.zeros(rest + 1)  # more positives drawn since now: 0..rest
    dist[0] = 1.0
    more = np.arange(rest + 1)
    passed = 0.0
    for n in range(n0, urn + 1):
        due = b[k0 + more] <= n
        passed += float(dist[due].sum())
        dist[due] = 0.0
        if passed >= 0.5:
            return n - n0
        if passed + float(dist.sum()) < 0.5 or n == urn:
            return None
        moved = dist * np.clip((rest - more) / (urn - n), 0.0, 1.0)
        dist -= moved
        dist[1:] += moved[:-1]
        failing = g[k0 + more[1:]] >= n + 1  # the new positive came at or before g_k: recall below target
        dist[1:][failing] = 0.0
    return None


def _rounded(n: int, most: int) -> int:
    """A probable count for people: exact below 100, else to two significant digits; never above ``most``."""
    if n >= 100:
        step = 10 ** (len(str(int(n))) - 2)
        n = round(n / step) * step
    return int(min(n, most))


def _probably(check: RecallCheck) -> str:
    """The labels this check will probably still need, in words (see :func:`probable_labels`)."""
    probable = probable_labels(check)
    if probable is None:
        return (
            "at the rate positives turn up in its draws this check will probably not pass: it ends on its "
            "own when they show recall below the target"
        )
    if probable <= check.needed:
        return "that is all the guarantee needs if none of them is positive"
    left = check.urn - check.draws
    return f"the guarantee will probably need about {_rounded(probable, left):,} more draws"


#: before a check: above this share of the unlabelled items to draw, the outlook says a check now means
#: reading (nearly) all that is left, rather than giving the count alone
READ_MOST_SHARE = 0.5
#: the outlook while no recall check can start (none before the first positive)
CHECK_NEEDS_A_POSITIVE = "Guarantee: a random check can start once a positive is labelled."


def check_blocked(check: RecallCheck) -> str | None:
    """Why a recall check cannot start now, in words, or None when it can (the Label page disables its
    button with this): before the first positive, and with nothing left unlabelled."""
    if check.checking:
        return None
    if check.gap_needed is None:
        return "A random check can start once a positive is labelled."
    if check.urn == 0:
        return "Every item is labelled: there is nothing left to check."
    return None


#: the outlook's words when a later check needs more draws than the first would (its stricter level, check_alpha)
STRICTER_CHECK = (
    "more than the first: each new check must pass a stricter test so that the guarantee holds over all of them"
)


def _stricter(check: RecallCheck) -> bool:
    """A check not started yet needs more draws than the first check of the session would on the same urn: a
    later check spends a smaller share of the error budget (:func:`check_alpha`)."""
    if check.check_number <= 1 or check.design is not None:
        return False
    first = pass_draws(check.urn, check.found_before, 0, check.target_recall, check_alpha(1, check.confidence))
    return min(check.planned, check.urn) > min(first, check.urn)


def _reads_most(check: RecallCheck) -> bool:
    """Before a check (one can start): a check now would draw more than ``READ_MOST_SHARE`` of what is left."""
    return (
        check.phase == "heuristic"
        and check.gap_needed is not None
        and check.urn > 0
        and min(check.planned, check.urn) > READ_MOST_SHARE * check.urn
    )


def check_caution(check: RecallCheck) -> str | None:
    """One line for the start button when the outlook says a check now would read (nearly) all that is left, or
    None (the button stays usable: starting a check is the analyst's choice)."""
    if not _reads_most(check):
        return None
    share = _pct(min(check.planned, check.urn) / check.urn)
    return f"A check now would mean reading about {share} of what is left: keep labelling first (your choice)."


def outlook(check: RecallCheck) -> str:
    """How many more labels the guarantee will probably need, in plain words (the Label page's panel)."""
    if check.phase == "passed" or (check.phase == "heuristic" and check.urn == 0):
        return "Guarantee: reached, no more labels needed."
    if check.phase == "checking":
        probable = probable_labels(check)
        if probable is None:
            return (
                "Guarantee: at the rate positives turn up in the random draws, this check will probably not "
                "pass; it ends on its own when they show recall below the target."
            )
        if probable <= check.needed:
            return (
                f"Guarantee: {count(probable, 'more random draw')}, if none of them is a positive "
                "(each positive among them asks for more)."
            )
        left = check.urn - check.draws
        return (
            f"Guarantee: probably about {_rounded(probable, left):,} more random draws (at least "
            f"{check.needed:,} if none of them is a positive)."
        )
    if check.phase == "failed":
        return (
            "Guarantee: not yet; a new random check, with draws of its own, is suggested when the model's picks "
            "stops finding positives."
        )
    if check.gap_needed is None:
        return CHECK_NEEDS_A_POSITIVE
    planned = min(check.planned, check.urn)
    stricter = f"; {STRICTER_CHECK}" if _stricter(check) else ""
    if _reads_most(check):  # a check now is reading (nearly) everything
        return (
            f"Guarantee: a random check now would mean reading about {_pct(planned / check.urn)} of what is "
            f"left (at least {count(planned, 'random draw')} of {count(check.urn, 'unlabelled item')}{stricter}): "
            "keep labelling first; the check is suggested when the model's picks stop finding positives."
        )
    return (
        f"Guarantee: at least {count(planned, 'random draw')} once a random check starts "
        f"(more for every positive among them{stricter})"
        + (
            "; a check is suggested now."
            if check.suggest
            else "; the check is suggested when the model's picks stop finding positives."
        )
    )


def follow_ranking(
    order,
    y,
    *,
    rng: np.random.Generator,
    start: str = "yield",
    target_recall: float = DEFAULT_TARGET_RECALL,
    confidence: float = DEFAULT_CONFIDENCE,
    patience: float = 1.0,
) -> tuple[list[int], list[bool], list[int]]:
    """A session that follows the statistical rule on a fixed ranking (simulations and benchmarks).

    ``order``: the pool's items in the order the heuristic would ask about them; ``y``: their true labels
    (+1 / -1), which answer.  Heuristic labels take the next unlabelled item of ``order``; the random draws of
    a check come from the unlabelled items (``rng``).  Returns (labels, drawn, check starts) up to the stop,
    or up to the last item of the pool.
    """
    y = np.asarray(y).reshape(-1)
    pool = len(y)
    labelled = np.zeros(pool, dtype=bool)
    labels: list[int] = []
    drawn: list[bool] = []
    starts: list[int] = []
    checking, cursor = False, 0
    while len(labels) < pool:
        done = sum(1 for s in starts if s < len(labels) and drawn[s])  # checks that drew items
        if not checking and not check_suggested(
            labels, pool, target_recall, patience, start=start, checks_done=done, confidence=confidence
        ):
            action = "heuristic"  # what recall_check says too (no check on, none suggested), only cheaper
        else:
            check = recall_check(
                labels,
                drawn,
                starts,
                checking=checking,
                pool_size=pool,
                target_recall=target_recall,
                confidence=confidence,
                patience=patience,
                start=start,
            )
            action = simulated_analyst(check)
        if action == "stop":
            break
        checking = action in ("start", "draw")  # (a failed check sends the session back to the heuristic)
        if action == "start":
            starts.append(len(labels))
            continue
        while action != "draw" and labelled[order[cursor]]:
            cursor += 1
        item = int(rng.choice(np.flatnonzero(~labelled))) if action == "draw" else int(order[cursor])
        labelled[item] = True
        labels.append(1 if y[item] > 0 else -1)
        drawn.append(action == "draw")
    return labels, drawn, starts


# --------------------------------------------------------------------------- ranked check (replays only)

#: ranked check: share of its budget for a stop with no drawn positive still below the ranking's position
#: (the rest goes to j = 1, 2, ... as 1 / j^2)
RANKED_FIRST_SHARE = 0.85


def ranked_level(unpassed: int, budget: float) -> float:
    """a_j: the level of a ranked check's stop with j drawn positives still below the ranking's position.

    ``RANKED_FIRST_SHARE`` of ``budget`` for j = 0, the rest as 6 / (pi^2 j^2) for j >= 1: they sum to budget.
    """
    if unpassed < 0:
        raise ValueError("the drawn positives below the ranking's position cannot be negative")
    if unpassed == 0:
        return float(budget) * RANKED_FIRST_SHARE
    return float(budget) * (1.0 - RANKED_FIRST_SHARE) * 6.0 / (math.pi**2 * unpassed**2)


@functools.lru_cache(maxsize=65536)
def ranked_draws(urn: int, found: int, unpassed: int, target_recall: float, level: float) -> int:
    """n_j: the fewest draws at which a ranked check may stop with ``found`` positives labelled in all and
    ``unpassed`` (j) drawn positives the ranking has not reached: P(X <= j) <= level for
    X ~ Hypergeom(urn, m + j, n), m = K_tar(found, 0) the fewest missed positives that put recall below the
    target (``urn + 1`` when no number of draws is enough)."""
    big_k = k_target(found, 0, target_recall) + unpassed
    if big_k > urn:  # the urn cannot hold that many positives below the ranking: recall is at the target
        return unpassed
    low, high = unpassed, urn + 1
    while low < high:  # P(X <= j) falls as n grows (at n = urn it is 0: X = m + j > j)
        mid = (low + high) // 2
        if float(stats.hypergeom.cdf(unpassed, urn, big_k, mid)) <= level:
            high = mid
        else:
            low = mid + 1
    return int(low)


def follow_ranking_ranked(
    order,
    y,
    *,
    rng: np.random.Generator,
    start: str = "yield",
    target_recall: float = DEFAULT_TARGET_RECALL,
    confidence: float = DEFAULT_CONFIDENCE,
) -> tuple[list[int], list[bool], list[int]]:
    """A session on a fixed ranking whose recall check uses the ranking too (simulations and benchmarks).

    The check starts where ``statistical`` (``start``) would start its first one; its urn is the N items
    then unlabelled, in the ranking's order, which stays fixed (it does not learn from the draws).  Draws
    follow one random permutation of the urn (an item the ranking labelled already is drawn free), and the
    ranking may go on beside them.  With n drawn, ``found`` positives labelled in all and j drawn positives
    ranked below the ranking's position, the check stops when P(X <= j) <= a_j, X ~ Hypergeom(N, m + j, n),
    m = K_tar(found, 0) (:func:`ranked_draws`, :func:`ranked_level`).  Why that keeps
    P(recall < target) <= sum_j a_j = 1 - confidence: with P positives in all, recall is below the target
    only if at least m* = floor((1 - target) P) + 1 of them are missed, and a stop with j drawn positives
    still below the ranking then means that the last m* + j positives of the urn in ranking order hold at
    most j of the first n draws; for fixed j that event only shrinks as n grows, so whatever the stop's n
    (never below n*_j, the fewest draws at which it could pass with m* + j) its probability is at most
    P(Hypergeom(N, m* + j, n*_j) <= j) <= a_j; the events do not depend on when the session stops.  The
    next label is the one that brings the cheapest stop nearest: for each j, the ranking's labels up to the
    last drawn positive it must pass plus the draws up to n_j.  One check, the whole budget: it never ends
    below the target on its own.  Returns (labels, drawn, check starts) up to the stop.
    """
    target_recall, confidence = check_target(target_recall, confidence)
    y = np.asarray(y).reshape(-1)
    order = np.asarray(order, dtype=np.intp).reshape(-1)
    pool = len(y)
    if sorted(order.tolist()) != list(range(pool)):
        raise ValueError(f"the ranking must list each of the {pool} pool items once")
    labelled = np.zeros(pool, dtype=bool)
    labels: list[int] = []
    drawn: list[bool] = []
    cursor = 0

    def label(item: int, is_draw: bool) -> None:
        labelled[item] = True
        labels.append(1 if y[item] > 0 else -1)
        drawn.append(is_draw)

    while len(labels) < pool and not check_suggested(labels, pool, target_recall, start=_start_rule(start)):
        while labelled[order[cursor]]:
            cursor += 1
        label(int(order[cursor]), False)
    starts = [len(labels)]
    urn = order[~labelled[order]]  # in the ranking's order
    size = len(urn)
    positive = y[urn] > 0
    permutation = rng.permutation(size)
    sampled = np.zeros(size, dtype=bool)
    done = np.zeros(size, dtype=bool)  # labelled since the check started, by the ranking or a draw
    budget = 1.0 - confidence
    n, position = 0, 0  # draws so far; the ranking's position in the urn
    while size:
        while position < size and done[position]:
            position += 1  # items drawn already are passed free
        below = np.flatnonzero(sampled[position:] & positive[position:]) + position
        found = int(np.sum(np.asarray(labels) > 0))
        best = None
        for j in range(len(below), -1, -1):
            stretch = below[len(below) - j - 1] + 1 if j < len(below) else position
            to_rank = int(np.sum(~done[position:stretch]))
            to_draw = max(0, ranked_draws(size, found, j, target_recall, ranked_level(j, budget)) - n)
            if best is None or to_rank + to_draw < best[0]:
                best = (to_rank + to_draw, to_rank)
        assert best is not None
        if best[0] == 0 or len(labels) >= pool:
            break
        if best[1] > 0 or n >= size:
            done[position] = True
            label(int(urn[position]), False)
        else:
            item = int(permutation[n])
            n += 1
            sampled[item] = True
            if not done[item]:
                done[item] = True
                label(int(urn[item]), True)
    return labels, drawn, starts


# --------------------------------------------------------------------------- all rules


@dataclass(frozen=True)
class SessionView:
    """What the rules read off a session (no true label of an unlabelled item)."""

    labels: np.ndarray  # +1 / -1 in the order given
    drawn: np.ndarray  # True for random draws of a recall check
    check_starts: tuple[int, ...]
    checking: bool
    pool_size: int
    n_in_margin: float = float("nan")  # unlabelled items with |f| < 1 now
    kappas: tuple[tuple[int, float], ...] = ()
    stop_set_size: int | None = None
    stability_step: int = STABILITY_STEP


def evaluate(
    rules: Sequence[RuleSpec] | str,
    view: SessionView,
    *,
    target_recall: float = DEFAULT_TARGET_RECALL,
    confidence: float = DEFAULT_CONFIDENCE,
    patience: float = 1.0,
) -> list[RuleState]:
    """Every rule's state, in the order of ``rules``."""
    out = []
    for spec in parse_rules(rules):
        if spec.name == "margin":
            out.append(margin_rule(view.n_in_margin, view.labels, tolerance=spec.param or 0))
        elif spec.name == "consecutive":
            out.append(consecutive_rule(view.labels, int(spec.param or 0)))  # (parse_rules: consecutive has N)
        elif spec.name == "knee":
            out.append(knee_rule(view.labels, pool_size=view.pool_size))
        elif spec.name == "stability":
            out.append(stability_rule(view.kappas, step=view.stability_step, stop_set_size=view.stop_set_size))
        else:
            out.append(
                statistical_rule(
                    recall_check(
                        view.labels,
                        view.drawn,
                        view.check_starts,
                        checking=view.checking,
                        pool_size=view.pool_size,
                        target_recall=target_recall,
                        confidence=confidence,
                        patience=patience,
                        start=CHECK_STARTS[spec.name],
                    )
                )
            )
    return out


# --------------------------------------------------------------------------- estimate


@dataclass(frozen=True)
class RecallEstimate:
    """Positives still unlabelled (with an interval) and the recall it implies."""

    method: str  # "random draws" or "model-based"
    description: str
    found: int
    remaining: float
    remaining_low: float
    remaining_high: float
    recall: float
    recall_low: float
    recall_high: float
    confidence: float
    positives_drawn: int | None = None  # for an estimate from random draws
    unlabelled: float = float("inf")  # items still unlabelled when it was made (inf: not said)
    draws: int | None = None  # for an estimate from random draws: how many

    @property
    def known(self) -> bool:
        """False while it cannot be estimated (too few labels scored when asked, no random draws)."""
        return bool(np.isfinite(self.remaining))

    @property
    def too_early(self) -> bool:
        """An estimate whose interval spans more than ``USEFUL_SPAN_SHARE`` of the unlabelled items and is wider
        than the estimate itself (on the demo, "about 392, 0–867" with 1,761 left; not "about 170, 137–190"
        with 190 left, nor "about 2, 0–6" near the end): known, but a number that says nothing yet.  The app
        says "too early to estimate" instead, and its gain chart leaves it out (its axis fits what was found).
        The same for an estimate from random draws (unbiased, its interval exact, but after 3 draws of a check
        stopped early "0–1,249 (95% interval)" of 1,767 says nothing either): only its words change."""
        span = self.remaining_high - self.remaining_low
        return (
            self.known
            and self.method in ("model-based", "random draws")
            and np.isfinite(self.unlabelled)
            and span > USEFUL_SPAN_SHARE * self.unlabelled
            and span > self.remaining
        )

    def in_words(self) -> str:
        """The estimate for people: counts as whole numbers, shares to two significant digits, and the method;
        "cannot estimate yet" and why, instead of a number, while there is none."""
        if not self.known:
            return f"Positives still unlabelled: cannot estimate yet. Method: {self.method} — {self.description}."
        if self.too_early and self.method == "random draws":
            return (
                f"Positives still unlabelled: too early to estimate from {count(self.draws or 0, 'random draw')}; "
                f"draw more in a random check. Method: {self.method} — {self.description}."
            )
        if self.too_early:
            return (
                f"Positives still unlabelled: too early to estimate (the model's range still spans more than "
                f"{USEFUL_SPAN_SHARE:.0%} of the {self.unlabelled:,.0f} unlabelled items). Method: "
                f"{self.method} — {self.description}."
            )
        level = _setting_pct(self.confidence)
        interval = f"{self.remaining_low:,.0f}–{self.remaining_high:,.0f}"
        recall = f"{_pct(self.recall_low)}–{_pct(self.recall_high)}"
        if self.positives_drawn == 0:  # no point estimate worth the name: 0, with a wide interval
            head = f"Positives still unlabelled: {interval} ({level} interval); recall {recall}"
        else:
            head = (
                f"About {self.remaining:,.0f} positives still unlabelled ({level} interval {interval}); "
                f"recall {_pct(self.recall)} ({recall})"
            )
        return f"{head}. Method: {self.method} — {self.description}."


def _recall(found: int, remaining: float) -> float:
    total = found + remaining
    return float(found / total) if total > 0 else float("nan")


def _finish(
    method: str,
    description: str,
    found: int,
    remaining: float,
    low: float,
    high: float,
    confidence: float,
    positives_drawn: int | None = None,
    *,
    unlabelled: int | None = None,
    draws: int | None = None,
) -> RecallEstimate:
    """The estimate with ``0 <= low <= remaining <= high <= unlabelled`` (NaN stays NaN: not estimated)."""
    top = float("inf") if unlabelled is None else float(max(0, unlabelled))
    if np.isfinite(remaining):
        remaining = float(min(max(remaining, 0.0), top))
        low = float(min(max(low, 0.0), remaining))
        high = float(min(max(high, remaining), top))
    return RecallEstimate(
        method=method,
        description=description,
        found=found,
        remaining=remaining,
        remaining_low=low,
        remaining_high=high,
        recall=_recall(found, remaining),
        recall_low=_recall(found, high),
        recall_high=_recall(found, low),
        confidence=confidence,
        positives_drawn=positives_drawn,
        unlabelled=top,
        draws=draws,
    )


def urn_interval(urn: int, draws: int, positives: int, confidence: float) -> tuple[int, int]:
    """Exact two-sided interval for the positives K an urn of ``urn`` items held, from ``positives`` in ``draws``.

    K_low: smallest K with P(X >= k | K) > alpha/2; K_high: largest K with P(X <= k | K) > alpha/2
    (the hypergeometric analogue of Clopper-Pearson; both tails are monotone in K).
    """
    alpha = 1.0 - float(confidence)
    lo_bound, hi_bound = positives, urn - (draws - positives)
    lo, hi = lo_bound, hi_bound
    while lo < hi:  # smallest K whose upper tail at k is above alpha / 2
        mid = (lo + hi) // 2
        if positives == 0 or stats.hypergeom.sf(positives - 1, urn, mid, draws) > alpha / 2:
            hi = mid
        else:
            lo = mid + 1
    k_low = lo
    lo, hi = lo_bound, hi_bound
    while lo < hi:  # largest K whose lower tail at k is above alpha / 2
        mid = (lo + hi + 1) // 2
        if stats.hypergeom.cdf(positives, urn, mid, draws) > alpha / 2:
            lo = mid
        else:
            hi = mid - 1
    return int(k_low), int(lo)


def estimate_from_draws(
    run: CheckRun, *, found: int, unlabelled: int, confidence: float = DEFAULT_CONFIDENCE, stopped: bool = False
) -> RecallEstimate:
    """From a check's random draws: positives the urn held (exact interval), less those labelled since.

    ``found``: positives labelled now (all of the session); every positive
    labelled since the check started came out of its urn.  ``stopped``: the check was stopped before it
    passed or failed (the description says so; the numbers are the same).
    """
    since = found - run.found_before
    point_k = run.positives * run.urn / run.draws
    k_low, k_high = urn_interval(run.urn, run.draws, run.positives, confidence)
    remaining = max(0.0, point_k - since)
    low = float(max(0, k_low - since))
    high = float(min(max(0, k_high - since), unlabelled))
    description = (
        f"{run.positives} positive{'s' if run.positives != 1 else ''} in {run.draws:,} items drawn at "
        f"random from the {run.urn:,} unlabelled when the check started"
        + (", a check stopped before it ended" if stopped else "")
        + "; exact hypergeometric interval"
    )
    return _finish(
        "random draws",
        description,
        found,
        remaining,
        low,
        high,
        confidence,
        positives_drawn=run.positives,
        unlabelled=unlabelled,
        draws=run.draws,
    )


def platt_scaling(scores, labels, *, max_iter: int = 100) -> tuple[float, float]:
    """(a, b) of P(y = +1 | f) = 1 / (1 + exp(-(a f + b))), fitted by Platt's method (his smoothed targets).

    Newton's method with a backtracking line search on the cross-entropy, as
    Lin, Lin & Weng (2007, "A note on Platt's probabilistic outputs for support
    vector machines") recommend: two parameters, a handful of steps.
    """
    f = np.asarray(scores, dtype=np.float64).reshape(-1)
    y = _labels(labels)
    n_pos, n_neg = int(np.sum(y > 0)), int(np.sum(y < 0))
    if n_pos == 0 or n_neg == 0:
        raise ValueError("Platt scaling needs a positive and a negative label")
    t = np.where(y > 0, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    design = np.column_stack([f, np.ones_like(f)])

    def loss(w: np.ndarray) -> float:
        z = design @ w
        return float(np.sum(np.logaddexp(0.0, z) - t * z))  # log(1 + e^z) - t z

    w = np.array([0.0, math.log((n_pos + 1.0) / (n_neg + 1.0))])
    value = loss(w)
    for _ in range(max_iter):
        p = special.expit(design @ w)
        grad = design.T @ (p - t)
        if np.max(np.abs(grad)) < 1e-7 * max(1.0, len(f)):
            break
        hessian = (design * (p * (1.0 - p))[:, None]).T @ design + 1e-12 * np.eye(2)
        direction = -np.linalg.solve(hessian, grad)
        step = 1.0
        while step > 1e-10:
            trial = w + step * direction
            trial_value = loss(trial)
            if trial_value < value + 1e-4 * step * float(grad @ direction):
                break
            step /= 2.0
        else:
            break  # no descent left: as good as it gets in floating point
        w, value = trial, trial_value
    return float(w[0]), float(w[1])


#: model-based estimate: labels of each class, scored when asked, before the sigmoid is fitted at all
MIN_CALIBRATION_LABELS = 5
#: model-based estimate: the fit's variance counts this many times in the interval (its standard deviation twice)
FIT_VARIANCE_FACTOR = 4.0
#: an estimate's interval (model-based or from draws) wider than this share of the unlabelled items (and the estimate
#: itself) is "too early to estimate" in the app (``RecallEstimate.too_early``): on the demo after 36 labels,
#: "about 392, 0–867" of 1,761 unlabelled items (49%; 163 positives were left) said nothing but filled the gain
#: chart's axis.  The numbers themselves (and benchmarks/bench_estimate.py's coverage) are the same either way
USEFUL_SPAN_SHARE = 0.25
#: model-based estimate: the scores when asked must rank positives above negatives at least this often (ROC AUC)
MIN_CALIBRATION_AUC = 0.7
#: heuristics that ask about the most likely positives first: scores when asked are the top of the ranking only,
#: and the model-based estimate runs high (its interval covered the truth at 73% of the checkpoints of
#: benchmarks/bench_estimate.py): with most labels asked by one of them, only random draws give an estimate
TOP_FIRST_HEURISTICS = ("largest-positive",)


def estimate_from_model(
    unlabelled_scores,
    asked_scores,
    asked_labels,
    *,
    found: int,
    confidence: float = DEFAULT_CONFIDENCE,
    min_labels: int = MIN_CALIBRATION_LABELS,
    min_auc: float = MIN_CALIBRATION_AUC,
) -> RecallEstimate:
    """Model-based: Platt-scaled decision values of the unlabelled items, summed (no guarantee).

    The sigmoid is fitted on the scores the model gave each labelled item when it
    asked about it (so not on scores of items it had learned), once at least
    ``min_labels`` positives and as many negatives have such a score, and
    only while those scores rank a positive above a negative with probability
    ``min_auc`` or more (a sigmoid on scores that do not rank spreads the
    positives over the whole pool: "about 930 (0–1,750)" on the demo's
    digits); otherwise the estimate says it cannot estimate yet.  The interval is normal
    (the Poisson-binomial sum of independent Bernoulli(p_i), approximated), with
    the variance of that sum plus ``FIT_VARIANCE_FACTOR`` times that of the fit
    (delta method: g' H^-1 g, H the Hessian of the fit's log-likelihood, g the
    gradient of the sum in (a, b)): the scores when asked come from successive
    models, not one, and with the fit's variance counted once the interval
    covered the truth in 91% of the checkpoints of ``benchmarks/bench_estimate.py``
    under the default heuristic, four times: 98%.  It cannot account for the
    bias of items chosen by a heuristic rather than at random (under
    ``largest-positive`` it runs high).  Bounded to [0, unlabelled items].
    """
    f = np.asarray(unlabelled_scores, dtype=np.float64).reshape(-1)
    s = np.asarray(asked_scores, dtype=np.float64).reshape(-1)
    y = _labels(asked_labels)
    if len(s) != len(y):
        raise ValueError(f"{len(y)} labels but {len(s)} scores when asked")
    keep = np.isfinite(s)
    s, y = s[keep], y[keep]
    unlabelled = len(f)
    what = "the model's scores rescaled to probabilities, summed over the unlabelled items"
    n_pos, n_neg = int(np.sum(y > 0)), int(np.sum(y < 0))
    if min(n_pos, n_neg) < min_labels:
        return _finish(
            "model-based",
            f"the model's scores are calibrated once {min_labels} positive and "
            f"{min_labels} negative labels were scored when asked ({n_pos} and {n_neg} "
            "so far); the random draws of a random check give an estimate at once",
            found,
            float("nan"),
            float("nan"),
            float("nan"),
            confidence,
        )
    auc = roc_auc(y, s)
    if auc < min_auc:
        return _finish(
            "model-based",
            # (the share of positive-negative pairs in which the positive scored higher is the ROC AUC)
            f"the model's scores when asked do not yet tell positives from negatives (a positive "
            f"scored above a negative in {auc:.0%} of the pairs; the estimate needs {min_auc:.0%}); "
            "the random draws of a random check give an estimate",
            found,
            float("nan"),
            float("nan"),
            float("nan"),
            confidence,
        )
    a, b = platt_scaling(s, y)
    f = f[np.isfinite(f)]
    p = special.expit(a * f + b)
    w = p * (1.0 - p)
    q = special.expit(a * s + b) * (1.0 - special.expit(a * s + b))
    hessian = np.array([[np.sum(q * s * s), np.sum(q * s)], [np.sum(q * s), np.sum(q)]])
    grad = np.array([np.sum(w * f), np.sum(w)])
    fit_var = float(grad @ np.linalg.lstsq(hessian, grad, rcond=None)[0])
    mean = float(np.sum(p))
    sd = float(np.sqrt(np.sum(w) + FIT_VARIANCE_FACTOR * max(fit_var, 0.0)))
    z = float(stats.norm.ppf(0.5 + confidence / 2.0))
    return _finish(
        "model-based",
        f"{what} (no guarantee: the labelled items were picked by the model, not at random)",
        found,
        mean,
        mean - z * sd,
        mean + z * sd,
        confidence,
        unlabelled=unlabelled,
    )


def estimate_remaining(
    labels,
    drawn,
    check_starts: Sequence[int],
    *,
    pool_size: int,
    unlabelled_scores=None,
    asked_scores=None,
    asked_by: Sequence[str | None] | None = None,
    target_recall: float = DEFAULT_TARGET_RECALL,
    confidence: float = DEFAULT_CONFIDENCE,
    heuristic_words: Callable[[str], str] = strategy_words,
    checking: bool | None = None,
) -> RecallEstimate:
    """The estimate the app and the simulations show, never above the items still unlabelled.

    From the latest recall check's random draws when there are any (unbiased, an
    exact interval; the check's end is found with the session's ``target_recall``
    and ``confidence``), otherwise from the model's calibrated scores
    (:func:`estimate_from_model`) unless most labels were asked by a heuristic
    of ``TOP_FIRST_HEURISTICS`` (``asked_by``: the heuristic that asked each
    label; ``heuristic_words`` says one in words); while neither can be had, it
    says so (``known`` is False) instead of giving a number.  ``checking``: whether a check is on now (False:
    the draws of a check that neither passed nor failed were stopped, and the words say so; None: not said).
    """
    target_recall, confidence = check_target(target_recall, confidence)
    y = _labels(labels)
    found = int(np.sum(y > 0))
    unlabelled = int(pool_size) - len(y)
    if unlabelled <= 0:
        return _finish("all labelled", "every pool item is labelled", found, 0.0, 0.0, 0.0, confidence, unlabelled=0)
    runs = [r for r in check_runs(y, drawn, check_starts, pool_size, target_recall, confidence) if r.draws > 0]
    if runs:
        last = runs[-1]
        stopped = checking is False and last.failed_at is None
        if stopped:  # not when it passed (its check's design: the same as recall_check's, cached)
            design = check_design(
                last.urn, last.found_before, target_recall, check_alpha(len(runs), confidence), 1.0 - confidence
            )
            stopped = last.draws < design.pass_draws(last.positives)
        return estimate_from_draws(last, found=found, unlabelled=unlabelled, confidence=confidence, stopped=stopped)
    if unlabelled_scores is None or asked_scores is None:
        return _finish(
            "model-based",
            "the model's scores are not kept for a pool this large; the random draws of a random check give an "
            "estimate",
            found,
            float("nan"),
            float("nan"),
            float("nan"),
            confidence,
        )
    if asked_by is not None:
        top_first = [str(h) for h in asked_by if str(h) in TOP_FIRST_HEURISTICS]
        if 2 * len(top_first) > len(y):
            return _finish(
                "model-based",
                "most labels were picked by "
                f'"{heuristic_words(top_first[-1])}", the most likely positives first, '
                "so the model's scores are calibrated on the top of its ranking "
                "only and would put too many positives among the rest; the random "
                "draws of a random check give an estimate",
                found,
                float("nan"),
                float("nan"),
                float("nan"),
                confidence,
            )
    estimate = estimate_from_model(unlabelled_scores, asked_scores, y, found=found, confidence=confidence)
    return _finish(
        estimate.method,
        estimate.description,
        found,
        estimate.remaining,
        estimate.remaining_low,
        estimate.remaining_high,
        confidence,
        unlabelled=unlabelled,
    )


def rule_names(rules: Iterable[RuleSpec]) -> list[str]:
    return [str(r) for r in rules]


__all__ = [
    "CALIBRATE_MAX_URN",
    "check_alpha",
    "check_blocked",
    "check_caution",
    "check_design",
    "CHECK_NEEDS_A_POSITIVE",
    "check_runs",
    "CHECK_STARTS",
    "CHECK_STRATEGY",
    "check_suggested",
    "check_target",
    "CHECK_MEANING",
    "CHECK_NAME",
    "CHECK_WORDS",
    "CheckDesign",
    "CheckRun",
    "cohens_kappa",
    "consecutive_rule",
    "DEFAULT_CONFIDENCE",
    "DEFAULT_RULES",
    "DEFAULT_TARGET_RECALL",
    "estimate_from_draws",
    "estimate_from_model",
    "estimate_remaining",
    "evaluate",
    "EXTRA_DRAWS_PER_POSITIVE",
    "FEW_POSITIVES",
    "FIRST_CHECK_SHARE",
    "FIT_VARIANCE_FACTOR",
    "follow_ranking",
    "follow_ranking_ranked",
    "gain_curve",
    "hypergeometric_p_value",
    "k_target",
    "KNEE_MIN_LABELS",
    "knee_point",
    "knee_rule",
    "KNEE_RUN_SHARE",
    "labels_since_last_positive",
    "margin_rule",
    "MIN_CALIBRATION_AUC",
    "MIN_CALIBRATION_LABELS",
    "outlook",
    "parse_rules",
    "pass_draws",
    "platt_scaling",
    "probable_labels",
    "RANKED_FIRST_SHARE",
    "ranked_draws",
    "ranked_level",
    "READ_MOST_SHARE",
    "recall_check",
    "RecallCheck",
    "RecallEstimate",
    "RULE_NAMES",
    "rule_names",
    "RULE_TERMS",
    "RULE_WORDS",
    "rule_words",
    "RuleSpec",
    "RuleState",
    "sequential_error",
    "SessionView",
    "simulated_analyst",
    "stability_rule",
    "STABILITY_STEP",
    "STABILITY_THRESHOLD",
    "STABILITY_WINDOW",
    "StabilityTracker",
    "statistical_rule",
    "stop_set",
    "STOP_SET_SIZE",
    "suggested_gap",
    "TOP_FIRST_HEURISTICS",
    "urn_interval",
    "USEFUL_SPAN_SHARE",
    "waiting_pays",
    "YIELD_WINDOW",
]
