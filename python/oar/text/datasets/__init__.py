"""Paddle's text data sets (paddle.text.datasets), read from local files given by data_file: nothing is
downloaded, and a missing file is a FileNotFoundError that names it. All seven parse their files as
Paddle does, with the differences their docstrings name (ids in sorted order where Paddle numbers in
set order; WMT16's dictionaries each from their own language)."""
import collections
import os
import re
import string
import tarfile

import numpy as np

from ... import _C
from ...io.dataset import Dataset

__all__ = ["Conll05st", "Imdb", "Imikolov", "Movielens", "UCIHousing", "WMT14", "WMT16"]


def _need_file(cls, data_file, what="data_file"):
    if data_file is None:
        raise ValueError("{}: {} is required: oar does not download data sets; pass the path of the "
                         "local copy".format(cls, what))
    if not os.path.isfile(data_file):
        raise FileNotFoundError("{}: {} {!r} does not exist".format(cls, what, data_file))
    return data_file


def _mode(cls, mode, allowed=("train", "test")):
    m = str(mode).lower()
    if m not in allowed:
        raise ValueError("{}: mode must be one of {}, got {!r}".format(cls, allowed, mode))
    return m


class UCIHousing(Dataset):
    """Boston housing: 13 features (centred by the mean and scaled by the range of the whole file) and
    the price; the first 80% of rows are 'train', the rest 'test'."""

    def __init__(self, data_file=None, mode="train", download=True):
        self.mode = _mode("UCIHousing", mode)
        self.data_file = _need_file("UCIHousing", data_file)
        data = np.fromfile(self.data_file, sep=" ")
        if data.size == 0 or data.size % 14:
            raise ValueError("UCIHousing: {!r} must hold rows of 14 numbers, got {} numbers".format(
                self.data_file, data.size))
        data = data.reshape(-1, 14)
        mx, mn, avg = data.max(axis=0), data.min(axis=0), data.sum(axis=0) / data.shape[0]
        for i in range(13):
            data[:, i] = (data[:, i] - avg[i]) / (mx[i] - mn[i])
        offset = int(data.shape[0] * 0.8)
        self.data = data[:offset] if self.mode == "train" else data[offset:]
        self.dtype = _C.get_default_dtype()

    def __getitem__(self, idx):
        row = self.data[idx]
        return np.array(row[:-1]).astype(self.dtype), np.array(row[-1:]).astype(self.dtype)

    def __len__(self):
        return len(self.data)


class Imdb(Dataset):
    """IMDB reviews from aclImdb_v1.tar.gz: each item is (word ids, [label]) with label 0 for positive,
    1 for negative; the dictionary keeps words seen more than cutoff times in train and test."""

    def __init__(self, data_file=None, mode="train", cutoff=150, download=True):
        self.mode = _mode("Imdb", mode)
        self.data_file = _need_file("Imdb", data_file)
        self.word_idx = self._build_word_dict(cutoff)
        unk = self.word_idx["<unk>"]
        self.docs, self.labels = [], []
        for label, kind in ((0, "pos"), (1, "neg")):
            for doc in self._tokenize(re.compile(r"aclImdb/{}/{}/.*\.txt$".format(self.mode, kind))):
                self.docs.append([self.word_idx.get(w, unk) for w in doc])
                self.labels.append(label)

    def _tokenize(self, pattern):
        out = []
        with tarfile.open(self.data_file) as tf:
            for member in tf:
                if pattern.match(member.name):
                    text = tf.extractfile(member).read().rstrip(b"\n\r")
                    out.append(text.translate(None, string.punctuation.encode("latin-1")).lower().split())
        return out

    def _build_word_dict(self, cutoff):
        freq = collections.defaultdict(int)
        for doc in self._tokenize(re.compile(r"aclImdb/((train)|(test))/((pos)|(neg))/.*\.txt$")):
            for w in doc:
                freq[w] += 1
        words = [w for w, _ in sorted((x for x in freq.items() if x[1] > cutoff), key=lambda x: (-x[1], x[0]))]
        idx = {w: i for i, w in enumerate(words)}
        idx["<unk>"] = len(words)
        return idx

    def __getitem__(self, idx):
        return np.array(self.docs[idx]), np.array([self.labels[idx]])

    def __len__(self):
        return len(self.docs)


