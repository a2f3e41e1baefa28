"""A labelling session's settings as one typed, checked, frozen record: :class:`SessionSettings`.

The New session form (through the service) and the command line build one; storage keeps it as
JSON with a ``version`` on the session's row (``SessionSettings.to_json`` / ``from_json``); the loop
is built from it (``ActiveLearningLoop.from_settings``).  A parameter keeps its name all the way:
the record's ``C`` is the solver's ``C`` (``solver_params()`` gives the solver's keyword arguments,
``loop_arguments()`` the loop's).

Every check is here, in ``__post_init__`` (so ``dataclasses.replace`` checks again): a refusal is a
:class:`SettingsError` (a ``ValueError``) whose ``field`` and message name the field and the value.
Strategy and solver names are checked against their registries (:mod:`core.strategies`,
:mod:`core.solvers`); numbers with the solvers' own checks (``core.solvers.base``).

Solver parameters other than kernel, C and gamma may be left :data:`UNSET`: the solver then uses its
own default, and the parameter is not passed at all (``max_nonsv=None`` is a value: the ramp solver
keeps every example).  ``solver_params()`` is exactly the dict the sessions stored before this record,
so a stored session and its snapshots are the same bit for bit.

The JSON keeps the layout sessions were stored with before (``solver_params``, ``strategy_params``,
``scaling``, ``eval_fraction``, ``find``, ``stopping``) and adds ``version``, the strategy, solver and
seed (also on the row's own columns), the model, the cold start and the initial labels.  A dict
without a ``version`` is one stored before the record: ``from_json`` reads it with the row's strategy,
solver and seed and fills in what such a session always meant (the dataset's scaling when none was
stored, a 30 % evaluation share when none was stored, the review model recognised by its parameters).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from core import solvers, strategies
from core.kernels import KERNEL_NAMES
from core.presets import PRESETS, preset_of
from core.solvers.base import C_RANGE, TOL_MAX, check_class_weight, check_integer, check_real
from core.stopping import DEFAULT_CONFIDENCE, DEFAULT_TARGET_RECALL, parse_rules
from core.strategies import COLD_STARTS, DEFAULT_COLD_START, DEFAULT_STRATEGY

#: the layout ``to_json`` writes (a dict without a version is one stored before the record)
SETTINGS_VERSION = 1
#: the model that takes the solver parameters as given (the others are ``core.presets.PRESETS``)
STANDARD_MODEL = "standard"
#: the scalings a session can ask for
SCALINGS = ("none", "standard")
#: the evaluation share of a session stored before the share was written down
LEGACY_EVAL_FRACTION = 0.3


class SettingsError(ValueError):
    """A setting that cannot be: ``field`` names it (``stopping.rule`` for a stopping setting)."""

    def __init__(self, field: str, reason: str):
        self.field = field
        super().__init__(reason if reason.startswith(f"{field} ") else f"{field}: {reason}")


class _Unset:
    """The value of a solver parameter left to the solver's own default (not passed at all)."""

    _instance: ClassVar[_Unset | None] = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __reduce__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Any = _Unset()


class FrozenDict(dict):
    """A dict that refuses changes (the record's mappings: strategy parameters, class weights)."""

    def _refuse(self, *args, **kwargs):
        raise TypeError("settings are frozen: make a changed copy with SessionSettings.replace")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items(), key=repr)))

    def __reduce__(self):
        return FrozenDict, (dict(self),)

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo) -> FrozenDict:
        return self


def _refuse(field_name: str, check, *args, **kwargs):
    """``check(*args, **kwargs)``, its ``ValueError`` as a ``SettingsError`` of ``field_name``."""
    try:
        return check(*args, **kwargs)
    except SettingsError:
        raise
    except (TypeError, ValueError) as error:
        raise SettingsError(field_name, str(error)) from None


