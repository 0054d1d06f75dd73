"""nn pieces of issue 19: BeamSearchDecoder + dynamic_decode, F.gather_tree, oar.text.viterbi_decode /
ViterbiDecoder and the text data sets (local files only), against numpy references."""
import itertools
import os
import tarfile
import io

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar.nn import BeamSearchDecoder, dynamic_decode
from oar.text import UCIHousing, Imikolov, Imdb, ViterbiDecoder, viterbi_decode, WMT16

from _util import check


# ---- gather_tree ----------------------------------------------------------------------------------

def test_gather_tree_follows_parents():
    ids = np.array([[[2, 2], [6, 1]], [[3, 9], [6, 1]], [[0, 1], [9, 0]]])
    parents = np.array([[[0, 0], [1, 1]], [[1, 0], [1, 0]], [[0, 0], [0, 1]]])
    want = np.zeros_like(ids)
    T, B, K = ids.shape
    for b in range(B):
        for k in range(K):
            p = k
            for t in range(T - 1, -1, -1):
                want[t, b, k] = ids[t, b, p]
                p = parents[t, b, p]
    check(F.gather_tree(oar.to_tensor(ids), oar.to_tensor(parents)), want)
    with pytest.raises(ValueError, match="same 3-D shape"):
        F.gather_tree(oar.to_tensor(ids), oar.to_tensor(parents[:2]))


# ---- beam search ---------------------------------------------------------------------------------

class MarkovCell(oar.nn.Layer):
    """Logits depend only on the previous token: table[token]. The state counts steps."""

    def __init__(self, table):
        super().__init__()
        self.table = oar.to_tensor(table)

    def forward(self, inputs, states):
        return self.table[inputs.reshape([-1])], states + 1


def _beam_ref(table, start, end, beam, batch, max_steps):
    """numpy beam search with Paddle's rules (finished beams extend with end_token at no cost)."""
    V = table.shape[0]
    logp = table - np.log(np.exp(table - table.max(1, keepdims=True)).sum(1, keepdims=True)) - table.max(1, keepdims=True)
    out = []
    for _ in range(batch):
        beams = [([], 0.0, False, start)] + [([], -1e9, False, start)] * (beam - 1)
        for _ in range(max_steps + 1):
            cand = []
            for bi, (seq, score, fin, last) in enumerate(beams):
                for v in range(V):
                    if fin:
                        s = score + (0.0 if v == end else -1e9)
                    else:
                        s = score + logp[last, v]
                    cand.append((s, bi * V + v, bi, v))
            cand.sort(key=lambda c: (-c[0], c[1]))
            beams = [(beams[bi][0] + [v], s, beams[bi][2] or v == end, v) for s, _, bi, v in cand[:beam]]
            if all(b[2] for b in beams):
                break
        out.append(np.array([b[0] for b in beams]).T)  # [T, beam]
    return np.stack(out)  # [batch, T, beam]


def test_beam_search_decoder_matches_reference():
    rng = np.random.default_rng(0)
    V, beam, batch = 5, 3, 2
    table = rng.normal(size=(V, V)) * 2
    cell = MarkovCell(table)
    dec = BeamSearchDecoder(cell, start_token=0, end_token=4, beam_size=beam)
    init = oar.zeros([batch, 1], dtype="float64")
    (ids, states) = dynamic_decode(dec, inits=init, max_step_num=6)
    want = _beam_ref(table, 0, 4, beam, batch, 6)
    assert ids.shape == list(want.shape)
    check(ids, want)
    ids2, states2, lengths = dynamic_decode(dec, inits=init, max_step_num=6, return_length=True)
    assert lengths.shape == [batch, beam]
    # lengths count the steps before each beam finished (the end token included)
    for b in range(batch):
        for k in range(beam):
            seq = list(want[b, :, k])
            n = seq.index(4) + 1 if 4 in seq else len(seq)
            assert int(lengths.numpy()[b, k]) == n
    tm, _ = dynamic_decode(dec, inits=init, max_step_num=6, output_time_major=True)
    check(tm, want.transpose(1, 0, 2))


