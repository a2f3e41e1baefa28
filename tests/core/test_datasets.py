"""Datasets: generators, bundled sets, the CSV loader's checks, standardisation, splitting."""

from __future__ import annotations

import gzip
import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.datasets import (
    BUNDLED,
    DataError,
    Dataset,
    checkerboard_labels,
    load_bundled,
    load_csv,
    make_banana,
    make_checkerboard,
    make_gaussians,
    make_waveform,
    standardize,
    stratified_split,
    waveform_bases,
)


def rng(seed=0):
    return np.random.default_rng(seed)


def one_nn_accuracy(Xtr, ytr, Xte, yte):
    d = ((Xte[:, None, :] - Xtr[None, :, :]) ** 2).sum(-1)
    return float(np.mean(ytr[d.argmin(1)] == yte))


# -- generators -------------------------------------------------------------


@pytest.mark.parametrize(
    "make, d", [(make_gaussians, 2), (make_checkerboard, 2), (make_banana, 2), (make_waveform, 21)]
)
def test_generators_shapes_types_and_seeding(make, d):
    X, y = make(301, rng(1))
    assert X.shape == (301, d) and X.dtype == np.float64
    assert y.shape == (301,) and set(np.unique(y)) == {-1.0, 1.0}
    assert np.isfinite(X).all()
    X2, y2 = make(301, rng(1))
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    X3, _ = make(301, rng(2))
    assert not np.array_equal(X, X3)


def test_gaussians_balanced_and_separated():
    X, y = make_gaussians(2000, rng(), separation=3.0, n_features=5)
    assert X.shape == (2000, 5)
    assert (y > 0).sum() == 1000
    m_pos, m_neg = X[y > 0, 0].mean(), X[y < 0, 0].mean()
    assert abs((m_pos - m_neg) - 3.0) < 0.2
    assert np.all(np.abs(X[:, 1:].mean(0)) < 0.1)


def test_banana_balanced():
    X, y = make_banana(1001, rng(), noise=0.5)
    assert (y > 0).sum() == 501


def test_checkerboard_clean_labels_follow_the_board_and_are_learnable():
    X, y = make_checkerboard(3000, rng(3))
    assert X.min() >= 0 and X.max() <= 1
    np.testing.assert_array_equal(y, checkerboard_labels(X, 4))
    # label = cell parity, checked directly on a few hand-made points
    P = np.array([[0.1, 0.1], [0.3, 0.1], [0.3, 0.3], [0.9, 0.1], [0.9, 0.9]])
    np.testing.assert_array_equal(checkerboard_labels(P), [1, -1, 1, -1, 1])
    assert abs((y > 0).mean() - 0.5) < 0.05
    acc = one_nn_accuracy(X[:2000], y[:2000], X[2000:], y[2000:])
    assert acc > 0.93


def test_checkerboard_flip_fraction_is_exact():
    r1, r2 = rng(5), rng(5)
    X, y = make_checkerboard(2000, r1, flip=0.15)
    flipped = y != checkerboard_labels(X)
    assert flipped.sum() == 300
    # same points as the clean board with the same seed: only the labels differ
    Xc, _ = make_checkerboard(2000, r2)
    np.testing.assert_array_equal(X, Xc)
    with pytest.raises(ValueError):
        make_checkerboard(10, rng(), flip=1.5)


def test_waveform_matches_breiman_definition():
    H = waveform_bases()
    assert H.shape == (3, 21)
    assert H[0].max() == 6 and H[0, 10] == 6  # h1 peaks at t = 11
    np.testing.assert_array_equal(H[1][4:], H[0][:-4])  # h2 = h1 shifted by 4
    X, y, cls = make_waveform(3000, rng(7), return_classes=True)
    assert set(np.unique(cls)) == {0, 1, 2}
    np.testing.assert_array_equal(y > 0, cls == 0)
    assert abs((y > 0).mean() - 1 / 3) < 0.04
    # noise has unit variance around the mixture: class-0 means are (h1 + h2) / 2
    np.testing.assert_allclose(X[cls == 0].mean(0), (H[0] + H[1]) / 2, atol=0.2)
    X, y, cls = make_waveform(1000, rng(8), task="1-vs-2", return_classes=True)
    assert set(np.unique(cls)) == {1, 2}
    np.testing.assert_array_equal(y > 0, cls == 1)
    with pytest.raises(ValueError):
        make_waveform(10, rng(), task="2-vs-3")