@dataclass(frozen=True)
class StoppingSettings:
    """When the analyst may stop: the rule that says so (``core.stopping``), its target recall and
    confidence, the label counts at which recall checks were started, and whether one is on.  ``target_class``:
    in a session with named classes, the class the rules work on against the rest (stored as
    ``class``, only when set; None: the class a "Most likely <class>" session looks for, else no stopping)."""

    rule: str = "statistical"
    target_recall: float = DEFAULT_TARGET_RECALL
    confidence: float = DEFAULT_CONFIDENCE
    checks: tuple[int, ...] = ()
    checking: bool = False
    target_class: str | None = None

    def __post_init__(self) -> None:
        specs = _refuse("stopping.rule", parse_rules, self.rule) if isinstance(self.rule, str) else None
        if specs is None or len(specs) != 1:
            raise SettingsError("stopping.rule", f"must name one stopping rule, got {self.rule!r}")
        target, confidence = (
            _refuse(
                f"stopping.{name}",
                check_real,
                f"stopping.{name}",
                getattr(self, name),
                low=0.0,
                high=1.0,
                low_open=True,
                high_open=True,
            )
            for name in ("target_recall", "confidence")
        )
        if isinstance(self.checks, (str, bytes)) or not hasattr(self.checks, "__iter__"):
            raise SettingsError("stopping.checks", f"must be label counts, got {self.checks!r}")
        checks = tuple(
            sorted({_refuse("stopping.checks", check_integer, "stopping.checks", c, low=0) for c in self.checks})
        )
        if not isinstance(self.checking, bool):
            raise SettingsError("stopping.checking", f"must be True or False, got {self.checking!r}")
        if self.target_class is not None and (not isinstance(self.target_class, str) or not self.target_class):
            raise SettingsError("stopping.class", f"must be a class name or None, got {self.target_class!r}")
        object.__setattr__(self, "rule", str(specs[0]))
        object.__setattr__(self, "target_recall", target)
        object.__setattr__(self, "confidence", confidence)
        object.__setattr__(self, "checks", checks)

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "target_recall": self.target_recall,
            "confidence": self.confidence,
            "checks": list(self.checks),
            "checking": self.checking,
        } | ({} if self.target_class is None else {"class": self.target_class})

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> StoppingSettings:
        """The stored stopping settings (None or missing entries: the defaults; other entries are passed over,
        as they always were)."""
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise SettingsError("stopping", f"must be a mapping of stopping settings, got {data!r}")
        known = {f.name for f in dataclasses.fields(cls)} - {"target_class"}
        stored: dict[str, Any] = {k: (bool(v) if k == "checking" else v) for k, v in data.items() if k in known}
        return cls(**stored, target_class=data.get("class"))


#: the solver parameters of the record, in the order the solvers name them (kernel, C and gamma always set)
SOLVER_FIELDS = (
    "kernel",
    "C",
    "gamma",
    "degree",
    "coef0",
    "tol",
    "loss",
    "class_weight",
    "balance_ratio",
    "max_nonsv",
    "auto",
    "auto_lag",
)


