"""oar.vision.datasets: FashionMNIST on Debian's real files, idx parsing and its errors, CIFAR archives
(synthetic, in the real python layout), DatasetFolder / ImageFolder."""
import gzip
import io
import os
import pickle
import struct
import tarfile
from pathlib import Path

import numpy as np
import pytest

import oar
from oar.vision import datasets
from oar.vision.datasets import mnist as mnist_mod

FASHION_DIR = "/usr/share/datasets/fashion-mnist"
needs_fashion = pytest.mark.skipif(not os.path.isdir(FASHION_DIR),
                                   reason="Debian package dataset-fashion-mnist is not installed")


# ------------------------------------------------------------------------------------------- helpers


def _write_idx_images(path, images, magic=2051, compress=True):
    images = np.asarray(images, dtype=np.uint8)
    n, r, c = images.shape
    raw = struct.pack(">IIII", magic, n, r, c) + images.tobytes()
    with (gzip.open(path, "wb") if compress else open(path, "wb")) as f:
        f.write(raw)


def _write_idx_labels(path, labels, magic=2049):
    labels = np.asarray(labels, dtype=np.uint8)
    with gzip.open(path, "wb") as f:
        f.write(struct.pack(">II", magic, len(labels)) + labels.tobytes())


@pytest.fixture
def tiny_mnist(tmp_path):
    rng = np.random.RandomState(0)
    images = rng.randint(0, 256, size=(5, 28, 28)).astype(np.uint8)
    labels = np.array([3, 0, 9, 1, 7], dtype=np.uint8)
    ip, lp = tmp_path / "img.gz", tmp_path / "lab.gz"
    _write_idx_images(ip, images)
    _write_idx_labels(lp, labels)
    return str(ip), str(lp), images, labels


# ------------------------------------------------------------------------------------------- FashionMNIST (real)


@pytest.fixture(scope="module")
def fashion_train():
    return datasets.FashionMNIST(mode="train")


@needs_fashion
def test_fashion_mnist_train_real_files(fashion_train):
    ds = fashion_train
    assert len(ds) == 60000
    assert ds.image_path == os.path.join(FASHION_DIR, "train-images-idx3-ubyte.gz")
    labels = np.asarray(ds.labels)
    assert labels.min() == 0 and labels.max() == 9
    np.testing.assert_array_equal(np.bincount(labels), [6000] * 10)  # balanced classes
    assert list(labels[:5]) == [9, 0, 0, 3, 0]  # the well-known first labels (ankle boot, T-shirt, ...)
    # Known statistics of the training images: mean 0.2860, std 0.3530 of [0, 1] pixels.
    assert abs(ds.images.mean() / 255 - 0.2860) < 1e-3
    assert abs(ds.images.std() / 255 - 0.3530) < 1e-3

    img, label = ds[0]  # default backend 'pil': a 28x28 grey PIL image
    assert img.mode == "L" and img.size == (28, 28)
    assert label.dtype == np.int64 and label.shape == (1,) and label[0] == 9
    np.testing.assert_array_equal(np.asarray(img), ds.images[0])


@needs_fashion
def test_fashion_mnist_test_split_cv2_backend():
    ds = datasets.FashionMNIST(mode="test", backend="cv2")
    assert len(ds) == 10000
    np.testing.assert_array_equal(np.bincount(np.asarray(ds.labels)), [1000] * 10)
    img, label = ds[3]
    assert img.dtype == np.float32 and img.shape == (28, 28)
    assert img.min() >= 0 and img.max() <= 255 and img.max() > 1  # raw 0..255 values, not scaled
    assert label.dtype == np.int64 and label.shape == (1,) and 0 <= label[0] <= 9


@needs_fashion
def test_fashion_mnist_transform_to_tensor(fashion_train):
    from oar.vision import transforms as T
    ds = datasets.FashionMNIST(mode="test", transform=T.ToTensor())
    img, label = ds[0]
    assert isinstance(img, oar.Tensor) and img.shape == [1, 28, 28] and img.dtype == oar.float32
    a = img.numpy()
    assert a.min() >= 0 and a.max() <= 1
    np.testing.assert_allclose(a[0], ds.images[0] / 255.0, rtol=1e-6)


# ------------------------------------------------------------------------------------------- idx parsing