# -- bundled ----------------------------------------------------------------


def test_bundled_digits():
    ds = load_bundled("digits")
    assert ds.X.shape == (1797, 64) and ds.X.dtype == np.float64
    assert ds.display_kind == "image" and ds.image_shape == (8, 8)
    assert (ds.y > 0).sum() == 174  # digit 8
    assert ds.X.min() == 0 and ds.X.max() == 16
    assert ds.image(0).shape == (8, 8)
    assert len(set(ds.item_keys)) == 1797
    assert "CC BY 4.0" in ds.source
    assert (load_bundled("digits", positive=3).y > 0).sum() == 183
    with pytest.raises(DataError, match="digit 0-9"):
        load_bundled("digits", positive=12)


def test_bundled_breast_cancer():
    ds = load_bundled("breast-cancer")
    assert ds.X.shape == (569, 30)
    assert ds.display_kind == "table"
    assert (ds.y > 0).sum() == 212  # malignant
    assert ds.feature_names[0] == "mean radius" and ds.feature_names[-1] == "worst fractal dimension"
    assert ds.classes == ("benign", "malignant")
    assert (load_bundled("breast-cancer", positive="benign").y > 0).sum() == 357
    with pytest.raises(DataError, match="unknown bundled dataset"):
        load_bundled("iris")


def test_bundled_listing():
    assert set(BUNDLED) == {"digits", "breast-cancer", "arxiv", "nci-molecules"}
    for name, info in BUNDLED.items():
        assert info.name == name and info.title and info.description and info.licence


# -- CSV loader -------------------------------------------------------------


def write(tmp_path, text, name="data.csv", encoding="utf-8"):
    p = tmp_path / name
    p.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return p


GOOD = "a,b,label,note\n1,2,yes,first\n3,4.5,no,second\n5,-6,yes,third\n7,8e-1,no,fourth\n"


def test_csv_good_from_path_bytes_and_filelike(tmp_path):
    p = write(tmp_path, GOOD)
    for src in (p, str(p), GOOD.encode(), io.BytesIO(GOOD.encode()), io.StringIO(GOOD)):
        ds = load_csv(src, label_column="label", positive="yes", display_column="note")
        np.testing.assert_array_equal(ds.X, [[1, 2], [3, 4.5], [5, -6], [7, 0.8]])
        np.testing.assert_array_equal(ds.y, [1, -1, 1, -1])
        assert ds.feature_names == ["a", "b"]
        assert ds.display_kind == "text" and ds.display_values[1] == "second"
        assert ds.classes == ("no", "yes")


def test_csv_text_column_as_feature_is_rejected_with_a_hint(tmp_path):
    # every text-valued column is named at once, with one-hot encoding offered for few categories
    with pytest.raises(
        DataError,
        match=r"text instead of numbers in column 'label' \(2 categories: 'no', 'yes'; "
        r"one-hot encode it\), column 'note' \(4 categories.*leave them out",
    ):
        load_csv(write(tmp_path, GOOD))


def test_csv_default_positive_is_the_larger_class(tmp_path):
    ds = load_csv(write(tmp_path, "x,y\n1,0\n2,1\n3,0\n"), label_column="y")
    np.testing.assert_array_equal(ds.y, [-1, 1, -1])
    ds = load_csv(write(tmp_path, "x,y\n1,-1\n2,1\n3,-1\n"), label_column="y")
    np.testing.assert_array_equal(ds.y, [-1, 1, -1])
    # numeric labels compare as numbers: 10 > 9
    ds = load_csv(write(tmp_path, "x,y\n1,9\n2,10\n"), label_column="y")
    np.testing.assert_array_equal(ds.y, [-1, 1])
    # positive given as a number matches "1.0" in the file
    ds = load_csv(write(tmp_path, "x,y\n1,1.0\n2,0.0\n"), label_column="y", positive=1)
    np.testing.assert_array_equal(ds.y, [1, -1])