def test_beam_search_with_embedding_and_gru():
    oar.seed(1)
    emb = oar.nn.Embedding(6, 4)
    cell = oar.nn.GRUCell(4, 8)
    out = oar.nn.Linear(8, 6)
    dec = BeamSearchDecoder(cell, start_token=0, end_token=1, beam_size=2, embedding_fn=emb, output_fn=out)
    h0 = oar.zeros([3, 8])
    ids, states = dynamic_decode(dec, inits=h0, max_step_num=4)
    assert ids.shape[0] == 3 and ids.shape[2] == 2 and ids.shape[1] <= 5
    assert ids.dtype == oar.int64
    assert states.cell_states.shape == [3, 2, 8]
    tiled = BeamSearchDecoder.tile_beam_merge_with_batch(oar.to_tensor(np.arange(6.0).reshape(3, 2)), 2)
    check(tiled, np.repeat(np.arange(6.0).reshape(3, 2), 2, axis=0))
    with pytest.raises(ValueError, match="beam_size"):
        BeamSearchDecoder(cell, 0, 1, 0)


# ---- viterbi ----------------------------------------------------------------------------------------

def _viterbi_brute(pot, trans, lens, bos):
    B, T, N = pot.shape
    scores, paths = np.zeros(B), np.zeros((B, T), np.int64)
    for b in range(B):
        L = int(lens[b])

        def f(q):
            s = sum(pot[b, t, q[t]] for t in range(L)) + sum(trans[q[t - 1], q[t]] for t in range(1, L))
            return s + (trans[N - 1, q[0]] + trans[N - 2, q[-1]] if bos else 0.0)
        best = max(itertools.product(range(N), repeat=L), key=f)
        scores[b] = f(best)
        paths[b, :L] = best
    return scores, paths


@pytest.mark.parametrize("bos", [True, False])
def test_viterbi_decode_matches_brute_force(bos):
    rng = np.random.default_rng(1)
    pot = rng.normal(size=(3, 4, 4))
    trans = rng.normal(size=(4, 4))
    lens = np.array([4, 2, 3])
    scores, path = viterbi_decode(oar.to_tensor(pot), oar.to_tensor(trans), oar.to_tensor(lens), bos)
    ws, wp = _viterbi_brute(pot, trans, lens, bos)
    check(scores, ws, rtol=1e-12, atol=1e-12)
    check(path, wp)
    layer = ViterbiDecoder(oar.to_tensor(trans), bos)
    s2, p2 = layer(oar.to_tensor(pot), oar.to_tensor(lens))
    check(p2, wp)
    with pytest.raises(ValueError, match="transition_params must have shape"):
        viterbi_decode(oar.to_tensor(pot), oar.to_tensor(trans[:3]), oar.to_tensor(lens))


# ---- text data sets ------------------------------------------------------------------------------

def test_uci_housing_reads_a_local_file(tmp_path):
    rng = np.random.default_rng(2)
    data = rng.uniform(0, 10, (10, 14))
    f = tmp_path / "housing.data"
    f.write_text("\n".join(" ".join("{:.6f}".format(v) for v in row) for row in data))
    data = np.fromfile(str(f), sep=" ").reshape(10, 14)
    norm = data.copy()
    norm[:, :13] = (data[:, :13] - data[:, :13].mean(0)) / (data[:, :13].max(0) - data[:, :13].min(0))
    train, test = UCIHousing(str(f), "train"), UCIHousing(str(f), "test")
    assert len(train) == 8 and len(test) == 2
    x, y = test[1]
    assert x.dtype == np.float32 and x.shape == (13,) and y.shape == (1,)
    np.testing.assert_allclose(x, norm[9, :13], rtol=1e-6)
    np.testing.assert_allclose(y, norm[9, 13:], rtol=1e-6)


def test_text_datasets_name_the_missing_file(tmp_path):
    missing = str(tmp_path / "nope.tar.gz")
    for cls in (UCIHousing, Imdb, Imikolov, WMT16):
        with pytest.raises(FileNotFoundError, match="nope.tar.gz"):
            cls(data_file=missing)
    with pytest.raises(ValueError, match="does not download"):
        UCIHousing()


def _tar(path, files):
    with tarfile.open(path, "w:gz") as tf:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))


