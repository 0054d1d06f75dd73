"""oar.text (Paddle's paddle.text): viterbi_decode / ViterbiDecoder and the text data sets, which read
local files given by data_file (nothing is downloaded)."""
from . import datasets  # noqa: F401
from .datasets import Conll05st, Imdb, Imikolov, Movielens, UCIHousing, WMT14, WMT16  # noqa: F401
from .viterbi_decode import ViterbiDecoder, viterbi_decode  # noqa: F401

__all__ = ["Conll05st", "Imdb", "Imikolov", "Movielens", "UCIHousing", "WMT14", "WMT16", "ViterbiDecoder",
           "viterbi_decode"]