def test_mnist_explicit_paths(tiny_mnist):
    ip, lp, images, labels = tiny_mnist
    ds = datasets.MNIST(image_path=ip, label_path=lp, mode="test", backend="cv2")
    assert len(ds) == 5
    for i in range(5):
        img, lab = ds[i]
        np.testing.assert_array_equal(img, images[i].astype(np.float32))
        assert lab.tolist() == [labels[i]]
    pil_img, _ = datasets.MNIST(image_path=ip, label_path=lp, download=False)[2]
    np.testing.assert_array_equal(np.asarray(pil_img), images[2])


def test_mnist_bad_magic_names_file(tmp_path, tiny_mnist):
    _, lp, images, _ = tiny_mnist
    bad = tmp_path / "bad.gz"
    _write_idx_images(bad, images, magic=1234)
    with pytest.raises(ValueError, match="bad.gz.*magic number 1234"):
        datasets.MNIST(image_path=str(bad), label_path=lp)
    # label file given where images are expected: magic 2049 != 2051
    with pytest.raises(ValueError, match="magic number 2049"):
        datasets.MNIST(image_path=lp, label_path=lp)


def test_mnist_truncated_files(tmp_path, tiny_mnist):
    ip, lp, images, _ = tiny_mnist
    # Valid gzip, but the idx payload is shorter than its header says.
    short = tmp_path / "short.gz"
    raw = struct.pack(">IIII", 2051, 5, 28, 28) + images.tobytes()[:-10]
    with gzip.open(short, "wb") as f:
        f.write(raw)
    with pytest.raises(ValueError, match="short.gz.*truncated"):
        datasets.MNIST(image_path=str(short), label_path=lp)
    # A cut gzip stream.
    cut = tmp_path / "cut.gz"
    cut.write_bytes(Path(ip).read_bytes()[:100])
    with pytest.raises(ValueError, match="cut.gz.*corrupt or truncated"):
        datasets.MNIST(image_path=str(cut), label_path=lp)
    # Not gzip at all.
    junk = tmp_path / "junk.gz"
    junk.write_bytes(b"this is not gzip data at all")
    with pytest.raises(ValueError, match="junk.gz"):
        datasets.MNIST(image_path=str(junk), label_path=lp)
    # Header alone too short.
    tiny = tmp_path / "tiny.gz"
    with gzip.open(tiny, "wb") as f:
        f.write(b"\x00\x00\x08")
    with pytest.raises(ValueError, match="tiny.gz.*too short"):
        datasets.MNIST(image_path=str(tiny), label_path=lp)


def test_mnist_count_mismatch(tmp_path, tiny_mnist):
    ip, _, _, _ = tiny_mnist
    lp = tmp_path / "lab3.gz"
    _write_idx_labels(lp, [1, 2, 3])
    with pytest.raises(ValueError, match="5 images but .* 3 labels"):
        datasets.MNIST(image_path=ip, label_path=str(lp))