def test_imikolov_ngram_and_seq(tmp_path):
    p = str(tmp_path / "simple-examples.tgz")
    _tar(p, {"./simple-examples/data/ptb.train.txt": "a b c\na b\n",
             "./simple-examples/data/ptb.valid.txt": "b c\n"})
    ds = Imikolov(p, "NGRAM", window_size=2, mode="train", min_word_freq=1)
    # counts: <s> 3, <e> 3, b 3, a 2, c 2 -> sorted by (-count, word): <e>, <s>, b, a, c
    idx = ds.word_idx
    assert [idx[w] for w in (b"<e>", b"<s>", b"b", b"a", b"c")] == [0, 1, 2, 3, 4] and idx["<unk>"] == 5
    assert [tuple(int(v) for v in item) for item in (ds[i] for i in range(len(ds)))] == [
        (1, 3), (3, 2), (2, 4), (4, 0), (1, 3), (3, 2), (2, 0)]
    seq = Imikolov(p, "SEQ", mode="test", min_word_freq=1)
    src, trg = seq[0]
    assert list(src) == [1, 2, 4] and list(trg) == [2, 4, 0]


def test_imdb_reads_the_archive(tmp_path):
    p = str(tmp_path / "aclImdb.tar.gz")
    _tar(p, {"aclImdb/train/pos/0.txt": "Good, good film!", "aclImdb/train/neg/1.txt": "bad film",
             "aclImdb/test/pos/2.txt": "good"})
    ds = Imdb(p, "train", cutoff=0)
    # good 3, film 2, bad 1
    assert ds.word_idx[b"good"] == 0 and ds.word_idx[b"film"] == 1 and ds.word_idx[b"bad"] == 2
    doc, label = ds[0]
    assert list(doc) == [0, 0, 1] and list(label) == [0]
    doc, label = ds[1]
    assert list(doc) == [2, 1] and list(label) == [1]


# ---- hsigmoid_loss / margin_cross_entropy -------------------------------------------------------------

def _hsigmoid_ref(x, lab, C, w, b):
    """Paddle's default tree, checked against Paddle 2.6.2 (which adds log 2 per padded path position)."""
    depth = int(np.floor(np.log2(C - 1))) + 1
    out = np.zeros((len(lab), 1))
    for i, c in enumerate(lab):
        code = int(c) + C
        L = int(np.floor(np.log2(code)))
        for j in range(depth):
            if j < L:
                node, bit = (code >> (j + 1)) - 1, (code >> j) & 1
                pre = np.clip(w[node] @ x[i] + b[node, 0], -40, 40)
                out[i, 0] += np.log1p(np.exp(pre)) - bit * pre
            else:
                out[i, 0] += np.log(2)
    return out


def test_hsigmoid_loss_matches_paddle_values_and_gradient():
    rng = np.random.default_rng(0)
    x, w, b = rng.normal(size=(5, 3)), rng.normal(size=(5, 3)), rng.normal(size=(5, 1))
    lab = np.array([0, 1, 2, 3, 5])
    got = F.hsigmoid_loss(oar.to_tensor(x), oar.to_tensor(lab), 6, oar.to_tensor(w), oar.to_tensor(b))
    # the values Paddle 2.6.2 printed for these inputs
    check(got, [[3.05051043], [2.42734907], [4.14822417], [2.14315188], [3.06435884]], rtol=1e-7)
    check(got, _hsigmoid_ref(x, lab, 6, w, b), rtol=1e-12)
    from _util import check_grad
    check_grad(lambda x, w, b: F.hsigmoid_loss(x, oar.to_tensor(lab), 6, w, b), [x, w, b])
    layer = oar.nn.HSigmoidLoss(3, 6)
    assert layer.weight.shape == [5, 3] and layer.bias.shape == [5, 1]
    assert layer(oar.to_tensor(x.astype("float32")), oar.to_tensor(lab)).shape == [5, 1]


def test_margin_cross_entropy_single_process():
    rng = np.random.default_rng(1)
    lg = rng.uniform(-0.9, 0.9, (4, 5))
    lb = np.array([1, 0, 4, 2])
    th = np.arccos(lg[np.arange(4), lb])
    z = lg.copy()
    z[np.arange(4), lb] = np.cos(1.0 * th + 0.5) - 0.1
    z *= 8
    ls = z - z.max(1, keepdims=True)
    ls = ls - np.log(np.exp(ls).sum(1, keepdims=True))
    want = -ls[np.arange(4), lb]
    loss, sm = F.margin_cross_entropy(oar.to_tensor(lg), oar.to_tensor(lb), 1.0, 0.5, 0.1, 8.0, return_softmax=True,
                                      reduction="none")
    check(loss, want.reshape(4, 1), rtol=1e-10)
    check(sm, np.exp(ls), rtol=1e-10)
    check(F.margin_cross_entropy(oar.to_tensor(lg), oar.to_tensor(lb), 1.0, 0.5, 0.1, 8.0), want.mean(), rtol=1e-10)
    from _util import check_grad
    check_grad(lambda t: F.margin_cross_entropy(t, oar.to_tensor(lb), 1.0, 0.5, 0.1, 8.0, reduction="sum"), [lg])