@dataclass(frozen=True)
class SessionSettings:
    """Everything a labelling session is started with (see the module notes).

    ``strategy``: a registered strategy; ``solver``: a registered solver (None: the strategy's own);
    ``model``: ``"standard"`` (the solver parameters as given) or a preset of ``core.presets`` whose
    solver and parameters these must be (``SessionSettings.preset`` builds one).  ``kernel`` ... ``auto``:
    the solver's parameters by its own names (UNSET: the solver's default).  ``strategy_params``: the
    strategy's keyword arguments.  ``seed``: the queries' seed (and the solver's ``random_state``).
    ``cold_start``, ``initial``: the loop's cold start and the labels it chooses.  ``scaling``: ``none`` or
    ``standard`` (None: the dataset's own, for sessions stored before it was written down).
    ``eval_fraction``: the share of a dataset with true labels held out for the live ROC curve.  ``find``:
    what the analyst is looking for, in their words (None: the dataset's positive class).  ``stopping``:
    the stopping settings.
    """

    strategy: str = DEFAULT_STRATEGY
    solver: str | None = None
    model: str = STANDARD_MODEL
    kernel: str = "rbf"
    C: float = 1.0
    gamma: float | str = "scale"
    degree: int = UNSET
    coef0: float = UNSET
    tol: float = UNSET
    loss: str = UNSET
    class_weight: None | str | Mapping[int, float] = UNSET
    balance_ratio: float = UNSET
    max_nonsv: int | None = UNSET
    auto: tuple[str, ...] = UNSET
    auto_lag: int = UNSET
    strategy_params: Mapping[str, Any] = field(default_factory=FrozenDict)
    seed: int = 0
    cold_start: str = DEFAULT_COLD_START
    initial: int = 0
    scaling: str | None = "none"
    eval_fraction: float = 0.0
    find: str | None = None
    stopping: StoppingSettings = field(default_factory=StoppingSettings)
    #: the session's named classes: () for a two-class (yes / no) session; 3 to ``MAX_CLASSES`` names for a
    #: K-class session (single choice), whose strategy is one of ``core.multiclass.MULTICLASS_STRATEGIES``
    classes: tuple[str, ...] = ()
    #: a multi-label session: each answer is any subset of ``classes`` (2 to ``MAX_CLASSES`` of them; none is an
    #: answer too), its strategy one of ``core.multiclass.MULTILABEL_STRATEGIES``; False: one class per answer
    multi_label: bool = False

    # -- checks ----------------------------------------------------------------------------------
    def __post_init__(self) -> None:
        if not isinstance(self.multi_label, bool):
            raise SettingsError("multi_label", f"must be true or false, got {self.multi_label!r}")
        self._set("classes", _check_classes(self.classes, self.multi_label))
        if self.classes:
            default_solver = _check_class_strategy(self.strategy, self.strategy_params, self.classes, self.multi_label)
        else:
            default_solver = _refuse("strategy", strategies.get, self.strategy).default_solver
        if self.solver is None:  # a named model's own solver, else the strategy's
            self._set("solver", PRESETS[self.model]["solver"] if self.model in PRESETS else default_solver)
        solver = _refuse("solver", solvers.get, self.solver)
        self._check_model_parameters()
        self._check_model()
        self._check_solver_takes(solver)
        if not isinstance(self.strategy_params, Mapping) or not all(isinstance(k, str) for k in self.strategy_params):
            raise SettingsError("strategy_params", f"must map parameter names to values, got {self.strategy_params!r}")
        self._set("strategy_params", FrozenDict(self.strategy_params))
        self._set("seed", _refuse("seed", check_integer, "seed", self.seed, low=0))
        if self.cold_start not in COLD_STARTS:
            raise SettingsError("cold_start", f"must be one of {', '.join(COLD_STARTS)}, got {self.cold_start!r}")
        self._set("initial", _refuse("initial", check_integer, "initial", self.initial, low=0))
        if self.scaling is not None and self.scaling not in SCALINGS:
            raise SettingsError("scaling", f"must be one of {', '.join(SCALINGS)}, got {self.scaling!r}")
        self._set(
            "eval_fraction",
            _refuse(
                "eval_fraction", check_real, "eval_fraction", self.eval_fraction, low=0.0, high=1.0, high_open=True
            ),
        )
        if self.find is not None and not isinstance(self.find, str):
            raise SettingsError("find", f"must be words or None, got {self.find!r}")
        if not isinstance(self.stopping, StoppingSettings):
            raise SettingsError("stopping", f"must be a StoppingSettings record, got {self.stopping!r}")
        stop_class = self.stopping.target_class
        if stop_class is not None and stop_class not in self.classes:
            raise SettingsError(
                "stopping.class",
                f"the class to stop on, {stop_class!r}, is not one of the session's classes "
                f"({', '.join(self.classes) or 'none named'})",
            )

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    def _check_model_parameters(self) -> None:
        """The solver parameters, each with the solvers' own check."""
        if self.kernel not in KERNEL_NAMES:
            raise SettingsError("kernel", f"must be one of {', '.join(KERNEL_NAMES)}, got {self.kernel!r}")
        self._set("C", _refuse("C", check_real, "C", self.C, low=C_RANGE[0], high=C_RANGE[1]))
        if isinstance(self.gamma, str):
            if self.gamma not in ("scale", "auto"):
                raise SettingsError("gamma", f"must be 'scale', 'auto' or a positive number, got {self.gamma!r}")
        else:
            self._set("gamma", _refuse("gamma", check_real, "gamma", self.gamma, low=0.0, low_open=True))
        checks = {
            "degree": lambda v: check_integer("degree", v, low=1),
            "coef0": lambda v: check_real("coef0", v),
            "tol": lambda v: check_real("tol", v, low=0.0, high=TOL_MAX, low_open=True, high_open=True),
            "balance_ratio": lambda v: check_real("balance_ratio", v, low=1e-6, high=1e6),
            "max_nonsv": lambda v: None if v is None else check_integer("max_nonsv", v, low=0),
        }
        for name, check in checks.items():
            if getattr(self, name) is not UNSET:
                self._set(name, _refuse(name, check, getattr(self, name)))
        if self.auto is not UNSET:  # the hyperparameters the exact solvers choose from the labels
            from core.solvers.auto_hyper import check_auto

            self._set("auto", _refuse("auto", check_auto, self.auto))
        if self.auto_lag is not UNSET:  # the labels from the start of such a choice to its use
            from core.solvers.auto_hyper import check_lag

            self._set("auto_lag", _refuse("auto_lag", check_lag, self.auto_lag))
        if self.loss is not UNSET:
            from core.solvers.ramp import LOSSES

            if self.loss not in LOSSES:
                raise SettingsError("loss", f"must be one of {', '.join(LOSSES)}, got {self.loss!r}")
        if self.class_weight is not UNSET:
            weights = _refuse(
                "class_weight",
                check_class_weight,
                dict(self.class_weight) if isinstance(self.class_weight, Mapping) else self.class_weight,
            )
            if weights is not None:
                self._set("class_weight", FrozenDict({1: weights[0], -1: weights[1]}))
                if self.auto is not UNSET and "class_weight" in self.auto:
                    raise SettingsError(
                        "class_weight",
                        "class_weight: a class weight chosen from the labels "
                        "(auto with 'class_weight') starts from none or 'balanced', not fixed weights",
                    )

    def _check_solver_takes(self, solver: solvers.Solver) -> None:
        """A parameter the solver does not take is refused, naming the solvers that do."""
        for name in SOLVER_FIELDS[3:]:  # (not kernel, C and gamma, which every solver takes)
            if getattr(self, name) is not UNSET and not _takes(solver, name):
                takers = [e.name for e in solvers.REGISTRY.entries() if e.offered and _takes(e, name)]
                raise SettingsError(
                    name,
                    f"{name} is not a parameter of the {solver.name} solver"
                    + (f" (the {' or '.join(takers)} solver takes it)" if takers else ""),
                )

    def _check_model(self) -> None:
        if self.model == STANDARD_MODEL:
            return
        if self.model not in PRESETS:
            raise SettingsError("model", f"must be {STANDARD_MODEL} or {', '.join(PRESETS)}, got {self.model!r}")
        preset = PRESETS[self.model]
        if self.solver != preset["solver"]:
            raise SettingsError(
                "solver", f"the {self.model} model runs on the {preset['solver']} solver, not {self.solver}"
            )
        mine = self.solver_params()
        for name in dict.fromkeys((*preset["solver_params"], *mine)):
            if mine.get(name, UNSET) != preset["solver_params"].get(name, UNSET):
                raise SettingsError(
                    name,
                    f"the {self.model} model sets {name} itself "
                    f"({preset['solver_params'].get(name, UNSET)!r}), got "
                    f"{mine.get(name, UNSET)!r}",
                )

    # -- building ------------------------------------------------------------------------------
    @classmethod
    def preset(cls, model: str, **settings: Any) -> SessionSettings:
        """The record of the named model of ``core.presets`` (its solver and solver parameters) with ``settings``
        (the others: strategy, seed, ...)."""
        if model not in PRESETS:
            raise SettingsError("model", f"must be one of {', '.join(PRESETS)}, got {model!r}")
        preset = PRESETS[model]
        return cls(model=model, **preset["solver_params"], **settings)

    def replace(self, **changes: Any) -> SessionSettings:
        """A copy with ``changes`` (checked again)."""
        return dataclasses.replace(self, **changes)

    # -- what the parts below take -------------------------------------------------------------
    def solver_params(self) -> dict[str, Any]:
        """The solver's keyword arguments: kernel, C, gamma and the parameters that are set."""
        params = {name: getattr(self, name) for name in SOLVER_FIELDS if getattr(self, name) is not UNSET}
        if isinstance(params.get("class_weight"), Mapping):
            params["class_weight"] = dict(params["class_weight"])
        if "auto" in params:
            params["auto"] = list(params["auto"])  # (as stored: JSON has no tuples)
        return params

    def loop_arguments(self) -> dict[str, Any]:
        """``ActiveLearningLoop``'s keyword arguments (with the pool and evaluation data, the loop)."""
        return dict(
            strategy=self.strategy,
            solver=self.solver,
            solver_params=self.solver_params(),
            strategy_params=dict(self.strategy_params),
            seed=self.seed,
            cold_start=self.cold_start,
            initial=self.initial,
        )

    # -- JSON ------------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """The record as plain JSON values, with ``version`` (what storage keeps on the session's row)."""
        out: dict[str, Any] = {
            "version": SETTINGS_VERSION,
            "strategy": self.strategy,
            "solver": self.solver,
            "seed": self.seed,
            "model": self.model,
            "solver_params": self.solver_params(),
            "strategy_params": dict(self.strategy_params),
            "cold_start": self.cold_start,
            "initial": self.initial,
            "scaling": self.scaling,
            "eval_fraction": self.eval_fraction,
            "stopping": self.stopping.to_json(),
        }
        if isinstance(out["solver_params"].get("class_weight"), dict):  # JSON's keys are strings
            out["solver_params"]["class_weight"] = {str(k): v for k, v in out["solver_params"]["class_weight"].items()}
        if self.find is not None:
            out["find"] = self.find
        if self.classes:  # (a two-class session's JSON is as it always was)
            out["classes"] = list(self.classes)
        if self.multi_label:
            out["multi_label"] = True
        return out

    @classmethod
    def from_json(
        cls, data: Mapping[str, Any], *, strategy: str | None = None, solver: str | None = None, seed: int | None = None
    ) -> SessionSettings:
        """The record ``to_json`` wrote, or a dict stored before the record (no ``version``).

        ``strategy``, ``solver``, ``seed``: the session row's columns.  A dict stored before the record takes
        them from there (a seed of None is 0, as it always was); a versioned one must agree with them.
        """
        if not isinstance(data, Mapping):
            raise SettingsError("settings", f"must be a mapping, got {data!r}")
        columns = {"strategy": strategy, "solver": solver, "seed": seed}
        if "version" not in data:
            return cls._from_legacy(data, columns)
        version = data["version"]
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise SettingsError("version", f"must be a whole number from 1, got {version!r}")
        if version > SETTINGS_VERSION:
            raise SettingsError(
                "version",
                f"version {version} was written by a newer MarginLab (this one reads up to {SETTINGS_VERSION})",
            )
        known = {f.name for f in dataclasses.fields(cls)} | {"version", "solver_params"}
        for key in data:
            if key not in known or key in SOLVER_FIELDS:
                raise SettingsError(str(key), f"{key} is not a setting of a session")
        fields = {k: v for k, v in data.items() if k not in ("version", "solver_params", "stopping")}
        if isinstance(fields.get("classes"), list):
            fields["classes"] = tuple(fields["classes"])
        for name, column in columns.items():
            if column is not None and name in fields and fields[name] != column:
                raise SettingsError(name, f"the session's row says {column!r}, its settings say {fields[name]!r}")
        return cls(
            **fields,
            **_solver_fields(data.get("solver_params")),
            stopping=StoppingSettings.from_json(data.get("stopping")),
        )

    @classmethod
    def _from_legacy(cls, data: Mapping[str, Any], columns: dict[str, Any]) -> SessionSettings:
        """A dict stored before the record: the row's strategy, solver and seed, and what its keys always meant
        (keys it never read are passed over, as they always were)."""
        solver_params = dict(data.get("solver_params") or {})
        solver = columns["solver"]
        model = preset_of(solver, solver_params) if solver is not None else None
        settings: dict[str, Any] = {
            "strategy": columns["strategy"] if columns["strategy"] is not None else DEFAULT_STRATEGY,
            "solver": solver,
            "model": model or STANDARD_MODEL,
            "seed": columns["seed"] or 0,
            "strategy_params": dict(data.get("strategy_params") or {}),
            "scaling": data.get("scaling"),
            "eval_fraction": data.get("eval_fraction", LEGACY_EVAL_FRACTION),
            "find": data.get("find") or None,
            "stopping": StoppingSettings.from_json(data.get("stopping")),
        }
        return cls(**settings, **_solver_fields(solver_params))