def test_missing_files_messages(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(datasets.FashionMNIST, "DEBIAN_DIR", str(tmp_path / "no-debian"))
    with pytest.raises(FileNotFoundError) as e:
        datasets.FashionMNIST(mode="train")
    msg = str(e.value)
    assert "train-images-idx3-ubyte.gz" in msg and "dataset-fashion-mnist" in msg
    assert str(tmp_path / "no-debian") in msg and str(tmp_path / "cache" / "oar" / "dataset" / "fashion-mnist") in msg
    assert "does not download" in msg

    with pytest.raises(FileNotFoundError) as e:
        datasets.MNIST(mode="test")
    msg = str(e.value)
    assert str(tmp_path / "cache" / "oar" / "dataset" / "mnist") in msg and "t10k-images-idx3-ubyte.gz" in msg
    assert "image_path" in msg

    with pytest.raises(FileNotFoundError, match="nope.gz"):
        datasets.MNIST(image_path=str(tmp_path / "nope.gz"), label_path=str(tmp_path / "nope.gz"))


def test_mnist_files_found_in_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    d = tmp_path / "oar" / "dataset" / "mnist"
    d.mkdir(parents=True)
    _write_idx_images(d / "t10k-images-idx3-ubyte.gz", np.zeros((2, 28, 28), np.uint8))
    _write_idx_labels(d / "t10k-labels-idx1-ubyte.gz", [4, 5])
    ds = datasets.MNIST(mode="test")
    assert len(ds) == 2 and ds[1][1].tolist() == [5]


def test_mnist_argument_errors(tiny_mnist):
    ip, lp, _, _ = tiny_mnist
    with pytest.raises(ValueError, match="mode"):
        datasets.MNIST(image_path=ip, label_path=lp, mode="valid")
    with pytest.raises(ValueError, match="backend"):
        datasets.MNIST(image_path=ip, label_path=lp, backend="tensor")


def test_read_idx_uncompressed(tmp_path):
    p = tmp_path / "raw-idx3-ubyte"
    imgs = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    _write_idx_images(p, imgs, compress=False)
    np.testing.assert_array_equal(mnist_mod.read_idx_images(str(p)), imgs)


# ------------------------------------------------------------------------------------------- CIFAR


def _cifar_batch(n, seed, label_key=b"labels", nclass=10):
    rng = np.random.RandomState(seed)
    return {b"batch_label": b"batch", label_key: [int(v) for v in rng.randint(0, nclass, n)],
            b"data": rng.randint(0, 256, (n, 3072)).astype(np.uint8), b"filenames": [b"x.png"] * n}


def _make_tar(path, members):
    with tarfile.open(path, "w:gz") as tar:
        for name, obj in members.items():
            data = obj if isinstance(obj, bytes) else pickle.dumps(obj, protocol=2)
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


@pytest.fixture
def cifar10_file(tmp_path):
    members = {"cifar-10-batches-py/data_batch_2": _cifar_batch(3, 2),
               "cifar-10-batches-py/data_batch_1": _cifar_batch(4, 1),
               "cifar-10-batches-py/test_batch": _cifar_batch(2, 9),
               "cifar-10-batches-py/batches.meta": {b"label_names": [b"airplane"] * 10}}
    path = tmp_path / "cifar-10-python.tar.gz"
    _make_tar(path, members)
    return str(path), members


def test_cifar10_synthetic(cifar10_file):
    path, members = cifar10_file
    ds = datasets.Cifar10(data_file=path, mode="train", backend="cv2")
    assert len(ds) == 7
    # batches in name order: data_batch_1 (4 samples) then data_batch_2 (3)
    b1, b2 = members["cifar-10-batches-py/data_batch_1"], members["cifar-10-batches-py/data_batch_2"]
    img, label = ds[5]
    expect = b2[b"data"][1].reshape(3, 32, 32).transpose(1, 2, 0)
    assert img.dtype == np.float32 and img.shape == (32, 32, 3)
    np.testing.assert_array_equal(img, expect.astype(np.float32))
    assert label.dtype == np.int64 and label.shape == () and int(label) == b2[b"labels"][1]
    assert int(ds[0][1]) == b1[b"labels"][0]

    test = datasets.Cifar10(data_file=path, mode="test")
    assert len(test) == 2
    pil, lab = test[1]
    assert pil.mode == "RGB" and pil.size == (32, 32)
    np.testing.assert_array_equal(np.asarray(pil), members["cifar-10-batches-py/test_batch"][b"data"][1]
                                  .reshape(3, 32, 32).transpose(1, 2, 0))


def test_cifar100_synthetic(tmp_path):
    members = {"cifar-100-python/train": _cifar_batch(5, 3, b"fine_labels", 100),
               "cifar-100-python/test": _cifar_batch(2, 4, b"fine_labels", 100),
               "cifar-100-python/meta": {b"fine_label_names": [b"apple"] * 100}}
    path = tmp_path / "cifar-100-python.tar.gz"
    _make_tar(path, members)
    ds = datasets.Cifar100(data_file=str(path), mode="train", backend="cv2")
    assert len(ds) == 5
    assert [int(ds[i][1]) for i in range(5)] == members["cifar-100-python/train"][b"fine_labels"]
    assert len(datasets.Cifar100(data_file=str(path), mode="test")) == 2


def test_cifar_refuses_code_in_pickle(tmp_path):
    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))
    path = tmp_path / "evil.tar.gz"
    _make_tar(path, {"cifar-10-batches-py/data_batch_1": pickle.dumps({b"data": Evil()}, protocol=2)})
    with pytest.raises(pickle.UnpicklingError, match="refusing to unpickle .*system"):
        datasets.Cifar10(data_file=str(path))