def test_hsigmoid_loss_custom_tree_matches_paddle():
    rng = np.random.default_rng(0)
    x, w, b = rng.normal(size=(4, 3)), rng.normal(size=(5, 3)), rng.normal(size=(5, 1))
    table = np.array([[0, 1, -1], [0, 2, 3], [1, 4, -1], [0, 1, 2]])
    code = np.array([[1, 0, 0], [0, 1, 1], [1, 1, 0], [0, 0, 1]])
    got = F.hsigmoid_loss(oar.to_tensor(x), oar.to_tensor(np.arange(4)), 5, oar.to_tensor(w), oar.to_tensor(b),
                          oar.to_tensor(table), oar.to_tensor(code))
    # Paddle 2.6.2 on the same inputs (a -1 in path_table ends the path; the padding adds log 2)
    check(got, [[3.21487991], [1.98281971], [2.75264005], [4.66905377]], rtol=1e-8)


def test_movielens_reads_the_zip(tmp_path):
    import zipfile
    from oar.text import Movielens
    p = str(tmp_path / "ml-1m.zip")
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("ml-1m/movies.dat", "1::Toy Story (1995)::Animation|Comedy\n2::Heat (1995)::Action\n")
        z.writestr("ml-1m/users.dat", "1::F::1::10::48067\n2::M::25::7::70072\n")
        z.writestr("ml-1m/ratings.dat", "".join("{}::{}::{}::0\n".format(1 + i % 2, 1 + i // 2 % 2, 1 + i % 5)
                                                for i in range(20)))
    train, test = Movielens(p, "train", test_ratio=0.3), Movielens(p, "test", test_ratio=0.3)
    draws = np.random.RandomState(0).random_sample(20)
    assert len(test) == int((draws < 0.3).sum()) and len(train) + len(test) == 20
    first = int(np.nonzero(draws >= 0.3)[0][0])  # the first training rating
    item = train[0]
    uid, mid = 1 + first % 2, 1 + first // 2 % 2
    assert int(item[0][0]) == uid and int(item[4][0]) == mid
    assert list(item[1]) == [1 if uid == 1 else 0] and list(item[2]) == [0 if uid == 1 else 2]
    # sorted ids: categories Action 0, Animation 1, Comedy 2; words heat 0, story 1, toy 2
    assert list(item[5]) == ([1, 2] if mid == 1 else [0]) and list(item[6]) == ([2, 1] if mid == 1 else [0])
    assert float(item[7][0]) == (1 + first % 5) * 2 - 5.0


def test_wmt14_reads_the_archive(tmp_path):
    from oar.text import WMT14
    p = str(tmp_path / "wmt14.tgz")
    _tar(p, {"wmt14/src.dict": "<s>\n<e>\n<unk>\nhello\nworld\ncat\n", "wmt14/trg.dict": "<s>\n<e>\n<unk>\nbonjour\nmonde\n",
             "wmt14/train/train": "hello world\tbonjour monde\nhello cat dog\tbonjour chat\nbad line\n",
             "wmt14/test/test": "world\tmonde\n"})
    # what Paddle 2.6.2 gives for this archive (dict_size 5 drops 'cat'; unknown words are 2)
    train = WMT14(p, "train", dict_size=5)
    assert [[list(map(int, a)) for a in train[i]] for i in range(len(train))] == [
        [[0, 3, 4, 1], [0, 3, 4], [3, 4, 1]], [[0, 3, 2, 2, 1], [0, 3, 2], [3, 2, 1]]]
    test = WMT14(p, "test", dict_size=5)
    assert [list(map(int, a)) for a in test[0]] == [[0, 4, 1], [0, 4], [4, 1]]
    assert test.get_dict(reverse=True)[1][4] == "monde"
    with pytest.raises(ValueError, match="dict_size"):
        WMT14(p, "train")


def test_wmt16_reads_the_archive(tmp_path):
    from oar.text import WMT16
    p = str(tmp_path / "wmt16.tgz")
    _tar(p, {"wmt16/train": "a b a c\tx y\nb a\tx z z\nbad\n", "wmt16/test": "a d\tz x\n", "wmt16/val": "c\ty\n"})
    train = WMT16(p, "train", src_dict_size=5, trg_dict_size=6, lang="en")
    # source ids as Paddle 2.6.2 gives them; target ids from the German column (z 3, x 3 -> z first seen
    # after x: x 3, z 4, y 5), where Paddle's dictionary would hold English words (decision 93)
    assert train.src_dict == {"<s>": 0, "<e>": 1, "<unk>": 2, "a": 3, "b": 4}
    assert train.trg_dict == {"<s>": 0, "<e>": 1, "<unk>": 2, "x": 3, "z": 4, "y": 5}
    assert [[list(map(int, a)) for a in train[i]] for i in range(len(train))] == [
        [[0, 3, 4, 3, 2, 1], [0, 3, 5], [3, 5, 1]], [[0, 4, 3, 1], [0, 3, 4, 4], [3, 4, 4, 1]]]
    val = WMT16(p, "val", src_dict_size=5, trg_dict_size=6)
    assert [list(map(int, a)) for a in val[0]] == [[0, 2, 1], [0, 5], [5, 1]]
    de = WMT16(p, "test", src_dict_size=4, trg_dict_size=5, lang="de")
    assert de.src_dict == {"<s>": 0, "<e>": 1, "<unk>": 2, "x": 3} and de.get_dict("en", reverse=True)[3] == "a"


def test_conll05st_reads_the_archive(tmp_path):
    import gzip
    from oar.text import Conll05st
    words = "The\ncat\nsat\ndown\n\nDogs\nbark\n\n"
    props = "-\t(A0*\t*\n-\t*)\t*\nsit\t(V*)\t*\ndown\t(AM-DIR*)\t(V*)\n\n-\t(A0*)\nbark\t(V*)\n\n"
    p = str(tmp_path / "conll05st-tests.tar.gz")
    with tarfile.open(p, "w:gz") as tf:
        for name, text in (("conll05st-release/test.wsj/words/test.wsj.words.gz", words),
                           ("conll05st-release/test.wsj/props/test.wsj.props.gz", props)):
            data = gzip.compress(text.encode())
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    (tmp_path / "word.dict").write_text("<unk>\nthe\ncat\nsat\ndown\nbos\neos\ndogs\nbark\n")
    (tmp_path / "verb.dict").write_text("sit\nbark\ndown\n")
    (tmp_path / "target.dict").write_text("B-A0\nI-A0\nB-V\nI-V\nB-AM-DIR\nI-AM-DIR\nO\n")
    ds = Conll05st(p, str(tmp_path / "word.dict"), str(tmp_path / "verb.dict"), str(tmp_path / "target.dict"))
    inv = {v: k for k, v in ds.label_dict.items()}
    # what Paddle 2.6.2 gives for these files (labels compared as strings: Paddle numbers them in set order)
    want = [([[0, 2, 3, 4], [0] * 4, [2] * 4, [3] * 4, [4] * 4, [6] * 4, [0] * 4, [1, 1, 1, 1]],
             ["B-A0", "I-A0", "B-V", "B-AM-DIR"]),
            ([[0, 2, 3, 4], [2] * 4, [3] * 4, [4] * 4, [6] * 4, [6] * 4, [2] * 4, [0, 1, 1, 1]], ["O", "O", "O", "B-V"]),
            ([[0, 8], [5, 5], [0, 0], [8, 8], [6, 6], [6, 6], [1, 1], [1, 1]], ["B-A0", "B-V"])]
    assert len(ds) == 3
    for i, (ids, labels) in enumerate(want):
        item = ds[i]
        assert [list(map(int, a)) for a in item[:8]] == ids
        assert [inv[int(x)] for x in item[8]] == labels
    with pytest.raises(FileNotFoundError, match="verb_dict_file"):
        Conll05st(p, str(tmp_path / "word.dict"), str(tmp_path / "nope.dict"), str(tmp_path / "target.dict"))