class Imikolov(Dataset):
    """Penn Treebank from simple-examples.tgz: n-grams of window_size word ids ('NGRAM') or
    (<s> + sentence, sentence + <e>) pairs ('SEQ'); words seen more than min_word_freq times in
    ptb.train and ptb.valid make the dictionary. mode 'test' reads ptb.valid, as Paddle."""

    def __init__(self, data_file=None, data_type="NGRAM", window_size=-1, mode="train", min_word_freq=50,
                 download=True):
        self.data_type = str(data_type).upper()
        if self.data_type not in ("NGRAM", "SEQ"):
            raise ValueError("Imikolov: data_type must be 'NGRAM' or 'SEQ', got {!r}".format(data_type))
        self.mode = _mode("Imikolov", mode)
        self.window_size = window_size
        self.min_word_freq = min_word_freq
        self.data_file = _need_file("Imikolov", data_file)
        if self.data_type == "NGRAM" and window_size < 0:
            raise ValueError("Imikolov: NGRAM needs window_size >= 0, got {}".format(window_size))
        with tarfile.open(self.data_file) as tf:
            freq = collections.defaultdict(int)
            for name in ("ptb.train.txt", "ptb.valid.txt"):
                for line in self._lines(tf, name):
                    for w in line.strip().split():
                        freq[w] += 1
                    freq[b"<s>"] += 1
                    freq[b"<e>"] += 1
            freq.pop(b"<unk>", None)
            words = [w for w, _ in sorted((x for x in freq.items() if x[1] > min_word_freq),
                                          key=lambda x: (-x[1], x[0]))]
            self.word_idx = {w: i for i, w in enumerate(words)}
            self.word_idx["<unk>"] = len(words)
            unk = self.word_idx["<unk>"]
            self.data = []
            for line in self._lines(tf, "ptb.{}.txt".format("train" if self.mode == "train" else "valid")):
                if self.data_type == "NGRAM":
                    ids = [b"<s>"] + line.strip().split() + [b"<e>"]
                    if len(ids) >= window_size:
                        ids = [self.word_idx.get(w, unk) for w in ids]
                        self.data.extend(tuple(ids[i - window_size:i]) for i in range(window_size, len(ids) + 1))
                else:
                    ids = [self.word_idx.get(w, unk) for w in line.strip().split()]
                    src = [self.word_idx[b"<s>"]] + ids
                    if window_size > 0 and len(src) > window_size:
                        continue
                    self.data.append((src, ids + [self.word_idx[b"<e>"]]))

    def _lines(self, tf, name):
        path = "./simple-examples/data/" + name
        try:
            return tf.extractfile(path).readlines()
        except KeyError:
            raise FileNotFoundError("Imikolov: {!r} has no member {!r}".format(self.data_file, path)) from None

    def __getitem__(self, idx):
        return tuple(np.array(d) for d in self.data[idx])

    def __len__(self):
        return len(self.data)


