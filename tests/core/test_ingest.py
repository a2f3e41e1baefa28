"""core.ingest, step by step, builds the same dataset as core.datasets.load_csv with the same options."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import scipy.sparse as sp

from core.datasets import DataError, load_csv
from core.ingest import CsvOptions, load

TABLE = "id,width,height,colour,y\na,1.5,2,red,yes\nb,,3,blue,no\nc,2.5,4,,yes\nd,3.5,5,red,no\ne,4,6,green,yes\n"
TEXTS = (
    "title,abstract,relevant\n"
    "Active learning,Margins and labels for the uncertain items,1\n"
    "Support vectors,Kernels on small data sets,0\n"
    "Screening,Labels for abstracts read by people,1\n"
    "Molecules,Fingerprints of small molecules,0\n"
)
MOLECULES = "smiles,active\nCCO,1\nc1ccccc1,0\nCC(=O)O,1\nnot a molecule,0\nCCN,0\n"


def bits(X) -> bytes:
    """The matrix as bytes: CSR parts, or the dense array."""
    if sp.issparse(X):
        return (
            b"|".join(np.ascontiguousarray(a).tobytes() for a in (X.indptr, X.indices, X.data)) + str(X.shape).encode()
        )
    return np.ascontiguousarray(X).tobytes() + str(X.shape).encode() + str(X.dtype).encode()


def same(a, b) -> None:
    assert sp.issparse(a.X) == sp.issparse(b.X)
    assert bits(a.X) == bits(b.X)
    assert a.feature_names == b.feature_names
    assert (a.y is None) == (b.y is None)
    if a.y is not None:
        assert a.y.tobytes() == b.y.tobytes()
    for attr in (
        "name",
        "classes",
        "item_keys",
        "display_values",
        "display_kind",
        "image_shape",
        "source",
        "dropped_columns",
        "feature_blocks",
        "notices",
        "default_kernel",
        "molecule_column",
        "import_options",
    ):
        assert getattr(a, attr) == getattr(b, attr), attr


CASES = [
    ("table.csv", TABLE, dict(label_column="y", positive="yes", key_column="id", one_hot=["colour"], missing="impute")),
    ("table.csv", TABLE, dict(label_column="y", display_column="id", one_hot=["colour"], missing="drop")),
    ("texts.csv", TEXTS, dict(label_column="relevant", text_columns=["title", "abstract"])),
    (
        "texts.csv",
        TEXTS,
        dict(label_column="relevant", text_columns=["title", "abstract"], text_blocks=True, text_analyzer="char"),
    ),
    ("texts.csv", TEXTS, dict(label_column="relevant", text_columns=["abstract"], text_svd=2, seed=3)),
]


@pytest.mark.parametrize(("file", "text", "kwargs"), CASES)
def test_load_csv_and_the_ingest_steps_build_the_same_dataset(tmp_path, file, text, kwargs):
    path = tmp_path / file
    path.write_text(text)
    by_load_csv = load_csv(path, **kwargs)
    by_steps = load(path, CsvOptions(**kwargs))
    same(by_load_csv, by_steps)
    same(load_csv(path.read_bytes(), **kwargs), load(path.read_bytes(), CsvOptions(**kwargs)))


def test_the_table_is_read_as_before(tmp_path):
    """What the steps build of a table with gaps and a one-hot column, written out."""
    path = tmp_path / "table.csv"
    path.write_text(TABLE)
    ds = load(path, CsvOptions(label_column="y", positive="yes", key_column="id", one_hot=["colour"], missing="drop"))
    assert ds.feature_names == ["width", "height", "colour=green", "colour=red"]
    assert ds.X.tolist() == [[1.5, 2, 0, 1], [3.5, 5, 0, 1], [4, 6, 1, 0]]
    assert ds.y.tolist() == [1, -1, 1] and ds.classes == ("no", "yes")
    assert ds.item_keys == ["a", "d", "e"]
    assert ds.feature_blocks == [{"kind": "numeric", "start": 0, "stop": 2}, {"kind": "onehot", "start": 2, "stop": 4}]
    assert ds.import_options == {"sep": ",", "decimal": ".", "missing": "drop", "one_hot": ["colour"]}
    assert ds.notices == [
        "left out 2 row(s) with missing values: 'width' 1 (first: row 2 (line 3 of the file)), "
        "'colour' 1 (first: row 3 (line 4 of the file))"
    ]


@pytest.mark.skipif(importlib.util.find_spec("rdkit") is None, reason="RDKit is not installed")
def test_molecules_load_the_same_by_both_ways(tmp_path):
    path = tmp_path / "molecules.csv"
    path.write_text(MOLECULES)
    kwargs = dict(label_column="active", smiles_column="smiles", invalid_smiles="drop", fingerprint_bits=256)
    same(load_csv(path, **kwargs), load(path, CsvOptions(**kwargs)))
    for refuse in (load_csv, lambda p, **kw: load(p, CsvOptions(**kw))):
        with pytest.raises(
            DataError,
            match=r"molecules.csv: 1 invalid SMILES in column 'smiles': row 4 \(line 5 of "
            r"the file\): 'not a molecule'",
        ):
            refuse(path, label_column="active", smiles_column="smiles")


def test_options_refuse_a_choice_outside_its_values_with_the_same_words():
    with pytest.raises(ValueError, match=r"^missing must be one of error, drop, impute, got 'fill'$"):
        CsvOptions(missing="fill").validate()
    with pytest.raises(ValueError, match=r"^constant_columns must be 'error', 'drop' or 'keep', got 'x'$"):
        load_csv(b"a,b\n1,2\n", constant_columns="x")
    CsvOptions().validate()


# -- every class kept (label_mode="classes") ---------------------------------------------

ANIMALS = "w,h,animal\n1,2,dog\n2,3,cat\n3,1,fox\n4,4,dog\n5,2,cat\n"


def test_classes_mode_keeps_every_value_as_a_named_class():
    ds = load_csv(ANIMALS.encode(), label_column="animal", label_mode="classes")
    assert ds.y is None and ds.classes is None
    assert ds.class_names == ("cat", "dog", "fox")
    assert ds.class_y.tolist() == [1, 0, 2, 1, 0]
    # numbers sort as numbers and are named as written
    numbers = load_csv(b"x,k\n1,10\n2,2\n3,9\n4,2\n", label_column="k", label_mode="classes")
    assert numbers.class_names == ("2", "9", "10") and numbers.class_y.tolist() == [2, 0, 1, 0]
    # the step-by-step import gives the same
    same = load(ANIMALS.encode(), CsvOptions(label_column="animal", label_mode="classes"))
    assert same.class_y.tolist() == ds.class_y.tolist() and same.class_names == ds.class_names


def test_classes_given_set_the_order_and_refuse_other_values():
    ds = load_csv(ANIMALS.encode(), label_column="animal", label_mode="classes", class_names=["fox", "dog", "cat"])
    assert ds.class_names == ("fox", "dog", "cat") and ds.class_y.tolist() == [1, 2, 0, 1, 2]
    with pytest.raises(DataError, match=r"values that are not among the classes given \(dog, cat\): 'fox' \(1 items\)"):
        load_csv(ANIMALS.encode(), label_column="animal", label_mode="classes", class_names=["dog", "cat"])
    with pytest.raises(
        DataError,
        match=r"class 'wolf' does not occur in label column 'animal'; values found: "
        r"'cat', 'dog', 'fox'",
    ):
        load_csv(
            ANIMALS.encode(), label_column="animal", label_mode="classes", class_names=["cat", "dog", "fox", "wolf"]
        )
    with pytest.raises(DataError, match="only one class.*K classes need at least two"):
        load_csv(b"w,animal\n1,dog\n2,dog\n", label_column="animal", label_mode="classes")


def test_classes_mode_and_a_positive_value_exclude_each_other():
    with pytest.raises(ValueError, match="positive .* and label_mode 'classes' .* exclude each other"):
        load_csv(ANIMALS.encode(), label_column="animal", positive="dog", label_mode="classes")
    with pytest.raises(ValueError, match="label_mode must be one of binary, classes"):
        load_csv(ANIMALS.encode(), label_column="animal", label_mode="multi")