#: the most classes a session can have (one answer key each, 1 to 9)
MAX_CLASSES = 9
#: the solver of a K-class session when none is named
CLASS_SOLVER = "incremental"


#: the fewest classes of a multi-label session (two independent yes / no questions already differ from one)
MIN_MULTI_LABEL_CLASSES = 2


def _check_classes(classes: Any, multi_label: bool = False) -> tuple[str, ...]:
    """A session's class names: () (two classes, yes / no) or 3 to ``MAX_CLASSES`` distinct non-empty names
    (2 to ``MAX_CLASSES`` for a multi-label session, which must name them)."""
    if isinstance(classes, (str, bytes)) or not hasattr(classes, "__iter__"):
        raise SettingsError("classes", f"must be a list of class names, got {classes!r}")
    names = tuple(classes)
    if not names:
        if multi_label:
            raise SettingsError(
                "classes", f"a multi-label session names {MIN_MULTI_LABEL_CLASSES} to {MAX_CLASSES} classes"
            )
        return ()
    for name in names:
        if not isinstance(name, str) or not name.strip() or name != name.strip():
            raise SettingsError(
                "classes", f"class names must be non-empty words without spaces around them, got {name!r}"
            )
    if multi_label and len(names) < MIN_MULTI_LABEL_CLASSES:
        raise SettingsError(
            "classes", f"a multi-label session has {MIN_MULTI_LABEL_CLASSES} to {MAX_CLASSES} classes, got {len(names)}"
        )
    if not multi_label and len(names) < 3:
        raise SettingsError(
            "classes",
            f"a session with named classes has 3 to {MAX_CLASSES} of them (two classes "
            f"are a yes / no session), got {len(names)}",
        )
    if len(names) > MAX_CLASSES:
        raise SettingsError("classes", f"at most {MAX_CLASSES} classes (one answer key each), got {len(names)}")
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise SettingsError("classes", f"class {name!r} is named twice")
        seen.add(name)
    return names