class Conll05st(Dataset):
    """CoNLL-2005 semantic role labelling (the test.wsj part of conll05st-tests.tar.gz, as Paddle): one item
    per (sentence, predicate): word ids, the ids of the words at -2..+2 around the verb (bos/eos past the
    ends) repeated over the sentence, the predicate id, the 0/1 mark of that window and the BIO label ids.
    Unknown words are 0. Paddle numbers the labels in set order (which changes with Python's string
    hashing); oar numbers them in sorted order (B-x, I-x pairs, then O last, as Paddle)."""

    def __init__(self, data_file=None, word_dict_file=None, verb_dict_file=None, target_dict_file=None,
                 emb_file=None):
        self.data_file = _need_file("Conll05st", data_file)
        self.word_dict_file = _need_file("Conll05st", word_dict_file, "word_dict_file")
        self.verb_dict_file = _need_file("Conll05st", verb_dict_file, "verb_dict_file")
        self.target_dict_file = _need_file("Conll05st", target_dict_file, "target_dict_file")
        self.emb_file = emb_file
        self.word_dict = self._load_dict(self.word_dict_file)
        self.predicate_dict = self._load_dict(self.verb_dict_file)
        tags = set()
        with open(self.target_dict_file) as f:
            for line in f:
                line = line.strip()
                if line.startswith(("B-", "I-")):
                    tags.add(line[2:])
        self.label_dict = {}
        for tag in sorted(tags):
            self.label_dict["B-" + tag] = len(self.label_dict)
            self.label_dict["I-" + tag] = len(self.label_dict)
        self.label_dict["O"] = len(self.label_dict)
        self.sentences, self.predicates, self.labels = [], [], []
        self._load()

    @staticmethod
    def _load_dict(path):
        with open(path) as f:
            return {line.strip(): i for i, line in enumerate(f)}

    def _member(self, tf, name):
        try:
            return tf.extractfile(name)
        except KeyError:
            raise FileNotFoundError("Conll05st: {!r} has no member {!r}".format(self.data_file, name)) from None

    def _load(self):
        import gzip
        base = "conll05st-release/test.wsj/"
        with tarfile.open(self.data_file) as tf:
            words = gzip.GzipFile(fileobj=self._member(tf, base + "words/test.wsj.words.gz")).read().decode()
            props = gzip.GzipFile(fileobj=self._member(tf, base + "props/test.wsj.props.gz")).read().decode()
        sentence, columns = [], []
        for word, prop in zip(words.splitlines(), props.splitlines()):
            prop = prop.split()
            if prop:
                sentence.append(word.strip())
                columns.append(prop)
                continue
            # end of a sentence: column 0 names the verbs, column k + 1 holds the k-th verb's arguments
            cols = [[row[i] for row in columns] for i in range(len(columns[0]))] if columns else []
            if cols:
                verbs = [v for v in cols[0] if v != "-"]
                for k, col in enumerate(cols[1:]):
                    self.sentences.append(sentence)
                    self.predicates.append(verbs[k])
                    self.labels.append(self._bio(col))
            sentence, columns = [], []

    @staticmethod
    def _bio(col):
        out, tag, inside = [], "O", False
        for cell in col:
            if cell == "*":
                out.append("I-" + tag if inside else "O")
            elif cell == "*)":
                out.append("I-" + tag)
                inside = False
            elif "(" in cell:
                tag = cell[1:cell.find("*")]
                out.append("B-" + tag)
                inside = ")" not in cell
            else:
                raise ValueError("Conll05st: unexpected label {!r}".format(cell))
        return out

    def __getitem__(self, idx):
        sentence, labels = self.sentences[idx], self.labels[idx]
        n = len(sentence)
        v = labels.index("B-V")
        mark = [0] * n
        ctx = []
        for d in (-2, -1, 0, 1, 2):
            j = v + d
            if 0 <= j < n:
                mark[j] = 1
                ctx.append(sentence[j])
            else:
                ctx.append("bos" if d < 0 else "eos")
        ids = [self.word_dict.get(w, 0) for w in sentence]
        around = [np.array([self.word_dict.get(w, 0)] * n) for w in ctx]
        pred = [self.predicate_dict.get(self.predicates[idx])] * n
        return tuple([np.array(ids)] + around + [np.array(pred), np.array(mark),
                                                 np.array([self.label_dict.get(l) for l in labels])])

    def __len__(self):
        return len(self.sentences)

    def get_dict(self):
        return self.word_dict, self.predicate_dict, self.label_dict

    def get_embedding(self):
        return self.emb_file


_AGES = [1, 18, 25, 35, 45, 50, 56]