def test_cifar_errors(tmp_path, monkeypatch):
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"not a tar")
    with pytest.raises(ValueError, match="junk.tar.gz"):
        datasets.Cifar10(data_file=str(junk))
    empty = tmp_path / "empty.tar.gz"
    _make_tar(empty, {"readme.txt": b"hello"})
    with pytest.raises(ValueError, match="no member .*data_batch"):
        datasets.Cifar10(data_file=str(empty))
    bad = tmp_path / "bad.tar.gz"
    _make_tar(bad, {"x/data_batch_1": {b"data": np.zeros((2, 100), np.uint8), b"labels": [0, 1]}})
    with pytest.raises(ValueError, match="3072"):
        datasets.Cifar10(data_file=str(bad))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(FileNotFoundError, match="cifar-10-python.tar.gz"):
        datasets.Cifar10()


# ------------------------------------------------------------------------------------------- folders


@pytest.fixture
def image_tree(tmp_path):
    from PIL import Image
    root = tmp_path / "root"
    rng = np.random.RandomState(5)
    arrays = {}
    for cls, names in (("dog", ["b.png", "a.png"]), ("cat", ["z.png"]), ("bird", ["c.png", "sub/d.png"])):
        for n in names:
            p = root / cls / n
            p.parent.mkdir(parents=True, exist_ok=True)
            a = rng.randint(0, 256, (6, 5, 3)).astype(np.uint8)
            Image.fromarray(a).save(p)
            arrays[str(p)] = a
    (root / "cat" / "notes.txt").write_text("skip me")
    np.save(root / "dog" / "extra.npy", np.arange(4))
    return root, arrays


def test_dataset_folder(image_tree):
    root, arrays = image_tree
    ds = datasets.DatasetFolder(str(root))
    assert ds.classes == ["bird", "cat", "dog"]
    assert ds.class_to_idx == {"bird": 0, "cat": 1, "dog": 2}
    rel = [(os.path.relpath(p, root), c) for p, c in ds.samples]
    assert rel == [("bird/c.png", 0), ("bird/sub/d.png", 0), ("cat/z.png", 1), ("dog/a.png", 2), ("dog/b.png", 2)]
    assert ds.targets == [0, 0, 1, 2, 2]
    img, target = ds[3]
    assert img.mode == "RGB" and target == 2
    np.testing.assert_array_equal(np.asarray(img), arrays[ds.samples[3][0]])

    npy = datasets.DatasetFolder(str(root), loader=np.load, extensions=(".npy",))
    assert len(npy) == 1 and npy.classes == ["bird", "cat", "dog"]
    x, t = npy[0]
    np.testing.assert_array_equal(x, np.arange(4))
    assert t == 2

    txt = datasets.DatasetFolder(str(root), loader=lambda p: Path(p).read_text(),
                                 is_valid_file=lambda p: p.endswith(".txt"))
    assert txt[0] == ("skip me", 1)

    from oar.vision import transforms as T
    tds = datasets.DatasetFolder(str(root), transform=T.ToTensor())
    assert tds[0][0].shape == [3, 6, 5]


def test_image_folder(image_tree):
    root, arrays = image_tree
    ds = datasets.ImageFolder(str(root))
    assert len(ds) == 5
    assert [os.path.relpath(p, root) for p in ds.samples] == ["bird/c.png", "bird/sub/d.png", "cat/z.png",
                                                              "dog/a.png", "dog/b.png"]
    item = ds[2]
    assert isinstance(item, list) and len(item) == 1
    np.testing.assert_array_equal(np.asarray(item[0]), arrays[ds.samples[2]])


def test_folder_cv2_backend(image_tree):
    root, arrays = image_tree
    oar.vision.set_image_backend("cv2")
    try:
        img, _ = datasets.DatasetFolder(str(root))[0]
    finally:
        oar.vision.set_image_backend("pil")
    assert isinstance(img, np.ndarray) and img.shape == (6, 5, 3)


def test_folder_errors(tmp_path, image_tree):
    root, _ = image_tree
    (tmp_path / "empty" / "cls").mkdir(parents=True)
    with pytest.raises(RuntimeError, match="0 files"):
        datasets.DatasetFolder(str(tmp_path / "empty"))
    with pytest.raises(RuntimeError, match="0 files"):
        datasets.ImageFolder(str(tmp_path / "empty"))
    with pytest.raises(FileNotFoundError, match="not a directory"):
        datasets.DatasetFolder(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="either extensions or is_valid_file"):
        datasets.DatasetFolder(str(root), extensions=(".png",), is_valid_file=lambda p: True)
    with pytest.raises(ValueError, match="backend"):
        oar.vision.set_image_backend("opencv")