def _check_class_strategy(strategy: Any, params: Any, classes: tuple[str, ...], multi_label: bool = False) -> str:
    """A K-class session's strategy (``core.multiclass``) and its parameters; its default solver."""
    from core.multiclass import MULTICLASS_STRATEGIES, MULTILABEL_STRATEGIES

    if multi_label:
        if strategy not in MULTILABEL_STRATEGIES:
            raise SettingsError(
                "strategy",
                f"a multi-label session picks items by one of {', '.join(MULTILABEL_STRATEGIES)}, got {strategy!r}",
            )
        if params:
            raise SettingsError("strategy_params", f"{strategy} takes no parameters, got {params!r}")
        return CLASS_SOLVER
    if strategy not in MULTICLASS_STRATEGIES:
        raise SettingsError(
            "strategy",
            f"a session with named classes picks items by one of {', '.join(MULTICLASS_STRATEGIES)}, got {strategy!r}",
        )
    wanted = {"target"} if strategy == "target-class" else set()
    given = set(params or {}) if isinstance(params, Mapping) else None
    if given != wanted:
        raise SettingsError(
            "strategy_params", f"{strategy} takes {', '.join(sorted(wanted)) or 'no parameters'}, got {params!r}"
        )
    if wanted and params["target"] not in classes:
        raise SettingsError(
            "strategy_params",
            f"the target class {params['target']!r} is not one of the session's classes ({', '.join(classes)})",
        )
    return CLASS_SOLVER


