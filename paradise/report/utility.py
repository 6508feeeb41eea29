"""Information-loss and utility measures (seed 003 §2.7, §6.1.4; seed 004 §5.2).

Pure functions on arrays and data frames; :mod:`paradise.report.measure` gets
the inputs from the database (moments and correlations as aggregates, rows
only where a measure needs them).

Example (IL1s, seed 003 formula (1)):
    >>> import numpy as np
    >>> x = np.array([[1.0], [2.0], [3.0]])
    >>> round(il1s(x, x + 1.0, ("v",)).value, 4)
    0.7071
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = [
    "ClassifierResult",
    "IL1s",
    "MomentChange",
    "Regression",
    "classifier_accuracy",
    "design_matrix",
    "eigen_loss",
    "fit_regression",
    "il1s",
    "moment_changes",
]


@dataclass(frozen=True)
class IL1s:
    """IL1s, the "uniform and intrinsic scaling" loss of Yancey et al. (2002); seed 003 (1).

    ``IL1s = 1/(n·p) · Σ_j Σ_i |x_ij − x*_ij| / (√2 · σ_j)``, σ_j the standard
    deviation of the original column j. sdcMicro's ``dUtility(method="IL1s")``
    reports the double sum without the ``1/(n·p)`` factor (``total`` here).

    Attributes:
        value: IL1s as in seed 003 (1).
        total: the unnormalized sum (sdcMicro's figure).
        per_column: ``1/n · Σ_i |x_ij − x*_ij| / (√2 σ_j)`` per column.
        records: record pairs per column without NULL (NULL pairs are left out, as in sdcMicro).
    """

    value: float
    total: float
    per_column: dict[str, float]
    records: dict[str, int]


def il1s(original: np.ndarray, masked: np.ndarray, columns: Sequence[str]) -> IL1s:
    """IL1s over aligned (n, p) arrays; NaN marks a NULL (that pair is left out).

    >>> x = np.array([[0.0, 1.0], [2.0, 1.0]])
    >>> res = il1s(x, np.array([[2.0, 1.0], [0.0, 1.0]]), ("a", "b"))
    >>> round(res.per_column["a"], 4), res.per_column["b"]
    (1.0, 0.0)
    """
    per_column: dict[str, float] = {}
    records: dict[str, int] = {}
    total = 0.0
    count = 0
    for j, name in enumerate(columns):
        x, xm = original[:, j], masked[:, j]
        ok = ~(np.isnan(x) | np.isnan(xm))
        sd = float(np.nanstd(x, ddof=1)) if np.count_nonzero(~np.isnan(x)) > 1 else 0.0
        records[name] = int(ok.sum())
        if not ok.any():
            per_column[name] = 0.0
            continue
        diff = np.abs(x[ok] - xm[ok])
        terms = diff / (np.sqrt(2.0) * sd) if sd > 0 else np.where(diff > 0, np.inf, 0.0)
        per_column[name] = float(terms.mean())
        total += float(terms.sum())
        count += int(ok.sum())
    value = total / count if count else 0.0
    return IL1s(value=value, total=total, per_column=per_column, records=records)


def eigen_loss(original_corr: np.ndarray, masked_corr: np.ndarray) -> float:
    """Relative absolute differences of the eigenvalues of two correlation matrices.

    ``Σ_i |λ_i − λ*_i| / λ_i`` with eigenvalues sorted in decreasing order, as
    sdcMicro's ``dUtility(method="eigen")`` computes it from the covariance of
    the standardized data (Templ 2017, p. 140; seed 003 §2.7). NaN entries
    (a constant column) make the loss NaN.

    >>> round(eigen_loss(np.array([[1.0, 0.8], [0.8, 1.0]]), np.eye(2)), 4)
    4.4444
    """
    if np.isnan(original_corr).any() or np.isnan(masked_corr).any():
        return float("nan")
    lam = np.sort(np.linalg.eigvalsh(original_corr))[::-1]
    lam_m = np.sort(np.linalg.eigvalsh(masked_corr))[::-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.sum(np.abs(lam - lam_m) / lam))


@dataclass(frozen=True)
class MomentChange:
    """Mean and variance of one numeric column, original vs anonymized.

    Attributes:
        column: the column.
        mean / mean_anonymized / variance / variance_anonymized: the moments
            (sample variance), NULLs left out.
        mean_change / variance_change: relative changes ``(a − o) / |o|`` (NaN when o = 0).
    """

    column: str
    mean: float
    mean_anonymized: float
    variance: float
    variance_anonymized: float
    mean_change: float
    variance_change: float


def _relative(a: float, o: float) -> float:
    return (a - o) / abs(o) if o else float("nan")


def moment_changes(
    original: Mapping[str, tuple[float, float]], anonymized: Mapping[str, tuple[float, float]]
) -> tuple[MomentChange, ...]:
    """Per column ``(mean, variance)`` before and after, with relative changes.

    >>> moment_changes({"a": (2.0, 4.0)}, {"a": (2.0, 5.0)})[0].variance_change
    0.25
    """
    out = []
    for col, (mean, var) in original.items():
        mean_a, var_a = anonymized.get(col, (float("nan"), float("nan")))
        out.append(
            MomentChange(
                column=col,
                mean=mean,
                mean_anonymized=mean_a,
                variance=var,
                variance_anonymized=var_a,
                mean_change=_relative(mean_a, mean),
                variance_change=_relative(var_a, var),
            )
        )
    return tuple(out)


def design_matrix(
    frame: pd.DataFrame, predictors: Sequence[str], *, levels: Mapping[str, Sequence[str]]
) -> tuple[np.ndarray, list[str]]:
    """Intercept, numeric predictors, and treatment dummies for categorical ones.

    ``levels`` fixes each categorical predictor's categories (the first is the
    reference), so that original and anonymized data get the same columns.

    >>> df = pd.DataFrame({"x": [1.0, 2.0], "c": ["a", "b"]})
    >>> X, names = design_matrix(df, ["x", "c"], levels={"c": ["a", "b"]})
    >>> names, X.tolist()
    (['(intercept)', 'x', 'c=b'], [[1.0, 1.0, 0.0], [1.0, 2.0, 1.0]])
    """
    columns = [np.ones(len(frame))]
    names = ["(intercept)"]
    for p in predictors:
        if p in levels:
            values = frame[p].astype("string").to_numpy(dtype=object, na_value=None)
            for level in list(levels[p])[1:]:
                columns.append((values == level).astype(float))
                names.append(f"{p}={level}")
        else:
            columns.append(pd.to_numeric(frame[p], errors="coerce").to_numpy(dtype=float))
            names.append(p)
    return np.column_stack(columns), names


@dataclass(frozen=True)
class Regression:
    """A linear regression fitted on the original and on the anonymized data (numpy lstsq).

    Attributes:
        target / predictors: the model ``target ~ predictors``.
        kind: ``model`` (the report's main model), ``within_group`` (all its
            columns in one slicing group) or ``across_groups``.
        terms: coefficient names (intercept, numeric predictors, dummies).
        original / anonymized: the coefficients.
        max_abs_delta: largest ``|anonymized − original|`` over the slopes.
        max_rel_delta: largest relative change of a slope (NaN if a slope is 0).
        rows / rows_anonymized: complete rows used.
    """

    target: str
    predictors: tuple[str, ...]
    kind: str
    terms: tuple[str, ...]
    original: tuple[float, ...]
    anonymized: tuple[float, ...]
    max_abs_delta: float
    max_rel_delta: float
    rows: int
    rows_anonymized: int


def _ols(y: np.ndarray, X: np.ndarray) -> tuple[np.ndarray, int]:
    ok = ~(np.isnan(y) | np.isnan(X).any(axis=1))
    if ok.sum() <= X.shape[1]:
        return np.full(X.shape[1], np.nan), int(ok.sum())
    beta, *_ = np.linalg.lstsq(X[ok], y[ok], rcond=None)
    return beta, int(ok.sum())


def fit_regression(
    original: pd.DataFrame,
    anonymized: pd.DataFrame,
    target: str,
    predictors: Sequence[str],
    *,
    kind: str = "model",
) -> Regression:
    """OLS ``target ~ predictors`` on both data sets (categorical predictors as dummies).

    Categories are taken from the original data; an anonymized value outside
    them (a generalized label, a suppressed NULL) falls into the reference level
    of the dummy coding only if it equals it, i.e. it adds no dummy.

    >>> o = pd.DataFrame({"y": [1.0, 3.0, 5.0], "x": [0.0, 1.0, 2.0]})
    >>> fit_regression(o, o.sample(frac=1, random_state=1), "y", ["x"]).max_abs_delta < 1e-12
    True
    """
    levels = {
        p: sorted(original[p].dropna().astype(str).unique())
        for p in predictors
        if not pd.api.types.is_numeric_dtype(original[p])
    }
    X, names = design_matrix(original, predictors, levels=levels)
    Xa, _ = design_matrix(anonymized, predictors, levels=levels)
    y = pd.to_numeric(original[target], errors="coerce").to_numpy(dtype=float)
    ya = pd.to_numeric(anonymized[target], errors="coerce").to_numpy(dtype=float)
    beta, n = _ols(y, X)
    beta_a, n_a = _ols(ya, Xa)
    slopes = slice(1, None)
    delta = np.abs(beta_a[slopes] - beta[slopes])
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = delta / np.abs(beta[slopes])
    return Regression(
        target=target,
        predictors=tuple(predictors),
        kind=kind,
        terms=tuple(names),
        original=tuple(float(b) for b in beta),
        anonymized=tuple(float(b) for b in beta_a),
        max_abs_delta=float(np.nanmax(delta)) if delta.size and not np.isnan(delta).all()
        else float("nan"),
        max_rel_delta=float(np.nanmax(rel)) if rel.size and not np.isnan(rel).all()
        else float("nan"),
        rows=n,
        rows_anonymized=n_a,
    )


@dataclass(frozen=True)
class ClassifierResult:
    """Logistic regression accuracy on original hold-out data (seed 003 §5.2 uses logistic models).

    Attributes:
        target: the binary (or multi-class) column predicted.
        features: the predictors (numeric standardized, categorical one-hot).
        accuracy_original: trained on the original training rows.
        accuracy_anonymized: trained on the anonymized rows of the same records.
        majority_baseline: accuracy of always predicting the most frequent class.
        train_rows / test_rows: sizes of the two parts.
    """

    target: str
    features: tuple[str, ...]
    accuracy_original: float
    accuracy_anonymized: float
    majority_baseline: float
    train_rows: int
    test_rows: int


def classifier_accuracy(
    train_original: pd.DataFrame,
    train_anonymized: pd.DataFrame,
    test_original: pd.DataFrame,
    target: str,
    features: Sequence[str],
    *,
    max_categories: int = 30,
) -> ClassifierResult:
    """Logistic regression trained on original and on anonymized rows, tested on original ones.

    Numeric features are imputed with the median and standardized; categorical
    ones imputed with a constant and one-hot encoded, at most ``max_categories``
    columns per feature (rarer values share one "infrequent" column; unknown
    categories, e.g. generalized labels, are ignored at test time). NULL targets
    are dropped. The caller chooses features whose kind allows this (never
    free text: see :mod:`paradise.report.columns`).

    Raises:
        ImportError: scikit-learn is not installed.
    """
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline, make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    numeric = [f for f in features if pd.api.types.is_numeric_dtype(train_original[f])]
    categorical = [f for f in features if f not in numeric]

    def prepared(frame: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
        frame = frame[frame[target].notna()]
        X = frame[list(features)].copy()
        for col in categorical:
            X[col] = X[col].astype(object).where(X[col].notna(), "<NULL>").astype(str)
        for col in numeric:
            X[col] = pd.to_numeric(X[col], errors="coerce")
        return X, frame[target].astype(str).to_numpy()

    def model() -> Pipeline:
        # one-hot width is bounded (max_categories per feature) and lbfgs keeps memory
        # linear in the coefficients: no Hessian over every (feature, class) pair
        columns = ColumnTransformer(
            [
                ("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()),
                 numeric),
                ("cat", OneHotEncoder(handle_unknown="infrequent_if_exist",
                                      max_categories=max_categories), categorical),
            ]
        )
        return make_pipeline(columns, LogisticRegression(solver="lbfgs", max_iter=300))

    X_test, y_test = prepared(test_original)
    X_o, y_o = prepared(train_original)
    X_a, y_a = prepared(train_anonymized)
    accuracy = []
    for X, y in ((X_o, y_o), (X_a, y_a)):
        if len(np.unique(y)) < 2:
            accuracy.append(float(np.mean(y_test == y[0])) if len(y) else float("nan"))
            continue
        fitted = model().fit(X, y)
        accuracy.append(float(np.mean(fitted.predict(X_test) == y_test)))
    values, counts = np.unique(y_o, return_counts=True)
    majority = values[np.argmax(counts)] if len(values) else None
    return ClassifierResult(
        target=target,
        features=tuple(features),
        accuracy_original=accuracy[0],
        accuracy_anonymized=accuracy[1],
        majority_baseline=float(np.mean(y_test == majority)) if len(y_test) else float("nan"),
        train_rows=len(y_o),
        test_rows=len(y_test),
    )