def test_csv_no_label_column(tmp_path):
    ds = load_csv(write(tmp_path, "x,z\n1,2\n3,5\n"))
    assert ds.y is None and ds.display_kind == "table"


def test_csv_feature_columns_and_keys(tmp_path):
    p = write(tmp_path, "id,x,z,w,y\nA,1,2,9,a\nB,3,5,9,b\n")
    ds = load_csv(p, label_column="y", feature_columns=["z", "x"], key_column="id")
    np.testing.assert_array_equal(ds.X, [[2, 1], [5, 3]])
    assert ds.item_keys == ["A", "B"]
    with pytest.raises(DataError, match="feature column 'q' not found"):
        load_csv(p, feature_columns=["q"])
    with pytest.raises(DataError, match="duplicate key 'A' in column 'id', row 1 .* and row 2"):
        load_csv(write(tmp_path, "id,x\nA,1\nA,2\n"), key_column="id")


def test_csv_image_shape(tmp_path):
    p = write(tmp_path, "p0,p1,p2,p3,c\n0,1,2,3,a\n4,5,6,7,b\n")
    ds = load_csv(p, label_column="c", image_shape=(2, 2))
    assert ds.display_kind == "image" and ds.image(1).tolist() == [[4, 5], [6, 7]]
    with pytest.raises(DataError, match="image shape 3x2 needs 6 features, found 4"):
        load_csv(p, label_column="c", image_shape=(3, 2))


def test_csv_gzip_path(tmp_path):
    p = tmp_path / "d.csv.gz"
    p.write_bytes(gzip.compress(b"x,y\n1,a\n2,b\n"))
    assert load_csv(p, label_column="y").X.tolist() == [[1], [2]]


def wide_csv(path, columns: int = 1_000_000, rows: int = 6):
    """A small file of very many columns (2 bytes a cell): the shape that held a server for minutes."""
    path.write_text(",".join("a" * columns) + "\n" + ("0," * (columns - 1) + "1\n") * rows)
    return path


def gzip_bomb(path, megabytes: int):
    """A small gzip file that expands to ``megabytes`` MB of a two-column CSV (one compressed megabyte,
    repeated: a gzip file may hold several members, read one after the other)."""
    member = gzip.compress(b"0,a\n1,b\n" * (1 << 17), compresslevel=9)  # 1 MB of text in about 1 kB
    path.write_bytes(gzip.compress(b"x,y\n") + member * megabytes)
    return path


def refused_before_pandas(monkeypatch):
    import core.datasets

    def parse(*args, **kwargs):
        raise AssertionError("the file reached pandas")

    monkeypatch.setattr(core.datasets.pd, "read_csv", parse)


def peak_bytes(read) -> int:
    """The most memory Python held while ``read()`` ran (tracemalloc: deterministic, unlike RSS)."""
    import tracemalloc

    tracemalloc.start()
    try:
        read()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def test_a_csv_of_a_million_columns_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    from core.datasets import MAX_COLUMNS, DataTooLarge, profile_csv

    path = wide_csv(tmp_path / "wide.csv")
    refused_before_pandas(monkeypatch)
    expected = f"1,000,000 columns; MarginLab reads CSV files of at most {MAX_COLUMNS:,} columns"
    for read in (
        lambda: load_csv(path, label_column="a"),
        lambda: profile_csv(path),
        lambda: profile_csv(path.read_bytes()),
    ):
        with pytest.raises(DataTooLarge) as refused:
            read()
        assert expected in str(refused.value), refused.value
    assert str(refused.value).startswith("data: ")  # (bytes: the app puts the file's name there)

    def read():
        with pytest.raises(DataTooLarge, match=f"wide.csv: {expected}"):
            load_csv(path, label_column="a")

    size = path.stat().st_size  # 14 MB
    assert peak_bytes(read) < 5 * size  # the file's bytes and text, nothing per column (it took 7.6 GB)
    # a quoted header that holds commas counts its fields, not its commas
    quoted = tmp_path / "quoted.csv"
    quoted.write_text('"' + "," * (MAX_COLUMNS + 5) + '",y\n1,a\n2,b\n')
    monkeypatch.undo()
    assert load_csv(quoted, label_column="y").X.shape == (2, 1)