class Movielens(Dataset):
    """MovieLens 1M from ml-1m.zip: each rating gives (user id, gender (0 male, 1 female), age index, job,
    movie id, category ids, title word ids, rating * 2 - 5). A rating goes to 'test' when a uniform draw
    (numpy's generator seeded with rand_seed, as Paddle) falls below test_ratio. Paddle numbers the
    categories and title words in set iteration order, which changes with Python's string hashing; oar
    numbers them in sorted order so the ids are the same in every run."""

    def __init__(self, data_file=None, mode="train", test_ratio=0.1, rand_seed=0, download=True):
        import zipfile
        self.mode = _mode("Movielens", mode)
        self.data_file = _need_file("Movielens", data_file)
        self.test_ratio, self.rand_seed = test_ratio, rand_seed
        title_re = re.compile(r"^(.*)\((\d+)\)$")
        with zipfile.ZipFile(self.data_file) as z:
            movies, words, cats = {}, set(), set()
            for line in self._open(z, "movies.dat"):
                mid, title, categories = line.decode("latin").strip().split("::")
                categories = categories.split("|")
                m = title_re.match(title)
                title = m.group(1) if m else title
                movies[int(mid)] = (categories, title)
                cats.update(categories)
                words.update(w.lower() for w in title.split())
            self.movie_title_dict = {w: i for i, w in enumerate(sorted(words))}
            self.categories_dict = {c: i for i, c in enumerate(sorted(cats))}
            users = {}
            for line in self._open(z, "users.dat"):
                uid, gender, age, job, _ = line.decode("latin").strip().split("::")
                users[int(uid)] = [[int(uid)], [0 if gender == "M" else 1], [_AGES.index(int(age))], [int(job)]]
            rng = np.random.RandomState(rand_seed)
            is_test = self.mode == "test"
            self.data = []
            for line in self._open(z, "ratings.dat"):
                if (rng.random_sample() < test_ratio) != is_test:
                    continue
                uid, mid, rating, _ = line.decode("latin").strip().split("::")
                categories, title = movies[int(mid)]
                movie = [[int(mid)], [self.categories_dict[c] for c in categories],
                         [self.movie_title_dict[w.lower()] for w in title.split()]]
                self.data.append(users[int(uid)] + movie + [[float(rating) * 2 - 5.0]])

    def _open(self, z, name):
        try:
            return z.open("ml-1m/" + name).readlines()
        except KeyError:
            raise FileNotFoundError("Movielens: {!r} has no member 'ml-1m/{}'".format(self.data_file, name)) from None

    def __getitem__(self, idx):
        return tuple(np.array(d) for d in self.data[idx])

    def __len__(self):
        return len(self.data)


class WMT14(Dataset):
    """WMT14 en-fr from the preprocessed wmt14.tgz: the first dict_size lines of src.dict / trg.dict are the
    dictionaries; each "source<TAB>target" line of <mode>/<mode> gives (<s> source <e> ids, <s> target
    ids, target <e> ids), unknown words 2, pairs longer than 80 ids skipped. mode: train, test, gen."""

    def __init__(self, data_file=None, mode="train", dict_size=-1, download=True):
        self.mode = _mode("WMT14", mode, ("train", "test", "gen"))
        self.data_file = _need_file("WMT14", data_file)
        if not isinstance(dict_size, int) or dict_size <= 0:
            raise ValueError("WMT14: dict_size must be a positive int, got {!r}".format(dict_size))
        self.dict_size = dict_size
        self.src_ids, self.trg_ids, self.trg_ids_next = [], [], []
        with tarfile.open(self.data_file, mode="r") as tf:
            members = tf.getmembers()

            def one(suffix):
                found = [m for m in members if m.name.endswith(suffix)]
                if len(found) != 1:
                    raise ValueError("WMT14: {!r} must hold one file ending in {!r}, found {}".format(
                        self.data_file, suffix, len(found)))
                words = {}
                for i, line in enumerate(tf.extractfile(found[0])):
                    if i >= dict_size:
                        break
                    words[line.strip().decode()] = i
                return words
            self.src_dict, self.trg_dict = one("src.dict"), one("trg.dict")
            for m in members:
                if not m.name.endswith("{0}/{0}".format(self.mode)):
                    continue
                for line in tf.extractfile(m):
                    parts = line.decode().strip().split("\t")
                    if len(parts) != 2:
                        continue
                    src = [self.src_dict.get(w, 2) for w in ["<s>"] + parts[0].split() + ["<e>"]]
                    trg = [self.trg_dict.get(w, 2) for w in parts[1].split()]
                    if len(src) > 80 or len(trg) > 80:
                        continue
                    self.src_ids.append(src)
                    self.trg_ids.append([self.trg_dict["<s>"]] + trg)
                    self.trg_ids_next.append(trg + [self.trg_dict["<e>"]])

    def __getitem__(self, idx):
        return np.array(self.src_ids[idx]), np.array(self.trg_ids[idx]), np.array(self.trg_ids_next[idx])

    def __len__(self):
        return len(self.src_ids)

    def get_dict(self, reverse=False):
        if reverse:
            return ({v: k for k, v in self.src_dict.items()}, {v: k for k, v in self.trg_dict.items()})
        return self.src_dict, self.trg_dict