def _solver_fields(solver_params: Any) -> dict[str, Any]:
    """The record's solver fields from a stored ``solver_params`` dict (an unknown parameter is refused)."""
    if solver_params is None:
        return {}
    if not isinstance(solver_params, Mapping):
        raise SettingsError("solver_params", f"must map solver parameters to values, got {solver_params!r}")
    unknown = [k for k in solver_params if k not in SOLVER_FIELDS]
    if unknown:
        raise SettingsError(
            "solver_params",
            f"holds {', '.join(repr(k) for k in unknown)}, not a parameter a "
            f"session sets (those are {', '.join(SOLVER_FIELDS)})",
        )
    return dict(solver_params)


def _takes(entry: solvers.Solver, name: str) -> bool:
    """Whether the solver of ``entry`` takes the keyword ``name`` (its own or its base classes')."""
    import inspect

    if name in entry.own_params:
        return True
    if any(name in e.own_params for e in solvers.REGISTRY.entries()):
        return False  # a parameter some solver says is its own: only those take it
    for klass in entry.load().__mro__:
        init = klass.__dict__.get("__init__")
        if init is not None and name in inspect.signature(init).parameters:
            return True
    return False


__all__ = [
    "CLASS_SOLVER",
    "MIN_MULTI_LABEL_CLASSES",
    "LEGACY_EVAL_FRACTION",
    "MAX_CLASSES",
    "SCALINGS",
    "SETTINGS_VERSION",
    "SOLVER_FIELDS",
    "STANDARD_MODEL",
    "UNSET",
    "FrozenDict",
    "SessionSettings",
    "SettingsError",
    "StoppingSettings",
]