def test_a_csv_of_too_many_cells_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    import core.datasets
    from core.datasets import DataTooLarge

    monkeypatch.setattr(core.datasets, "MAX_CELLS", 1_000)
    refused_before_pandas(monkeypatch)
    path = tmp_path / "long.csv"
    path.write_text("x,y\n" + "1,a\n2,b\n" * 300)
    with pytest.raises(
        DataTooLarge,
        match=r"long.csv: 2 columns by 602 lines, 1,204 cells; MarginLab reads CSV "
        r"files of at most 1,000 cells",
    ):
        load_csv(path, label_column="y")


def test_a_gzip_bomb_is_refused_while_it_expands_without_holding_its_text(tmp_path, monkeypatch):
    import core.datasets
    from core.datasets import DataTooLarge

    monkeypatch.setattr(core.datasets, "MAX_CSV_BYTES", 16 << 20)  # (the real bound is 1 GB: the same path)
    refused_before_pandas(monkeypatch)
    bomb = gzip_bomb(tmp_path / "bomb.csv.gz", megabytes=64)
    assert bomb.stat().st_size < 200_000

    def read():
        with pytest.raises(
            DataTooLarge,
            match=r"bomb.csv.gz: more than 16 MB once decompressed \(from 0\.\d+ MB\); "
            r"MarginLab reads CSV files of at most 16 MB",
        ):
            load_csv(bomb, label_column="y")

    assert peak_bytes(read) < 8 << 20  # a chunk at a time: never the 16 MB it counted, nor the 64 MB
    monkeypatch.undo()
    monkeypatch.setattr(core.datasets, "MAX_CSV_BYTES", 16 << 20)
    small = gzip_bomb(tmp_path / "small.csv.gz", megabytes=2)  # within the bound: read as before
    assert load_csv(small, label_column="y").X.shape == (2 * (1 << 18), 1)


def test_csv_utf8_bom_and_non_ascii_names(tmp_path):
    ds = load_csv(write(tmp_path, "\ufefftempérature,y\n1,a\n2,b\n"), label_column="y")
    assert ds.feature_names == ["température"]