class WMT16(Dataset):
    """WMT16 en-de (Multi30k) from wmt16.tar.gz: each "english<TAB>german" line of wmt16/<mode> gives
    (<s> source <e> ids, <s> target ids, target <e> ids) with lang the source language. Each dictionary
    holds <s>, <e>, <unk> and then the most frequent words of its language in wmt16/train (ties in order
    of first appearance), dict_size entries at most. Paddle caches its dictionaries as files under its
    data home and builds both from the source-language column (a bug: the target dictionary then lists
    source words); oar builds them in memory, each from its own column."""

    _TOTAL = {"en": 11250, "de": 19220}

    def __init__(self, data_file=None, mode="train", src_dict_size=-1, trg_dict_size=-1, lang="en", download=True):
        self.mode = _mode("WMT16", mode, ("train", "test", "val"))
        self.data_file = _need_file("WMT16", data_file)
        if lang not in ("en", "de"):
            raise ValueError("WMT16: lang must be 'en' or 'de', got {!r}".format(lang))
        for what, v in (("src_dict_size", src_dict_size), ("trg_dict_size", trg_dict_size)):
            if not isinstance(v, int) or v <= 0:
                raise ValueError("WMT16: {} must be a positive int, got {!r}".format(what, v))
        self.lang = lang
        other = "de" if lang == "en" else "en"
        self.src_dict_size = min(src_dict_size, self._TOTAL[lang])
        self.trg_dict_size = min(trg_dict_size, self._TOTAL[other])
        with tarfile.open(self.data_file, mode="r") as tf:
            train = self._pairs(tf, "train")
            self._dicts = {lang: self._build(train, lang, src_dict_size),
                           other: self._build(train, other, trg_dict_size)}
            self.src_dict, self.trg_dict = self._dicts[lang], self._dicts[other]
            rows = train if self.mode == "train" else self._pairs(tf, self.mode)
        src_col = 0 if lang == "en" else 1
        start, end, unk = self.src_dict["<s>"], self.src_dict["<e>"], self.src_dict["<unk>"]
        self.src_ids, self.trg_ids, self.trg_ids_next = [], [], []
        for pair in rows:
            src = [start] + [self.src_dict.get(w, unk) for w in pair[src_col].split()] + [end]
            trg = [self.trg_dict.get(w, unk) for w in pair[1 - src_col].split()]
            self.src_ids.append(src)
            self.trg_ids.append([start] + trg)
            self.trg_ids_next.append(trg + [end])

    def _pairs(self, tf, name):
        try:
            f = tf.extractfile("wmt16/" + name)
        except KeyError:
            raise FileNotFoundError("WMT16: {!r} has no member 'wmt16/{}'".format(self.data_file, name)) from None
        rows = []
        for line in f:
            parts = line.decode().strip().split("\t")
            if len(parts) == 2:
                rows.append(parts)
        return rows

    @staticmethod
    def _build(rows, lang, size):
        freq = collections.OrderedDict()
        col = 0 if lang == "en" else 1
        for pair in rows:
            for w in pair[col].split():
                freq[w] = freq.get(w, 0) + 1
        words = ["<s>", "<e>", "<unk>"] + [w for w, _ in sorted(freq.items(), key=lambda x: -x[1])]
        return {w: i for i, w in enumerate(words[:max(size, 3)])}

    def __getitem__(self, idx):
        return np.array(self.src_ids[idx]), np.array(self.trg_ids[idx]), np.array(self.trg_ids_next[idx])

    def __len__(self):
        return len(self.src_ids)

    def get_dict(self, lang, reverse=False):
        d = self._dicts[lang]
        return {v: k for k, v in d.items()} if reverse else dict(d)
