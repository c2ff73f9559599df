"""Statistics a reviewer accepts: intervals, not point figures; noise, not hope.

- A success rate gets a Wilson score interval (right at 0 % and 100 % and for a
  handful of runs, where the normal approximation says nonsense).
- A latency median and 95th percentile get percentile-bootstrap intervals over the
  *cells*: one value per run, because the samples inside one run share that run's
  browser, page and machine load, and it is from run to run that latencies vary 2–4×.
- Two sets of runs are compared by the difference of their medians: a bootstrap
  interval for it, a permutation test (exact when small) for whether it exceeds what
  reshuffling the same runs gives, and Mann–Whitney with Cliff's delta as the effect
  size. "Beyond noise" needs the permutation p below 1 − confidence *and* the
  interval clear of zero (:func:`verdict_rule` says so in words); a verdict names the
  direction (``b − a``) and, when it finds no difference, which half of the rule
  failed. With too few runs to ever reach it, it says so.

Every resampling takes a seed, so a figure in a notebook stays put when re-run.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["Comparison", "bootstrap_interval", "cliffs_delta", "compare_samples",
           "median", "p95", "permutation_p", "plain", "smallest_p", "verdict_rule",
           "wilson_interval"]

Statistic = Callable[[NDArray[np.float64]], NDArray[np.float64]]
#: Resamples for a bootstrap interval, and the most permutations tried before sampling.
RESAMPLES = 4000
EXACT_PERMUTATIONS = 20000
#: Cliff's delta magnitudes (Romano et al., 2006).
EFFECT_SIZES = ((0.147, "negligible"), (0.33, "small"), (0.474, "medium"), (1.01, "large"))


def median(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """The median along the last axis (each row one resample)."""
    return np.asarray(np.median(values, axis=-1), dtype=np.float64)


def p95(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """The 95th percentile along the last axis (linear interpolation, as pandas')."""
    return np.asarray(np.percentile(values, 95, axis=-1), dtype=np.float64)


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a success rate; (nan, nan) when n is 0.

    >>> [round(x, 3) for x in wilson_interval(10, 10)]
    [0.722, 1.0]
    """
    if n == 0:
        return math.nan, math.nan
    from scipy.stats import binomtest  # scipy.stats takes a second to import: on first use

    interval = binomtest(successes, n).proportion_ci(confidence_level=confidence,
                                                     method="wilson")
    return float(interval.low), float(interval.high)


def _clean(values: ArrayLike) -> NDArray[np.float64]:
    array = np.asarray(values, dtype=np.float64).ravel()
    return array[np.isfinite(array)]


def bootstrap_interval(values: ArrayLike, statistic: Statistic = median,
                       confidence: float = 0.95, resamples: int = RESAMPLES,
                       seed: int = 0) -> tuple[float, float]:
    """A percentile-bootstrap interval of ``statistic`` over ``values``; (nan, nan)
    for no values. With one value, or all equal, it is that value at both ends."""
    data = _clean(values)
    if data.size == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    draws = statistic(rng.choice(data, size=(resamples, data.size), replace=True))
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(draws, [tail, 100 - tail])
    return float(low), float(high)


def permutation_p(a: ArrayLike, b: ArrayLike, statistic: Statistic = median,
                  seed: int = 0) -> float:
    """Two-sided p of ``statistic(b) - statistic(a)`` under relabelling the runs:
    exact over every split when there are at most EXACT_PERMUTATIONS, else sampled."""
    x, y = _clean(a), _clean(b)
    if x.size == 0 or y.size == 0:
        return math.nan
    pooled = np.concatenate([x, y])
    observed = abs(float(statistic(y) - statistic(x)))
    splits = math.comb(pooled.size, x.size)
    if splits <= EXACT_PERMUTATIONS:
        masks = np.zeros((splits, pooled.size), dtype=bool)
        for row, chosen in enumerate(itertools.combinations(range(pooled.size), x.size)):
            masks[row, list(chosen)] = True
        extra = 0
    else:
        rng = np.random.default_rng(seed)
        order = np.argsort(rng.random((EXACT_PERMUTATIONS, pooled.size)), axis=1)
        masks = np.zeros((EXACT_PERMUTATIONS, pooled.size), dtype=bool)
        np.put_along_axis(masks, order[:, : x.size], True, axis=1)
        extra = 1  # the observed split counts once (Phipson & Smyth, 2010)
    tiled = np.broadcast_to(pooled, masks.shape)
    group_a = tiled[masks].reshape(len(masks), x.size)
    group_b = tiled[~masks].reshape(len(masks), y.size)
    differences = np.abs(statistic(group_b) - statistic(group_a))
    # a tolerance: the same difference reached by another split is "as extreme"
    hits = int(np.count_nonzero(differences >= observed - 1e-12 * max(1.0, observed)))
    return (hits + extra) / (len(masks) + extra)


def smallest_p(n_a: int, n_b: int) -> float:
    """The smallest two-sided permutation p that runs this many can give."""
    if n_a == 0 or n_b == 0:
        return math.nan
    return min(1.0, 2 / math.comb(n_a + n_b, n_a))


def cliffs_delta(a: ArrayLike, b: ArrayLike) -> float:
    """P(b > a) − P(b < a) over all pairs: +1 when every b exceeds every a."""
    x, y = _clean(a), _clean(b)
    if x.size == 0 or y.size == 0:
        return math.nan
    signs = np.sign(y[:, None] - x[None, :])
    return float(signs.mean())


@dataclass(frozen=True)
class Comparison:
    """Runs of ``b`` against runs of ``a``: ``difference_ms`` (and its interval
    ``difference_low`` to ``difference_high``) is median(b) − median(a), so a negative
    difference means ``b`` is faster; ``ratio`` is median(b) / median(a); ``cliffs_delta``
    is P(b > a) − P(b < a). ``verdict`` says all of that in words (see
    :func:`verdict_rule`)."""

    a: str
    b: str
    n_a: int
    n_b: int
    median_a: float
    median_b: float
    difference_ms: float
    difference_low: float
    difference_high: float
    ratio: float
    p_permutation: float
    p_mann_whitney: float
    cliffs_delta: float
    effect: str
    beyond_noise: bool
    verdict: str

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def plain(value: float, *, signed: bool = False) -> str:
    """A figure with three significant digits, trailing zeros kept so a column reads
    alike (``3.10``, ``16.2``), and never an exponent (``100``, not ``1e+02``; ``1234``,
    not ``1.23e+03``); ``—`` when it is not a number.

    >>> plain(100.0), plain(1234.5), plain(-1.618), plain(3.1), plain(2.0, signed=True)
    ('100', '1234', '-1.62', '3.10', '+2.00')
    >>> plain(5e-05), plain(-0.000852), plain(0.00099951)
    ('0.0000500', '-0.000852', '0.00100')
    """
    if not math.isfinite(value):
        return "—"
    sign = "+" if signed else ""
    if value == 0:
        return "0"
    if abs(float(f"{value:.3g}")) >= 1000:  # (999.7 rounds to 1000: no exponent either)
        return f"{value:{sign}.0f}"
    if abs(value) < 1e-3:  # three significant digits in fixed notation: 0.0000500
        decimals = 2 - math.floor(math.log10(abs(float(f"{value:.3g}"))))
        return f"{value:{sign}.{decimals}f}"
    return f"{value:{sign}#.3g}".rstrip(".")


def _p(p: float) -> str:
    """``p=0.0455``; ``p<0.0001`` below that (a sampled permutation p is never 0)."""
    return "p<0.0001" if p < 1e-4 else f"p={p:.3g}"


def _level(confidence: float) -> str:
    return f"{confidence * 100:g}% CI"


def _check_confidence(confidence: float) -> None:
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) \
            or not 0 < confidence < 1:
        raise ValueError(f"confidence must be a number between 0 and 1, got {confidence!r}")


def verdict_rule(confidence: float = 0.95) -> str:
    """The rule every verdict applies, in one sentence (printed once under a list of
    verdicts, each of which says only which half of it failed).

    >>> verdict_rule()
    'A difference is beyond the run-to-run noise when both permutation p < 0.05 and the \
95% CI of the difference of medians excludes 0.'
    """
    _check_confidence(confidence)
    return (f"A difference is beyond the run-to-run noise when both permutation "
            f"p < {1 - confidence:.3g} and the {_level(confidence)} of the difference of "
            "medians excludes 0.")


def compare_samples(a: ArrayLike, b: ArrayLike, *, labels: Sequence[str] = ("a", "b"),
                    confidence: float = 0.95, seed: int = 0) -> Comparison:
    """Whether ``b``'s runs differ from ``a``'s by more than the run-to-run noise: by
    :func:`verdict_rule`, a permutation p below 1 − ``confidence`` *and* a bootstrap
    interval of median(b) − median(a) clear of 0.

    The verdict names the direction and the figures, then the conclusion, or which
    half of the rule failed::

        headless-shell − chromium: median +35.2 ms (95% CI +1.62 to +73.1 ms),
        permutation p=0.012 → chromium faster (×1.4, Cliff's δ +0.62, large)

        headless-shell − chromium: median -26.8 ms (95% CI -69.8 to +16.2 ms),
        permutation p=0.0455 → inconclusive: p=0.0455 < 0.05 but the 95% CI includes 0

    >>> fast, slow = [1.0, 1.1, 0.9, 1.2, 1.0, 0.95], [2.0, 2.2, 1.9, 2.1, 2.4, 2.05]
    >>> result = compare_samples(fast, slow, labels=("old", "new"))
    >>> result.beyond_noise, result.effect
    (True, 'large')
    >>> result.verdict.split(" → ")[1]
    "old faster (×2.08, Cliff's δ +1.00, large)"
    >>> compare_samples(fast, fast[::-1]).beyond_noise
    False
    """
    _check_confidence(confidence)
    if isinstance(labels, str) or len(labels) != 2:
        raise ValueError(f"labels must be two names (a, b), got {labels!r}")
    x, y = _clean(a), _clean(b)
    name_a, name_b = (str(label) for label in labels)
    if x.size == 0 or y.size == 0:
        return Comparison(name_a, name_b, x.size, y.size, math.nan, math.nan, math.nan,
                          math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, "",
                          False, "nothing to compare: no measured runs on "
                          f"{name_a if x.size == 0 else name_b}")
    median_a, median_b = float(np.median(x)), float(np.median(y))
    difference = median_b - median_a
    low, high = _difference_interval(x, y, confidence, seed)
    p = permutation_p(x, y, seed=seed)
    from scipy.stats import mannwhitneyu

    p_mw = float(mannwhitneyu(y, x, alternative="two-sided").pvalue)
    delta = cliffs_delta(x, y)
    effect = next(name for bound, name in EFFECT_SIZES if abs(delta) < bound)
    alpha = 1 - confidence
    below = bool(p < alpha)
    clear = bool(low > 0 or high < 0)
    ratio = median_b / median_a if median_a else math.nan
    level, p_text, alpha_text = _level(confidence), _p(p), f"{alpha:.3g}"
    # Always b − a, said in the names, so a sign never has to be guessed.
    measured = (f"{name_b} − {name_a}: median {plain(difference, signed=True)} ms "
                f"({level} {plain(low, signed=True)} to {plain(high, signed=True)} ms), "
                f"permutation {p_text}")
    if below and clear:
        faster = name_b if difference < 0 else name_a
        times = max(ratio, 1 / ratio) if ratio and math.isfinite(ratio) else math.nan
        how = f"×{times:.3g}, " if math.isfinite(times) else ""
        conclusion = f"{faster} faster ({how}Cliff's δ {delta:+.2f}, {effect})"
    elif smallest_p(x.size, y.size) >= alpha:
        conclusion = (f"too few runs to tell: {x.size} and {y.size} runs cannot give "
                      f"p < {alpha_text} (the smallest possible is "
                      f"{smallest_p(x.size, y.size):.2g})")
    elif below:
        conclusion = f"inconclusive: {p_text} < {alpha_text} but the {level} includes 0"
    elif clear:
        conclusion = (f"inconclusive: the {level} excludes 0 but {p_text} is not "
                      f"< {alpha_text}")
    else:
        conclusion = (f"no difference beyond the run-to-run noise: {p_text} is not "
                      f"< {alpha_text} and the {level} includes 0")
    return Comparison(name_a, name_b, x.size, y.size, median_a, median_b, difference, low,
                      high, ratio, p, p_mw, delta, effect, below and clear,
                      f"{measured} → {conclusion}")


def _difference_interval(x: NDArray[np.float64], y: NDArray[np.float64], confidence: float,
                         seed: int) -> tuple[float, float]:
    """Bootstrap interval of median(y) − median(x), each group resampled on its own."""
    rng = np.random.default_rng(seed)
    draws_x = median(rng.choice(x, size=(RESAMPLES, x.size), replace=True))
    draws_y = median(rng.choice(y, size=(RESAMPLES, y.size), replace=True))
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(draws_y - draws_x, [tail, 100 - tail])
    return float(low), float(high)