# each malformed case: (file contents, load_csv kwargs, regex the message must match)
MALFORMED = {
    "not utf-8": ("x,y\n1,a\n2,caf\xe9\n".encode("latin-1"), {}, r"not UTF-8.*0xe9 on line 3"),
    "empty": (b"", {}, r"the file is empty"),
    "blank": (b"\n \n", {}, r"the file is empty"),
    "header only": (b"x,y\n", {}, r"no data rows"),
    "ragged long": (b"x,y\n1,a\n2,b,7\n3,c\n", {}, r"line 3 has 3 fields but the header has 2"),
    "ragged short": (
        b"x,z,y\n1,2,a\n2\n",
        {"label_column": "y"},
        r"missing values in 2 column\(s\), 1 row\(s\): 'z' 1 \(first: row 2 \(line 3",
    ),
    "ragged first row": (b"x,y\n1,a,9\n2,b\n", {}, r"line 2 has 3 fields but the header has 2"),
    "semicolons": (b"x;y\n1;2\n", {"sep": ","}, r"separated by semicolons, not commas"),
    "duplicate names": (b"x,y,x\n1,a,2\n", {}, r"duplicate column name 'x' \(columns 1 and 3\)"),
    "missing label column": (b"x,y\n1,a\n", {"label_column": "target"}, r"label column 'target' not found.*'x', 'y'"),
    "missing display column": (b"x,y\n1,a\n", {"display_column": "t"}, r"display column 't' not found"),
    "non-numeric": (
        b"x,z,y\n1,2,a\n3,4,b\n5,oops,a\n6,?,b\n",
        {"label_column": "y"},
        r"non-numeric value 'oops' in column 'z', row 3 \(line 4",
    ),
    "infinite": (b"x,y\n1,a\ninf,b\n", {"label_column": "y"}, r"infinite value 'inf' in column 'x', row 2"),
    "missing value": (
        b"x,z,y\n1,2,a\n3,,b\n5,NA,a\n",
        {"label_column": "y"},
        r"missing values in 1 column\(s\), 2 row\(s\): 'z' 2 \(first: row 2 \(line 3 of the file\)\)",
    ),
    "missing label": (b"x,y\n1,a\n2,\n3,b\n", {"label_column": "y"}, r"missing values.*'y' 1 \(first: row 2"),
    "missing label impute": (
        b"x,y\n1,a\n2,\n3,b\n",
        {"label_column": "y", "missing": "impute"},
        r"missing label in column 'y': 1 row\(s\) \(first: row 2.*not imputed",
    ),
    "constant": (
        b"x,c,d,y\n1,5,0,a\n2,5,0,b\n",
        {"label_column": "y", "constant_columns": "error"},
        r"constant column\(s\).*'c', 'd'",
    ),
    "one class": (b"x,y\n1,a\n2,a\n", {"label_column": "y"}, r"only one class \('a'\)"),
    "three classes": (
        b"x,y\n1,a\n2,b\n3,c\n",
        {"label_column": "y"},
        r"has 3 classes \('a', 'b', 'c'\); choose the positive value",
    ),
    "positive absent": (
        b"x,y\n1,0\n2,1\n",
        {"label_column": "y", "positive": "yes"},
        r"positive value 'yes' does not occur in label column 'y'; values found: '0', '1'",
    ),
    "label is feature": (
        b"x,y\n1,0\n2,1\n",
        {"label_column": "y", "feature_columns": ["x", "y"]},
        r"label column 'y' cannot also be a feature",
    ),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_csv_malformed_inputs_are_named(tmp_path, case):
    data, kwargs, pattern = MALFORMED[case]
    p = write(tmp_path, data)
    with pytest.raises(DataError, match=pattern):
        load_csv(p, **kwargs)
    assert issubclass(DataError, ValueError)


def test_csv_line_numbers_follow_the_file(tmp_path):
    # a blank line and a quoted field spanning two lines shift the file lines against the rows
    text = 'x,note,y\n1,"two\nlines",a\n\n2,ok,b\n3,ok,zz\nbad,ok,a\n'
    with pytest.raises(DataError, match=r"non-numeric value 'bad' in column 'x', row 4 \(line 7 of the file\)"):
        load_csv(write(tmp_path, text), label_column="y", display_column="note", one_vs_rest=True, positive="a")


def test_csv_unnamed_columns(tmp_path):
    ds = load_csv(write(tmp_path, "x,y,\n1,a,\n2,b,\n"), label_column="y")  # trailing separators
    assert ds.feature_names == ["x"]
    with pytest.raises(DataError, match="column 2 has no name"):
        load_csv(write(tmp_path, "x,,y\n1,5,a\n2,6,b\n"), label_column="y")


def test_csv_missing_file(tmp_path):
    with pytest.raises(DataError, match="file not found"):
        load_csv(tmp_path / "nope.csv")


def test_csv_constant_columns_can_be_dropped_or_kept(tmp_path):
    p = write(tmp_path, "x,c,y\n1,5,a\n2,5,b\n")
    ds = load_csv(p, label_column="y")  # dropped by default, with a notice naming them
    assert ds.feature_names == ["x"] and ds.dropped_columns == ["c"]
    assert ds.notices == ["dropped 1 constant column(s): 'c'"]
    assert load_csv(p, label_column="y", constant_columns="keep").X.shape == (2, 2)
    with pytest.raises(DataError, match="every feature column is constant"):
        load_csv(write(tmp_path, "c,y\n5,a\n5,b\n"), label_column="y", constant_columns="drop")


def test_csv_one_vs_rest(tmp_path):
    p = write(tmp_path, "x,y\n1,a\n2,b\n3,c\n")
    for flag in (True, False):  # a positive value on a many-valued column is that value against the rest
        ds = load_csv(p, label_column="y", positive="b", one_vs_rest=flag)
        np.testing.assert_array_equal(ds.y, [-1, 1, -1])
        assert ds.classes == ("rest", "b")


def test_dataset_validates():
    with pytest.raises(ValueError):
        Dataset("d", np.zeros((2, 3)), y=np.array([0, 1]))
    with pytest.raises(ValueError):
        Dataset("d", np.zeros((2, 3)), display_kind="image", image_shape=(2, 2))


# -- standardize / split ----------------------------------------------------


def test_standardize_leaves_constant_columns_finite():
    X = np.column_stack([rng().normal(3, 2, 50), np.full(50, 7.0), np.arange(50.0)])
    Xs, mean, scale = standardize(X)
    assert np.isfinite(Xs).all()
    np.testing.assert_allclose(Xs.mean(0), 0, atol=1e-12)
    np.testing.assert_allclose(Xs.std(0), [1, 0, 1], atol=1e-12)
    np.testing.assert_allclose((X - mean) / scale, Xs)
    assert scale[1] == 1.0


def test_standardize_is_the_importers_standardizer():
    """One implementation of standardisation: core.features.Standardizer's statistics and values, bit for bit."""
    from core.features import Standardizer

    X = np.column_stack([rng().normal(3, 2, 500), np.full(500, 7.0), rng().uniform(-1e3, 1e3, 500)])
    Xs, mean, scale = standardize(X)
    scaler = Standardizer().fit(X)
    assert np.array_equal(mean, scaler.mean_) and np.array_equal(scale, scaler.scale_)
    assert np.array_equal(Xs, scaler.transform(X))
    empty = standardize(np.zeros((0, 3)))
    assert empty[0].shape == (0, 3) and np.array_equal(empty[1], np.zeros(3)) and np.array_equal(empty[2], np.ones(3))
    with pytest.raises(ValueError, match="two-dimensional"):
        standardize(np.zeros(3))


def test_stratified_split_keeps_class_ratio():
    y = np.array([1] * 30 + [-1] * 70)
    tr, te = stratified_split(y, 0.2, rng())
    assert len(te) == 20 and len(tr) == 80
    assert (y[te] > 0).sum() == 6
    assert set(tr).isdisjoint(te) and len(set(tr) | set(te)) == 100
    small = np.array([1, 1, -1, -1, -1])
    tr, te = stratified_split(small, 0.1, rng())
    assert sorted(small[te]) == [-1, 1] and sorted(small[tr]) == [-1, -1, 1]  # one of each class held out
    tr, te = stratified_split(y, 0.0, rng())
    assert len(te) == 0 and len(tr) == 100


# -- robustness: arbitrary text gives a Dataset or a DataError, never another exception --


CELL = st.one_of(
    st.sampled_from(["", "1", "-2.5", "1e3", "x", "NA", "inf", " 3 ", '"4"', "a,b", "é"]),
    st.text(alphabet=',"\n;\t ab01.-', max_size=4),
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(CELL, min_size=0, max_size=4), min_size=0, max_size=6),
    st.sampled_from([None, "c0", "c1", "missing"]),
)
def test_csv_arbitrary_content_fails_only_with_data_error(rows, label):
    header = "c0,c1,c2"
    text = header + "\n" + "\n".join(",".join(r) for r in rows)
    try:
        ds = load_csv(text.encode(), label_column=label)
    except DataError as exc:
        assert str(exc)
        return
    assert np.isfinite(ds.X).all() and ds.X.shape[0] >= 1
    if ds.y is not None:
        assert set(np.unique(ds.y)) == {-1.0, 1.0}


def test_bundled_digits_with_every_class_kept():
    from core.datasets import load_bundled

    ds = load_bundled("digits", label_mode="classes")
    assert ds.class_names == tuple(str(d) for d in range(10)) and ds.y is None
    binary = load_bundled("digits", positive=3)
    np.testing.assert_array_equal(ds.class_y == 3, binary.y > 0)
    with pytest.raises(DataError, match="every class kept is available for digits and breast-cancer"):
        load_bundled("arxiv", label_mode="classes")
    with pytest.raises(DataError, match="exclude each other"):
        load_bundled("digits", positive=3, label_mode="classes")
